/* The process title: see title.h. */
#include "base/title.h"

#include <stdlib.h>
#include <string.h>

static char *title;       /* argv[0]'s bytes, then the rest of argv's, contiguous */
static size_t title_len;  /* bytes, the last NUL included */

char **
xb_title_init(int argc, char **argv)
{
        char **copy = calloc((size_t)argc + 1, sizeof(*copy));
        char *end;

        if (!copy)
                return NULL;
        for (int i = 0; i < argc; i++)
                if (!(copy[i] = strdup(argv[i]))) {
                        while (i--)
                                free(copy[i]);
                        free(copy);
                        return NULL;
                }
        if (argc < 1 || !argv[0])
                return copy;
        /* Only the run of arguments laid out back to back, as exec leaves them. */
        end = argv[0] + strlen(argv[0]) + 1;
        for (int i = 1; i < argc && argv[i] == end; i++)
                end = argv[i] + strlen(argv[i]) + 1;
        title = argv[0];
        title_len = (size_t)(end - argv[0]);
        return copy;
}

void
xb_title_set(const char *t)
{
        size_t n = strlen(t);

        if (!title || !title_len)
                return;
        if (n > title_len - 1)
                n = title_len - 1;
        memset(title, 0, title_len);
        memcpy(title, t, n);
}
