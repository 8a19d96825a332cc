/* The host's package sources, read at run time: the URLs of
 * /etc/apt/sources.list, /etc/apt/sources.list.d/ *.list (one-line
 * format) and *.sources (deb822 URIs:). `execbox serve` offers them as
 * the `packages` mode's default when no --package-source is given; npm's
 * registry is asked for separately (netsys.c). */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdbool.h>
#include <strings.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "net/sources.h"

static int
add(char ***v, size_t *n, const char *url, size_t len)
{
        char **nv;
        char *s;

        if (len < 8 || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) || *n >= XB_NET_SOURCES_MAX)
                return 0;
        for (size_t i = 0; i < *n; i++)
                if (strlen((*v)[i]) == len && !strncmp((*v)[i], url, len))
                        return 0;
        s = strndup(url, len);
        nv = s ? reallocarray(*v, *n + 2, sizeof(char *)) : NULL;
        if (!nv) {
                free(s);
                return -ENOMEM;
        }
        nv[(*n)++] = s;
        nv[*n] = NULL;
        *v = nv;
        return 0;
}

static void
read_file(const char *path, bool deb822, char ***v, size_t *n)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[2048];

        if (!f)
                return;
        while (fgets(line, sizeof(line), f)) {
                char *p = line + strspn(line, " \t");

                if (*p == '#')
                        continue;
                if (deb822) {
                        if (strncasecmp(p, "URIs:", 5))
                                continue;
                        p += 5;
                } else {
                        if (strncmp(p, "deb ", 4) && strncmp(p, "deb-src ", 8) && strncmp(p, "deb\t", 4))
                                continue;
                        p += strcspn(p, " \t");
                        p += strspn(p, " \t");
                        if (*p == '[') {   /* [arch=amd64 signed-by=...] */
                                char *rb = strchr(p, ']');

                                if (!rb)
                                        continue;
                                p = rb + 1;
                        }
                }
                /* One URL (one-line), or several (deb822). */
                for (;;) {
                        size_t len;

                        p += strspn(p, " \t");
                        len = strcspn(p, " \t\r\n");
                        if (!len)
                                break;
                        add(v, n, p, len);
                        p += len;
                        if (!deb822)
                                break;
                }
        }
}

int
xb_net_host_sources(const char *apt_dir, char ***ret, size_t *ret_n)
{
        char path[4096];
        char **v = NULL;
        size_t n = 0;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *e;

        snprintf(path, sizeof(path), "%s/sources.list", apt_dir);
        read_file(path, false, &v, &n);
        snprintf(path, sizeof(path), "%s/sources.list.d", apt_dir);
        d = opendir(path);
        while (d && (e = readdir(d))) {
                size_t l = strlen(e->d_name);

                if (e->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "%s/sources.list.d/%s", apt_dir, e->d_name);
                if (l > 5 && !strcmp(e->d_name + l - 5, ".list"))
                        read_file(path, false, &v, &n);
                else if (l > 8 && !strcmp(e->d_name + l - 8, ".sources"))
                        read_file(path, true, &v, &n);
        }
        *ret = v;
        *ret_n = n;
        return 0;
}
