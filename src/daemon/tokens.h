/* The token file's format: which bearer tokens exist, which are admins,
 * the names tenants go by in metrics, and their quotas. See README.md, "Tokens". */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "core/quota.h"

struct xb_tokens {
        char **token;                 /* NULL-terminated; index = tenant */
        bool *admin;
        char **name;                  /* NULL where the file gives none */
        struct xb_quota *quota;       /* the line's quota words; 0 fields where it gives none */
        size_t n;
};

/* Parse text (a token file, or EXECBOX_TOKEN) into *t, appending. -errno
 * with err naming the line; *t holds what parsed so far (free it). */
int xb_tokens_parse(const char *text, struct xb_tokens *t, struct xb_err *err);
void xb_tokens_free(struct xb_tokens *t);
