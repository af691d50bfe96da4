/* script_libs.c — the `struct` and `cmsgpack` Lua libraries that Redis 7.0
 * scripts can use, written for frontdoor (Debian packages neither). Same
 * functions, encodings and error texts as the versions Redis bundles
 * (checked against redis-server 7.0.15, see tests/unit/test_script.c):
 *
 *   struct.pack(fmt, ...)  struct.unpack(fmt, s [, pos])  struct.size(fmt)
 *     fmt: > < ![n] x b B h H l L i[n] I[n] c[n] s f d ' '
 *   cmsgpack.pack(...)  cmsgpack.unpack(s)  cmsgpack.unpack_one(s [, offset])
 *   cmsgpack.unpack_limit(s, limit [, offset])
 *
 * Entry points (used by script.c): fd_luaopen_struct, fd_luaopen_cmsgpack;
 * each returns the library table (no global is set here).
 */
#include <lauxlib.h>
#include <lua.h>

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int fd_luaopen_struct(lua_State *L);
int fd_luaopen_cmsgpack(lua_State *L);

/* ================================================================ struct */

#define ST_MAXINTSIZE 32
#define ST_BIG 0
#define ST_LITTLE 1

typedef struct { int endian; int align; } st_header;

static int st_native_endian(void) {
    const uint16_t one = 1;
    return *(const unsigned char *)&one ? ST_LITTLE : ST_BIG;
}

struct st_cd { char c; double d; };
#define ST_PADDING (sizeof(struct st_cd) - sizeof(double))
#define ST_MAXALIGN (ST_PADDING > sizeof(int) ? ST_PADDING : sizeof(int))

static int st_isp2(size_t x) { return x > 0 && (x & (x - 1)) == 0; }

static size_t st_getnum(lua_State *L, const char **fmt, size_t df) {
    if (!isdigit((unsigned char)**fmt)) return df;
    size_t a = 0;
    do {
        if (a > (size_t)(INT_MAX / 10) || a * 10 > (size_t)(INT_MAX - (**fmt - '0')))
            luaL_error(L, "integral size overflow");
        a = a * 10 + (size_t)(*((*fmt)++) - '0');
    } while (isdigit((unsigned char)**fmt));
    return a;
}

static size_t st_optsize(lua_State *L, char opt, const char **fmt) {
    switch (opt) {
    case 'B': case 'b': return sizeof(char);
    case 'H': case 'h': return sizeof(short);
    case 'L': case 'l': return sizeof(long);
    case 'f': return sizeof(float);
    case 'd': return sizeof(double);
    case 'x': return 1;
    case 'c': return st_getnum(L, fmt, 1);
    case 'i': case 'I': {
        size_t sz = st_getnum(L, fmt, sizeof(int));
        if (sz > ST_MAXINTSIZE)
            luaL_error(L, "integral size %d is larger than limit of %d", (int)sz, ST_MAXINTSIZE);
        return sz;
    }
    default: return 0;   /* other options: no data */
    }
}

static size_t st_toalign(size_t len, const st_header *h, int opt, size_t size) {
    if (size == 0 || opt == 'c') return 0;
    if (size > (size_t)h->align) size = (size_t)h->align;
    return (size - (len & (size - 1))) & (size - 1);
}

/* options that change the header; an unknown option is an argument error */
static void st_controloptions(lua_State *L, int opt, const char **fmt, st_header *h) {
    switch (opt) {
    case ' ': return;
    case '>': h->endian = ST_BIG; return;
    case '<': h->endian = ST_LITTLE; return;
    case '!': {
        int a = (int)st_getnum(L, fmt, ST_MAXALIGN);
        if (!st_isp2((size_t)a)) luaL_error(L, "alignment %d is not a power of 2", a);
        h->align = a;
        return;
    }
    default: {
        const char *msg = lua_pushfstring(L, "invalid format option '%c'", opt);
        luaL_argerror(L, 1, msg);
    }
    }
}

