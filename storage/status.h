/* status.h — the one status space of frontdoor's storage layer.
 *
 * Every backend and the Redis-types layer return these codes; only the proxy
 * turns them into error replies, through fd_strerror(). Texts are Redis's
 * own where Redis has one. A text containing "%s" is formatted by the proxy
 * with the command's name in lower case (as Redis does:
 * "ERR invalid expire time in 'set' command").
 */
#ifndef FRONTDOOR_STATUS_H
#define FRONTDOOR_STATUS_H

enum fd_status {
    FD_OK = 0,            /* success; a reply was written */
    FD_PENDING,           /* accepted; the reply comes later through the request's callback */
    FD_NOTFOUND,          /* internal (ordered-KV drivers): no such record; never sent to a client */
    FD_E_WRONGTYPE,       /* WRONGTYPE Operation against a key holding the wrong kind of value */
    FD_E_NOTINT,          /* ERR value is not an integer or out of range */
    FD_E_NOTFLOAT,        /* ERR value is not a valid float */
    FD_E_OVERFLOW,        /* ERR increment or decrement would overflow */
    FD_E_NAN,             /* ERR increment would produce NaN or Infinity */
    FD_E_SYNTAX,          /* ERR syntax error */
    FD_E_NOKEY,           /* ERR no such key */
    FD_E_EXPIRE,          /* ERR invalid expire time in '%s' command */
    FD_E_STRLEN,          /* ERR string exceeds maximum allowed size (proto-max-bulk-len) */
    FD_E_OFFSET,          /* ERR offset is out of range */
    FD_E_INDEX,           /* ERR index out of range */
    FD_E_RANGE_POSITIVE,  /* ERR value is out of range, must be positive */
    FD_E_NOTSUPPORTED,    /* ERR '%s' is not supported by this backend */
    FD_E_OOM,             /* OOM command not allowed: the store is full (raise lmdb-map-size) */
    FD_E_NOMEM,           /* ERR out of memory */
    FD_E_IO,              /* ERR storage I/O error */
    FD_E_CORRUPT,         /* ERR stored data is corrupt */
    FD_E_UNAVAILABLE,     /* ERR backend unavailable */
    FD_E_TIMEOUT,         /* ERR backend timeout */
    FD_E_INTERNAL,        /* ERR internal error */
    FD_STATUS_COUNT
};

/* Error text for a status (without the leading '-'), possibly with one "%s"
 * for the command name. Never NULL; FD_OK gives "OK". Static storage. */
const char *fd_strerror(int status);

/* Return early from a handler: FD_TRY on any status but FD_OK, FD_OUT when
 * writing a reply failed (a resp_add_* returned non-zero: out of memory). */
#define FD_TRY(expr) do { int s_ = (expr); if (s_ != FD_OK) return s_; } while (0)
#define FD_OUT(expr) do { if ((expr) != 0) return FD_E_NOMEM; } while (0)

#endif
