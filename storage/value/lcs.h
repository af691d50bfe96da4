/* lcs.h — LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]
 * (Redis 7.0 t_string.c) as pure functions over the two strings.
 *
 * Module prefix: fd_lcs. Wiring, in Redis's order:
 *   1. look both keys up; if either exists and is not a string, reply
 *      FD_LCS_ERR_TYPE (nothing else is checked first); a missing key is "".
 *   2. fd_lcs_parse(argv, argc, &o): NULL or the error text to reply.
 *   3. fd_lcs_reply(&o, a, alen, b, blen, max_bulk, out).
 * Read-only: nothing is stored.
 */
#ifndef FRONTDOOR_VALUE_LCS_H
#define FRONTDOOR_VALUE_LCS_H

#include <stddef.h>
#include "../../protocol/resp.h"

extern const char FD_LCS_ERR_TYPE[];   /* "ERR The specified keys must contain string values" */

typedef struct fd_lcs {
    int       getlen, getidx, withmatchlen;
    long long minmatchlen;   /* 0: every match; negative values are 0 */
} fd_lcs;

/* Options from argv[3]: "ERR syntax error", "ERR value is not an integer or
 * out of range" (MINMATCHLEN), then "ERR If you want both the length and
 * indexes, please just use IDX.". */
const char *fd_lcs_parse(const resp_arg *argv, int argc, fd_lcs *o);

/* Compute the LCS with Redis's dynamic programming table (alen+1)*(blen+1)
 * uint32 cells, and write the reply: the LCS string (bulk), its length
 * (LEN), or with IDX a map (RESP3; RESP2: a flat array) "matches" ->
 * [[[a_start, a_end], [b_start, b_end](, len)]...] from the end of the
 * strings, then "len" -> the length. Errors written as replies: "ERR String
 * too long for LCS", "ERR Insufficient memory, transient memory for LCS
 * exceeds proto-max-bulk-len" (the table above max_bulk; <= 0: 512 MB),
 * "ERR Insufficient memory, failed allocating transient memory for LCS".
 * The table is heap memory for the call only. Returns 0, -1 when out could
 * not grow. */
int fd_lcs_reply(const fd_lcs *o, const unsigned char *a, size_t alen, const unsigned char *b, size_t blen,
                 long long max_bulk, resp_out *out);

#endif
