/* lcs.c — the LCS command (see lcs.h); rules and reply shapes of Redis 7.0
 * t_string.c, our own code. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "lcs.h"

const char FD_LCS_ERR_TYPE[] = "ERR The specified keys must contain string values";

static int opt_c(const resp_arg *a, const char *name)
{
    size_t n = strnlen(a->ptr, a->len);
    return n == strlen(name) && strncasecmp(a->ptr, name, n) == 0;
}

const char *fd_lcs_parse(const resp_arg *argv, int argc, fd_lcs *o)
{
    memset(o, 0, sizeof *o);
    for (int j = 3; j < argc; j++) {
        int more = argc - 1 - j;
        if (opt_c(&argv[j], "IDX")) o->getidx = 1;
        else if (opt_c(&argv[j], "LEN")) o->getlen = 1;
        else if (opt_c(&argv[j], "WITHMATCHLEN")) o->withmatchlen = 1;
        else if (opt_c(&argv[j], "MINMATCHLEN") && more) {
            if (resp_str2ll(argv[j + 1].ptr, argv[j + 1].len, &o->minmatchlen) != 0)
                return "ERR value is not an integer or out of range";
            if (o->minmatchlen < 0) o->minmatchlen = 0;
            j++;
        } else {
            return "ERR syntax error";
        }
    }
    if (o->getidx && o->getlen) return "ERR If you want both the length and indexes, please just use IDX.";
    return NULL;
}

typedef struct walk {
    const uint32_t *dp;
    size_t w;                 /* blen + 1 */
    const unsigned char *a, *b;
    size_t alen, blen;
} walk;

#define CELL(W, I, J) ((W)->dp[(size_t)(J) + (size_t)(I) * (W)->w])

/* Walk the table back from (alen, blen) as Redis does. lcs (may be NULL)
 * receives the LCS string; each contiguous match range is either counted
 * (out NULL) or written (out set). Returns the number of ranges kept. */
static long walk_back(const walk *W, const fd_lcs *o, unsigned char *lcs, resp_out *out, int *oom)
{
    size_t i = W->alen, j = W->blen, idx = CELL(W, W->alen, W->blen);
    size_t as = 0, ae = 0, bs = 0, be = 0;
    int open = 0;
    long kept = 0;
    while (i > 0 && j > 0) {
        int emit = 0;
        if (W->a[i - 1] == W->b[j - 1]) {
            if (lcs) lcs[idx - 1] = W->a[i - 1];
            if (!open) {
                as = ae = i - 1;
                bs = be = j - 1;
                open = 1;
            } else if (as == i && bs == j) {
                as--;
                bs--;
            } else {
                emit = 1;   /* cannot happen after a match step; kept as Redis has it */
            }
            if (as == 0 || bs == 0) emit = 1;
            idx--; i--; j--;
        } else {
            if (CELL(W, i - 1, j) > CELL(W, i, j - 1)) i--;
            else j--;
            if (open) emit = 1;
        }
        if (emit) {
            size_t mlen = ae - as + 1;
            if (o->minmatchlen == 0 || (long long)mlen >= o->minmatchlen) {
                if (out && !*oom) {
                    if (resp_add_array(out, 2 + o->withmatchlen) || resp_add_array(out, 2) ||
                        resp_add_int(out, (long long)as) || resp_add_int(out, (long long)ae) ||
                        resp_add_array(out, 2) || resp_add_int(out, (long long)bs) ||
                        resp_add_int(out, (long long)be) ||
                        (o->withmatchlen && resp_add_int(out, (long long)mlen)))
                        *oom = 1;
                }
                kept++;
            }
            open = 0;
        }
    }
    return kept;
}

int fd_lcs_reply(const fd_lcs *o, const unsigned char *a, size_t alen, const unsigned char *b, size_t blen,
                 long long max_bulk, resp_out *out)
{
    if (max_bulk <= 0) max_bulk = RESP_DEFAULT_MAX_BULK;
    if (alen >= UINT32_MAX - 1 || blen >= UINT32_MAX - 1)
        return resp_add_error(out, "ERR String too long for LCS");
    unsigned long long cells = (unsigned long long)(alen + 1) * (blen + 1);
    unsigned long long bytes = cells * sizeof(uint32_t);
    uint32_t *dp = NULL;
    if (bytes < SIZE_MAX && bytes / cells == sizeof(uint32_t)) {
        if (bytes > (unsigned long long)max_bulk)
            return resp_add_error(out, "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
        dp = malloc((size_t)bytes);
    }
    if (!dp) return resp_add_error(out, "ERR Insufficient memory, failed allocating transient memory for LCS");

    size_t w = blen + 1;
    for (size_t j = 0; j <= blen; j++) dp[j] = 0;
    for (size_t i = 1; i <= alen; i++) {
        uint32_t *row = dp + i * w, *up = row - w;
        row[0] = 0;
        for (size_t j = 1; j <= blen; j++) {
            if (a[i - 1] == b[j - 1]) row[j] = up[j - 1] + 1;
            else row[j] = up[j] > row[j - 1] ? up[j] : row[j - 1];
        }
    }
    walk W = { dp, w, a, b, alen, blen };
    uint32_t total = dp[alen * w + blen];
    int rc = 0, oom = 0;

    if (o->getidx) {
        long n = walk_back(&W, o, NULL, NULL, &oom);
        if (resp_add_map(out, 2) || resp_add_bulk_cstr(out, "matches") || resp_add_array(out, n)) rc = -1;
        if (!rc) walk_back(&W, o, NULL, out, &oom);
        if (!rc && (oom || resp_add_bulk_cstr(out, "len") || resp_add_int(out, total))) rc = -1;
    } else if (o->getlen) {
        rc = resp_add_int(out, total);
    } else {
        unsigned char *lcs = malloc(total ? total : 1);
        if (!lcs) {
            rc = resp_add_error(out, "ERR Insufficient memory, failed allocating transient memory for LCS");
        } else {
            walk_back(&W, o, lcs, NULL, &oom);
            rc = resp_add_bulk(out, lcs, total);
            free(lcs);
        }
    }
    free(dp);
    return rc;
}
