/* Token files. Each line holds a token, optionally followed by words that
 * describe it:
 *     TOKEN                    a tenant
 *     TOKEN admin              a tenant that sees the server's global figures
 *     TOKEN name=ci admin      ... labelled tenant="ci" in metrics
 *     TOKEN sandboxes=4 execs=8 rate=30 memory=8G disk=8G
 *                              a tenant's own quotas (core/quota.h), over
 *                              --tenant-quota field by field
 *     # a comment              (also after the words of a line)
 * Older files, tokens split by any blanks, mean the same as before: a
 * token is a word of 16 characters or more, and the short words here
 * were errors then. When no token is marked admin, a lone token is. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "daemon/tokens.h"

#define NAME_MAX_LEN 32

static bool
name_ok(const char *s)
{
        size_t n = strlen(s);

        /* A letter first: bare numbers are the labels of unnamed tenants. */
        if (n == 0 || n > NAME_MAX_LEN || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
                return false;
        return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

static int
add(struct xb_tokens *t, const char *tok, struct xb_err *err)
{
        char **v = realloc(t->token, (t->n + 2) * sizeof(char *));
        char **nm;
        bool *ad;
        struct xb_quota *q;

        if (v)
                t->token = v;
        q = realloc(t->quota, (t->n + 1) * sizeof(*q));
        if (q)
                t->quota = q;
        nm = realloc(t->name, (t->n + 1) * sizeof(char *));
        if (nm)
                t->name = nm;
        ad = realloc(t->admin, (t->n + 1) * sizeof(bool));
        if (ad)
                t->admin = ad;
        if (!v || !nm || !ad || !q || !(t->token[t->n] = strdup(tok)))
                return xb_err_set(err, ENOMEM, "token");
        t->quota[t->n] = (struct xb_quota){ 0 };
        t->name[t->n] = NULL;
        t->admin[t->n] = false;
        t->token[++t->n] = NULL;
        return 0;
}

static int
word(struct xb_tokens *t, const char *w, size_t line_first, unsigned lineno, struct xb_err *err)
{
        /* Quota words were too short to be tokens in older files. */
        bool attr = strcmp(w, "admin") == 0 || strncmp(w, "name=", 5) == 0 || xb_quota_is_word(w);

        if (!attr) {
                if (strlen(w) < 16)
                        return xb_err_msg(err, EINVAL, "tokens must be at least 16 characters");
                return add(t, w, err);
        }
        if (t->n == line_first)
                return xb_err_msg(err, EINVAL, "token file line %u: `%s` must follow a token", lineno, w);
        if (w[0] == 'a') {
                t->admin[t->n - 1] = true;
                return 0;
        }
        if (xb_quota_is_word(w)) {
                int r = xb_quota_word(&t->quota[t->n - 1], w, err);

                return r < 0 ? xb_err_wrap(err, "token file line %u", lineno) : 0;
        }
        if (!name_ok(w + 5))
                return xb_err_msg(err, EINVAL,
                                  "token file line %u: a name is a letter, then up to %d letters, digits, '.', '_' or '-'",
                                  lineno, NAME_MAX_LEN - 1);
        for (size_t i = 0; i < t->n; i++)
                if (t->name[i] && strcmp(t->name[i], w + 5) == 0)
                        return xb_err_msg(err, EINVAL, "token file line %u: the name %s is taken", lineno, w + 5);
        free(t->name[t->n - 1]);
        if (!(t->name[t->n - 1] = strdup(w + 5)))
                return xb_err_set(err, ENOMEM, "token");
        return 0;
}

int
xb_tokens_parse(const char *text, struct xb_tokens *t, struct xb_err *err)
{
        _cleanup_free_ char *copy = strdup(text);
        unsigned lineno = 0;
        bool any_admin = false;
        size_t first = t->n;
        char *save = NULL;

        if (!copy)
                return xb_err_set(err, ENOMEM, "token");
        /* strsep keeps empty lines, so line numbers stay right. */
        for (char *rest = copy, *line; (line = strsep(&rest, "\n"));) {
                size_t line_first = t->n;

                lineno++;
                for (char *w = strtok_r(line, "\r\t ", &save); w; w = strtok_r(NULL, "\r\t ", &save)) {
                        int r;

                        if (w[0] == '#')
                                break;
                        if ((r = word(t, w, line_first, lineno, err)) < 0)
                                return r;
                }
        }
        for (size_t i = first; i < t->n; i++)
                any_admin |= t->admin[i];
        if (!any_admin && t->n == 1)
                t->admin[0] = true;
        return 0;
}

void
xb_tokens_free(struct xb_tokens *t)
{
        for (size_t i = 0; i < t->n; i++) {
                free(t->token[i]);
                free(t->name[i]);
        }
        free(t->token);
        free(t->name);
        free(t->admin);
        free(t->quota);
        *t = (struct xb_tokens){ 0 };
}
