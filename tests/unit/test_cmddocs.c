/* test_cmddocs.c — syntax lines become COMMAND DOCS arguments that redis-cli
 * renders back into the same hint; and every row of the table parses. */
#include "test.h"
#include "proxy/cmddocs.h"
#include "proxy/commands.h"

static void round_trip(const char *syntax, const char *want) {
    char buf[1024];
    CHECK(px_docs_render(syntax, buf, sizeof buf) == 0);
    if (strcmp(buf, want)) fprintf(stderr, "  render(%s)\n     got: %s\n    want: %s\n", syntax, buf, want);
    CHECK(strcmp(buf, want) == 0);
}

int main(void) {
    round_trip("key", "key");
    round_trip("key...", "key [key ...]");
    round_trip("key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]",
               "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]");
    round_trip("(key value)...", "key value [key value ...]");
    round_trip("cursor [MATCH pattern] [COUNT count] [TYPE type]", "cursor [MATCH pattern] [COUNT count] [TYPE type]");
    round_trip("key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]",
               "key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]");
    round_trip("", "");
    char buf[64];
    CHECK(px_docs_render("key [NX", buf, sizeof buf) == -1);
    CHECK(px_docs_render("key ]", buf, sizeof buf) == -1);

    /* the RESP shape of one argument */
    resp_out o;
    resp_out_init(&o, 2);
    CHECK(px_docs_add_arguments(&o, "[GET]") == 0);
    CHECK_MEM(o.data, o.len, "*1\r\n*8\r\n$4\r\nname\r\n$3\r\nget\r\n$4\r\ntype\r\n$10\r\npure-token\r\n"
                             "$5\r\ntoken\r\n$3\r\nGET\r\n$5\r\nflags\r\n*1\r\n+optional\r\n");
    resp_out_free(&o);

    /* every row of the table has a syntax that parses */
    fd_commands_init();
    size_t n;
    fd_command *t = fd_commands_table(&n);
    for (size_t i = 0; i < n; i++) {
        if (!t[i].args) continue;
        int ok = px_docs_render(t[i].args, buf, sizeof buf) == 0;
        if (!ok) fprintf(stderr, "  %s: bad syntax '%s'\n", t[i].name, t[i].args);
        CHECK(ok);
    }
    return TEST_DONE();
}
