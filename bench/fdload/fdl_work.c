/* fdl_work.c — see fdl_work.h. */
#include "fdl_work.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ rng */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void fdl_rng_seed(fdl_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t fdl_rng_next(fdl_rng *r) {
    uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = rotl(s[3], 45);
    return res;
}

double fdl_rng_unit(fdl_rng *r) { return (double)(fdl_rng_next(r) >> 11) * 0x1.0p-53; }

uint64_t fdl_rng_below(fdl_rng *r, uint64_t n) {
    /* Lemire's multiply-shift; the bias is < n / 2^64, negligible here */
    return (uint64_t)(((unsigned __int128)fdl_rng_next(r) * n) >> 64);
}

/* --------------------------------------------------------- distributions */

static double zeta(uint64_t n, double theta) {
    double s = 0;
    for (uint64_t i = 1; i <= n; i++) s += 1.0 / pow((double)i, theta);
    return s;
}

int fdl_dist_parse(fdl_dist *d, const char *spec, uint64_t keys, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    d->keys = keys ? keys : 1;
    const char *colon = strchr(spec, ':');
    size_t nl = colon ? (size_t)(colon - spec) : strlen(spec);
    if (nl == 7 && !strncasecmp(spec, "uniform", 7) && !colon) { d->kind = FDL_DIST_UNIFORM; return 0; }
    if (nl == 3 && !strncasecmp(spec, "seq", 3) && !colon) { d->kind = FDL_DIST_SEQ; return 0; }
    if (nl == 4 && !strncasecmp(spec, "zipf", 4)) {
        d->kind = FDL_DIST_ZIPF;
        d->theta = 0.99;
        if (colon) {
            char *end;
            d->theta = strtod(colon + 1, &end);
            if (*end || !(d->theta > 0 && d->theta < 1)) {
                snprintf(err, errlen, "zipf parameter must be a number in (0, 1), got '%s'", colon + 1);
                return -1;
            }
        }
        uint64_t n = d->keys;
        d->zetan = zeta(n, d->theta);
        d->zeta2 = zeta(2, d->theta);
        d->alpha = 1.0 / (1.0 - d->theta);
        d->eta = (1 - pow(2.0 / (double)n, 1 - d->theta)) / (1 - d->zeta2 / d->zetan);
        return 0;
    }
    if (nl == 3 && !strncasecmp(spec, "hot", 3)) {
        d->kind = FDL_DIST_HOT;
        d->hot_keys = 0.2; d->hot_ops = 0.8;
        if (colon && (sscanf(colon + 1, "%lf:%lf", &d->hot_keys, &d->hot_ops) != 2 || !(d->hot_keys > 0 && d->hot_keys < 1)
                      || !(d->hot_ops >= 0 && d->hot_ops <= 1))) {
            snprintf(err, errlen, "hot takes KEYS_SHARE:OPS_SHARE, both in (0,1), e.g. hot:0.01:0.9; got '%s'", colon + 1);
            return -1;
        }
        return 0;
    }
    snprintf(err, errlen, "unknown key distribution '%s' (uniform, zipf[:THETA], seq, hot[:KEYS:OPS])", spec);
    return -1;
}

uint64_t fdl_dist_next(fdl_dist *d, fdl_rng *r) {
    switch (d->kind) {
    case FDL_DIST_SEQ: { uint64_t v = d->seq_next++; if (d->seq_next >= d->keys) d->seq_next = 0; return v; }
    case FDL_DIST_ZIPF: {
        double u = fdl_rng_unit(r), uz = u * d->zetan;
        if (uz < 1.0) return 0;
        if (uz < 1.0 + pow(0.5, d->theta)) return d->keys > 1 ? 1 : 0;
        uint64_t v = (uint64_t)((double)d->keys * pow(d->eta * u - d->eta + 1, d->alpha));
        return v < d->keys ? v : d->keys - 1;
    }
    case FDL_DIST_HOT: {
        uint64_t hot = (uint64_t)((double)d->keys * d->hot_keys);
        if (hot < 1) hot = 1;
        if (hot >= d->keys) return fdl_rng_below(r, d->keys);
        if (fdl_rng_unit(r) < d->hot_ops) return fdl_rng_below(r, hot);
        return hot + fdl_rng_below(r, d->keys - hot);
    }
    default: return fdl_rng_below(r, d->keys);
    }
}

