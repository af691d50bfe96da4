/* cmddocs.h — COMMAND DOCS "arguments" from a command's syntax line.
 *
 * A row of the command table carries its syntax the way Redis's help shows it
 * ("key value [NX|XX] [GET] [EX seconds|PX milliseconds|KEEPTTL]"), and this
 * turns it into the argument maps of COMMAND DOCS, from which redis-cli builds
 * its hints. Syntax: words separated by spaces; [ ] an optional group; ( ) a
 * required group; | alternatives inside a group; a trailing "..." repeats the
 * item before it (rendered "x [x ...]"); an UPPERCASE word is a token, and
 * the lowercase words right after it are its values ("EX seconds",
 * "LIMIT offset count"). */
#ifndef FRONTDOOR_CMDDOCS_H
#define FRONTDOOR_CMDDOCS_H
#include "../protocol/resp.h"

/* Append the "arguments" array for `syntax` to o. Returns 0, or -1 if the
 * syntax is malformed (then nothing was written). */
int px_docs_add_arguments(resp_out *o, const char *syntax);

/* Render arguments back as redis-cli does (for tests): into buf. */
int px_docs_render(const char *syntax, char *buf, size_t buflen);

#endif
