/* cmddocs.c — syntax line → COMMAND DOCS arguments (see cmddocs.h). */
#include "cmddocs.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

enum arg_type { A_STRING, A_KEY, A_INTEGER, A_PURE_TOKEN, A_ONEOF, A_BLOCK };
static const char *const type_names[] = {"string", "key", "integer", "pure-token", "oneof", "block"};

#define MAX_NODES 128
#define MAX_KIDS 24

typedef struct node {
    enum arg_type type;
    char name[48];
    char token[48];
    int optional, multiple;
    int nkids;
    int kids[MAX_KIDS];
} node;

typedef struct parser {
    const char *s;
    node nodes[MAX_NODES];
    int n;
    int err;
} parser;

static int new_node(parser *p) {
    if (p->n == MAX_NODES) { p->err = 1; return 0; }
    memset(&p->nodes[p->n], 0, sizeof(node));
    return p->n++;
}

/* Node names are all char[48]: copy between nodes of the same tree. */
static void copy_name(char *dst, const char *src) {
    size_t n = strlen(src);
    if (n > 47) n = 47;
    memmove(dst, src, n);
    dst[n] = '\0';
}

static void skip_ws(parser *p) { while (*p->s == ' ') p->s++; }

static int is_word_char(char c) { return c && c != ' ' && c != '[' && c != ']' && c != '(' && c != ')' && c != '|'; }

/* Read a word; returns its length (0 if none). "..." is not part of it. */
static size_t read_word(parser *p, char *buf, size_t buflen) {
    size_t n = 0;
    while (is_word_char(*p->s) && strncmp(p->s, "...", 3) != 0) {
        if (n + 1 < buflen) buf[n++] = *p->s;
        p->s++;
    }
    buf[n] = '\0';
    return n;
}

static int is_upper_word(const char *w) {
    int letters = 0;
    for (; *w; w++) {
        if (islower((unsigned char)*w)) return 0;
        letters += isupper((unsigned char)*w) != 0;
    }
    return letters > 0;
}

static enum arg_type guess_type(const char *name) {
    static const char *const keys[] = {"key", "destination", "source", "newkey", NULL};
    static const char *const ints[] = {"count", "offset", "start", "stop", "end", "index", "seconds",
                                       "milliseconds", "increment", "decrement", "cursor", "numkeys",
                                       "rank", "len", "timeout", NULL};
    for (int i = 0; keys[i]; i++) if (!strcmp(name, keys[i])) return A_KEY;
    for (int i = 0; ints[i]; i++) if (!strcmp(name, ints[i])) return A_INTEGER;
    return A_STRING;
}

static void add_kid(parser *p, int parent, int kid) {
    node *n = &p->nodes[parent];
    if (n->nkids == MAX_KIDS) { p->err = 1; return; }
    n->kids[n->nkids++] = kid;
}

static int parse_alts(parser *p, char close);

/* One item: a group, a token (with its values), or a name. Returns node. */
static int parse_item(parser *p) {
    int id;
    if (*p->s == '[' || *p->s == '(') {
        char close = *p->s == '[' ? ']' : ')';
        int opt = *p->s == '[';
        p->s++;
        id = parse_alts(p, close);
        if (*p->s != close) { p->err = 1; return id; }
        p->s++;
        p->nodes[id].optional |= opt;
    } else {
        char w[48];
        if (!read_word(p, w, sizeof w)) { p->err = 1; return new_node(p); }
        id = new_node(p);
        if (is_upper_word(w)) {
            /* a token, with the lowercase values that follow it */
            copy_name(p->nodes[id].token, w);
            copy_name(p->nodes[id].name, w);
            int vals[MAX_KIDS], nv = 0;
            for (;;) {
                const char *save = p->s;
                skip_ws(p);
                char v[48];
                if (!read_word(p, v, sizeof v) || is_upper_word(v)) { p->s = save; break; }
                int k = new_node(p);
                copy_name(p->nodes[k].name, v);
                p->nodes[k].type = guess_type(v);
                if (!strncmp(p->s, "...", 3)) { p->s += 3; p->nodes[k].multiple = 1; }
                if (nv < MAX_KIDS) vals[nv++] = k;
            }
            if (nv == 0) {
                p->nodes[id].type = A_PURE_TOKEN;
                /* the token's name in lower case, as Redis names pure tokens */
                for (char *c = p->nodes[id].name; *c; c++) *c = (char)tolower((unsigned char)*c);
            } else if (nv == 1) {
                node *v = &p->nodes[vals[0]];
                p->nodes[id].type = v->type;
                p->nodes[id].multiple = v->multiple;
                copy_name(p->nodes[id].name, v->name);
            } else {
                p->nodes[id].type = A_BLOCK;
                for (int i = 0; i < nv; i++) add_kid(p, id, vals[i]);
            }
            return id;
        }
        copy_name(p->nodes[id].name, w);
        p->nodes[id].type = guess_type(w);
    }
    if (!strncmp(p->s, "...", 3)) { p->s += 3; p->nodes[id].multiple = 1; }
    return id;
}

