/* test_command_coverage.c — the one command table holds together:
 *   - every row's id is its index, names are unique, lower case, and found
 *     by the lookup in any case; flags and routing are consistent;
 *   - every backend built in declares, for every DATA command, that it
 *     serves it or why it refuses it (support() never answers "neither");
 *   - the README's coverage table is the one generated from the table
 *     (frontdoor --coverage), so it cannot drift. */
#include "test.h"
#include "storage/backend.h"
#include "storage/command.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>


int main(void) {
    size_t n;
    fd_command *t = fd_commands_table(&n);
    CHECK(n == FD_CMD_COUNT);
    for (size_t i = 0; i < n; i++) {
        CHECK(t[i].id == (int)i);
        CHECK(t[i].namelen == strlen(t[i].name));
        for (const char *p = t[i].name; *p; p++) CHECK(!isupper((unsigned char)*p));
        char up[64];
        for (size_t k = 0; k <= t[i].namelen; k++) up[k] = (char)toupper((unsigned char)t[i].name[k]);
        CHECK(fd_command_lookup(up, t[i].namelen) == &t[i]);
        CHECK(t[i].arity != 0);
        CHECK(t[i].summary && t[i].group && t[i].since);
        if (t[i].family == FD_FAM_PROXY) {
            CHECK(t[i].cluster == FD_CL_NONE);
        } else {
            CHECK(t[i].family == FD_FAM_DATA);
            CHECK(t[i].cluster != FD_CL_NONE);
            /* a keyed command names its keys; a keyless one says so */
            if (!(t[i].flags & FD_CMD_KEYLESS_BACKEND) && !(t[i].flags & (FD_CMD_NUMKEYS1 | FD_CMD_NUMKEYS2 | FD_CMD_STREAMKEYS)))
                CHECK(t[i].first_key > 0);
            if (t[i].cluster >= FD_CL_SPLIT_SUM && t[i].cluster <= FD_CL_SPLIT_OK) CHECK(t[i].key_step > 0);
        }
        for (size_t j = 0; j < i; j++) CHECK(strcmp(t[i].name, t[j].name) != 0);
    }
    CHECK(fd_command_lookup("nosuchcommand", 13) == NULL);
    CHECK(fd_command_lookup("", 0) == NULL);

    /* key positions: fixed, stepped, counted */
    resp_arg a[6] = {{"mset", 4}, {"k1", 2}, {"v1", 2}, {"k2", 2}, {"v2", 2}, {"x", 1}};
    int pos[8];
    CHECK(fd_command_keys(fd_command_lookup("mset", 4), 5, a, pos, 8) == 2 && pos[0] == 1 && pos[1] == 3);
    resp_arg si[5] = {{"sintercard", 10}, {"2", 1}, {"a", 1}, {"b", 1}, {"LIMIT", 5}};
    CHECK(fd_command_keys(fd_command_lookup("sintercard", 10), 5, si, pos, 8) == 2 && pos[0] == 2 && pos[1] == 3);
    resp_arg bad[3] = {{"sintercard", 10}, {"x", 1}, {"a", 1}};
    CHECK(fd_command_keys(fd_command_lookup("sintercard", 10), 3, bad, pos, 8) == 0);
    resp_arg xr[9] = {{"xreadgroup", 10}, {"GROUP", 5}, {"g", 1}, {"c", 1}, {"COUNT", 5}, {"2", 1},
                      {"streams", 7}, {"s1", 2}, {"0", 1}};
    CHECK(fd_command_keys(fd_command_lookup("xreadgroup", 10), 9, xr, pos, 8) == 1 && pos[0] == 7);
    CHECK(fd_command_keys(fd_command_lookup("xreadgroup", 10), 8, xr, pos, 8) == 0);   /* unbalanced: none */

    /* every backend: served or refused with a reason, never neither */
    const fd_backend_ops *const *bs = fd_backend_list();
    int nb = 0;
    for (size_t b = 0; bs[b]; b++, nb++) {
        CHECK(bs[b]->support != NULL);
        if (!bs[b]->support) continue;
        for (size_t i = 0; i < n; i++) {
            if (t[i].family != FD_FAM_DATA) continue;
            const char *why = bs[b]->support(&t[i]);
            if (!why) fprintf(stderr, "  backend %s declares nothing for '%s'\n", bs[b]->name, t[i].name);
            CHECK(why != NULL);
            if (why && why != FD_SERVED) CHECK(strlen(why) > 10);   /* a reason, not a word */
        }
    }
    CHECK(nb >= 1);

    /* the README shows the generated table (of a build with every backend) */
    if (nb < 5) return TEST_DONE();
    char *md = fd_backend_coverage_markdown();
    CHECK(md != NULL);
    char *readme = t_read_file(FD_SOURCE_DIR "/README.md");
    CHECK(readme != NULL);
    if (md && readme && !strstr(readme, md))
        fprintf(stderr, "  README.md's coverage table is not `frontdoor --coverage`'s output: regenerate it\n");
    CHECK(md && readme && strstr(readme, md));
    free(md);
    free(readme);
    return TEST_DONE();
}
