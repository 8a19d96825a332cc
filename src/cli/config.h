/* The config file of `execbox serve` and `execbox mcp`: `key = value`
 * lines, `#` comments on lines of their own. This only splits the text;
 * which keys exist and what their values mean is options.c's table, so a
 * file, an EXECBOX_* variable and a flag are checked by the same code. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

#define XB_CONF_DEFAULT "/etc/execbox/execbox.conf"
#define XB_CONF_MAX (1u << 20)

struct xb_conf_line {
        const char *key, *value;   /* point into the text; value may be "" */
        unsigned line;
};

struct xb_conf {
        char *text;                /* owned; the lines point into it */
        struct xb_conf_line *lines; /* owned */
        size_t n;
        unsigned err_line;         /* the line of a syntax error, else 0 */
};

/* Split text (len bytes and a NUL after them, modified in place and not
 * taken: c's lines point into it) into c. On a syntax error, -EINVAL with
 * err saying what and c->err_line where. Free c with xb_conf_free. */
int xb_conf_parse(char *text, size_t len, struct xb_conf *c, struct xb_err *err);

/* Read and split the file at path. A missing file is -ENOENT (the caller
 * decides whether that is fine); err names the problem (not the path),
 * and c->err_line the line of a syntax error. Free c with xb_conf_free. */
int xb_conf_read(const char *path, struct xb_conf *c, struct xb_err *err);

void xb_conf_free(struct xb_conf *c);

/* The variable for option name: "max-sandboxes" -> "EXECBOX_MAX_SANDBOXES". */
const char *xb_conf_env_name(const char *name, char *buf, size_t size);
