/* log.h — Redis-style log lines ("pid:M 02 Dec 2026 10:00:00.123 * text")
 * to stderr or the configured logfile. */
#ifndef FRONTDOOR_LOG_H
#define FRONTDOOR_LOG_H

#include <stdarg.h>
#include "../storage/host.h"

/* the storage layer's levels (storage/host.h): one level space */
enum { PX_LOG_DEBUG = FD_LOG_DEBUG, PX_LOG_VERBOSE = FD_LOG_VERBOSE,
       PX_LOG_NOTICE = FD_LOG_NOTICE, PX_LOG_WARNING = FD_LOG_WARNING };

void px_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with a va_list (the storage layer's log, fd_host.vlog). */
void px_vlog(int level, const char *fmt, va_list ap);
/* Log at WARNING and exit(1). */
void px_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Reopen the log destination after logfile changed (start-up). */
void px_log_open(void);

#endif