static void st_putinteger(lua_State *L, luaL_Buffer *b, int arg, int endian, int size) {
    lua_Number n = luaL_checknumber(L, arg);
    unsigned long value = n < 0 ? (unsigned long)(long)n : (unsigned long)n;
    char buff[ST_MAXINTSIZE];
    if (endian == ST_LITTLE) {
        for (int i = 0; i < size; i++) { buff[i] = (char)(value & 0xff); value = size > 8 && i >= 7 ? 0 : value >> 8; }
    } else {
        for (int i = size - 1; i >= 0; i--) { buff[i] = (char)(value & 0xff); value = size > 8 && i <= size - 8 ? 0 : value >> 8; }
    }
    luaL_addlstring(b, buff, (size_t)size);
}

static void st_correctbytes(char *p, int size, int endian) {
    if (endian != st_native_endian()) {
        int i = 0;
        while (i < --size) { char t = p[i]; p[i++] = p[size]; p[size] = t; }
    }
}

static int st_pack(lua_State *L) {
    luaL_Buffer b;
    const char *fmt = luaL_checkstring(L, 1);
    st_header h = {st_native_endian(), 1};
    int arg = 2;
    size_t total = 0;
    lua_pushnil(L);   /* separates the arguments from the buffer */
    luaL_buffinit(L, &b);
    while (*fmt) {
        int opt = *fmt++;
        size_t size = st_optsize(L, (char)opt, &fmt);
        size_t toalign = st_toalign(total, &h, opt, size);
        total += toalign;
        while (toalign-- > 0) luaL_addchar(&b, '\0');
        switch (opt) {
        case 'b': case 'B': case 'h': case 'H':
        case 'l': case 'L': case 'i': case 'I':
            st_putinteger(L, &b, arg++, h.endian, (int)size);
            break;
        case 'x':
            luaL_addchar(&b, '\0');
            break;
        case 'f': {
            float f = (float)luaL_checknumber(L, arg++);
            st_correctbytes((char *)&f, (int)size, h.endian);
            luaL_addlstring(&b, (char *)&f, size);
            break;
        }
        case 'd': {
            double d = luaL_checknumber(L, arg++);
            st_correctbytes((char *)&d, (int)size, h.endian);
            luaL_addlstring(&b, (char *)&d, size);
            break;
        }
        case 'c': case 's': {
            size_t l;
            const char *s = luaL_checklstring(L, arg++, &l);
            if (size == 0) size = l;
            luaL_argcheck(L, l >= size, arg, "string too short");
            luaL_addlstring(&b, s, size);
            if (opt == 's') { luaL_addchar(&b, '\0'); size++; }
            break;
        }
        default:
            st_controloptions(L, opt, &fmt, &h);
        }
        total += size;
    }
    luaL_pushresult(&b);
    return 1;
}

static lua_Number st_getinteger(const char *buff, int endian, int issigned, int size) {
    unsigned long l = 0;
    if (endian == ST_BIG) {
        for (int i = 0; i < size; i++) { l = size > 8 && i < size - 8 ? 0 : l << 8; l |= (unsigned char)buff[i]; }
    } else {
        for (int i = size - 1; i >= 0; i--) { l = size > 8 && i >= 8 ? 0 : l << 8; l |= (unsigned char)buff[i]; }
    }
    if (!issigned) return (lua_Number)l;
    if (size < (int)sizeof l) {
        unsigned long mask = ~0UL << (size * 8 - 1);
        if (l & mask) l |= mask;
    }
    return (lua_Number)(long)l;
}

