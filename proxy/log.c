#include "log.h"
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static FILE *logfp;

void px_log_open(void) {
    if (logfp && logfp != stderr) fclose(logfp);
    logfp = stderr;
    if (px_cfg.logfile && px_cfg.logfile[0]) {
        FILE *f = fopen(px_cfg.logfile, "a");
        if (f) logfp = f;
        else fprintf(stderr, "frontdoor: can't open logfile '%s', logging to stderr\n", px_cfg.logfile);
    }
}

static void vlog(int level, const char *fmt, va_list ap) {
    static const char marks[] = ".-*#";
    FILE *f = logfp ? logfp : stderr;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    localtime_r(&tv.tv_sec, &tm);
    char ts[64];
    size_t l = strftime(ts, sizeof ts, "%d %b %Y %H:%M:%S", &tm);
    snprintf(ts + l, sizeof ts - l, ".%03d", (int)(tv.tv_usec / 1000));
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(f, "%d:M %s %c %s\n", (int)getpid(), ts, marks[level & 3], msg);
    fflush(f);
}

void px_vlog(int level, const char *fmt, va_list ap) {
    if (level >= px_cfg.loglevel) vlog(level, fmt, ap);
}

void px_log(int level, const char *fmt, ...) {
    if (level < px_cfg.loglevel) return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

void px_fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(PX_LOG_WARNING, fmt, ap);
    va_end(ap);
    exit(1);
}
