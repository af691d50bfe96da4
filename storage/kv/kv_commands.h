/* kv_commands.h — the kv family: the Redis commands implemented over the
 * ordered-KV layer (storage/kv/), shared by every embedded backend (LMDB,
 * LevelDB). Every DATA row of storage/commands.def names its handler
 * kv_cmd_<impl>; kv_handler_of() finds it by command id (kv_commands.c), so
 * a DATA command without a kv handler does not link.
 *
 * Each handler runs one command inside the backend's current turn
 * transaction. Contract (same for all):
 *   - c->argc/c->argv are the whole command (argv[0] is the name); arity was
 *     already checked by the proxy against the command table;
 *   - on success the handler writes exactly one reply to c->out and returns
 *     FD_OK; it may also write an error reply itself and return FD_OK when
 *     the error text is specific to the command;
 *   - otherwise it writes nothing and returns an FD_E_* status; the proxy
 *     replies with fd_strerror(status). A failed command leaves no partial
 *     change behind (storage errors abort the turn: see kv_backend.c).
 */
#ifndef FRONTDOOR_KV_COMMANDS_H
#define FRONTDOOR_KV_COMMANDS_H

#include "../command.h"

struct kv_ctx;
typedef int (*kv_handler)(struct kv_ctx *c);

/* one prototype per DATA row (an alias repeats its impl's: harmless) */
#define KV_DECL_PROXY(impl)
#define KV_DECL_DATA(impl) int kv_cmd_##impl(struct kv_ctx *c);
#define CMD(id, ar, fl, f, l, s, fam, impl, ...) KV_DECL_##fam(impl)
#include "../commands.def"
#undef CMD
#undef KV_DECL_PROXY
#undef KV_DECL_DATA

/* The kv handler of command `id` (0 <= id < FD_CMD_COUNT); NULL for the
 * proxy's own commands. */
extern const kv_handler kv_handlers[FD_CMD_COUNT];
static inline kv_handler kv_handler_of(int id) { return kv_handlers[id]; }

#endif
