/* command.c — the one command table, built from commands.def. */
#include "command.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define W  FD_CMD_WRITE
#define R  FD_CMD_READONLY
#define A  FD_CMD_ADMIN
#define F  FD_CMD_FAST
#define NA FD_CMD_NOAUTH
#define M  FD_CMD_DENYOOM
#define KB FD_CMD_KEYLESS_BACKEND
#define ND FD_CMD_NONDET
#define UO FD_CMD_UNORDERED
#define PR (FD_CMD_UNORDERED | FD_CMD_PAIRS)
#define NK1 FD_CMD_NUMKEYS1
#define NK2 FD_CMD_NUMKEYS2
#define NS  FD_CMD_NOSCRIPT
#define AM  FD_CMD_IN_MULTI
#define SK  FD_CMD_STREAMKEYS
#define TC  FD_CMD_TOUCH_CHANGED
#define C_ADM FD_CMD_CAT_ADMIN
#define C_DNG FD_CMD_CAT_DANGEROUS
#define C_KSP FD_CMD_CAT_KEYSPACE
#define C_BLK FD_CMD_CAT_BLOCKING
#define C_CON FD_CMD_CAT_CONNECTION
#define C_SRT FD_CMD_CAT_SORT
#define SUB   FD_CMD_CONTAINER
#define KR    FD_CMD_KEY_R
#define KW    FD_CMD_KEY_W
#define K0    FD_CMD_KEY_NONE
#define K1R   FD_CMD_KEY1_R
#define K1W   FD_CMD_KEY1_W

static fd_command table[FD_CMD_COUNT] = {
#define CMD(id_, ar, fl, f, l, s, fam, impl, cl, grp, since_, summ, syn) \
    [FD_CMD_##id_] = {.name = #id_, .arity = ar, .flags = fl, .first_key = f, .last_key = l, .key_step = s, \
                      .family = FD_FAM_##fam, .cluster = FD_CL_##cl, .group = grp, .since = since_,         \
                      .summary = summ, .args = syn, .id = FD_CMD_##id_, .namelen = sizeof(#id_) - 1},
#include "commands.def"
#undef CMD
};

#define HASH_SIZE 1024   /* power of two, > 2x the table */
static fd_command *buckets[HASH_SIZE];
static int built;

static unsigned hash_name(const char *s, size_t n) {
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)tolower((unsigned char)s[i])) * 16777619u;
    return h;
}

void fd_commands_init(void) {
    if (built) return;
    _Static_assert(HASH_SIZE > 2 * FD_CMD_COUNT, "grow HASH_SIZE");
    for (size_t i = 0; i < FD_CMD_COUNT; i++) {
        unsigned h = hash_name(table[i].name, table[i].namelen) & (HASH_SIZE - 1);
        while (buckets[h]) h = (h + 1) & (HASH_SIZE - 1);
        buckets[h] = &table[i];
    }
    built = 1;
}

fd_command *fd_command_lookup(const char *name, size_t len) {
    if (len == 0 || len > 32) return NULL;
    if (!built) fd_commands_init();
    unsigned h = hash_name(name, len) & (HASH_SIZE - 1);
    for (fd_command *c; (c = buckets[h]) != NULL; h = (h + 1) & (HASH_SIZE - 1))
        if (c->namelen == len && !strncasecmp(c->name, name, len)) return c;
    return NULL;
}

fd_command *fd_commands_table(size_t *count) {
    *count = FD_CMD_COUNT;
    return table;
}

fd_command *fd_command_by_id(int id) {
    return id >= 0 && id < FD_CMD_COUNT ? &table[id] : NULL;
}

