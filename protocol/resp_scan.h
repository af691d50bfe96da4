/* resp_scan.h — find where one complete RESP2/RESP3 *reply* ends in a byte
 * stream, without building any object. Used by proxies that pass a server's
 * replies on byte for byte (the Redis backend). Pure: no I/O.
 *
 * Incremental: the scanner keeps its position and one counter of the values
 * still expected, so a large reply arriving in many reads is scanned once
 * (O(n) overall). Any nesting depth is accepted in constant memory and
 * without recursion: a proxy must pass whatever its server legitimately
 * answers (Redis cuts a self-referencing Lua table at its own depth, which
 * may be deeper than any fixed limit here).
 */
#ifndef FRONTDOOR_RESP_SCAN_H
#define FRONTDOOR_RESP_SCAN_H

#include <stddef.h>

/* Largest element count one aggregate header may announce, and the bound of
 * the values outstanding in one reply (an error beyond: the counter cannot
 * overflow). */
#define RESP_SCAN_MAX_ELEMENTS (1LL << 40)
#define RESP_SCAN_MAX_OUTSTANDING (1LL << 60)

typedef struct resp_scanner {
    size_t    pos;          /* bytes of the current reply scanned so far */
    long long outstanding;  /* values still expected before the reply is complete
                               (starts at 1; an aggregate of n adds n - 1, an
                               attribute of n pairs adds 2n: it annotates the
                               value after it) */
    const char *err;        /* static text after an error */
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
