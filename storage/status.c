/* status.c — the texts of the storage status space (status.h). Redis's own
 * texts where Redis has one; "%s" is the command name, filled in by the proxy. */
#include "status.h"

static const char *const fd_texts[FD_STATUS_COUNT] = {
    [FD_OK]               = "OK",
    [FD_PENDING]          = "ERR internal error (pending)",
    [FD_NOTFOUND]         = "ERR internal error (not found)",
    [FD_E_WRONGTYPE]      = "WRONGTYPE Operation against a key holding the wrong kind of value",
    [FD_E_NOTINT]         = "ERR value is not an integer or out of range",
    [FD_E_NOTFLOAT]       = "ERR value is not a valid float",
    [FD_E_OVERFLOW]       = "ERR increment or decrement would overflow",
    [FD_E_NAN]            = "ERR increment would produce NaN or Infinity",
    [FD_E_SYNTAX]         = "ERR syntax error",
    [FD_E_NOKEY]          = "ERR no such key",
    [FD_E_EXPIRE]         = "ERR invalid expire time in '%s' command",
    [FD_E_STRLEN]         = "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
    [FD_E_OFFSET]         = "ERR offset is out of range",
    [FD_E_INDEX]          = "ERR index out of range",
    [FD_E_RANGE_POSITIVE] = "ERR value is out of range, must be positive",
    [FD_E_NOTSUPPORTED]   = "ERR '%s' is not supported by this backend",
    [FD_E_OOM]            = "OOM command not allowed: the store is full (raise lmdb-map-size)",
    [FD_E_NOMEM]          = "ERR out of memory",
    [FD_E_IO]             = "ERR storage I/O error",
    [FD_E_CORRUPT]        = "ERR stored data is corrupt",
    [FD_E_UNAVAILABLE]    = "ERR backend unavailable",
    [FD_E_TIMEOUT]        = "ERR backend timeout",
    [FD_E_INTERNAL]       = "ERR internal error",
};

const char *fd_strerror(int status)
{
    if (status < 0 || status >= FD_STATUS_COUNT || !fd_texts[status]) return "ERR unknown error";
    return fd_texts[status];
}
