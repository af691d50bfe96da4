/* capture.c — traffic capture (see capture.h). */
#include "capture.h"
#include "hooks.h"
#include "builtin.h"
#include "commands.h"
#include "config.h"
#include "log.h"
#include "server.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define CAP_BUF (256 * 1024)

static int capture_received(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen);
int px_capture_armed;

static struct {
    int       fd;
    char     *path;                  /* the open file (a copy of capture-file) */
    char     *buf;
    size_t    len;
    uint64_t  t0;                    /* the loop's time at the first record, ns (0 = none yet) */
    uint64_t  last_t;                /* the latest record's time (ns after t0) */
    time_t    started;
    uint64_t  bytes, records, skipped;
    uint64_t  salt;
    int       timer_on;
    ev_timer  flush;
} cap = {.fd = -1};

/* ------------------------------------------------------------ writing */

static void close_file(const char *why) {
    if (cap.fd < 0) return;
    if (cap.len) {
        size_t off = 0;
        while (off < cap.len) {
            ssize_t w = write(cap.fd, cap.buf + off, cap.len - off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) break;
            off += (size_t)w;
        }
        cap.len = 0;
    }
    close(cap.fd);
    cap.fd = -1;
    px_capture_armed = 0;
    px_hook_arm(received, capture_received, 0);
    if (cap.timer_on && px_srv.loop) {
        ev_ref(px_srv.loop);          /* it was unref'ed when started (libev: ref before stopping) */
        ev_timer_stop(px_srv.loop, &cap.flush);
        cap.timer_on = 0;
    }
    px_log(PX_LOG_NOTICE, "capture %s stopped (%s): %llu commands, %llu bytes", cap.path ? cap.path : "?", why,
           (unsigned long long)cap.records, (unsigned long long)cap.bytes);
}

/* Write the buffer out; on an error the capture stops (logged). */
static int flush_buf(void) {
    size_t off = 0;
    while (off < cap.len) {
        ssize_t w = write(cap.fd, cap.buf + off, cap.len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            px_log(PX_LOG_WARNING, "capture %s: write failed: %s; capture stopped", cap.path, w < 0 ? strerror(errno) : "short write");
            cap.len = 0;
            close_file("write error");
            return -1;
        }
        off += (size_t)w;
    }
    cap.len = 0;
    return 0;
}

static void on_flush(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop; (void)w; (void)revents;
    if (cap.fd >= 0 && cap.len) flush_buf();
}

static void put(const void *p, size_t n) {
    if (cap.fd < 0) return;
    if (cap.len + n > CAP_BUF && flush_buf()) return;
    if (n > CAP_BUF) {            /* a huge command: straight to the file */
        ssize_t w;
        size_t off = 0;
        while (off < n && ((w = write(cap.fd, (const char *)p + off, n - off)) > 0 || (w < 0 && errno == EINTR)))
            if (w > 0) off += (size_t)w;
        if (off < n) { close_file("write error"); }
        return;
    }
    memcpy(cap.buf + cap.len, p, n);
    cap.len += n;
}

