/* kv_commands.c — the kv family's handlers by command id (kv_commands.h). */
#include "kv_commands.h"

#define KV_H_PROXY(impl) NULL
#define KV_H_DATA(impl) kv_cmd_##impl
const kv_handler kv_handlers[FD_CMD_COUNT] = {
#define CMD(id, ar, fl, f, l, s, fam, impl, ...) [FD_CMD_##id] = KV_H_##fam(impl),
#include "../commands.def"
#undef CMD
};
