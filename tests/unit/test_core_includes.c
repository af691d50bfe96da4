/* test_core_includes.c — the build check of issue 26: proxy/'s core knows no
 * feature. Each core file (below) may include, of proxy/'s own headers, only
 * the core's (allowed[]): a feature (capture, scripting, pub/sub, MULTI,
 * blocking, slow log, metrics, A/B, ACL...) reaches the core through the
 * hooks it registers (proxy/hooks.h), never by the core naming it. System
 * headers <...> and the layers below ("../protocol/", "../storage/") are
 * free. On failure it prints the file and the header.
 *
 * A file added to the core goes in core[]; a header allowed to it must be a
 * core header itself (and is then checked too: it is in core[]). */
#include "test.h"


static const char *const core[] = {
    "server.c", "dispatch.c", "pending.c", "backends.c", "hooks.c", "call.c", "reply.c", "tls.c",
    "server.h", "backends.h", "hooks.h", "config.h", "log.h", "commands.h", "tls.h",
};
/* tls.h: the connections' transport (plain or TLS) is the core's */
static const char *const allowed[] = {
    "server.h", "backends.h", "hooks.h", "config.h", "log.h", "commands.h", "tls.h",
};

static int is_allowed(const char *name, size_t n) {
    if (n >= 3 && !memcmp(name, "../", 3)) return 1;     /* protocol/, storage/ */
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (strlen(allowed[i]) == n && !memcmp(allowed[i], name, n)) return 1;
    return 0;
}

/* The quoted includes of one file that are not allowed: how many (printed). */
static int bad_includes(const char *file, const char *text) {
    int bad = 0;
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *p = l;
        while (*p == ' ' || *p == '\t') p++;
        if (*p != '#') continue;
        p++;
        while (*p == ' ' || *p == '\t') p++;
        if (strncmp(p, "include", 7)) continue;
        p += 7;
        while (*p == ' ' || *p == '\t') p++;
        if (*p != '"') continue;                         /* <system> */
        const char *name = p + 1, *end = strchr(name, '"');
        if (!end) continue;
        if (!is_allowed(name, (size_t)(end - name))) {
            fprintf(stderr, "proxy/%s includes \"%.*s\": a feature header in the core (use a hook: proxy/hooks.h)\n",
                    file, (int)(end - name), name);
            bad++;
        }
    }
    return bad;
}

/* The checker itself: it finds a feature include, and passes the allowed ones. */
static void self_test(void) {
    fprintf(stderr, "(self-test: one complaint expected)\n");
    CHECK(bad_includes("self-test.c", "#include \"server.h\"\n#  include \"multi.h\" /* x */\n#include <stdio.h>\n") == 1);
    CHECK(bad_includes("self-test.c", "#include \"../storage/backend.h\"\n#include \"hooks.h\"\n") == 0);
}

int main(void) {
    self_test();
    for (size_t i = 0; i < sizeof core / sizeof core[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/proxy/%s", FD_SOURCE_DIR, core[i]);
        char *text = t_read_file(path);
        CHECK(text != NULL);
        if (!text) { fprintf(stderr, "cannot read %s\n", path); continue; }
        CHECK(bad_includes(core[i], text) == 0);
        free(text);
    }
    return TEST_DONE();
}
