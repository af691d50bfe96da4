/* script_conv.c — conversions between RESP replies and Lua values, both
 * ways, RESP2 and RESP3 (redis.call's reply to Lua; a script's result to
 * the client), with Redis 7.0's rules (Lua tables as arrays up to the
 * first nil, {ok=}, {err=}, doubles, big numbers...). Private:
 * script_int.h. */
#include "script_int.h"

/* ------------------------------------------------------ RESP -> Lua */

static const char *find_crlf(const char *p, const char *end) {
    for (; p + 1 < end; p++)
        if (p[0] == '\r' && p[1] == '\n') return p;
    return NULL;
}

static int parse_ll(const char *p, const char *q, long long *v) {
    return resp_str2ll(p, (size_t)(q - p), v);
}

/* Convert one reply at *pp to a Lua value pushed on L (nothing pushed when
 * push == 0: attributes are skipped). Redis 7.0's rules (script_lua.c).
 * Returns 0, or -1 on malformed input (nothing left pushed then). */
int sc_reply_to_lua(lua_State *L, const char **pp, const char *end, int push, int depth) {
    const char *p = *pp;
    if (p >= end || depth > 1000) return -1;
    if (push && !lua_checkstack(L, 5)) return -1;
    char t = *p++;
    const char *eol = find_crlf(p, end);
    if (!eol) return -1;
    const char *next = eol + 2;
    long long n;
    switch (t) {
    case '+':
        if (push) {
            lua_newtable(L);
            lua_pushliteral(L, "ok");
            lua_pushlstring(L, p, (size_t)(eol - p));
            lua_rawset(L, -3);
        }
        break;
    case '-':
        if (push) {
            /* "-" + text, as a C string */
            lua_pushliteral(L, "-");
            lua_pushlstring(L, p, (size_t)(eol - p));
            lua_concat(L, 2);
            const char *s = lua_tostring(L, -1);
            sc_push_error(L, s, 1);
            lua_remove(L, -2);
        }
        break;
    case ':':
        if (parse_ll(p, eol, &n) < 0) return -1;
        if (push) lua_pushnumber(L, (lua_Number)n);
        break;
    case '$':
    case '=':
        if (parse_ll(p, eol, &n) < 0) return -1;
        if (n < 0) {
            if (push) lua_pushboolean(L, 0);
            break;
        }
        if ((long long)(end - next) < n + 2) return -1;
        if (push) {
            if (t == '$') {
                lua_pushlstring(L, next, (size_t)n);
            } else {
                if (n < 4) return -1;
                lua_newtable(L);
                lua_pushliteral(L, "verbatim_string");
                lua_newtable(L);
                lua_pushliteral(L, "string");
                lua_pushlstring(L, next + 4, (size_t)n - 4);
                lua_rawset(L, -3);
                lua_pushliteral(L, "format");
                lua_pushlstring(L, next, 3);
                lua_rawset(L, -3);
                lua_rawset(L, -3);
            }
        }
        next += n + 2;
        break;
    case '*':
    case '>':
    case '~':
    case '%':
    case '|':
        if (parse_ll(p, eol, &n) < 0) return -1;
        if (n < 0) {
            if (push) lua_pushboolean(L, 0);
            break;
        }
        if (t == '|') {   /* attribute: skipped, then the value it annotates */
            for (long long j = 0; j < 2 * n; j++)
                if (sc_reply_to_lua(L, &next, end, 0, depth + 1) < 0) return -1;
            *pp = next;
            return sc_reply_to_lua(L, pp, end, push, depth + 1);
        }
        if (push) {
            lua_newtable(L);
            if (t == '~' || t == '%') {
                lua_pushstring(L, t == '~' ? "set" : "map");
                lua_newtable(L);
            }
        }
        for (long long j = 0; j < n; j++) {
            if (t == '*' || t == '>') {
                if (push) lua_pushnumber(L, (lua_Number)(j + 1));
                if (sc_reply_to_lua(L, &next, end, push, depth + 1) < 0) { if (push) lua_pop(L, 2); return -1; }
            } else if (t == '%') {
                if (sc_reply_to_lua(L, &next, end, push, depth + 1) < 0) { if (push) lua_pop(L, 3); return -1; }
                if (sc_reply_to_lua(L, &next, end, push, depth + 1) < 0) { if (push) lua_pop(L, 4); return -1; }
            } else {
                if (sc_reply_to_lua(L, &next, end, push, depth + 1) < 0) { if (push) lua_pop(L, 3); return -1; }
                if (push) lua_pushboolean(L, 1);
            }
            if (push) lua_settable(L, -3);
        }
        if (push && (t == '~' || t == '%')) lua_settable(L, -3);
        break;
    case '_':
        if (push) lua_pushnil(L);
        break;
    case '#':
        if (eol - p != 1 || (*p != 't' && *p != 'f')) return -1;
        if (push) lua_pushboolean(L, *p == 't');
        break;
    case ',': {
        char buf[128];
        size_t len = (size_t)(eol - p);
        if (len >= sizeof buf) return -1;
        memcpy(buf, p, len);
        buf[len] = '\0';
        double d = strtod(buf, NULL);
        if (push) {
            lua_newtable(L);
            lua_pushliteral(L, "double");
            lua_pushnumber(L, d);
            lua_rawset(L, -3);
        }
        break;
    }
    case '(':
        if (push) {
            lua_newtable(L);
            lua_pushliteral(L, "big_number");
            lua_pushlstring(L, p, (size_t)(eol - p));
            lua_rawset(L, -3);
        }
        break;
    default:
        return -1;
    }
    *pp = next;
    return 0;
}