int fd_command_keys(const fd_command *cmd, int argc, const resp_arg *argv, int *pos, int max) {
    int n = 0;
    if (!cmd) return 0;
    if (cmd->first_key > 0) {
        int last = cmd->last_key < 0 ? argc + cmd->last_key : cmd->last_key;
        int step = cmd->key_step > 0 ? cmd->key_step : 1;
        for (int i = cmd->first_key; i <= last && i < argc && n < max; i += step) pos[n++] = i;
    }
    if (cmd->id == FD_CMD_sort) {              /* as Redis's sortGetKeys: the last STORE's key */
        int store = 0;
        for (int i = 2; i < argc; i++) {          /* LIMIT skips 2, GET and BY 1; the store key itself */
            if (resp_arg_is(&argv[i], "limit")) i += 2;   /* is read as an option too, as Redis does */
            else if (resp_arg_is(&argv[i], "store") && i + 1 < argc) store = i + 1;
            else if (resp_arg_is(&argv[i], "get") || resp_arg_is(&argv[i], "by")) i++;
        }
        if (store && n < max) pos[n++] = store;
        return n;
    }
    if (cmd->id == FD_CMD_georadius || cmd->id == FD_CMD_georadiusbymember) {
        /* Redis 7.0's key specs: the key after the first STORE, then the
         * one after the first STOREDIST, searched from the options on */
        static const char *const kw[] = {"store", "storedist"};
        for (int k = 0; k < 2; k++)
            for (int i = cmd->id == FD_CMD_georadius ? 6 : 5; i < argc - 1; i++)
                if (resp_arg_is(&argv[i], kw[k])) {
                    if (n < max) pos[n++] = i + 1;
                    break;
                }
        return n;
    }
    if (cmd->flags & FD_CMD_STREAMKEYS) {      /* as Redis's xreadGetKeys */
        int sp = -1;
        for (int i = 1; i < argc; i++) {
            if (resp_arg_is(&argv[i], "block") || resp_arg_is(&argv[i], "count")) i++;
            else if (resp_arg_is(&argv[i], "group")) i += 2;
            else if (resp_arg_is(&argv[i], "noack")) continue;
            else if (resp_arg_is(&argv[i], "streams")) { sp = i; break; }
            else break;
        }
        int num = sp < 0 ? 0 : argc - sp - 1;
        if (num == 0) return n;                  /* an odd count: the first half (Redis's key spec) */
        for (int i = 0; i < num / 2 && n < max; i++) pos[n++] = sp + 1 + i;
        return n;
    }
    int at = (cmd->flags & FD_CMD_NUMKEYS1) ? 1 : (cmd->flags & FD_CMD_NUMKEYS2) ? 2 : 0;
    if (at && at < argc) {
        long long k = 0;
        const resp_arg *a = &argv[at];
        for (size_t i = 0; i < a->len; i++) {
            if (a->ptr[i] < '0' || a->ptr[i] > '9' || k > argc) { k = 0; break; }
            k = k * 10 + (a->ptr[i] - '0');
        }
        for (long long i = 0; i < k && at + 1 + i < argc && n < max; i++) pos[n++] = (int)(at + 1 + i);
    }
    return n;
}

static const char *const category_names[FD_CAT_COUNT] = {
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap", "hyperloglog",
    "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous", "connection",
    "transaction", "scripting",
};

const char *fd_category_name(int cat) { return cat >= 0 && cat < FD_CAT_COUNT ? category_names[cat] : NULL; }

int fd_category_lookup(const char *name, size_t len) {
    for (int i = 0; i < FD_CAT_COUNT; i++)
        if (strlen(category_names[i]) == len && !strncasecmp(category_names[i], name, len)) return i;
    return -1;
}