static int st_unpack(lua_State *L) {
    st_header h = {st_native_endian(), 1};
    const char *fmt = luaL_checkstring(L, 1);
    size_t ld;
    const char *data = luaL_checklstring(L, 2, &ld);
    lua_Integer p1 = luaL_optinteger(L, 3, 1);
    luaL_argcheck(L, p1 > 0, 3, "offset must be 1 or greater");
    size_t pos = (size_t)p1 - 1;
    lua_settop(L, 2);
    while (*fmt) {
        int opt = *fmt++;
        size_t size = st_optsize(L, (char)opt, &fmt);
        pos += st_toalign(pos, &h, opt, size);
        luaL_argcheck(L, size <= ld && pos <= ld - size, 2, "data string too short");
        luaL_checkstack(L, 2, "too many results");
        switch (opt) {
        case 'b': case 'B': case 'h': case 'H':
        case 'l': case 'L': case 'i': case 'I':
            lua_pushnumber(L, st_getinteger(data + pos, h.endian, islower(opt), (int)size));
            break;
        case 'x':
            break;
        case 'f': {
            float f;
            memcpy(&f, data + pos, size);
            st_correctbytes((char *)&f, sizeof f, h.endian);
            lua_pushnumber(L, f);
            break;
        }
        case 'd': {
            double d;
            memcpy(&d, data + pos, size);
            st_correctbytes((char *)&d, sizeof d, h.endian);
            lua_pushnumber(L, d);
            break;
        }
        case 'c':
            if (size == 0) {
                if (lua_gettop(L) == 2 || !lua_isnumber(L, -1)) luaL_error(L, "format 'c0' needs a previous size");
                size = (size_t)lua_tonumber(L, -1);
                lua_pop(L, 1);
                luaL_argcheck(L, size <= ld && pos <= ld - size, 2, "data string too short");
            }
            lua_pushlstring(L, data + pos, size);
            break;
        case 's': {
            const char *e = memchr(data + pos, '\0', ld - pos);
            if (!e) luaL_error(L, "unfinished string in data");
            size = (size_t)(e - (data + pos)) + 1;
            lua_pushlstring(L, data + pos, size - 1);
            break;
        }
        default:
            st_controloptions(L, opt, &fmt, &h);
        }
        pos += size;
    }
    lua_pushinteger(L, (lua_Integer)pos + 1);
    return lua_gettop(L) - 2;
}

static int st_size(lua_State *L) {
    st_header h = {st_native_endian(), 1};
    const char *fmt = luaL_checkstring(L, 1);
    size_t pos = 0;
    while (*fmt) {
        int opt = *fmt++;
        size_t size = st_optsize(L, (char)opt, &fmt);
        pos += st_toalign(pos, &h, opt, size);
        if (opt == 's') luaL_argerror(L, 1, "option 's' has no fixed size");
        else if (opt == 'c' && size == 0) luaL_argerror(L, 1, "option 'c0' has no fixed size");
        if (!isalnum(opt)) st_controloptions(L, opt, &fmt, &h);
        pos += size;
    }
    lua_pushinteger(L, (lua_Integer)pos);
    return 1;
}

int fd_luaopen_struct(lua_State *L) {
    static const luaL_Reg fns[] = {
        {"pack", st_pack}, {"unpack", st_unpack}, {"size", st_size}, {NULL, NULL},
    };
    lua_newtable(L);
    luaL_register(L, NULL, fns);
    return 1;
}

/* ============================================================== cmsgpack */

#define MP_MAX_NESTING 16

static void mp_be(unsigned char *d, uint64_t v, int n) {
    for (int i = n - 1; i >= 0; i--) { d[i] = (unsigned char)(v & 0xff); v >>= 8; }
}

/* Is the table at -1 an array (keys exactly 1..n)? */
static int mp_is_array(lua_State *L) {
    long count = 0;
    lua_Number max = 0;
    int top = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        lua_Number n;
        if (lua_type(L, -1) != LUA_TNUMBER || (n = lua_tonumber(L, -1)) <= 0 || n != floor(n)) {
            lua_settop(L, top);
            return 0;
        }
        if (n > max) max = n;
        count++;
    }
    lua_settop(L, top);
    return max == (lua_Number)count;
}

/* The encoder writes into a malloc'd buffer: nothing inside it raises a
 * Lua error except memory (luaL_checkstack / lua_next on huge tables), which
 * would leak at most this buffer on an out-of-memory path. */
typedef struct { unsigned char *p; size_t len, cap; } mbuf;

static void mb_need(lua_State *L, mbuf *m, size_t n) {
    if (m->len + n <= m->cap) return;
    size_t cap = m->cap ? m->cap * 2 : 256;
    while (cap < m->len + n) cap *= 2;
    unsigned char *p = realloc(m->p, cap);
    if (!p) { free(m->p); m->p = NULL; luaL_error(L, "not enough memory"); }
    m->p = p;
    m->cap = cap;
}

static void mb_put(lua_State *L, mbuf *m, const void *p, size_t n) {
    mb_need(L, m, n);
    memcpy(m->p + m->len, p, n);
    m->len += n;
}

static void mb_hdr(lua_State *L, mbuf *m, unsigned char tag, uint64_t v, int n) {
    unsigned char h[9];
    h[0] = tag;
    mp_be(h + 1, v, n);
    mb_put(L, m, h, (size_t)n + 1);
}

