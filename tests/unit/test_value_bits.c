/* test_value_bits.c — storage/value/bits.c against a real redis-server 7.0:
 * every reply byte for byte (RESP2, and RESP3 for the read-only commands)
 * and every stored value (GET), on fixed edge cases (offset limits, negative
 * and past-the-end ranges, BIT mode, BITFIELD overflow under WRAP/SAT/FAIL,
 * errors in Redis's order) and on random command sequences. */
#include "value_oracle.h"

static unsigned long long rng = 0x9e3779b97f4a7c15ULL;
static unsigned long long rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static long long rrange(long long lo, long long hi) { return lo + (long long)(rnd() % (unsigned long long)(hi - lo + 1)); }

static const char *const fixed_setup[] = {
    "SET s foobar", "SET e x", "DEL e", "LPUSH l a", "SET ff \xff\xff\xff",
    "SET mix \xf0\x0f\xaa", NULL,
};

/* Cases whose replies (and effects) must match. Read-only ones are also
 * compared in RESP3 by the loop below. */
static const char *const fixed_cases[] = {
    "BITCOUNT empty", "BITPOS empty 0", "BITPOS empty 1", "BITPOS empty 0 0", "BITPOS empty 0 0 -1 bit",
    "BITCOUNT empty 0 -1 bit", "BITCOUNT empty 0 -1", "GETBIT empty 0", "BITFIELD_RO empty get u8 0",
    /* GETBIT / SETBIT */
    "GETBIT s 0", "GETBIT s 1", "GETBIT s 47", "GETBIT s 48", "GETBIT s 100000", "GETBIT nokey 3",
    "GETBIT s -1", "GETBIT s x", "GETBIT s 4294967295", "GETBIT s 4294967296", "GETBIT l 1", "GETBIT l x",
    "GETBIT s 01", "GETBIT s +1",
    "SETBIT s x 1", "SETBIT s -1 1", "SETBIT s 1 2", "SETBIT s 1 -1", "SETBIT s 1 x", "SETBIT s 4294967296 1",
    "SETBIT l 1 1", "SETBIT l x 1", "SETBIT l 1 2", "SETBIT s 1 01",
    "SETBIT s 7 1", "SETBIT s 7 1", "SETBIT s 7 0", "SETBIT s 100 0", "GET s", "SETBIT new 0 0", "GET new",
    "SETBIT new2 33 1", "GET new2",
    /* BITCOUNT */
    "BITCOUNT s", "BITCOUNT nokey", "BITCOUNT nokey a b", "BITCOUNT nokey 0", "BITCOUNT nokey 1 2 3 4",
    "BITCOUNT l", "BITCOUNT l x", "BITCOUNT l 1 2 3 4", "BITCOUNT s 0", "BITCOUNT s 1 2 3 4",
    "BITCOUNT s 0 0", "BITCOUNT s 1 1", "BITCOUNT s 0 -1", "BITCOUNT s -2 -1", "BITCOUNT s -1 -2",
    "BITCOUNT s -1 -2 foo", "BITCOUNT s -100 -200", "BITCOUNT s -100 -2", "BITCOUNT s -100 100",
    "BITCOUNT s 5 2", "BITCOUNT s 0 1000", "BITCOUNT s 1000 2000", "BITCOUNT s x 1", "BITCOUNT s 1 x",
    "BITCOUNT s 1 1 foo", "BITCOUNT s a 1 foo", "BITCOUNT s 0 -1 bit", "BITCOUNT s 0 -1 BYTE",
    "BITCOUNT s 1 1 bit", "BITCOUNT s 5 30 bit", "BITCOUNT s -5 -1 bit", "BITCOUNT s -5 -10 bit",
    "BITCOUNT s 9 9 bit", "BITCOUNT s 8 15 bit", "BITCOUNT s 3 4 bit", "BITCOUNT s 40 100000 bit",
    "BITCOUNT s -100000 3 bit", "BITCOUNT ff 1 22 bit", "BITCOUNT ff 7 8 bit", "BITCOUNT mix 2 19 bit",
    "BITCOUNT s 9223372036854775807 -9223372036854775808", "BITCOUNT s -9223372036854775808 9223372036854775807 bit",
    /* BITPOS */
    "BITPOS s 1", "BITPOS s 0", "BITPOS nokey 1", "BITPOS nokey 0", "BITPOS nokey 1 a", "BITPOS nokey 2",
    "BITPOS nokey x", "BITPOS nokey 1 2 3 4 5", "BITPOS l 3", "BITPOS l 1 x", "BITPOS l 1",
    "BITPOS s 0 1 2 3", "BITPOS s 0 1 2 bit", "BITPOS s 0 1 2 byte", "BITPOS s 1 0 -1 foo",
    "BITPOS s 1 x -1 foo", "BITPOS s 1 1 x foo", "BITPOS s 1 1 x", "BITPOS s 1 2 3 4 5",
    "BITPOS s 1 -100 -200", "BITPOS s 0 -100 -200", "BITPOS s 1 2", "BITPOS s 1 2 -1", "BITPOS s 1 200",
    "BITPOS s 0 200", "BITPOS s 1 -1", "BITPOS s 0 -1", "BITPOS ff 0", "BITPOS ff 0 1", "BITPOS ff 0 0 -1",
    "BITPOS ff 1", "BITPOS ff 0 3 -1 bit", "BITPOS ff 0 0 23 bit", "BITPOS ff 0 0 100 bit", "BITPOS z 1",
    "BITPOS z 0", "BITPOS z 1 0 -1 bit", "BITPOS z 0 5 5 bit", "BITPOS z 1 0 1", "BITPOS one 1",
    "BITPOS one 1 0 6 bit", "BITPOS one 1 7 7 bit", "BITPOS one 0 7 7 bit", "BITPOS mix 1 4 11 bit",
    "BITPOS mix 0 4 11 bit", "BITPOS mix 1 5 6 bit", "BITPOS mix 0 1 3 bit", "BITPOS mix 1 -10 -3 bit",
    "BITPOS mix 0 -1 -1 bit", "BITPOS mix 1 10 3 bit", "BITPOS mix 0 16 23 bit", "BITPOS mix 1 1 0",
    /* BITOP */
    "BITOP foo d s", "BITOP diff d s s", "BITOP not d s s", "BITOP and d l", "BITOP not d l", "BITOP and d s l",
    "BITOP or d s nokey", "GET d", "BITOP or d nokey", "GET d", "BITOP and d s", "GET d", "BITOP AND d s ff",
    "GET d", "BITOP and d s nokey", "GET d", "BITOP xor d s ff mix", "GET d", "BITOP or d ff s", "GET d",
    "BITOP not d mix", "GET d", "BITOP not d nokey", "GET d", "BITOP xor d d d", "GET d", "BITOP nOt d s", "GET d",
    /* BITFIELD */
    "BITFIELD l get u99 0", "BITFIELD l get u8 0", "BITFIELD s overflow foo get u8 0", "BITFIELD s overflow",
    "BITFIELD s get u8", "BITFIELD s get u64 0", "BITFIELD s get i64 #1", "BITFIELD s get u8 #x",
    "BITFIELD s get u8 #536870911", "BITFIELD s get u8 #536870912", "BITFIELD s get u8 #-1", "BITFIELD s get u8 #",
    "BITFIELD s get u8 +1", "BITFIELD s get i8 -1", "BITFIELD s get u8 1 get", "BITFIELD s get u+8 0",
    "BITFIELD s get u08 0", "BITFIELD s set u8 0 x", "BITFIELD s foo", "BITFIELD s get u0 0", "BITFIELD s get U8 0",
    "BITFIELD s get i65 0", "BITFIELD s get i0 0", "BITFIELD s get u63 0", "BITFIELD s get i64 0",
    "BITFIELD s get u8 4294967288", "BITFIELD s get u8 4294967289", "BITFIELD s", "BITFIELD nk3",
    "BITFIELD s overflow wrap", "BITFIELD s get u8 0 get i8 0 get u4 4 get i4 4 get i1 0 get u1 1 get i17 3",
    "BITFIELD s get i64 0 get u63 1 get i64 5 get i64 40", "BITFIELD s set u8 #100 1 get u8 0 get u8 #200",
    "BITFIELD s get u8 0 set u8 0 1 incrby u8 0 x",
    "BITFIELD nk overflow fail incrby u8 0 300", "GET nk", "BITFIELD nk2 overflow fail incrby u8 100 300 get u8 200",
    "GET nk2", "BITFIELD nk4 get u8 0", "GET nk4",
    "BITFIELD_RO s get u8 0 set u8 0 1", "BITFIELD_RO l get u8 0", "BITFIELD_RO l set u8 0 1",
    "BITFIELD_RO s get u8 0 get i5 3", "BITFIELD_RO nokey get i64 0", "BITFIELD_RO s overflow sat get u8 0",
    "BITFIELD_RO s incrby u8 0 1 foo", "BITFIELD_RO s foo",
    /* overflow: unsigned */
    "SET bf x", "DEL bf",
    "BITFIELD bf set u8 0 255 get u8 0", "BITFIELD bf incrby u8 0 1", "BITFIELD bf incrby u8 0 -1",
    "BITFIELD bf overflow sat incrby u8 0 300", "BITFIELD bf overflow sat incrby u8 0 -300",
    "BITFIELD bf overflow fail incrby u8 0 -1", "BITFIELD bf overflow fail incrby u8 0 256",
    "BITFIELD bf overflow wrap incrby u8 0 -257", "BITFIELD bf set u8 0 -1", "BITFIELD bf overflow sat set u8 0 -1",
    "BITFIELD bf overflow fail set u8 0 -1", "BITFIELD bf overflow fail set u8 0 256",
    "BITFIELD bf overflow sat set u8 0 256", "BITFIELD bf set u8 0 256",
    "BITFIELD bf set u63 8 9223372036854775807 get u63 8", "BITFIELD bf incrby u63 8 1",
    "BITFIELD bf overflow sat incrby u63 8 9223372036854775807", "BITFIELD bf overflow fail incrby u63 8 -9223372036854775808",
    "BITFIELD bf overflow sat incrby u63 8 -9223372036854775808", "BITFIELD bf overflow wrap incrby u63 8 -9223372036854775808",
    "BITFIELD bf set u1 3 1 incrby u1 3 1 overflow sat incrby u1 3 5 overflow fail incrby u1 3 1",
    "BITFIELD bf set u5 13 -3 incrby u5 13 100 overflow sat incrby u5 13 -100", "GET bf",
    /* overflow: signed */
    "BITFIELD bf set i8 0 127 incrby i8 0 1 incrby i8 0 -1", "BITFIELD bf overflow sat incrby i8 0 1000",
    "BITFIELD bf overflow sat incrby i8 0 -1000", "BITFIELD bf overflow fail incrby i8 0 -1",
    "BITFIELD bf overflow fail set i8 0 128", "BITFIELD bf overflow sat set i8 0 128",
    "BITFIELD bf overflow sat set i8 0 -129", "BITFIELD bf set i8 0 -129", "BITFIELD bf set i8 0 128",
    "BITFIELD bf set i64 16 9223372036854775807 incrby i64 16 1", "BITFIELD bf incrby i64 16 -1",
    "BITFIELD bf overflow sat incrby i64 16 -9223372036854775808 incrby i64 16 -9223372036854775808",
    "BITFIELD bf overflow fail incrby i64 16 -1", "BITFIELD bf overflow sat set i64 16 9223372036854775807 incrby i64 16 10",
    "BITFIELD bf overflow wrap incrby i64 16 9223372036854775807",
    "BITFIELD bf set i1 3 -1 get i1 3 incrby i1 3 1 incrby i1 3 -1 overflow sat incrby i1 3 -5",
    "BITFIELD bf overflow fail incrby i1 3 -2 set i1 3 1 set i1 3 -1", "BITFIELD bf set i7 91 63 incrby i7 91 1 overflow wrap incrby i7 91 200",
    "BITFIELD bf overflow FAIL set i3 0 -5 overflow Sat set i3 0 -5 overflow wRaP set i3 0 -5 get i3 0", "GET bf",
    "BITFIELD bf incrby u8 #1000 0", "GET bf", "BITFIELD bf incrby i64 #10 0 set u2 #900 3", "GET bf",
    NULL,
};

