/* test.h — the smallest test harness: CHECK records a failure with its line
 * and goes on; TEST_MAIN prints "N passed, N failed" and sets the exit code. */
#ifndef FRONTDOOR_TEST_H
#define FRONTDOOR_TEST_H
#include <stdio.h>
#include <string.h>

static int t_passed, t_failed;
#define CHECK(cond) do { if (cond) t_passed++; else { t_failed++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_MEM(p, n, lit) CHECK((n) == sizeof(lit) - 1 && memcmp((p), (lit), (n)) == 0)
#define TEST_DONE() (printf("%d passed, %d failed\n", t_passed, t_failed), t_failed ? 1 : 0)

#include <stdint.h>
#include <stdlib.h>

/* A deterministic pseudo-random number in [0, n) (xorshift64*), advancing
 * *state (any non-zero seed): the same run every time. */
static inline uint32_t t_rnd(uint64_t *state, uint32_t n) {
    uint64_t x = *state;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    *state = x;
    return (uint32_t)((x * 0x2545F4914F6CDD1DULL) >> 33) % n;
}

/* The whole file at path, NUL-terminated, malloc'ed (the caller frees);
 * NULL when it cannot be read. */
static inline char *t_read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) { free(s); s = NULL; }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}
#endif
