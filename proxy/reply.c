/* reply.c — replies the proxy's commands share (server.h): an error from a
 * storage status code, the answer to "<CMD> HELP". Part of the core (it
 * knows no feature); every feature's handlers use them. */
#include "server.h"

#include <stdio.h>
#include <string.h>

void px_reply_status(resp_out *o, int status, const char *cmdname) {
    const char *text = fd_strerror(status);
    if (strstr(text, "%s")) {
        char buf[512];
        snprintf(buf, sizeof buf, text, cmdname);   /* texts are ours, with at most one %s */
        resp_add_error(o, buf);
    } else {
        resp_add_error(o, text);
    }
}

void px_reply_help(px_conn *c, const char *cmd, const char *const *lines) {
    int n = 0;
    while (lines[n]) n++;
    resp_add_array(&c->out, n + 1);
    char head[128];
    snprintf(head, sizeof head, "%s <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", cmd);
    resp_add_status(&c->out, head);
    for (int i = 0; i < n; i++) resp_add_status(&c->out, lines[i]);
}