static int is_read_only(const char *line)
{
    return !strncasecmp(line, "GETBIT", 6) || !strncasecmp(line, "BITCOUNT", 8) ||
           !strncasecmp(line, "BITPOS", 6) || !strncasecmp(line, "BITFIELD_RO", 11) || !strncasecmp(line, "GET ", 4);
}

/* commands over byte strings with arbitrary bytes: built as argv */
static int same_args(int proto3, int argc, ...)
{
    resp_arg argv[16];
    va_list ap;
    va_start(ap, argc);
    for (int i = 0; i < argc; i++) {
        argv[i].ptr = va_arg(ap, char *);
        argv[i].len = va_arg(ap, size_t);
    }
    va_end(ap);
    return same_v(argc, argv, proto3);
}
#define A(s) (char *)(s), (sizeof(s) - 1)

static void fixed(void)
{
    /* values with bytes the line splitter cannot carry (NUL, spaces) */
    CHECK(same_args(0, 3, A("SET"), A("z"), A("\x00\x00")));
    CHECK(same_args(0, 3, A("SET"), A("one"), A("\x01")));
    CHECK(same_args(0, 3, A("SET"), A("empty"), A("")));
    for (int i = 0; fixed_setup[i]; i++) CHECK(same(0, "%s", fixed_setup[i]));
    for (int i = 0; fixed_cases[i]; i++) {
        int ok = same(is_read_only(fixed_cases[i]), "%s", fixed_cases[i]);
        if (!ok) fprintf(stderr, "  (case %d)\n", i);
        CHECK(ok);
    }
    /* option names compare as C strings in Redis: a NUL byte ends them */
    CHECK(same_args(1, 5, A("BITCOUNT"), A("s"), A("0"), A("-1"), A("bit\x00zz")));
    CHECK(same_args(1, 5, A("BITFIELD_RO"), A("s"), A("get\x00x"), A("u8\x00x"), A("3")));
    CHECK(same_args(1, 5, A("BITFIELD_RO"), A("s"), A("get"), A("u8\x00x"), A("0")));
    const char *keys[] = { "s", "ff", "z", "one", "mix", "bf", "nk", "nk2", "nk4", "d", "new", "new2" };
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) CHECK(same_value(keys[i]));

    /* the offset limit follows proto-max-bulk-len */
    CHECK(or_cmd(or_fd2, "CONFIG SET proto-max-bulk-len 1mb") == 0);
    m_max_bulk = 1024 * 1024;
    CHECK(same(1, "GETBIT s 8388607"));
    CHECK(same(1, "GETBIT s 8388608"));
    CHECK(same(0, "SETBIT s 8388608 1"));
    CHECK(same(1, "BITFIELD_RO s get u8 8388600"));
    CHECK(same(1, "BITFIELD_RO s get u8 8388608"));
    CHECK(same(1, "BITFIELD_RO s get i64 #131071"));
    CHECK(same(1, "BITFIELD_RO s get i64 #131072"));
    CHECK(or_cmd(or_fd2, "CONFIG SET proto-max-bulk-len 512mb") == 0);
    m_max_bulk = 512LL * 1024 * 1024;
}

