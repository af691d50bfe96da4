/* kv_commands.h — the Redis commands implemented over the ordered-KV layer
 * (storage/kv/), shared by every embedded backend (LMDB, LevelDB).
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

struct kv_ctx;
typedef int (*kv_handler)(struct kv_ctx *c);

#define KV_COMMANDS(X) \
    /* strings */ \
    X(get) X(set) X(setnx) X(setex) X(psetex) X(getset) X(getdel) X(getex) \
    X(mget) X(mset) X(msetnx) X(incr) X(incrby) X(incrbyfloat) X(decr) X(decrby) \
    X(append) X(strlen) X(getrange) X(setrange) \
    /* keys */ \
    X(del) X(exists) X(type) X(expire) X(pexpire) X(expireat) X(pexpireat) \
    X(ttl) X(pttl) X(persist) X(keys) X(scan) X(rename) X(renamenx) X(randomkey) \
    X(expiretime) X(pexpiretime) X(touch) \
    /* lists */ \
    X(lpush) X(rpush) X(lpushx) X(rpushx) X(lpop) X(rpop) X(llen) X(lrange) X(lindex) \
    X(lset) X(ltrim) X(lrem) X(linsert) X(lpos) X(rpoplpush) X(lmove) \
    /* hashes */ \
    X(hset) X(hsetnx) X(hmset) X(hget) X(hmget) X(hdel) X(hlen) X(hexists) X(hgetall) \
    X(hkeys) X(hvals) X(hincrby) X(hincrbyfloat) X(hstrlen) X(hscan) X(hrandfield) \
    /* sets */ \
    X(sadd) X(srem) X(spop) X(srandmember) X(smembers) X(sismember) X(smismember) \
    X(scard) X(smove) X(sinter) X(sunion) X(sdiff) X(sinterstore) X(sunionstore) \
    X(sdiffstore) X(sintercard) X(sscan) \
    /* sorted sets */ \
    X(zadd) X(zincrby) X(zrem) X(zscore) X(zmscore) X(zcard) X(zcount) X(zlexcount) \
    X(zrank) X(zrevrank) X(zrange) X(zrevrange) X(zrangebyscore) X(zrevrangebyscore) \
    X(zrangebylex) X(zrevrangebylex) X(zpopmin) X(zpopmax) X(zremrangebyrank) \
    X(zremrangebyscore) X(zremrangebylex) X(zscan) \
    /* server */ \
    X(dbsize) X(flushdb)

#define KV_DECLARE(n) int kv_cmd_##n(struct kv_ctx *c);
KV_COMMANDS(KV_DECLARE)
#undef KV_DECLARE

#endif
