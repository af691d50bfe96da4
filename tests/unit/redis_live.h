/* redis_live.h — a real redis-server for differential unit tests: started on
 * a free loopback port (no persistence), spoken to in RESP, stopped at the
 * end. Header-only, for tests only (blocking sockets).
 *
 *   rl_server s;
 *   if (rl_start(&s) != 0) -> no /usr/bin/redis-server: the caller skips
 *   rl_cmd(&s, argc, argv, lens, &reply, &len)  -> the reply's exact bytes (malloc'd)
 *   rl_stop(&s);
 */
#ifndef FRONTDOOR_REDIS_LIVE_H
#define FRONTDOOR_REDIS_LIVE_H
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RL_BIN "/usr/bin/redis-server"

typedef struct rl_server {
    pid_t pid;
    int fd, port;
    char *buf;              /* unread reply bytes */
    size_t len, cap;
} rl_server;

static int rl_free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t l = sizeof a;
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &l)) {
        if (s >= 0) close(s);
        return -1;
    }
    close(s);
    return ntohs(a.sin_port);
}

static int rl_start(rl_server *s)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    if (access(RL_BIN, X_OK) != 0) return -1;
    if ((s->port = rl_free_port()) < 0) return -1;
    char port[16];
    snprintf(port, sizeof port, "%d", s->port);
    if ((s->pid = fork()) == 0) {
        int dn = open("/dev/null", 1);
        if (dn >= 0) { dup2(dn, 1); dup2(dn, 2); }
        execl(RL_BIN, RL_BIN, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
              "--dir", "/tmp", (char *)NULL);
        _exit(127);
    }
    if (s->pid < 0) return -1;
    for (int i = 0; i < 200; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)s->port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            s->fd = fd;
            return 0;
        }
        close(fd);
        struct timespec ts = { 0, 25 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    return -1;
}

static void rl_stop(rl_server *s)
{
    if (s->fd >= 0) close(s->fd);
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        waitpid(s->pid, NULL, 0);
    }
    free(s->buf);
    memset(s, 0, sizeof *s);
}

/* Length of one complete RESP value at p[0..n), or 0 if incomplete. */
static size_t rl_frame(const char *p, size_t n)
{
    const char *e = memchr(p, '\n', n);
    if (!e) return 0;
    size_t hl = (size_t)(e - p) + 1;
    long long v = atoll(p + 1);
    switch (p[0]) {
    case '$': case '=': case '!':
        if (v < 0) return hl;
        return hl + (size_t)v + 2 <= n ? hl + (size_t)v + 2 : 0;
    case '*': case '~': case '>': case '%': {
        if (v < 0) return hl;
        long long items = p[0] == '%' ? 2 * v : v;
        size_t off = hl;
        for (long long i = 0; i < items; i++) {
            size_t f = rl_frame(p + off, n - off);
            if (!f) return 0;
            off += f;
        }
        return off;
    }
    default:
        return hl;
    }
}

/* Send one command; *reply gets the exact reply bytes (malloc'd). 0 or -1. */
static int rl_cmd(rl_server *s, int argc, const char *const *argv, const size_t *lens, char **reply, size_t *rlen)
{
    size_t need = 32;
    for (int i = 0; i < argc; i++) need += 32 + (lens ? lens[i] : strlen(argv[i]));
    char *q = malloc(need), *w = q;
    w += sprintf(w, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        size_t l = lens ? lens[i] : strlen(argv[i]);
        w += sprintf(w, "$%zu\r\n", l);
        memcpy(w, argv[i], l);
        w += l;
        *w++ = '\r';
        *w++ = '\n';
    }
    for (char *p = q; p < w;) {
        ssize_t k = write(s->fd, p, (size_t)(w - p));
        if (k <= 0) { free(q); return -1; }
        p += k;
    }
    free(q);
    for (;;) {
        size_t f = s->len ? rl_frame(s->buf, s->len) : 0;
        if (f) {
            *reply = malloc(f + 1);
            memcpy(*reply, s->buf, f);
            (*reply)[f] = 0;
            *rlen = f;
            memmove(s->buf, s->buf + f, s->len - f);
            s->len -= f;
            return 0;
        }
        if (s->cap - s->len < 65536) {
            s->cap = s->cap * 2 + 65536;
            s->buf = realloc(s->buf, s->cap);
        }
        ssize_t k = read(s->fd, s->buf + s->len, s->cap - s->len);
        if (k <= 0) return -1;
        s->len += (size_t)k;
    }
}

/* The same for a command given as space-separated words (no binary). */
static int rl_cmdline(rl_server *s, const char *line, char **reply, size_t *rlen)
{
    char *copy = strdup(line), *argv[256], *save = NULL;
    int argc = 0;
    for (char *t = strtok_r(copy, " ", &save); t && argc < 256; t = strtok_r(NULL, " ", &save)) argv[argc++] = t;
    int r = rl_cmd(s, argc, (const char *const *)argv, NULL, reply, rlen);
    free(copy);
    return r;
}
#endif