/* ------------------------------------------------------ Lua -> RESP */

/* Redis's (long long)lua_Number cast, defined for every input (x86 gives
 * LLONG_MIN for NaN and out-of-range values). */
static long long num_to_ll(lua_Number d) {
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return LLONG_MIN;
    return (long long)d;
}

/* Field `k` of the table at -1 (raw), pushed; returns its type. */
static int rawfield(lua_State *L, const char *k) {
    lua_pushstring(L, k);
    lua_rawget(L, -2);
    return lua_type(L, -1);
}

/* Append `s` (C string semantics) with CR/LF mapped to spaces and, for
 * errors, trimmed at both ends first (addReplyErrorFormatEx). */
static int add_mapped(resp_out *o, char lead, const char *s, size_t n, int trim) {
    if (trim) {
        while (n && (*s == '\r' || *s == '\n')) { s++; n--; }
        while (n && (s[n - 1] == '\r' || s[n - 1] == '\n')) n--;
    }
    if (resp_out_reserve(o, n + 3) < 0) return -1;
    char *d = o->data + o->len;
    d[0] = lead;
    for (size_t i = 0; i < n; i++) d[i + 1] = (s[i] == '\r' || s[i] == '\n') ? ' ' : s[i];
    d[n + 1] = '\r';
    d[n + 2] = '\n';
    o->len += n + 3;
    return 0;
}

/* An error reply "-<msg>" as addReplyErrorFormat(c, "-%s", msg) makes it. */
static int add_error_text(resp_out *o, const char *msg) {
    return add_mapped(o, '-', msg, strlen(msg), 1);
}

/* Convert the value at the top of L to a reply (and pop it). Redis 7.0's
 * luaReplyToRedisReply; `script_resp` is the script's setresp. */
