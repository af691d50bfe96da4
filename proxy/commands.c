/* commands.c — the proxy family's handlers by command id (commands.h). */
#include "commands.h"
#include "builtin.h"
#include "ab.h"
#include "blocking.h"
#include "slowlog.h"
#include "pubsub.h"

#define PX_H_PROXY(impl) px_cmd_##impl
#define PX_H_DATA(impl) NULL
static const px_handler handlers[FD_CMD_COUNT] = {
#define CMD(id, ar, fl, f, l, s, fam, impl, ...) [FD_CMD_##id] = PX_H_##fam(impl),
#include "../storage/commands.def"
#undef CMD
};

px_handler px_handler_of(const fd_command *cmd) { return handlers[cmd->id]; }