/* --------------------------------------------------------- privacy hash */

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Keyed 64-bit hash of a byte string (FNV-1a folded through splitmix's
 * finalizer, keyed by the capture's random salt): the same input gives the
 * same output within one capture, and nothing outside it. */
static uint64_t keyed_hash(const char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL ^ cap.salt;
    for (size_t i = 0; i < n; i++) { h ^= (unsigned char)p[i]; h *= 0x100000001b3ULL; }
    return mix64(h ^ n);
}

static int is_number(const char *p, size_t n) {
    if (!n || n > 24) return 0;
    size_t i = 0;
    int digits = 0;
    if (p[i] == '-' || p[i] == '+') i++;
    for (; i < n; i++) {
        if (isdigit((unsigned char)p[i])) digits++;
        else if (p[i] != '.' && p[i] != 'e' && p[i] != 'E' && p[i] != '-' && p[i] != '+') return 0;
    }
    return digits > 0;
}

/* Option words a command needs to mean the same thing (kept as they are). */
static int is_keyword(const char *p, size_t n) {
    static const char *const words[] = {
        "EX", "PX", "EXAT", "PXAT", "NX", "XX", "GT", "LT", "CH", "INCR", "KEEPTTL", "GET", "PERSIST",
        "WITHSCORES", "WITHSCORE", "LIMIT", "BYSCORE", "BYLEX", "REV", "COUNT", "MATCH", "TYPE", "WITHVALUES",
        "LEFT", "RIGHT", "BEFORE", "AFTER", "RANK", "MAXLEN", "IDX", "LEN", "MINMATCHLEN", "WITHMATCHLEN",
        "AGGREGATE", "SUM", "MIN", "MAX", "WEIGHTS", "STORE", "ASC", "DESC", "ALPHA", "BY", "REPLACE", "ABSTTL",
        "IDLETIME", "FREQ", "SETNAME", "GETNAME", "ID", "INFO", "LIST", "NO-EVICT", "ON", "OFF", "ENCODING",
        "REFCOUNT", "FLUSH", "ASYNC", "SYNC", "STRING", "HASH", "ZSET", "SET", "+INF", "-INF", "-", "+", NULL};
    if (!n || n > 12) return 0;
    for (int i = 0; words[i]; i++)
        if (strlen(words[i]) == n && !strncasecmp(words[i], p, n)) return 1;
    return 0;
}

static int is_key_position(const fd_command *cmd, int i, int argc) {
    if (!cmd || cmd->first_key <= 0 || i < cmd->first_key) return 0;
    int last = cmd->last_key < 0 ? argc + cmd->last_key : cmd->last_key;
    int step = cmd->key_step > 0 ? cmd->key_step : 1;
    return i <= last && (i - cmd->first_key) % step == 0;
}

static void put_bulk_header(char c, size_t n) {
    char h[32];
    int l = snprintf(h, sizeof h, "%c%zu\r\n", c, n);
    put(h, (size_t)l);
}

/* Encode argv as a RESP multibulk into the buffer; with hashing, every key
 * and every argument that is neither a number nor an option word becomes a
 * hex string of the keyed hash, cut or repeated to the argument's length. */
static size_t encoded_len(int argc, const resp_arg *argv) {
    size_t n = 16;
    for (int i = 0; i < argc; i++) n += argv[i].len + 24;
    return n;
}

static void put_args(int argc, const resp_arg *argv, int hash) {
    const fd_command *cmd = hash ? fd_command_lookup(argv[0].ptr, argv[0].len) : NULL;
    put_bulk_header('*', (size_t)argc);
    for (int i = 0; i < argc; i++) {
        const char *p = argv[i].ptr;
        size_t n = argv[i].len;
        put_bulk_header('$', n);
        int keep = !hash || i == 0 || (!is_key_position(cmd, i, argc) && (is_number(p, n) || is_keyword(p, n)));
        if (keep) put(p, n);
        else {
            uint64_t h = keyed_hash(p, n);
            static const char hex[] = "0123456789abcdef";
            char chunk[16];
            for (size_t off = 0; off < n; off += 16) {
                for (int k = 0; k < 16; k++) chunk[k] = hex[(h >> (4 * (k % 16))) & 15];
                h = mix64(h + 1);
                put(chunk, n - off < 16 ? n - off : 16);
            }
        }
        put("\r\n", 2);
    }
}

/* ------------------------------------------------------------- the hook */

void px_capture_command(uint64_t client, int argc, const resp_arg *argv, const char *raw, size_t rawlen) {
    if (cap.fd < 0 || argc < 1) return;
    if (!cap.timer_on && px_srv.loop) {
        ev_timer_init(&cap.flush, on_flush, 0.1, 0.1);
        ev_timer_start(px_srv.loop, &cap.flush);
        ev_unref(px_srv.loop);
        cap.timer_on = 1;
    }
    /* AUTH and HELLO carry passwords: never recorded */
    if ((argv[0].len == 4 && !strncasecmp(argv[0].ptr, "auth", 4)) || (argv[0].len == 5 && !strncasecmp(argv[0].ptr, "hello", 5))) {
        cap.skipped++;
        return;
    }
    if (px_cfg.capture_sample < 1.0) {
        double u = (double)(mix64(client ^ cap.salt) >> 11) * 0x1.0p-53;
        if (u >= px_cfg.capture_sample) { cap.skipped++; return; }
    }
    int hash = px_cfg.capture_hash;
    size_t body = (!hash && raw) ? rawlen : encoded_len(argc, argv);   /* an upper bound when encoding */
    if (px_cfg.capture_max_size > 0 && cap.bytes + PX_CAPTURE_RECORD_LEN + body > (uint64_t)px_cfg.capture_max_size) {
        close_file("capture-max-size reached");
        return;
    }
    /* the loop's time of this turn (when the read returned): no clock call per
     * command, and the commands of one read share their arrival time */
    uint64_t now = px_srv.loop ? (uint64_t)(ev_now(px_srv.loop) * 1e9) : fd_mono_ns();
    if (!cap.t0) cap.t0 = now;                                         /* the first command is time 0 */
    if (now < cap.t0 + cap.last_t) now = cap.t0 + cap.last_t;        /* never backwards */
    cap.last_t = now - cap.t0;
    px_capture_record rec = {cap.last_t, client, 0, hash ? PX_CAPTURE_F_HASHED : 0};
    if (!hash && raw) {
        rec.len = (uint32_t)rawlen;
        put(&rec, sizeof rec);
        put(raw, rawlen);
    } else {
        /* the length is known after encoding: reserve the header, then patch it */
        if (cap.len + sizeof rec + body > CAP_BUF && flush_buf()) return;
        if (sizeof rec + body > CAP_BUF) { cap.skipped++; return; }   /* too large to re-encode in the buffer */
        size_t at = cap.len;
        put(&rec, sizeof rec);
        put_args(argc, argv, hash);
        if (cap.fd < 0) return;
        rec.len = (uint32_t)(cap.len - at - sizeof rec);
        memcpy(cap.buf + at, &rec, sizeof rec);
    }
    cap.records++;
    cap.bytes += sizeof rec + rec.len;
}

/* --------------------------------------------------------------- control */

static void at_exit(void) { px_capture_stop(); }

int px_capture_apply(char *err, size_t errlen) {
    const char *want = px_cfg.capture_file ? px_cfg.capture_file : "";
    if (cap.fd >= 0 && cap.path && !strcmp(cap.path, want)) return 0;     /* same file: other settings apply as they are */
    if (cap.fd >= 0) close_file(want[0] ? "switched to another file" : "capture-file set to \"\"");
    if (!want[0]) return 0;
    if (!cap.buf && !(cap.buf = malloc(CAP_BUF))) { snprintf(err, errlen, "capture: out of memory"); return -1; }
    int fd = open(want, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "can't open the capture file '%s': %s", want, strerror(errno));
        return -1;
    }
    static int registered;
    if (!registered) { atexit(at_exit); registered = 1; }
    free(cap.path);
    cap.path = strdup(want);
    cap.fd = fd;
    cap.len = 0;
    cap.bytes = PX_CAPTURE_HEADER_LEN;
    cap.records = cap.skipped = 0;
    if (getrandom(&cap.salt, sizeof cap.salt, 0) != sizeof cap.salt) cap.salt = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ULL;
    cap.t0 = 0;                       /* set by the first command recorded */
    cap.last_t = 0;
    cap.started = time(NULL);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t wall = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    char hdr[PX_CAPTURE_HEADER_LEN];
    memcpy(hdr, PX_CAPTURE_MAGIC, 8);
    memcpy(hdr + 8, &wall, 8);
    put(hdr, sizeof hdr);
    px_capture_armed = 1;
    px_hook_arm(received, capture_received, 1);   /* its hook runs only while capturing */
    px_log(PX_LOG_NOTICE, "capture started: %s (max %lld bytes, sample %.3f, hash %s)", want,
           px_cfg.capture_max_size, px_cfg.capture_sample, px_cfg.capture_hash ? "yes" : "no");
    return 0;
}

