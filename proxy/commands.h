/* commands.h — the proxy family: handlers of the commands the proxy serves
 * itself (family PROXY in storage/commands.def), by command id.
 *
 * The command table is storage/command.h (one row per command in
 * storage/commands.def); this header only adds the proxy's handlers. Every
 * PROXY row names px_cmd_<impl>; a row without its handler does not link.
 */
#ifndef FRONTDOOR_COMMANDS_H
#define FRONTDOOR_COMMANDS_H

#include "../protocol/resp.h"
#include "../storage/command.h"

struct px_conn;

/* Served by the proxy: writes one reply to the connection's output. */
typedef void (*px_handler)(struct px_conn *c, int argc, resp_arg *argv);

/* one prototype per PROXY row (aliases repeat their impl's) */
#define PX_DECL_PROXY(impl) void px_cmd_##impl(struct px_conn *c, int argc, resp_arg *argv);
#define PX_DECL_DATA(impl)
#define CMD(id, ar, fl, f, l, s, fam, impl, ...) PX_DECL_##fam(impl)
#include "../storage/commands.def"
#undef CMD
#undef PX_DECL_PROXY
#undef PX_DECL_DATA

/* The proxy's handler of a command; NULL when a backend serves it. */
px_handler px_handler_of(const fd_command *cmd);

#endif
