/* builtin.h — commands the proxy serves itself (no backend involved).
 * Each writes exactly one reply to c->out. Arity was checked centrally. */
#ifndef FRONTDOOR_BUILTIN_H
#define FRONTDOOR_BUILTIN_H
#include <strings.h>
#include "server.h"

/* The handlers: family PROXY rows of commands.def (prototypes in commands.h). */

/* The server version frontdoor reports to Redis tools (the Redis release
 * whose commands and replies it follows). */
#define PX_REDIS_COMPAT_VERSION "7.0.15"
#define PX_VERSION "0.1.0"

/* x's CLIENT LIST line (no newline) into buf (truncated to len). */
void px_client_line(px_conn *x, char *buf, size_t len);

#endif