/* A sequence of items up to '|', close or end: one item, or a block. */
static int parse_seq(parser *p, char close) {
    int items[MAX_KIDS], n = 0;
    for (;;) {
        skip_ws(p);
        if (!*p->s || *p->s == '|' || *p->s == close || p->err) break;
        int it = parse_item(p);
        if (n < MAX_KIDS) items[n++] = it;
        else p->err = 1;
    }
    if (n == 1) return items[0];
    int b = new_node(p);
    p->nodes[b].type = A_BLOCK;
    copy_name(p->nodes[b].name, n ? p->nodes[items[0]].name : "block");
    for (int i = 0; i < n; i++) add_kid(p, b, items[i]);
    return b;
}

static int parse_alts(parser *p, char close) {
    int alts[MAX_KIDS], n = 0;
    for (;;) {
        int s = parse_seq(p, close);
        if (n < MAX_KIDS) alts[n++] = s;
        if (*p->s != '|' || p->err) break;
        p->s++;
    }
    if (n == 1) return alts[0];
    int o = new_node(p);
    p->nodes[o].type = A_ONEOF;
    copy_name(p->nodes[o].name, p->nodes[alts[0]].name);
    for (int i = 0; i < n; i++) add_kid(p, o, alts[i]);
    return o;
}

static void emit(resp_out *o, const parser *p, int id) {
    const node *n = &p->nodes[id];
    int fields = 2 + (n->token[0] != 0) + ((n->optional || n->multiple) != 0) + (n->nkids > 0);
    resp_add_map(o, fields);
    resp_add_bulk_cstr(o, "name"); resp_add_bulk_cstr(o, n->name);
    resp_add_bulk_cstr(o, "type"); resp_add_bulk_cstr(o, type_names[n->type]);
    if (n->token[0]) { resp_add_bulk_cstr(o, "token"); resp_add_bulk_cstr(o, n->token); }
    if (n->optional || n->multiple) {
        resp_add_bulk_cstr(o, "flags");
        resp_add_set(o, (n->optional != 0) + (n->multiple != 0));
        if (n->optional) resp_add_status(o, "optional");
        if (n->multiple) resp_add_status(o, "multiple");
    }
    if (n->nkids) {
        resp_add_bulk_cstr(o, "arguments");
        resp_add_array(o, n->nkids);
        for (int i = 0; i < n->nkids; i++) emit(o, p, n->kids[i]);
    }
}

/* Parse the whole line as a block of top-level arguments: node 0's kids. */
static int parse_line(parser *p, const char *syntax) {
    memset(p, 0, sizeof *p);
    p->s = syntax;
    int root = new_node(p);
    for (;;) {
        skip_ws(p);
        if (!*p->s || p->err) break;
        if (*p->s == '|' || *p->s == ']' || *p->s == ')') { p->err = 1; break; }
        add_kid(p, root, parse_item(p));
    }
    return p->err ? -1 : root;
}

int px_docs_add_arguments(resp_out *o, const char *syntax) {
    static parser p;   /* loop thread only; large */
    int root = parse_line(&p, syntax);
    if (root < 0) return -1;
    resp_add_array(o, p.nodes[root].nkids);
    for (int i = 0; i < p.nodes[root].nkids; i++) emit(o, &p, p.nodes[root].kids[i]);
    return 0;
}

/* redis-cli's cliAddArgument, over our tree. */
static void render(const parser *p, int id, char *buf, size_t len) {
    const node *n = &p->nodes[id];
    char rep[512] = "", tok[64] = "";
    if (n->type == A_ONEOF || n->type == A_BLOCK) {
        for (int i = 0; i < n->nkids; i++) {
            char sub[512];
            sub[0] = '\0';
            render(p, n->kids[i], sub, sizeof sub);
            size_t l = strlen(rep);
            snprintf(rep + l, sizeof rep - l, "%s%s", i ? (n->type == A_ONEOF ? "|" : " ") : "", sub);
        }
    } else if (n->type != A_PURE_TOKEN) {
        snprintf(rep, sizeof rep, "%s", n->name);
    }
    if (n->token[0]) snprintf(tok, sizeof tok, "%s%s", n->token, n->type == A_PURE_TOKEN ? "" : " ");
    size_t l = strlen(buf);
    snprintf(buf + l, len - l, "%s%s%s", n->optional ? "[" : "", tok, rep);
    if (n->multiple) {
        l = strlen(buf);
        snprintf(buf + l, len - l, " [%s ...]", rep);
    }
    if (n->optional) { l = strlen(buf); snprintf(buf + l, len - l, "]"); }
}

int px_docs_render(const char *syntax, char *buf, size_t buflen) {
    static parser p;
    buf[0] = '\0';
    int root = parse_line(&p, syntax);
    if (root < 0) return -1;
    for (int i = 0; i < p.nodes[root].nkids; i++) {
        size_t l = strlen(buf);
        if (i) snprintf(buf + l, buflen - l, " ");
        render(&p, p.nodes[root].kids[i], buf, buflen);
    }
    return 0;
}