void sc_lua_to_reply(fd_script_engine *e, lua_State *L, resp_out *o) {
    int rc = 0;
    if (!lua_checkstack(L, 4)) {
        rc = resp_add_error(o, "ERR reached lua stack limit");
        lua_pop(L, 1);
        if (rc < 0) e->oom = 1;
        return;
    }
    switch (lua_type(L, -1)) {
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, -1, &n);
        rc = resp_add_bulk(o, s, n);
        break;
    }
    case LUA_TBOOLEAN:
        if (e->resp == 2)
            rc = lua_toboolean(L, -1) ? resp_add_int(o, 1) : resp_add_null(o);
        else
            rc = resp_add_bool(o, lua_toboolean(L, -1));
        break;
    case LUA_TNUMBER:
        rc = resp_add_int(o, num_to_ll(lua_tonumber(L, -1)));
        break;
    case LUA_TTABLE: {
        int t;
        if ((t = rawfield(L, "err")) == LUA_TSTRING) {
            rc = add_error_text(o, lua_tostring(L, -1));
            lua_pop(L, 2);
            if (rc < 0) e->oom = 1;
            return;
        }
        lua_pop(L, 1);
        if ((t = rawfield(L, "ok")) == LUA_TSTRING) {
            const char *s = lua_tostring(L, -1);
            rc = add_mapped(o, '+', s, strlen(s), 0);
            lua_pop(L, 2);
            if (rc < 0) e->oom = 1;
            return;
        }
        lua_pop(L, 1);
        if ((t = rawfield(L, "double")) == LUA_TNUMBER) {
            rc = resp_add_double(o, lua_tonumber(L, -1));
            lua_pop(L, 2);
            if (rc < 0) e->oom = 1;
            return;
        }
        lua_pop(L, 1);
        if ((t = rawfield(L, "big_number")) == LUA_TSTRING) {
            size_t n;
            const char *s = lua_tolstring(L, -1, &n);
            rc = o->proto == 3 ? add_mapped(o, '(', s, n, 0) : 0;
            if (o->proto != 3) {
                /* RESP2: a bulk string, CR/LF mapped as Redis's sdsmapchars */
                size_t at = o->len;
                rc = resp_add_bulk(o, s, n);
                if (rc == 0)
                    for (size_t i = o->len - n - 2; i < o->len - 2 && i >= at; i++)
                        if (o->data[i] == '\r' || o->data[i] == '\n') o->data[i] = ' ';
            }
            lua_pop(L, 2);
            if (rc < 0) e->oom = 1;
            return;
        }
        lua_pop(L, 1);
        if ((t = rawfield(L, "verbatim_string")) == LUA_TTABLE) {
            if (rawfield(L, "format") == LUA_TSTRING) {
                const char *fmt = lua_tostring(L, -1);
                lua_pushliteral(L, "string");
                lua_rawget(L, -3);
                if (lua_type(L, -1) == LUA_TSTRING) {
                    size_t n;
                    const char *s = lua_tolstring(L, -1, &n);
                    rc = resp_add_verbatim(o, fmt, s, n);
                    lua_pop(L, 4);
                    if (rc < 0) e->oom = 1;
                    return;
                }
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        if ((t = rawfield(L, "map")) == LUA_TTABLE) {
            long long n = 0;
            lua_pushnil(L);
            while (lua_next(L, -2)) { lua_pop(L, 1); n++; }
            rc = resp_add_map(o, n);
            lua_pushnil(L);
            while (lua_next(L, -2)) {
                lua_pushvalue(L, -2);
                sc_lua_to_reply(e, L, o);   /* key */
                sc_lua_to_reply(e, L, o);   /* value */
            }
            lua_pop(L, 2);
            if (rc < 0) e->oom = 1;
            return;
        }
        lua_pop(L, 1);
        if ((t = rawfield(L, "set")) == LUA_TTABLE) {
            long long n = 0;
            lua_pushnil(L);
            while (lua_next(L, -2)) { lua_pop(L, 1); n++; }
            rc = resp_add_set(o, n);
            lua_pushnil(L);
            while (lua_next(L, -2)) {
                lua_pop(L, 1);
                lua_pushvalue(L, -1);
                sc_lua_to_reply(e, L, o);
            }
            lua_pop(L, 2);
            if (rc < 0) e->oom = 1;
            return;
        }
        lua_pop(L, 1);
        /* an array, up to the first nil */
        long long n = 0;
        for (;;) {
            lua_rawgeti(L, -1, (int)(n + 1));
            int nil = lua_isnil(L, -1);
            lua_pop(L, 1);
            if (nil) break;
            n++;
        }
        rc = resp_add_array(o, n);
        for (long long j = 1; j <= n; j++) {
            lua_rawgeti(L, -1, (int)j);
            sc_lua_to_reply(e, L, o);
        }
        break;
    }
    default:
        rc = resp_add_null(o);
    }
    lua_pop(L, 1);
    if (rc < 0) e->oom = 1;
}
