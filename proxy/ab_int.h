/* ab_int.h — private to the A/B layer (ab.c: routing, pairs and units,
 * race tracking, calibration, samples, reports; ab_diff.c: reply text
 * forms, reply comparison, the key-state diff). Not for other modules. */
#ifndef FRONTDOOR_AB_INT_H
#define FRONTDOOR_AB_INT_H

#include "server.h"

#define AB_TEXT_MAX 512        /* bytes of a command or reply kept in a sample */
#define AB_DIFF_MAX 1024       /* bytes of a key diff */

/* A kept mismatch: the command (or unit) as text, both replies, and for a
 * divergence the key's state compared. Every pointer is owned (malloc). */
typedef struct ab_sample {
    long long  ms;             /* wall clock */
    char      *text, *rep[2];
    size_t     len[2];
    char      *diff;           /* the key's state compared (divergences with ab-mismatch-log diff) */
} ab_sample;

typedef struct span { const char *p; size_t n; } span;
int ab_span_cmp(const void *a, const void *b);

/* Printable form: bytes outside 0x20..0x7e as \xHH, quoted when `quote`
 * and the bytes hold blanks or quotes; at most max bytes (then "..."). */
size_t ab_printable(char *out, size_t max, const char *s, size_t n, int quote);
/* One RESP reply as redis-cli shows it, on one line, appended at out[*o]
 * (at most max-1 bytes in all). Returns the reply's bytes read, 0 if malformed. */
size_t ab_reply_text(const char *r, size_t len, char *out, size_t max, size_t *o);
/* Whether two replies of cmd are the same answer: bytes, or for
 * FD_CMD_UNORDERED commands the same elements in any order. */
int ab_replies_equal(const fd_command *cmd, const char *a, size_t al, const char *b, size_t bl);
/* The top-level elements of an aggregate reply (spans into r); count, or -1
 * when r is not an aggregate. *out is malloc'd (free it). */
long long ab_elements(const char *r, size_t len, span **out);

/* ab.c: keep a divergence sample (takes its contents) and log it. */
void ab_keep_divergence(ab_sample *s);

/* ab_diff.c: ask both sides for `key`'s state; once in, the diff text goes
 * into s->diff and s is kept (ab_keep_divergence). Takes s's contents and
 * `key` (malloc'd). Returns -1 (nothing taken) when out of memory. */
int ab_diff_divergence(ab_sample *s, char *key, size_t keylen);
/* FRONTDOOR AB KEY k: the key's state on both sides and what differs, as
 * a pending reply of c. */
void ab_diff_key_cmd(px_conn *c, const resp_arg *key);

#endif
