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
#endif