static void mb_byte(lua_State *L, mbuf *m, unsigned char c) { mb_put(L, m, &c, 1); }

static void mb_int(lua_State *L, mbuf *m, int64_t n) {
    if (n >= 0) {
        if (n <= 127) mb_byte(L, m, (unsigned char)n);
        else if (n <= 0xff) mb_hdr(L, m, 0xcc, (uint64_t)n, 1);
        else if (n <= 0xffff) mb_hdr(L, m, 0xcd, (uint64_t)n, 2);
        else if (n <= 0xffffffffLL) mb_hdr(L, m, 0xce, (uint64_t)n, 4);
        else mb_hdr(L, m, 0xcf, (uint64_t)n, 8);
    } else {
        if (n >= -32) mb_byte(L, m, (unsigned char)(signed char)n);
        else if (n >= -128) mb_hdr(L, m, 0xd0, (uint64_t)n & 0xff, 1);
        else if (n >= -32768) mb_hdr(L, m, 0xd1, (uint64_t)n & 0xffff, 2);
        else if (n >= -2147483648LL) mb_hdr(L, m, 0xd2, (uint64_t)n & 0xffffffffu, 4);
        else mb_hdr(L, m, 0xd3, (uint64_t)n, 8);
    }
}

static void mb_value(lua_State *L, mbuf *m, int level) {
    int t = lua_type(L, -1);
    if (t == LUA_TTABLE && level == MP_MAX_NESTING) t = LUA_TNIL;
    switch (t) {
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        if (len < 32) mb_byte(L, m, (unsigned char)(0xa0 | len));
        else if (len <= 0xff) mb_hdr(L, m, 0xd9, len, 1);
        else if (len <= 0xffff) mb_hdr(L, m, 0xda, len, 2);
        else mb_hdr(L, m, 0xdb, len, 4);
        mb_put(L, m, s, len);
        break;
    }
    case LUA_TBOOLEAN:
        mb_byte(L, m, lua_toboolean(L, -1) ? 0xc3 : 0xc2);
        break;
    case LUA_TNUMBER: {
        lua_Number n = lua_tonumber(L, -1);
        if (!isinf(n) && !isnan(n) && n >= -9223372036854775808.0 && n < 9223372036854775808.0 &&
            (lua_Number)(int64_t)n == n) {
            mb_int(L, m, (int64_t)n);
        } else {
            float f = (float)n;
            if ((double)f == n) {
                uint32_t u;
                memcpy(&u, &f, 4);
                mb_hdr(L, m, 0xca, u, 4);
            } else {
                uint64_t u;
                memcpy(&u, &n, 8);
                mb_hdr(L, m, 0xcb, u, 8);
            }
        }
        break;
    }
    case LUA_TTABLE:
        luaL_checkstack(L, 3, "in function mp_encode_lua_table");
        if (mp_is_array(L)) {
            size_t len = lua_objlen(L, -1);
            if (len <= 15) mb_byte(L, m, (unsigned char)(0x90 | len));
            else if (len <= 0xffff) mb_hdr(L, m, 0xdc, len, 2);
            else mb_hdr(L, m, 0xdd, len, 4);
            for (size_t j = 1; j <= len; j++) {
                lua_pushnumber(L, (lua_Number)j);
                lua_gettable(L, -2);
                mb_value(L, m, level + 1);
            }
        } else {
            size_t len = 0;
            lua_pushnil(L);
            while (lua_next(L, -2)) { lua_pop(L, 1); len++; }
            if (len <= 15) mb_byte(L, m, (unsigned char)(0x80 | len));
            else if (len <= 0xffff) mb_hdr(L, m, 0xde, len, 2);
            else mb_hdr(L, m, 0xdf, len, 4);
            lua_pushnil(L);
            while (lua_next(L, -2)) {
                lua_pushvalue(L, -2);
                mb_value(L, m, level + 1);
                mb_value(L, m, level + 1);
            }
        }
        break;
    default:
        mb_byte(L, m, 0xc0);
    }
    lua_pop(L, 1);
}

