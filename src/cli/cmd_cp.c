/* `execbox cp SRC DST`: one file into a sandbox or out of one, streamed
 * both ways through the files API (GET and PUT .../files?path=). The
 * sandbox's side is written ID:PATH (PATH absolute, or relative to
 * /home/user); `-` is stdin or stdout. As cp(1) does, a DST that is a
 * directory gets SRC's name, and a copy keeps the file's permission bits.
 * A download is written only once the server has said yes, so a refusal
 * never truncates the local file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "cli/cli.h"
#include "cli/client.h"

struct side {
        char id[129];           /* empty: the local side */
        const char *path;
};

/* "ID:PATH" is the sandbox's side; anything else (and "./a:b", "/a:b") is local. */
static void
split(const char *arg, struct side *s)
{
        const char *colon = strchr(arg, ':');
        size_t n = colon ? (size_t)(colon - arg) : 0;

        s->id[0] = '\0';
        s->path = arg;
        if (colon && n && n < sizeof(s->id) && !memchr(arg, '/', n)) {
                memcpy(s->id, arg, n);
                s->id[n] = '\0';
                if (xb_client_id_ok(s->id))
                        s->path = colon + 1;
                else
                        s->id[0] = '\0';
        }
}

static const char *
base_name(const char *p)
{
        const char *s = strrchr(p, '/');

        return s ? s + 1 : p;
}

/* The sandbox path's stat: its type ("file", "dir"...) and mode; status 404 leaves type "". */
static int
remote_stat(struct xb_client *c, const struct side *s, char *type, size_t size, unsigned *mode)
{
        _cleanup_free_ char *base = xb_client_sandbox_path(s->id, "/files/stat?path=");
        _cleanup_free_ char *path = base ? xb_client_path(base, s->path) : NULL;
        struct xb_reply r;
        const char *t, *m;
        int rc = 0;

        type[0] = '\0';
        if (!path || xb_client_json(c, "GET", path, NULL, &r) < 0)
                return -1;
        t = json_string_value(json_object_get(r.json, "type"));
        m = json_string_value(json_object_get(r.json, "mode"));
        if (r.status == 200 && t) {
                snprintf(type, size, "%s", t);
                *mode = m ? (unsigned)strtoul(m, NULL, 8) & 07777 : 0644;
        } else if (r.status != 404) {
                xb_client_fail(&r);
                rc = -1;
        }
        xb_reply_free(&r);
        return rc;
}

struct download {
        CURL *h;
        const char *dest;       /* NULL: stdout */
        unsigned mode;
        int fd;
        bool failed;
        struct xb_buf err;      /* the body of a refusal */
};

static size_t
on_download(char *p, size_t size, size_t n, void *ctx)
{
        struct download *d = ctx;
        long status = 0;

        xb_cu.easy_getinfo(d->h, CURLINFO_RESPONSE_CODE, &status);
        if (status != 200)
                return xb_buf_append(&d->err, p, size * n) < 0 ? 0 : size * n;
        if (d->fd < 0) {
                d->fd = d->dest ? open(d->dest, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, d->mode) : STDOUT_FILENO;
                if (d->fd < 0) {
                        xb_client_error("%s: %s", d->dest, strerror(errno));
                        d->failed = true;
                        return 0;
                }
        }
        if (xb_write_all(d->fd, p, size * n) < 0) {
                xb_client_error("write %s: %s", d->dest ? d->dest : "stdout", strerror(errno));
                d->failed = true;
                return 0;
        }
        return size * n;
}

