/* hooks.c — the hook registry (hooks.h). */
#include "hooks.h"
#include "log.h"

#include <stdlib.h>

px_hooks px_hook;

void px_hook_overflow(const char *point) {
    px_log(PX_LOG_WARNING, "hook point '%s' is full (PX_HOOKS_MAX %d): raise it", point, PX_HOOKS_MAX);
    abort();
}
