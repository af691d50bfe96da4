/* kv_commands.c — the kv family's handlers by command id (kv_commands.h). */
#include "kv_commands.h"

#define KV_H_PROXY(impl) NULL
#define KV_H_DATA(impl) kv_cmd_##impl
static const kv_handler handlers[FD_CMD_COUNT] = {
#define CMD(id, ar, fl, f, l, s, fam, impl, ...) [FD_CMD_##id] = KV_H_##fam(impl),
#include "../commands.def"
#undef CMD
};

kv_handler kv_handler_of(int id) { return id >= 0 && id < FD_CMD_COUNT ? handlers[id] : NULL; }
