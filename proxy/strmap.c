/* strmap.c — see strmap.h. */
#include "strmap.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ULL;              /* FNV-1a */
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)p[i]; h *= 1099511628211ULL; }
    return h;
}

px_strent *px_strmap_get(const px_strmap *m, const char *name, size_t len) {
    if (!m->nb) return NULL;
    uint64_t h = hash_bytes(name, len);
    for (px_strent *e = m->b[h & (m->nb - 1)]; e; e = e->next)
        if (e->hash == h && e->len == len && !memcmp(e->name, name, len)) return e;
    return NULL;
}

static int grow(px_strmap *m) {
    size_t nb = m->nb ? m->nb * 2 : 16;
    px_strent **b = calloc(nb, sizeof *b);
    if (!b) return -1;
    for (size_t i = 0; i < m->nb; i++) {
        for (px_strent *e = m->b[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
        }
    }
    free(m->b);
    m->b = b;
    m->nb = nb;
    return 0;
}

px_strent *px_strmap_add(px_strmap *m, const char *name, size_t len, size_t extra, int *created) {
    px_strent *e = px_strmap_get(m, name, len);
    if (created) *created = 0;
    if (e) return e;
    if (m->count >= m->nb && grow(m) && !m->nb) return NULL;
    extra = (extra + 15) & ~(size_t)15;
    e = calloc(1, sizeof *e + extra + len + 1);
    if (!e) return NULL;
    e->hash = hash_bytes(name, len);
    e->len = len;
    e->name = (char *)(e + 1) + extra;
    memcpy(e->name, name, len);
    e->next = m->b[e->hash & (m->nb - 1)];
    m->b[e->hash & (m->nb - 1)] = e;
    m->count++;
    if (created) *created = 1;
    return e;
}

void px_strmap_del(px_strmap *m, px_strent *e) {
    for (px_strent **pp = &m->b[e->hash & (m->nb - 1)]; *pp; pp = &(*pp)->next) {
        if (*pp == e) {
            *pp = e->next;
            m->count--;
            free(e);
            return;
        }
    }
}

void px_strmap_each(const px_strmap *m, void (*fn)(px_strent *e, void *arg), void *arg) {
    for (size_t i = 0; i < m->nb; i++)
        for (px_strent *e = m->b[i]; e; e = e->next) fn(e, arg);
}

void px_strmap_clear(px_strmap *m) {
    for (size_t i = 0; i < m->nb; i++)
        for (px_strent *e = m->b[i], *next; e; e = next) { next = e->next; free(e); }
    free(m->b);
    m->b = NULL;
    m->nb = m->count = 0;
}
