/* resp_scan.h — find where one complete RESP2/RESP3 *reply* ends in a byte
 * stream, without building any object. Used by proxies that pass a server's
 * replies on byte for byte (the Redis backend). Pure: no I/O.
 *
 * Incremental: the scanner keeps its position and the element counts of the
 * aggregates it is inside, so a large reply arriving in many reads is scanned
 * once (O(n) overall). Nesting is limited to RESP_SCAN_MAX_DEPTH.
 */
#ifndef FRONTDOOR_RESP_SCAN_H
#define FRONTDOOR_RESP_SCAN_H

#include <stddef.h>

#define RESP_SCAN_MAX_DEPTH 64

typedef struct resp_scanner {
    size_t    pos;                          /* bytes of the current reply scanned so far */
    int       depth;                        /* open aggregates */
    long long left[RESP_SCAN_MAX_DEPTH];    /* elements still expected at each level */
    char      attr[RESP_SCAN_MAX_DEPTH];    /* level is a RESP3 attribute (transparent) */
    const char *err;                        /* static text after an error */
} resp_scanner;

void resp_scanner_init(resp_scanner *s);

/* Scan buf[0..len), which starts at the first byte of a reply (the caller
 * drops the bytes of each complete reply and calls again). Returns the length
 * of the complete reply (> 0) and resets for the next; 0 when more bytes are
 * needed (call again with the same start, extended: only offsets are kept);
 * -1 on a protocol error (s->err says which; the stream cannot be trusted
 * after it). RESP3 attributes ('|') are counted as part of the reply they
 * annotate. */
long long resp_scan_reply(resp_scanner *s, const char *buf, size_t len);

/* Walk the scalars of one complete reply in order, ignoring the aggregate
 * headers around them (arrays, maps, sets, pushes, attributes): the flat
 * list of a reply such as LMPOP's [key, [e1, e2]] is key, e1, e2.
 * *p starts at the reply's first byte; end is one past its last. On each
 * call returns 1 with *s and *n set to the next scalar's text (a bulk's or
 * verbatim's contents, the line of a simple string, integer, double,
 * boolean or big number), pointing into the reply; 0 when the reply is
 * exhausted; -1 on a null, an error or malformed input (the walk stops). */
int resp_reply_next_scalar(const char **p, const char *end, const char **s, size_t *n);

#endif
