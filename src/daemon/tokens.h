/* The token file's format: which bearer tokens exist, which are admins,
 * and the names tenants go by in metrics. See README.md, "Tokens". */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct xb_tokens {
        char **token;                 /* NULL-terminated; index = tenant */
        bool *admin;
        char **name;                  /* NULL where the file gives none */
        size_t n;
};

/* Parse text (a token file, or EXECBOX_TOKEN) into *t, appending. -errno
 * with err naming the line; *t holds what parsed so far (free it). */
int xb_tokens_parse(const char *text, struct xb_tokens *t, struct xb_err *err);
void xb_tokens_free(struct xb_tokens *t);
