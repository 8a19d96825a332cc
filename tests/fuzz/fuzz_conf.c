/* libFuzzer target for the config file's splitter (cli/config.h), which
 * reads a file that root then acts on. Whatever it accepts must hold up:
 * every key a non-empty run of [a-z0-9-] starting with a letter, every key
 * and value inside the text with no edge white space, lines in order.
 * Built by `make fuzz`; `make fuzz-replay` runs the saved corpus. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int cond)
{
        if (!cond)
                abort();
}

static void
check_str(const char *s, const char *text, size_t size)
{
        size_t n = strlen(s);

        check(s >= text && s + n <= text + size);
        check(n == 0 || (!isspace((unsigned char)s[0]) && !isspace((unsigned char)s[n - 1])));
        check(!memchr(s, '\n', n));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = malloc(size + 1);
        struct xb_conf c = { 0 };
        struct xb_err err = { 0 };
        unsigned last = 0;
        int r;

        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';
        r = xb_conf_parse(text, size, &c, &err);
        check(r == 0 || r == -EINVAL || r == -ENOMEM);
        check(r == 0 ? c.err_line == 0 : (r == -ENOMEM || c.err_line > 0));
        for (size_t i = 0; i < c.n && r == 0; i++) {
                const char *k = c.lines[i].key;

                check_str(k, text, size);
                check_str(c.lines[i].value, text, size);
                check(islower((unsigned char)k[0]));
                for (const char *p = k; *p; p++)
                        check(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-');
                check(c.lines[i].line > last);
                last = c.lines[i].line;
        }
        xb_conf_free(&c);
        free(text);
        return 0;
}