static int parse_u64(const char *s, size_t n, uint64_t *out) {
    if (!n || n > 18) return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i])) return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

int fdl_size_parse(fdl_size *s, const char *spec, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    const uint64_t cap = 512u * 1024 * 1024;
    if (strchr(spec, ':')) {
        const char *p = spec;
        double total = 0;
        s->lo = UINT64_MAX;
        while (*p) {
            const char *colon = strchr(p, ':'), *comma = strchr(p, ',');
            if (!comma) comma = p + strlen(p);
            char *end;
            uint64_t sz;
            double w = colon && colon < comma ? strtod(colon + 1, &end) : -1;
            if (!colon || colon > comma || parse_u64(p, (size_t)(colon - p), &sz) || end != comma || !(w > 0) || sz > cap
                || s->n == FDL_SIZE_MAX_CHOICES) {
                snprintf(err, errlen, "value size list must be SIZE:WEIGHT,... (at most %d, sizes <= 512 MB, weights > 0), got '%s'",
                         FDL_SIZE_MAX_CHOICES, spec);
                return -1;
            }
            total += w;
            s->size[s->n] = sz;
            s->cum[s->n++] = total;
            if (sz < s->lo) s->lo = sz;
            if (sz > s->hi) s->hi = sz;
            p = *comma ? comma + 1 : comma;
        }
        for (int i = 0; i < s->n; i++) s->cum[i] /= total;
        return 0;
    }
    const char *dash = strchr(spec, '-');
    int bad = dash ? (parse_u64(spec, (size_t)(dash - spec), &s->lo) || parse_u64(dash + 1, strlen(dash + 1), &s->hi))
                   : parse_u64(spec, strlen(spec), &s->lo);
    if (!dash) s->hi = s->lo;
    if (bad || s->hi < s->lo || s->hi > cap) {
        snprintf(err, errlen, "value size must be N, A-B or SIZE:WEIGHT,... (bytes, at most 512 MB), got '%s'", spec);
        return -1;
    }
    return 0;
}

uint64_t fdl_size_next(const fdl_size *s, fdl_rng *r) {
    if (s->n) {
        double u = fdl_rng_unit(r);
        for (int i = 0; i < s->n - 1; i++) if (u < s->cum[i]) return s->size[i];
        return s->size[s->n - 1];
    }
    return s->lo == s->hi ? s->lo : s->lo + fdl_rng_below(r, s->hi - s->lo + 1);
}

/* ------------------------------------------------------------------ mix */

const char *const FDL_SHORTCUTS[] = {
    "ping=PING",
    "get=GET {key}",
    "set=SET {key} {value}",
    "del=DEL {key}",
    "exists=EXISTS {key}",
    "incr=INCR counter:{id}",
    "mget=MGET {key} {key} {key} {key} {key} {key} {key} {key} {key} {key}",
    "lpush=LPUSH list:{id} {value}",
    "rpush=RPUSH list:{id} {value}",
    "lpop=LPOP list:{id}",
    "rpop=RPOP list:{id}",
    "lrange=LRANGE list:{id} 0 99",
    "sadd=SADD set:{id} {member}",
    "spop=SPOP set:{id}",
    "sismember=SISMEMBER set:{id} {member}",
    "hset=HSET hash:{id} {field} {value}",
    "hget=HGET hash:{id} {field}",
    "hgetall=HGETALL hash:{id}",
    "zadd=ZADD zset:{id} {score} {member}",
    "zrange=ZRANGE zset:{id} 0 9",
    "zscore=ZSCORE zset:{id} {member}",
    "expire=EXPIRE {key} 3600",
    NULL,
};

static const char *shortcut(const char *name, size_t n) {
    for (int i = 0; FDL_SHORTCUTS[i]; i++) {
        const char *eq = strchr(FDL_SHORTCUTS[i], '=');
        if ((size_t)(eq - FDL_SHORTCUTS[i]) == n && !strncasecmp(FDL_SHORTCUTS[i], name, n)) return eq + 1;
    }
    return NULL;
}

static const struct { const char *name; int kind; } PH[] = {
    {"{key}", FDL_P_KEY}, {"{id}", FDL_P_ID}, {"{value}", FDL_P_VALUE}, {"{member}", FDL_P_MEMBER},
    {"{field}", FDL_P_FIELD}, {"{score}", FDL_P_SCORE}, {"{int}", FDL_P_INT},
};