static int
download(struct xb_client *c, const struct side *src, const char *dst)
{
        _cleanup_free_ char *dest = NULL, *base = xb_client_sandbox_path(src->id, "/files?path=");
        _cleanup_free_ char *path = base ? xb_client_path(base, src->path) : NULL;
        struct download d = { .fd = -1, .mode = 0644, .err = { .max = 1 << 20 } };
        struct curl_slist *hdrs = NULL;
        char type[32];
        struct stat st;
        long status = 0;
        CURLcode cr;
        int rc = 0;

        if (!path || remote_stat(c, src, type, sizeof(type), &d.mode) < 0)
                return XB_EXIT_OWN_ERROR;
        if (!strcmp(type, "dir"))
                return xb_client_error("%s:%s is a directory; cp copies one file", src->id, src->path);
        if (strcmp(dst, "-") != 0) {
                if (stat(dst, &st) == 0 && S_ISDIR(st.st_mode)) {
                        if (asprintf(&dest, "%s/%s", dst, base_name(src->path)) < 0)
                                return xb_client_error("out of memory");
                } else if (!(dest = strdup(dst))) {
                        return xb_client_error("out of memory");
                }
                d.dest = dest;
        }
        if (!(d.h = xb_client_easy(c, "GET", path, &hdrs)))
                return xb_client_error("out of memory");
        xb_cu.easy_setopt(d.h, CURLOPT_HTTPHEADER, hdrs);
        xb_cu.easy_setopt(d.h, CURLOPT_WRITEFUNCTION, on_download);
        xb_cu.easy_setopt(d.h, CURLOPT_WRITEDATA, &d);
        cr = xb_cu.easy_perform(d.h);
        xb_cu.easy_getinfo(d.h, CURLINFO_RESPONSE_CODE, &status);
        xb_cu.easy_cleanup(d.h);
        xb_cu.slist_free_all(hdrs);
        if (d.failed) {
                rc = XB_EXIT_OWN_ERROR;
        } else if (xb_client_check(c, cr) < 0) {
                rc = XB_EXIT_OWN_ERROR;
        } else if (status != 200) {
                struct xb_reply r = { status, d.err.len ? json_loadb(d.err.data, d.err.len, 0, NULL) : NULL };

                rc = xb_client_fail(&r);
                xb_reply_free(&r);
        } else if (d.fd < 0 && d.dest) {
                /* An empty file sends no body at all. */
                d.fd = open(d.dest, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, d.mode);
                if (d.fd < 0)
                        rc = xb_client_error("%s: %s", d.dest, strerror(errno));
        }
        if (d.fd >= 0 && d.dest && close(d.fd) < 0 && rc == 0)
                rc = xb_client_error("%s: %s", d.dest, strerror(errno));
        xb_buf_free(&d.err);
        return rc;
}

static size_t
on_upload(char *p, size_t size, size_t n, void *ctx)
{
        int fd = *(int *)ctx;
        ssize_t r;

        do
                r = read(fd, p, size * n);
        while (r < 0 && errno == EINTR);
        return r < 0 ? CURL_READFUNC_ABORT : (size_t)r;
}

static size_t
on_reply(char *p, size_t size, size_t n, void *ctx)
{
        return xb_buf_append(ctx, p, size * n) < 0 ? 0 : size * n;
}

