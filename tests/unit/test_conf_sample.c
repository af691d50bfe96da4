/* test_conf_sample.c — conf/frontdoor.conf and README's directive table
 * against the directive table (proxy/config.c):
 *   - the sample loads, and loading it changes no value (it documents the
 *     defaults);
 *   - every directive of the table appears in the sample, set ("name value")
 *     or commented out ("# name value", where there is no sensible default),
 *     except the ab- twins of the backend directives (the sample names the
 *     rule and ab-dir) and Redis's constants kept for tools (appendonly,
 *     databases, save: T_CONST rows);
 *   - every directive README's table names (first column) is in the table
 *     and in the sample.
 * On failure it prints the directive that is missing, and where. */
#include "test.h"
#include "proxy/config.h"

#include <ctype.h>
#include <stdlib.h>


/* CONFIG GET * as RESP2 text: "*N\r\n" then $len name, $len value pairs. */
static char *config_all(void) {
    resp_out o;
    resp_out_init(&o, 2);
    resp_arg star = {"*", 1};
    px_config_get_reply(&o, 1, &star);
    char *s = malloc(o.len + 1);
    memcpy(s, o.data, o.len);
    s[o.len] = '\0';
    resp_out_free(&o);
    return s;
}

/* The i-th bulk of a RESP2 array of bulks (into buf); 0 past the end. */
static int bulk_at(const char *resp, int i, char *buf, size_t len) {
    const char *p = strchr(resp, '\n') + 1;
    for (int k = 0; *p == '$'; k++) {
        long n = strtol(p + 1, NULL, 10);
        p = strchr(p, '\n') + 1;
        if (k == i) {
            snprintf(buf, len, "%.*s", (int)n, p);
            return 1;
        }
        p += n + 2;
    }
    return 0;
}

static int is_const(const char *name) {
    return !strcmp(name, "appendonly") || !strcmp(name, "databases") || !strcmp(name, "save");
}

/* 1 if the sample has a line "name value" or "# name value" (one value
 * word or a quoted value: not a sentence of a comment that starts with it). */
static int sample_has(const char *sample, const char *name) {
    size_t nl = strlen(name);
    for (const char *l = sample; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        const char *p = l;
        int commented = 0;
        if (*p == '#') { commented = 1; p++; if (*p == ' ') p++; }
        if (strncmp(p, name, nl) || (p[nl] != ' ' && p[nl] != '\t')) continue;
        if (!commented) return 1;
        p += nl;
        while (*p == ' ' || *p == '\t') p++;
        const char *e = strchr(p, '\n');
        if (!e) e = p + strlen(p);
        if (*p == '"' || !memchr(p, ' ', (size_t)(e - p))) return 1;
    }
    return 0;
}

int main(void) {
    char err[1024], name[128], val[4096];
    px_config_init();
    char *before = config_all();
    int rc = px_config_load_file(FD_SOURCE_DIR "/conf/frontdoor.conf", err, sizeof err);
    if (rc) fprintf(stderr, "conf/frontdoor.conf: %s\n", err);
    CHECK(rc == 0);
    char *after = config_all();
    for (int i = 0; bulk_at(before, 2 * i, name, sizeof name); i++) {
        char a[4096], b[4096];
        bulk_at(before, 2 * i + 1, a, sizeof a);
        bulk_at(after, 2 * i + 1, b, sizeof b);
        if (strcmp(a, b)) fprintf(stderr, "conf/frontdoor.conf sets %s to \"%s\", its default is \"%s\"\n", name, b, a);
        CHECK(!strcmp(a, b));
    }

    char *sample = t_read_file(FD_SOURCE_DIR "/conf/frontdoor.conf");
    char *readme = t_read_file(FD_SOURCE_DIR "/README.md");
    CHECK(sample && readme);
    if (!sample || !readme) return TEST_DONE();
    const char *table = strstr(readme, "| directive | default | meaning |");
    CHECK(table != NULL);
    if (!table) return TEST_DONE();

    int checked = 0;
    for (int i = 0; bulk_at(after, 2 * i, name, sizeof name); i++) {
        if (is_const(name)) continue;
        if (!strncmp(name, "ab-", 3) && px_config_group(name + 3) == PX_CFG_PRIMARY) continue;
        checked++;
        if (!sample_has(sample, name)) fprintf(stderr, "conf/frontdoor.conf lacks the directive %s\n", name);
        CHECK(sample_has(sample, name));
    }
    CHECK(checked > 40);

    /* README's table: each name is a directive (ab-<backend directive> is the rule) */
    int named = 0;
    for (const char *l = strchr(table, '\n') + 1; l && *l == '|'; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        const char *end = strstr(l + 1, " | ");
        for (const char *p = strchr(l, '`'); p && end && p < end; p = strchr(p, '`')) {
            const char *q = strchr(p + 1, '`');
            if (!q) break;
            snprintf(name, sizeof name, "%.*s", (int)(q - p - 1), p + 1);
            p = q + 1;
            if (strchr(name, '<')) continue;                 /* ab-<backend directive> */
            named++;
            int known = px_config_format(name, val, sizeof val) >= 0;
            if (!known) fprintf(stderr, "README's directive table names %s, which is no directive\n", name);
            CHECK(known);
            if (!sample_has(sample, name)) fprintf(stderr, "conf/frontdoor.conf lacks %s (README's table has it)\n", name);
            CHECK(sample_has(sample, name));
        }
    }
    CHECK(named > 40);
    free(before); free(after); free(sample); free(readme);
    return TEST_DONE();
}
