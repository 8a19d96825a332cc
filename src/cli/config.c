/* Splitting execbox.conf into key = value lines (config.h). Strict: a line
 * is blank, a comment, or `key = value`, where a key is the long option's
 * name (lower case letters, digits, dashes); anything else is an error
 * naming its line, never skipped. */
#define _GNU_SOURCE
#include "cli/config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"

static char *
trim(char *s)
{
        char *end = s + strlen(s);

        while (isspace((unsigned char)*s))
                s++;
        while (end > s && isspace((unsigned char)end[-1]))
                *--end = '\0';
        return s;
}

static bool
key_ok(const char *k)
{
        if (!islower((unsigned char)*k))
                return false;
        for (; *k; k++)
                if (!islower((unsigned char)*k) && !isdigit((unsigned char)*k) && *k != '-')
                        return false;
        return true;
}

int
xb_conf_parse(char *text, size_t len, struct xb_conf *c, struct xb_err *err)
{
        const char *nul = memchr(text, '\0', len);
        size_t cap = 0;
        unsigned lineno = 0;
        char *next;

        c->lines = NULL;
        c->n = 0;
        c->err_line = 0;
        if (nul) {
                unsigned at = 1;

                for (const char *p = text; p < nul; p++)
                        at += *p == '\n';
                c->err_line = at;
                return xb_err_msg(err, EINVAL, "a NUL byte; this is not a text file");
        }
        for (char *l = text; l < text + len; l = next) {
                char *nl = memchr(l, '\n', (size_t)(text + len - l)), *eq, *key;

                next = nl ? nl + 1 : text + len;
                if (nl)
                        *nl = '\0';
                lineno++;
                l = trim(l);
                if (!*l || *l == '#')
                        continue;
                c->err_line = lineno;
                if (!(eq = strchr(l, '=')))
                        return xb_err_msg(err, EINVAL, "expected `key = value`, not `%.64s`", l);
                *eq = '\0';
                key = trim(l);
                if (!key_ok(key))
                        return xb_err_msg(err, EINVAL, "`%.64s` is not a key (keys are long option names "
                                          "without the dashes, such as max-sandboxes)", key);
                if (c->n == cap) {
                        struct xb_conf_line *more = reallocarray(c->lines, cap = cap ? 2 * cap : 16,
                                                                 sizeof(*more));

                        if (!more)
                                return xb_err_set(err, ENOMEM, "read");
                        c->lines = more;
                }
                c->lines[c->n++] = (struct xb_conf_line){ key, trim(eq + 1), lineno };
        }
        c->err_line = 0;
        return 0;
}

int
xb_conf_read(const char *path, struct xb_conf *c, struct xb_err *err)
{
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        struct stat st;
        int r;

        *c = (struct xb_conf){ 0 };
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return xb_err_set(err, errno, "cannot read it");
        if (fstat(fd, &st) < 0)
                return xb_err_set(err, errno, "fstat");
        if (S_ISDIR(st.st_mode))
                return xb_err_set(err, EISDIR, "cannot read it");
        /* Root acts on what it says (allow-mount = /): nobody else may
         * write it. */
        if (S_ISREG(st.st_mode) && (st.st_mode & S_IWOTH))
                return xb_err_msg(err, EPERM, "anyone may write it; chmod o-w it");
        if (!(text = malloc(XB_CONF_MAX + 1)))
                return xb_err_set(err, ENOMEM, "read");
        for (;;) {
                ssize_t n = read(fd, text + len, XB_CONF_MAX + 1 - len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return xb_err_set(err, errno, "cannot read it");
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > XB_CONF_MAX)
                        return xb_err_msg(err, EFBIG, "larger than %u KiB", XB_CONF_MAX >> 10);
        }
        text[len] = '\0';
        r = xb_conf_parse(text, len, c, err);
        c->text = TAKE_PTR(text);
        return r;
}

void
xb_conf_free(struct xb_conf *c)
{
        free(c->lines);
        free(c->text);
        *c = (struct xb_conf){ 0 };
}

const char *
xb_conf_env_name(const char *name, char *buf, size_t size)
{
        size_t n = (size_t)snprintf(buf, size, "EXECBOX_%s", name);

        for (char *p = buf + 8; p < buf + XB_MIN(n, size); p++)
                *p = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
        return buf;
}
