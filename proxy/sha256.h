/* sha256.h — SHA-256 (FIPS 180-4), for ACL password hashes (proxy/acl.c).
 * No allocation; the caller owns every buffer. */
#ifndef FRONTDOOR_SHA256_H
#define FRONTDOOR_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* The digest of data[0..len) into out[32]. */
void px_sha256(const void *data, size_t len, unsigned char out[32]);
/* The same as 64 lower-case hexadecimal digits and a NUL into hex[65]. */
void px_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
