/* fdl_work.h — what fdload sends: the command mix, key distributions,
 * value sizes, and the RESP encoding of one generated command.
 *
 * A mix is a list of entries "TEMPLATE:WEIGHT" (commas between entries).
 * TEMPLATE is a shortcut name (get, set, incr, ... see FDL_SHORTCUTS) or a
 * command with placeholders, words split on spaces:
 *   {key}    "key:" + a 12-digit key id drawn from the key distribution
 *   {id}     the 12-digit key id alone (e.g. "list:{id}")
 *   {value}  a value of a size drawn from the value-size distribution
 *   {member} "m:" + a member id, uniform over --members
 *   {field}  "f:" + a field id, uniform over --members
 *   {score}  an integer score, uniform 0..999999
 *   {int}    an integer, uniform 0..999999
 * Every {key}/{id} occurrence draws its own key. Templates cannot contain
 * commas. Errors are reported as text (err), never by exiting.
 */
#ifndef FDL_WORK_H
#define FDL_WORK_H

#include <stddef.h>
#include <stdint.h>

/* ---- random numbers: xoshiro256** seeded with splitmix64 */
typedef struct fdl_rng { uint64_t s[4]; } fdl_rng;
void     fdl_rng_seed(fdl_rng *r, uint64_t seed);
uint64_t fdl_rng_next(fdl_rng *r);
double   fdl_rng_unit(fdl_rng *r);              /* [0, 1) */
uint64_t fdl_rng_below(fdl_rng *r, uint64_t n); /* [0, n), n > 0 */

/* ---- key distributions over ids [0, keys) */
enum { FDL_DIST_UNIFORM, FDL_DIST_ZIPF, FDL_DIST_SEQ, FDL_DIST_HOT };
typedef struct fdl_dist {
    int      kind;
    uint64_t keys;
    uint64_t seq_next;                     /* seq: next id */
    double   hot_keys, hot_ops;            /* hot: share of keys that get hot_ops of the operations */
    double   theta, zetan, alpha, eta, zeta2; /* zipf (Gray et al., YCSB's generator), 0 < theta < 1 */
} fdl_dist;
/* Parse "uniform", "zipf[:THETA]" (0.99), "seq", "hot[:KEYS_SHARE:OPS_SHARE]"
 * (0.2:0.8). zipf precomputes zeta(keys) once (O(keys)). -1 with err. */
int      fdl_dist_parse(fdl_dist *d, const char *spec, uint64_t keys, char *err, size_t errlen);
uint64_t fdl_dist_next(fdl_dist *d, fdl_rng *r);

/* ---- value sizes: "N" fixed, "A-B" uniform in [A, B], or a weighted list
 * "N:W,N:W,..." (e.g. 100:90,4096:10: 90 % 100-byte values, 10 % 4 KB);
 * lo/hi are the smallest and largest size either way. */
#define FDL_SIZE_MAX_CHOICES 32
typedef struct fdl_size {
    uint64_t lo, hi;
    int      n;                              /* weighted list: entries (0 = fixed/uniform) */
    uint64_t size[FDL_SIZE_MAX_CHOICES];
    double   cum[FDL_SIZE_MAX_CHOICES];      /* cumulative weights */
} fdl_size;
int      fdl_size_parse(fdl_size *s, const char *spec, char *err, size_t errlen);
uint64_t fdl_size_next(const fdl_size *s, fdl_rng *r);

/* ---- the mix */
enum { FDL_P_LIT, FDL_P_KEY, FDL_P_ID, FDL_P_VALUE, FDL_P_MEMBER, FDL_P_FIELD, FDL_P_SCORE, FDL_P_INT };
typedef struct fdl_part { int kind; const char *lit; size_t len; } fdl_part;
typedef struct fdl_arg  { int nparts; fdl_part *parts; } fdl_arg;
typedef struct fdl_entry {
    char    *name;          /* shortcut name or the template as given */
    double   weight;
    int      argc;
    fdl_arg *argv;
    uint64_t sent;          /* counters kept by the caller */
    char    *text;          /* owns the literal parts */
} fdl_entry;
typedef struct fdl_mix {
    int        n;
    fdl_entry *e;
    double     total;
} fdl_mix;
int  fdl_mix_parse(fdl_mix *m, const char *spec, char *err, size_t errlen);
void fdl_mix_free(fdl_mix *m);
/* Pick an entry by weight. */
int  fdl_mix_pick(const fdl_mix *m, fdl_rng *r);
/* The shortcut list as "name=TEMPLATE" lines (for --help). */
extern const char *const FDL_SHORTCUTS[];

/* Everything needed to draw placeholders. */
typedef struct fdl_gen {
    fdl_rng  rng;
    fdl_dist dist;
    fdl_size size;
    uint64_t members;
    const char *valbuf;     /* at least size.hi bytes */
} fdl_gen;

/* A growable byte buffer. */
typedef struct fdl_buf { char *p; size_t len, cap; } fdl_buf;
void fdl_buf_reserve(fdl_buf *b, size_t extra);
void fdl_buf_add(fdl_buf *b, const void *p, size_t n);
/* Append one RESP bulk string. */
void fdl_buf_bulk(fdl_buf *b, const void *p, size_t n);

/* Append the RESP multibulk of entry e, placeholders drawn from g. */
void fdl_encode(fdl_buf *out, const fdl_entry *e, fdl_gen *g);
/* Append "*1\r\n$3\r\nSET\r\n..." for SET key:<id> <value> (the fill phase). */
void fdl_encode_fill(fdl_buf *out, uint64_t id, fdl_gen *g);

#endif
