/* test_value_sort.c — storage/value/sort.h without a store: the pattern
 * substitution's edge cases (lookupKeyByPattern reads the pattern as a C
 * string), option parsing and the sort rules over an in-memory fetch. The
 * differential test (tests/integration/test_diff_bits.py) compares whole
 * SORT replies with redis-server. */
#include <stdio.h>
#include <string.h>
#include "test.h"
#include "../../storage/value/sort.h"
#include "../../storage/status.h"

static int pat(const char *p, size_t pl, const char *sub, char *key, size_t *kl, const char **f, size_t *fl)
{
    resp_arg a = { (char *)p, pl };
    return fd_sort_pattern(&a, sub, strlen(sub), key, kl, f, fl);
}

/* a tiny store: w_<x> strings and h_<x> hashes with field "f" */
static int fetch(void *ud, const char *key, size_t kl, const char *field, size_t fl, const char **v, size_t *vl)
{
    (void)ud;
    static const char *strings[][2] = { {"w_a", "3"}, {"w_b", "1"}, {"w_c", "2"}, {"o_a", "A"}, {NULL, NULL} };
    if (field) {
        if (fl == 1 && *field == 'f' && kl == 3 && !memcmp(key, "h_b", 3)) { *v = "0"; *vl = 1; return 1; }
        return 0;
    }
    for (int i = 0; strings[i][0]; i++)
        if (strlen(strings[i][0]) == kl && !memcmp(strings[i][0], key, kl)) {
            *v = strings[i][1];
            *vl = strlen(*v);
            return 1;
        }
    return 0;
}

static int run(const char *line, int type, const char *want)
{
    char buf[256];
    resp_arg argv[32];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *t = strtok(buf, " "); t; t = strtok(NULL, " ")) argv[argc++] = (resp_arg){ t, strlen(t) };
    int gets[32];
    fd_sort o = { .gets = gets };
    const char *e = fd_sort_parse(argv, argc, 0, &o);
    resp_out out;
    resp_out_init(&out, 2);
    if (e) resp_add_error(&out, e);
    else {
        fd_sort_elem el[3] = { {"a", 1}, {"b", 1}, {"c", 1} };
        fd_sort_result r = {0};
        int replied;
        int s = fd_sort_exec(&o, argv, type, el, 3, fetch, NULL, &out, &r, &replied);
        if (s != FD_OK) { resp_out_free(&out); return 0; }
        if (!replied) {
            resp_add_int(&out, r.n);
            fd_sort_result_free(&r);
        }
    }
    int ok = out.len == strlen(want) && !memcmp(out.data, want, out.len);
    if (!ok) fprintf(stderr, "  %s\n    got: %.*s\n", line, (int)out.len, out.data);
    resp_out_free(&out);
    return ok;
}

int main(void)
{
    char key[64];
    size_t kl, fl;
    const char *f;
    CHECK(pat("#", 1, "x", key, &kl, &f, &fl) == 2);
    CHECK(pat("#\0junk", 6, "x", key, &kl, &f, &fl) == 2);          /* C string: "#" */
    CHECK(pat("nostar", 6, "x", key, &kl, &f, &fl) == 0);
    CHECK(pat("a\0*", 3, "x", key, &kl, &f, &fl) == 0);              /* the '*' is past the NUL */
    CHECK(pat("w_*", 3, "x", key, &kl, &f, &fl) == 1 && kl == 3 && !memcmp(key, "w_x", 3) && !f);
    CHECK(pat("h_*->fld", 8, "xy", key, &kl, &f, &fl) == 1 && kl == 4 && !memcmp(key, "h_xy", 4) &&
          f && fl == 3 && !memcmp(f, "fld", 3));
    CHECK(pat("h_*->", 5, "x", key, &kl, &f, &fl) == 1 && kl == 5 && !memcmp(key, "h_x->", 5) && !f);
    CHECK(pat("->*z", 4, "x", key, &kl, &f, &fl) == 1 && kl == 4 && !memcmp(key, "->xz", 4) && !f);
    CHECK(pat("*_*->a->b", 9, "x", key, &kl, &f, &fl) == 1 && kl == 3 && !memcmp(key, "x_*", 3) &&
          fl == 4 && !memcmp(f, "a->b", 4));

    CHECK(run("SORT k", FD_SORT_LIST, "-ERR One or more scores can't be converted into double\r\n"));
    CHECK(run("SORT k BY missing_*", FD_SORT_LIST, "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"));   /* all 0: by bytes */
    CHECK(run("SORT k BY w_*", FD_SORT_LIST, "*3\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\na\r\n"));
    CHECK(run("SORT k BY w_* DESC GET o_* GET #", FD_SORT_LIST,
              "*6\r\n$1\r\nA\r\n$1\r\na\r\n$-1\r\n$1\r\nc\r\n$-1\r\n$1\r\nb\r\n"));
    CHECK(run("SORT k BY h_*->f ALPHA", FD_SORT_LIST, "*3\r\n$1\r\na\r\n$1\r\nc\r\n$1\r\nb\r\n"));
    CHECK(run("SORT k BY nosort DESC LIMIT 1 5", FD_SORT_LIST, "*2\r\n$1\r\nb\r\n$1\r\na\r\n"));
    CHECK(run("SORT k BY nosort DESC", FD_SORT_SET, "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"));
    CHECK(run("SORT k BY nosort DESC STORE d", FD_SORT_SET, ":3\r\n"));
    CHECK(run("SORT k ALPHA LIMIT 5 1", FD_SORT_LIST, "*0\r\n"));
    CHECK(run("SORT k ALPHA LIMIT 0 9223372036854775807", FD_SORT_LIST, "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"));
    CHECK(run("SORT k ALPHA LIMIT 9223372036854775807 9223372036854775807", FD_SORT_LIST, "*0\r\n"));
    CHECK(run("SORT k LIMIT x 1", FD_SORT_LIST, "-ERR value is not an integer or out of range\r\n"));
    CHECK(run("SORT k LIMIT 1", FD_SORT_LIST, "-ERR syntax error\r\n"));
    CHECK(run("SORT k BY o_*", FD_SORT_LIST, "-ERR One or more scores can't be converted into double\r\n"));
    return TEST_DONE();
}