/* Split text (owned by e) into args and parts. */
static int compile(fdl_entry *e, char *err, size_t errlen) {
    char *t = e->text;
    int cap = 8;
    e->argv = calloc((size_t)cap, sizeof *e->argv);
    for (char *p = t; *p;) {
        while (*p == ' ') p++;
        if (!*p) break;
        char *w = p;
        while (*p && *p != ' ') p++;
        if (*p) *p++ = 0;
        if (e->argc == cap) { cap *= 2; e->argv = realloc(e->argv, (size_t)cap * sizeof *e->argv); }
        fdl_arg *a = &e->argv[e->argc++];
        a->nparts = 0;
        a->parts = calloc(strlen(w) + 1, sizeof *a->parts);
        for (char *q = w; *q;) {
            int matched = 0;
            if (*q == '{') {
                for (size_t k = 0; k < sizeof PH / sizeof PH[0]; k++) {
                    size_t l = strlen(PH[k].name);
                    if (!strncmp(q, PH[k].name, l)) {
                        a->parts[a->nparts++] = (fdl_part){PH[k].kind, NULL, 0};
                        q += l; matched = 1;
                        break;
                    }
                }
                if (!matched && strchr(q, '}')) {
                    snprintf(err, errlen, "unknown placeholder in '%s' (known: {key} {id} {value} {member} {field} {score} {int})", w);
                    return -1;
                }
            }
            if (!matched) {
                char *s = q++;
                while (*q && *q != '{') q++;
                a->parts[a->nparts++] = (fdl_part){FDL_P_LIT, s, (size_t)(q - s)};
            }
        }
    }
    if (!e->argc) { snprintf(err, errlen, "empty command in --mix"); return -1; }
    return 0;
}

int fdl_mix_parse(fdl_mix *m, const char *spec, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    char *copy = strdup(spec), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        if (!*tok) continue;
        char *colon = strrchr(tok, ':');
        double w = 1;
        char *name = tok;
        if (colon) {
            char *end;
            w = strtod(colon + 1, &end);
            if (end == colon + 1 || *end || !(w >= 0)) {
                /* a colon that is part of the template, e.g. list:{id}, and no weight */
                if (strchr(colon, '{') || strchr(colon, ' ')) { w = 1; colon = NULL; }
                else { snprintf(err, errlen, "bad weight in --mix entry '%s'", tok); rc = -1; break; }
            }
            if (colon) *colon = 0;
        }
        const char *tmpl = strchr(name, ' ') ? NULL : shortcut(name, strlen(name));
        if (!tmpl && !strchr(name, ' ') && !strchr(name, '{')) {
            /* a bare command name that is not a shortcut: sent without arguments */
            tmpl = name;
        }
        m->e = realloc(m->e, (size_t)(m->n + 1) * sizeof *m->e);
        fdl_entry *e = &m->e[m->n++];
        memset(e, 0, sizeof *e);
        e->name = strdup(name);
        for (char *c = e->name; *c; c++) *c = (char)tolower((unsigned char)*c);
        e->weight = w;
        e->text = strdup(tmpl ? tmpl : name);
        if (compile(e, err, errlen)) { rc = -1; break; }
        m->total += w;
    }
    free(copy);
    if (!rc && (!m->n || m->total <= 0)) { snprintf(err, errlen, "--mix has no entry with a weight above 0"); rc = -1; }
    return rc;
}

void fdl_mix_free(fdl_mix *m) {
    for (int i = 0; i < m->n; i++) {
        for (int a = 0; a < m->e[i].argc; a++) free(m->e[i].argv[a].parts);
        free(m->e[i].argv);
        free(m->e[i].text);
        free(m->e[i].name);
    }
    free(m->e);
    memset(m, 0, sizeof *m);
}

int fdl_mix_pick(const fdl_mix *m, fdl_rng *r) {
    if (m->n == 1) return 0;
    double x = fdl_rng_unit(r) * m->total;
    for (int i = 0; i < m->n; i++) {
        if (x < m->e[i].weight) return i;
        x -= m->e[i].weight;
    }
    return m->n - 1;
}

/* --------------------------------------------------------------- encode */

void fdl_buf_reserve(fdl_buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + extra) nc *= 2;
    b->p = realloc(b->p, nc);
    if (!b->p) { fprintf(stderr, "fdload: out of memory\n"); exit(1); }
    b->cap = nc;
}