void px_capture_stop(void) {
    if (cap.fd >= 0) close_file("stopped");
}

/* FRONTDOOR CAPTURE START [path] | STOP | STATUS */
void px_capture_cmd(px_conn *c, int argc, resp_arg *argv) {
    resp_out *o = &c->out;
    char err[512];
    if (argc >= 3 && resp_arg_is(&argv[2], "START") && argc <= 4) {
        char path[4096];
        if (argc == 4) snprintf(path, sizeof path, "%.*s", (int)(argv[3].len < 4000 ? argv[3].len : 4000), argv[3].ptr);
        else snprintf(path, sizeof path, "%s", px_cfg.capture_file && px_cfg.capture_file[0] ? px_cfg.capture_file : "frontdoor.fdcap");
        if (px_config_set("capture-file", "", 1, err, sizeof err) || px_config_set("capture-file", path, 1, err, sizeof err)) {
            char ignored[64];
            px_config_set("capture-file", "", 1, ignored, sizeof ignored);   /* CONFIG GET shows no capture */
            resp_add_errorf(o, "ERR %s", err);
            return;
        }
        resp_add_simple(o, "OK", 2);
    } else if (argc == 3 && resp_arg_is(&argv[2], "STOP")) {
        if (px_config_set("capture-file", "", 1, err, sizeof err)) { resp_add_errorf(o, "ERR %s", err); return; }
        resp_add_simple(o, "OK", 2);
    } else if (argc == 3 && resp_arg_is(&argv[2], "STATUS")) {
        resp_add_map(o, 6);
        resp_add_bulk_cstr(o, "active");
        resp_add_int(o, cap.fd >= 0);
        resp_add_bulk_cstr(o, "file");
        resp_add_bulk_cstr(o, cap.path ? cap.path : "");
        resp_add_bulk_cstr(o, "commands");
        resp_add_int(o, (long long)cap.records);
        resp_add_bulk_cstr(o, "bytes");
        resp_add_int(o, (long long)cap.bytes);
        resp_add_bulk_cstr(o, "skipped");
        resp_add_int(o, (long long)cap.skipped);
        resp_add_bulk_cstr(o, "started");
        resp_add_int(o, (long long)cap.started);
    } else {
        resp_add_errorf(o, "ERR unknown subcommand or wrong number of arguments for 'CAPTURE'. Try FRONTDOOR HELP.");
    }
}

/* ------------------------------------------------------------ hooks (hooks.h) */

static int capture_received(px_conn *c, fd_command *cmd, int argc, resp_arg *argv, const char *raw, size_t rawlen) {
    (void)cmd;
    if (px_capture_armed) px_capture_command(c->id, argc, argv, raw, rawlen);
    return PX_HOOK_PASS;
}

void px_capture_hooks(void) {
    PX_HOOK_ADD_IDLE(received, capture_received);   /* armed while a capture runs */
    if (px_capture_armed) px_hook_arm(received, capture_received, 1);   /* started by the config file */
}