static int
upload(struct xb_client *c, const char *src, const struct side *dst)
{
        _cleanup_close_ int fd = strcmp(src, "-") == 0 ? dup(STDIN_FILENO) : open(src, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ char *target = NULL, *base = xb_client_sandbox_path(dst->id, "/files?mode=");
        _cleanup_free_ char *path = NULL, *full = NULL;
        struct xb_buf resp = { .max = 1 << 20 };
        struct curl_slist *hdrs = NULL;
        struct xb_reply r = { 0 };
        unsigned mode = 0644, rmode;
        char type[32] = "", m[8];
        struct stat st;
        CURLcode cr;
        CURL *h;
        int rc;

        if (!base)
                return XB_EXIT_OWN_ERROR;
        if (fd < 0 || fstat(fd, &st) < 0)
                return xb_client_error("%s: %s", src, strerror(errno));
        if (S_ISDIR(st.st_mode))
                return xb_client_error("%s is a directory; cp copies one file", src);
        if (S_ISREG(st.st_mode) && strcmp(src, "-") != 0)
                mode = st.st_mode & 0777;
        /* Into a directory (named so, or found so): under SRC's name. */
        if (dst->path[0] && dst->path[strlen(dst->path) - 1] != '/' &&
            remote_stat(c, dst, type, sizeof(type), &rmode) < 0)
                return XB_EXIT_OWN_ERROR;
        if (!dst->path[0] || dst->path[strlen(dst->path) - 1] == '/' || !strcmp(type, "dir")) {
                if (strcmp(src, "-") == 0)
                        return xb_client_error("give the file's name in the sandbox: ID:PATH/NAME");
                if (asprintf(&target, "%s%s%s", dst->path, dst->path[0] && dst->path[strlen(dst->path) - 1] != '/'
                             ? "/" : "", base_name(src)) < 0)
                        return xb_client_error("out of memory");
        } else if (!(target = strdup(dst->path))) {
                return xb_client_error("out of memory");
        }
        snprintf(m, sizeof(m), "%04o", mode);
        if (!(path = xb_client_path(base, m)) || asprintf(&full, "%s&path=", path) < 0)
                return xb_client_error("out of memory");
        free(path);
        if (!(path = xb_client_path(full, target)) || !(h = xb_client_easy(c, "PUT", path, &hdrs)))
                return xb_client_error("out of memory");
        /* The server answers at once when it refuses: no 100-continue wait. */
        hdrs = xb_cu.slist_append(hdrs, "Expect:");
        hdrs = xb_cu.slist_append(hdrs, "Content-Type: application/octet-stream");
        xb_cu.easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
        xb_cu.easy_setopt(h, CURLOPT_UPLOAD, 1L);
        xb_cu.easy_setopt(h, CURLOPT_READFUNCTION, on_upload);
        xb_cu.easy_setopt(h, CURLOPT_READDATA, &fd);
        if (S_ISREG(st.st_mode))
                xb_cu.easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
        xb_cu.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_reply);
        xb_cu.easy_setopt(h, CURLOPT_WRITEDATA, &resp);
        cr = xb_cu.easy_perform(h);
        xb_cu.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
        xb_cu.easy_cleanup(h);
        xb_cu.slist_free_all(hdrs);
        if (xb_client_check(c, cr) < 0) {
                xb_buf_free(&resp);
                return XB_EXIT_OWN_ERROR;
        }
        r.json = resp.len ? json_loadb(resp.data, resp.len, 0, NULL) : NULL;
        rc = r.status == 200 ? 0 : xb_client_fail(&r);
        xb_reply_free(&r);
        xb_buf_free(&resp);
        return rc;
}

int
xb_cmd_cp(int argc, char **argv)
{
        static const struct option opts[] = { XB_CLIENT_LONGOPTS, { 0 } };
        struct xb_client c = { 0 };
        struct side src, dst;
        int opt;

        opterr = 0;
        while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                switch (opt) {
                case XB_CLIENT_OPT_SERVER:
                case XB_CLIENT_OPT_TOKEN_FILE: xb_client_option(&c, opt, optarg); break;
                case 'h':
                        printf("usage: execbox cp [OPTIONS] SRC DST\n\n"
                               "Copy a file into a sandbox or out of one: one side is ID:PATH (PATH\n"
                               "absolute, or relative to /home/user), the other a local path or - for\n"
                               "stdin or stdout. A directory as DST gets SRC's name.\n\n" XB_CLIENT_USAGE);
                        return 0;
                default: return xb_client_bad_option(opt, argv, opts, "cp");
                }
        }
        if (argc - optind != 2)
                return xb_client_error("cp takes SRC and DST, one of them ID:PATH; see `execbox cp --help`");
        split(argv[optind], &src);
        split(argv[optind + 1], &dst);
        if (!!src.id[0] == !!dst.id[0])
                return xb_client_error("exactly one of SRC and DST must be in a sandbox, written ID:PATH");
        if (xb_client_open(&c) < 0)
                return XB_EXIT_OWN_ERROR;
        return src.id[0] ? download(&c, &src, argv[optind + 1]) : upload(&c, argv[optind], &dst);
}