void fdl_buf_add(fdl_buf *b, const void *p, size_t n) {
    fdl_buf_reserve(b, n);
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static size_t fmt_u64(char *dst, uint64_t v) {
    char tmp[24];
    size_t n = 0;
    do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
    for (size_t i = 0; i < n; i++) dst[i] = tmp[n - 1 - i];
    return n;
}

static size_t fmt_id12(char *dst, uint64_t v) {
    for (int i = 11; i >= 0; i--) { dst[i] = (char)('0' + v % 10); v /= 10; }
    return 12;
}

void fdl_buf_bulk(fdl_buf *b, const void *p, size_t n) {
    fdl_buf_reserve(b, n + 32);
    char *d = b->p + b->len;
    *d++ = '$';
    d += fmt_u64(d, n);
    *d++ = '\r'; *d++ = '\n';
    memcpy(d, p, n);
    d += n;
    *d++ = '\r'; *d++ = '\n';
    b->len = (size_t)(d - b->p);
}

static void header(fdl_buf *b, char c, uint64_t n) {
    fdl_buf_reserve(b, 32);
    char *d = b->p + b->len;
    *d++ = c;
    d += fmt_u64(d, n);
    *d++ = '\r'; *d++ = '\n';
    b->len = (size_t)(d - b->p);
}

void fdl_encode(fdl_buf *out, const fdl_entry *e, fdl_gen *g) {
    header(out, '*', (uint64_t)e->argc);
    for (int a = 0; a < e->argc; a++) {
        const fdl_arg *arg = &e->argv[a];
        if (arg->nparts == 1 && arg->parts[0].kind == FDL_P_LIT) { fdl_buf_bulk(out, arg->parts[0].lit, arg->parts[0].len); continue; }
        if (arg->nparts == 1 && arg->parts[0].kind == FDL_P_VALUE) {
            uint64_t n = fdl_size_next(&g->size, &g->rng);
            fdl_buf_bulk(out, g->valbuf, n);
            continue;
        }
        /* small composite argument: expand into a scratch area then emit */
        char small[256];
        fdl_buf tmp = {small, 0, sizeof small};
        int heap = 0;
        for (int k = 0; k < arg->nparts; k++) {
            const fdl_part *p = &arg->parts[k];
            char num[32];
            size_t nl = 0;
            const char *src = num;
            switch (p->kind) {
            case FDL_P_LIT: src = p->lit; nl = p->len; break;
            case FDL_P_KEY: memcpy(num, "key:", 4); nl = 4 + fmt_id12(num + 4, fdl_dist_next(&g->dist, &g->rng)); break;
            case FDL_P_ID: nl = fmt_id12(num, fdl_dist_next(&g->dist, &g->rng)); break;
            case FDL_P_MEMBER: memcpy(num, "m:", 2); nl = 2 + fmt_u64(num + 2, fdl_rng_below(&g->rng, g->members)); break;
            case FDL_P_FIELD: memcpy(num, "f:", 2); nl = 2 + fmt_u64(num + 2, fdl_rng_below(&g->rng, g->members)); break;
            case FDL_P_SCORE: case FDL_P_INT: nl = fmt_u64(num, fdl_rng_below(&g->rng, 1000000)); break;
            case FDL_P_VALUE: src = g->valbuf; nl = fdl_size_next(&g->size, &g->rng); break;
            }
            if (tmp.len + nl > tmp.cap) {
                size_t nc = (tmp.len + nl) * 2;
                char *np = malloc(nc);
                memcpy(np, tmp.p, tmp.len);
                if (heap) free(tmp.p);
                tmp.p = np; tmp.cap = nc; heap = 1;
            }
            memcpy(tmp.p + tmp.len, src, nl);
            tmp.len += nl;
        }
        fdl_buf_bulk(out, tmp.p, tmp.len);
        if (heap) free(tmp.p);
    }
}

void fdl_encode_fill(fdl_buf *out, uint64_t id, fdl_gen *g) {
    char key[16] = "key:";
    fmt_id12(key + 4, id);
    header(out, '*', 3);
    fdl_buf_bulk(out, "SET", 3);
    fdl_buf_bulk(out, key, 16);
    fdl_buf_bulk(out, g->valbuf, fdl_size_next(&g->size, &g->rng));
}
