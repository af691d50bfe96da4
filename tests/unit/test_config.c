/* test_config.c — the directive table: defaults, units, file parsing (quotes,
 * comments, errors naming directive and line), --name value, CONFIG GET. */
#include "test.h"
#include "proxy/config.h"
#include "storage/lmdb_settings.h"
#include "storage/backend.h"

#include <stdlib.h>
#include <unistd.h>

static const char *write_tmp(const char *text) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/fd-test-config-%d.conf", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

int main(void) {
    char err[1024];
    px_config_init();
    CHECK(px_cfg.port == 6380);
    CHECK(!strcmp(px_cfg.bind, "127.0.0.1"));
    CHECK(!strcmp(px_cfg.be.backend, "lmdb"));
    CHECK(!strcmp(px_cfg.be.dir, "./frontdoor-data"));
    CHECK(px_cfg.be.durability == 1);
    CHECK(px_cfg.proto_max_bulk_len == 512LL * 1024 * 1024);

    /* units as Redis's memtoll */
    const fd_lmdb_settings *lms = px_backend_options(&px_cfg.be, &fd_lmdb_options);   /* the backend's own struct */
    CHECK(lms && lms->map_size == 4LL << 30);
    CHECK(px_config_set("lmdb-map-size", "2gb", 0, err, sizeof err) == 0 && lms->map_size == 2LL << 30);
    CHECK(px_config_set("lmdb-map-size", "3m", 0, err, sizeof err) == 0 && lms->map_size == 3000000);
    CHECK(px_config_set("lmdb-map-size", "12xb", 0, err, sizeof err) == -1);

    /* every registered backend's rows are directives with an ab- twin, each
     * landing in that backend's own struct (primary and secondary apart);
     * a set shared by two backends (redis, redis-cluster) is one struct */
    for (const fd_backend_ops *const *b = fd_backend_list(); *b; b++) {
        const fd_option_set *set = (*b)->options;
        if (!set) continue;
        CHECK(px_backend_options(&px_cfg.be, set) != NULL);
        CHECK(px_backend_options(&px_cfg.be, set) != px_backend_options(&px_cfg.ab, set));
        for (size_t i = 0; i < set->nrows; i++) {
            char name[64], buf[256];
            snprintf(name, sizeof name, "ab-%s", set->rows[i].name);
            CHECK(px_config_format(set->rows[i].name, buf, sizeof buf) == 0 && px_config_format(name, buf, sizeof buf) == 0);
            CHECK(px_config_group(set->rows[i].name) == PX_CFG_PRIMARY && px_config_group(name) == PX_CFG_AB);
            if (set->rows[i].type == FD_OPT_STR) {
                CHECK(px_config_set(name, "x y", 0, err, sizeof err) == 0);
                const char *const *slot = (const char *const *)((const char *)px_backend_options(&px_cfg.ab, set) + set->rows[i].off);
                CHECK(!strcmp(*slot, "x y"));
                CHECK(px_config_set(name, set->rows[i].def, 0, err, sizeof err) == 0);
            }
        }
    }
    const fd_backend_ops *rb = fd_backend_find("redis"), *rcb = fd_backend_find("redis-cluster");
    if (rb && rcb) CHECK(rb->options == rcb->options && rb->options != NULL);
    CHECK(px_config_set("port", "70000", 0, err, sizeof err) == -1 && strstr(err, "between"));
    CHECK(px_config_set("port", "abc", 0, err, sizeof err) == -1);
    CHECK(px_config_set("durability", "NOSYNC", 0, err, sizeof err) == 0 && px_cfg.be.durability == 0);
    CHECK(px_config_set("durability", "maybe", 0, err, sizeof err) == -1 && strstr(err, "sync"));
    CHECK(px_config_set("nope", "1", 0, err, sizeof err) == -1 && strstr(err, "nope"));
    /* runtime refuses immutable directives */
    CHECK(px_config_set("port", "7000", 1, err, sizeof err) == -1 && strstr(err, "immutable"));
    CHECK(px_config_set("timeout", "5", 1, err, sizeof err) == 0 && px_cfg.timeout == 5);
    /* compat constants */
    CHECK(px_config_set("save", "", 0, err, sizeof err) == 0);
    CHECK(px_config_set("appendonly", "yes", 0, err, sizeof err) == -1);

    /* a file: quotes, comments, blank lines */
    const char *p = write_tmp("# comment\n\nport 7001\nrequirepass \"a b\\x41\"\n  dir '/tmp/x y'\nbind \"127.0.0.1 ::1\"\n");
    CHECK(px_config_load_file(p, err, sizeof err) == 0);
    CHECK(px_cfg.port == 7001);
    CHECK(!strcmp(px_cfg.requirepass, "a bA"));
    CHECK(!strcmp(px_cfg.be.dir, "/tmp/x y"));
    CHECK(!strcmp(px_cfg.bind, "127.0.0.1 ::1"));

    /* errors name the file line and the directive */
    p = write_tmp("port 7002\n\nfrobnicate 1\n");
    CHECK(px_config_load_file(p, err, sizeof err) == -1 && strstr(err, ":3:") && strstr(err, "frobnicate"));
    p = write_tmp("maxclients many\n");
    CHECK(px_config_load_file(p, err, sizeof err) == -1 && strstr(err, ":1:") && strstr(err, "maxclients"));
    p = write_tmp("requirepass \"unterminated\n");
    CHECK(px_config_load_file(p, err, sizeof err) == -1 && strstr(err, "quotes"));
    unlink(p);

    /* command line, as redis-server */
    char *argv1[] = {"frontdoor", "--port", "7100", "--bind", "127.0.0.1", "--timeout", "3", NULL};
    CHECK(px_config_from_args(7, argv1, err, sizeof err) == 0 && px_cfg.port == 7100 && px_cfg.timeout == 3);
    char *argv2[] = {"frontdoor", "--bogus", "1", NULL};
    CHECK(px_config_from_args(3, argv2, err, sizeof err) == -1 && strstr(err, "bogus"));
    char *argv3[] = {"frontdoor", "--port", NULL};
    CHECK(px_config_from_args(2, argv3, err, sizeof err) == -1 && strstr(err, "port"));

    /* CONFIG GET with globs: a map (flat array in RESP2) */
    resp_out o;
    resp_out_init(&o, 2);
    resp_arg pat = {"maxclient*", 10};
    px_config_get_reply(&o, 1, &pat);
    CHECK_MEM(o.data, o.len, "*2\r\n$10\r\nmaxclients\r\n$5\r\n10000\r\n");
    o.len = 0;
    resp_arg pats[2] = {{"save", 4}, {"appendonly", 10}};
    px_config_get_reply(&o, 2, pats);
    CHECK_MEM(o.data, o.len, "*4\r\n$10\r\nappendonly\r\n$2\r\nno\r\n$4\r\nsave\r\n$0\r\n\r\n");
    resp_out_free(&o);

    /* notify-keyspace-events: Redis 7.0's notify.c parsing and canonical form */
    char nf[32];
    CHECK(px_notify_parse("Q") == -1 && px_notify_parse("KEa") == -1 && px_notify_parse("") == 0);
    CHECK(px_notify_parse("A") == PX_NOTIFY_ALL && !(PX_NOTIFY_ALL & (PX_NOTIFY_KEY_MISS | PX_NOTIFY_NEW)));
    px_notify_format(px_notify_parse("Kx"), nf, sizeof nf);
    CHECK(!strcmp(nf, "xK"));
    px_notify_format(px_notify_parse("nmEAK"), nf, sizeof nf);
    CHECK(!strcmp(nf, "AKEm"));
    px_notify_format(px_notify_parse("ntd$g"), nf, sizeof nf);
    CHECK(!strcmp(nf, "g$tdn"));
    /* a value that delivers events: accepted where the primary delivers them (lmdb) */
    CHECK(px_config_set("notify-keyspace-events", "KEA", 1, err, sizeof err) == 0
          && px_cfg.notify_keyspace_events == (PX_NOTIFY_ALL | PX_NOTIFY_KEYSPACE | PX_NOTIFY_KEYEVENT));
    CHECK(px_config_set("notify-keyspace-events", "gx", 1, err, sizeof err) == 0
          && px_cfg.notify_keyspace_events == (PX_NOTIFY_GENERIC | PX_NOTIFY_EXPIRED));
    return TEST_DONE();
}