uint32_t fd_command_categories(const fd_command *cmd) {
    static const struct { const char *group; int cat; } groups[] = {
        {"generic", FD_CAT_KEYSPACE}, {"string", FD_CAT_STRING}, {"bitmap", FD_CAT_BITMAP},
        {"hyperloglog", FD_CAT_HYPERLOGLOG}, {"list", FD_CAT_LIST}, {"hash", FD_CAT_HASH},
        {"set", FD_CAT_SET}, {"sorted-set", FD_CAT_SORTEDSET}, {"geo", FD_CAT_GEO},
        {"stream", FD_CAT_STREAM}, {"pubsub", FD_CAT_PUBSUB}, {"connection", FD_CAT_CONNECTION},
        {"transactions", FD_CAT_TRANSACTION}, {"scripting", FD_CAT_SCRIPTING},
    };
#define BIT(c) (1u << (c))
    uint32_t f = cmd->flags, cats = 0;
    if (f & FD_CMD_WRITE) cats |= BIT(FD_CAT_WRITE);
    if (f & FD_CMD_READONLY) cats |= BIT(FD_CAT_READ);
    cats |= (f & FD_CMD_FAST) ? BIT(FD_CAT_FAST) : BIT(FD_CAT_SLOW);
    if (f & (FD_CMD_ADMIN | FD_CMD_CAT_ADMIN)) cats |= BIT(FD_CAT_ADMIN);
    if (f & (FD_CMD_ADMIN | FD_CMD_CAT_DANGEROUS)) cats |= BIT(FD_CAT_DANGEROUS);
    if (f & FD_CMD_CAT_KEYSPACE) cats |= BIT(FD_CAT_KEYSPACE);
    if (f & FD_CMD_CAT_BLOCKING) cats |= BIT(FD_CAT_BLOCKING);
    if (f & FD_CMD_CAT_CONNECTION) cats |= BIT(FD_CAT_CONNECTION);
    if (f & FD_CMD_CAT_SORT) cats |= BIT(FD_CAT_LIST) | BIT(FD_CAT_SET) | BIT(FD_CAT_SORTEDSET);
    else
        for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
            if (!strcmp(cmd->group, groups[i].group)) cats |= BIT(groups[i].cat);
#undef BIT
    return cats;
}

#define CB(c) (1u << FD_CAT_##c)
static const struct { int id; const char *sub; uint32_t cats; } subcats[] = {
#define ACL_ADMIN(s) {FD_CMD_acl, s, CB(ADMIN) | CB(SLOW) | CB(DANGEROUS)}
    ACL_ADMIN("deluser"), ACL_ADMIN("dryrun"), ACL_ADMIN("getuser"), ACL_ADMIN("list"), ACL_ADMIN("load"),
    ACL_ADMIN("log"), ACL_ADMIN("save"), ACL_ADMIN("setuser"), ACL_ADMIN("users"),
#define CLIENT_ADMIN(s) {FD_CMD_client, s, CB(ADMIN) | CB(SLOW) | CB(DANGEROUS) | CB(CONNECTION)}
    CLIENT_ADMIN("kill"), CLIENT_ADMIN("list"), CLIENT_ADMIN("no-evict"), CLIENT_ADMIN("pause"),
    CLIENT_ADMIN("unpause"), CLIENT_ADMIN("unblock"),
#define FUNCTION_WRITE(s) {FD_CMD_function, s, CB(WRITE) | CB(SLOW) | CB(SCRIPTING)}
    FUNCTION_WRITE("load"), FUNCTION_WRITE("delete"), FUNCTION_WRITE("flush"), FUNCTION_WRITE("restore"),
#undef ACL_ADMIN
#undef CLIENT_ADMIN
#undef FUNCTION_WRITE
};
#undef CB

int fd_subcommand_categories(int i, int *id, const char **sub, uint32_t *cats) {
    if (i < 0 || (size_t)i >= sizeof subcats / sizeof subcats[0]) return 0;
    *id = subcats[i].id;
    *sub = subcats[i].sub;
    *cats = subcats[i].cats;
    return 1;
}

int fd_command_key_need(const fd_command *cmd, int first) {
    uint32_t f = cmd->flags;
    if (first && (f & (FD_CMD_KEY1_R | FD_CMD_KEY1_W)))
        return (f & FD_CMD_KEY1_R ? FD_KEY_NEED_R : 0) | (f & FD_CMD_KEY1_W ? FD_KEY_NEED_W : 0);
    if (f & FD_CMD_KEY_NONE) return 0;
    if (f & (FD_CMD_KEY_R | FD_CMD_KEY_W))
        return (f & FD_CMD_KEY_R ? FD_KEY_NEED_R : 0) | (f & FD_CMD_KEY_W ? FD_KEY_NEED_W : 0);
    if (f & FD_CMD_WRITE) return FD_KEY_NEED_W;
    if (f & FD_CMD_READONLY) return FD_KEY_NEED_R;
    return FD_KEY_NEED_R | FD_KEY_NEED_W;
}