static int mp_pack(lua_State *L) {
    int nargs = lua_gettop(L);
    if (nargs == 0) return luaL_argerror(L, 0, "MessagePack pack needs input.");
    if (!lua_checkstack(L, nargs)) return luaL_argerror(L, 0, "Too many arguments for MessagePack pack.");
    mbuf m = {0};
    for (int i = 1; i <= nargs; i++) {
        luaL_checkstack(L, 1, "in function mp_check");
        lua_pushvalue(L, i);
        mb_value(L, &m, 0);
    }
    lua_pushlstring(L, (const char *)(m.p ? (const char *)m.p : ""), m.len);
    free(m.p);
    return 1;
}

/* ------------------------------------------------------------ decoding */

enum { MP_OK = 0, MP_EOF = 1, MP_BADFMT = 2 };

typedef struct { const unsigned char *p; size_t left; int err; } mp_cur;

static uint64_t mp_rd(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

#define MP_NEED(c, n) do { if ((c)->left < (size_t)(n)) { (c)->err = MP_EOF; return; } } while (0)

static void mp_decode(lua_State *L, mp_cur *c);

static void mp_decode_array(lua_State *L, mp_cur *c, size_t len) {
    luaL_checkstack(L, 2, "in function mp_decode_to_lua_array");
    lua_newtable(L);
    for (size_t j = 0; j < len; j++) {
        lua_pushnumber(L, (lua_Number)(j + 1));
        mp_decode(L, c);
        if (c->err) return;
        lua_settable(L, -3);
    }
}

static void mp_decode_map(lua_State *L, mp_cur *c, size_t len) {
    luaL_checkstack(L, 3, "in function mp_decode_to_lua_hash");
    lua_newtable(L);
    while (len--) {
        mp_decode(L, c);
        if (c->err) return;
        mp_decode(L, c);
        if (c->err) return;
        lua_settable(L, -3);
    }
}

static void mp_decode_str(lua_State *L, mp_cur *c, int hdr, size_t n) {
    MP_NEED(c, (size_t)hdr + n);
    lua_pushlstring(L, (const char *)c->p + hdr, n);
    c->p += (size_t)hdr + n;
    c->left -= (size_t)hdr + n;
}

static void mp_decode(lua_State *L, mp_cur *c) {
    MP_NEED(c, 1);
    luaL_checkstack(L, 1, "too many values");
    unsigned char t = c->p[0];
    size_t n;
    switch (t) {
    case 0xcc: case 0xcd: case 0xce: case 0xcf: {
        int w = 1 << (t - 0xcc);
        MP_NEED(c, 1 + w);
        lua_pushnumber(L, (lua_Number)mp_rd(c->p + 1, w));
        c->p += 1 + w; c->left -= 1 + (size_t)w;
        return;
    }
    case 0xd0: MP_NEED(c, 2); lua_pushnumber(L, (int8_t)c->p[1]); c->p += 2; c->left -= 2; return;
    case 0xd1: MP_NEED(c, 3); lua_pushnumber(L, (int16_t)mp_rd(c->p + 1, 2)); c->p += 3; c->left -= 3; return;
    case 0xd2: MP_NEED(c, 5); lua_pushnumber(L, (int32_t)mp_rd(c->p + 1, 4)); c->p += 5; c->left -= 5; return;
    case 0xd3: MP_NEED(c, 9); lua_pushnumber(L, (lua_Number)(int64_t)mp_rd(c->p + 1, 8)); c->p += 9; c->left -= 9; return;
    case 0xc0: lua_pushnil(L); c->p++; c->left--; return;
    case 0xc2: case 0xc3: lua_pushboolean(L, t == 0xc3); c->p++; c->left--; return;
    case 0xca: {
        MP_NEED(c, 5);
        uint32_t u = (uint32_t)mp_rd(c->p + 1, 4);
        float f;
        memcpy(&f, &u, 4);
        lua_pushnumber(L, f);
        c->p += 5; c->left -= 5;
        return;
    }
    case 0xcb: {
        MP_NEED(c, 9);
        uint64_t u = mp_rd(c->p + 1, 8);
        double d;
        memcpy(&d, &u, 8);
        lua_pushnumber(L, d);
        c->p += 9; c->left -= 9;
        return;
    }
    case 0xc4: case 0xd9: MP_NEED(c, 2); mp_decode_str(L, c, 2, c->p[1]); return;
    case 0xc5: case 0xda: MP_NEED(c, 3); mp_decode_str(L, c, 3, (size_t)mp_rd(c->p + 1, 2)); return;
    case 0xc6: case 0xdb: MP_NEED(c, 5); mp_decode_str(L, c, 5, (size_t)mp_rd(c->p + 1, 4)); return;
    case 0xdc: MP_NEED(c, 3); n = (size_t)mp_rd(c->p + 1, 2); c->p += 3; c->left -= 3; mp_decode_array(L, c, n); return;
    case 0xdd: MP_NEED(c, 5); n = (size_t)mp_rd(c->p + 1, 4); c->p += 5; c->left -= 5; mp_decode_array(L, c, n); return;
    case 0xde: MP_NEED(c, 3); n = (size_t)mp_rd(c->p + 1, 2); c->p += 3; c->left -= 3; mp_decode_map(L, c, n); return;
    case 0xdf: MP_NEED(c, 5); n = (size_t)mp_rd(c->p + 1, 4); c->p += 5; c->left -= 5; mp_decode_map(L, c, n); return;
    default:
        if (t <= 0x7f) { lua_pushnumber(L, t); c->p++; c->left--; return; }
        if (t >= 0xe0) { lua_pushnumber(L, (signed char)t); c->p++; c->left--; return; }
        if ((t & 0xe0) == 0xa0) { mp_decode_str(L, c, 1, t & 0x1f); return; }
        if ((t & 0xf0) == 0x90) { c->p++; c->left--; mp_decode_array(L, c, t & 0x0f); return; }
        if ((t & 0xf0) == 0x80) { c->p++; c->left--; mp_decode_map(L, c, t & 0x0f); return; }
        c->err = MP_BADFMT;
    }
}

static int mp_unpack_full(lua_State *L, lua_Integer limit, lua_Integer offset) {
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    int decode_all = !limit && !offset;
    if (offset < 0 || limit < 0)
        return luaL_error(L, "Invalid request to unpack with offset of %d and limit of %d.", (int)offset, (int)len);
    if ((size_t)offset > len)
        return luaL_error(L, "Start offset %d greater than input length %d.", (int)offset, (int)len);
    if (decode_all) limit = INT_MAX;
    mp_cur c = {(const unsigned char *)s + offset, len - (size_t)offset, MP_OK};
    int cnt;
    for (cnt = 0; c.left > 0 && cnt < limit; cnt++) {
        mp_decode(L, &c);
        if (c.err == MP_EOF) return luaL_error(L, "Missing bytes in input.");
        if (c.err == MP_BADFMT) return luaL_error(L, "Bad data format in input.");
    }
    if (!decode_all) {
        size_t next = len - c.left;
        lua_pushinteger(L, c.left == 0 ? -1 : (lua_Integer)next);
        lua_insert(L, 2);
        cnt++;
    }
    return cnt;
}

static int mp_unpack(lua_State *L) { return mp_unpack_full(L, 0, 0); }

static int mp_unpack_one(lua_State *L) {
    lua_Integer offset = luaL_optinteger(L, 2, 0);
    lua_pop(L, lua_gettop(L) - 1);
    return mp_unpack_full(L, 1, offset);
}

static int mp_unpack_limit(lua_State *L) {
    lua_Integer limit = luaL_checkinteger(L, 2);
    lua_Integer offset = luaL_optinteger(L, 3, 0);
    lua_pop(L, lua_gettop(L) - 1);
    return mp_unpack_full(L, limit, offset);
}

int fd_luaopen_cmsgpack(lua_State *L) {
    static const luaL_Reg fns[] = {
        {"pack", mp_pack}, {"unpack", mp_unpack}, {"unpack_one", mp_unpack_one},
        {"unpack_limit", mp_unpack_limit}, {NULL, NULL},
    };
    lua_newtable(L);
    luaL_register(L, NULL, fns);
    lua_pushliteral(L, "cmsgpack");
    lua_setfield(L, -2, "_NAME");
    lua_pushliteral(L, "lua-cmsgpack 0.4.0");
    lua_setfield(L, -2, "_VERSION");
    lua_pushliteral(L, "Copyright (C) 2012, Salvatore Sanfilippo");
    lua_setfield(L, -2, "_COPYRIGHT");
    lua_pushliteral(L, "MessagePack C implementation for Lua");
    lua_setfield(L, -2, "_DESCRIPTION");
    return 1;
}