/* the SETBIT patch API: a one-byte change described without the value */
static void patch_api(void)
{
    unsigned char v[3] = { 0x00, 0xff, 0x10 };
    fd_setbit p = { .offset = 11, .on = 0 };
    fd_bitpatch pt;
    fd_setbit_plan(&p, v, 3, &pt);
    CHECK(pt.byte == 1 && pt.val == 0xef && pt.oldbit == 1 && pt.newlen == 3 && pt.write);
    p.on = 1;
    fd_setbit_plan(&p, v, 3, &pt);
    CHECK(pt.byte == 1 && pt.val == 0xff && pt.oldbit == 1 && !pt.write);
    p.offset = 40;
    fd_setbit_plan(&p, v, 3, &pt);
    CHECK(pt.byte == 5 && pt.val == 0x80 && pt.oldbit == 0 && pt.newlen == 6 && pt.write);
    p.on = 0;
    fd_setbit_plan(&p, NULL, 0, &pt);
    CHECK(pt.byte == 5 && pt.val == 0 && pt.newlen == 6 && pt.write);
}

/* Random sequences over a few keys: writes of every kind, then every read
 * command with random ranges, compared reply by reply. */
static void randomised(void)
{
    const char *keys[] = { "r0", "r1", "r2", "r3" };
    char line[1024];
    int bad = 0;
    for (int it = 0; it < 20000 && bad < 5; it++) {
        const char *k = keys[rnd() % 4];
        long long len = rnd() % 4 ? 40 : 300;   /* rough value size the ranges aim around */
        int ro = 0;
        switch (rnd() % 12) {
        case 0: snprintf(line, sizeof line, "SETBIT %s %lld %d", k, rrange(0, 8 * len), (int)(rnd() % 2)); break;
        case 1: snprintf(line, sizeof line, "GETBIT %s %lld", k, rrange(0, 8 * len + 10)); ro = 1; break;
        case 2: snprintf(line, sizeof line, "BITCOUNT %s %lld %lld", k, rrange(-len - 5, len + 5), rrange(-len - 5, len + 5)); ro = 1; break;
        case 3: snprintf(line, sizeof line, "BITCOUNT %s %lld %lld BIT", k, rrange(-8 * len - 20, 8 * len + 20), rrange(-8 * len - 20, 8 * len + 20)); ro = 1; break;
        case 4: snprintf(line, sizeof line, "BITPOS %s %d %lld", k, (int)(rnd() % 2), rrange(-len - 5, len + 5)); ro = 1; break;
        case 5: snprintf(line, sizeof line, "BITPOS %s %d %lld %lld", k, (int)(rnd() % 2), rrange(-len - 5, len + 5), rrange(-len - 5, len + 5)); ro = 1; break;
        case 6: snprintf(line, sizeof line, "BITPOS %s %d %lld %lld BIT", k, (int)(rnd() % 2), rrange(-8 * len - 20, 8 * len + 20), rrange(-8 * len - 20, 8 * len + 20)); ro = 1; break;
        case 7: snprintf(line, sizeof line, "BITOP %s %s %s %s", (const char *[]){ "AND", "OR", "XOR" }[rnd() % 3], k, keys[rnd() % 4], keys[rnd() % 4]); break;
        case 8: snprintf(line, sizeof line, "BITOP NOT %s %s", k, keys[rnd() % 4]); break;
        case 9: {
            int n = snprintf(line, sizeof line, "BITFIELD %s", k);
            for (int j = 0, ops = 1 + (int)(rnd() % 4); j < ops; j++) {
                int sign = (int)(rnd() % 2), bits = sign ? (int)rrange(1, 64) : (int)rrange(1, 63);
                const char *ow[] = { "WRAP", "SAT", "FAIL" };
                long long off = rrange(0, 8 * len);
                long long val = (rnd() % 3 == 0) ? (long long)rnd() : rrange(-300, 300);
                switch (rnd() % 4) {
                case 0: n += snprintf(line + n, sizeof line - n, " GET %c%d %lld", sign ? 'i' : 'u', bits, off); break;
                case 1: n += snprintf(line + n, sizeof line - n, " SET %c%d %lld %lld", sign ? 'i' : 'u', bits, off, val); break;
                case 2: n += snprintf(line + n, sizeof line - n, " INCRBY %c%d %lld %lld", sign ? 'i' : 'u', bits, off, val); break;
                default: n += snprintf(line + n, sizeof line - n, " OVERFLOW %s", ow[rnd() % 3]); break;
                }
            }
            break;
        }
        case 10: snprintf(line, sizeof line, "BITFIELD_RO %s GET i%d %lld GET u%d #%lld", k, (int)rrange(1, 64), rrange(0, 8 * len), (int)rrange(1, 63), rrange(0, 20)); ro = 1; break;
        default:
            if (rnd() % 8 == 0) snprintf(line, sizeof line, "DEL %s", k);
            else snprintf(line, sizeof line, "GET %s", k);
            break;
        }
        int ok = same(ro, "%s", line);
        if (!ok) bad++;
        CHECK(ok);
    }
    for (int i = 0; i < 4; i++) CHECK(same_value(keys[i]));
}

int main(void)
{
    if (oracle_start() != 0) { CHECK(0); oracle_stop(); return TEST_DONE(); }
    patch_api();
    fixed();
    randomised();
    oracle_stop();
    m_reset();
    return TEST_DONE();
}
