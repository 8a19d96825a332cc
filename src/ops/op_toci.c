/* template_build with "oci": a template imported from an OCI image
 * archive (a tar of an OCI image layout, as `skopeo copy oci-archive:`
 * and `docker save` write), on the host at a path below an --allow-mount
 * directory, or uploaded (POST /v1/templates with the tar as its body:
 * rest/api_tupload.c streams it into a file no path names, whose fd
 * comes here).
 *
 * The daemon opens the archive (no symlink on the way, a regular file)
 * and hands the fd to a host script: GNU tar unpacks the layout into a
 * root-only temporary directory (it refuses `..` and absolute members),
 * which must then hold only regular files and directories (a symlink in
 * the layout could make umoci read a host file into the image); umoci
 * applies the layers into the new root (umoci resolves every path inside
 * the root and honours whiteouts). core/rootfs.c then removes device
 * nodes and setuid bits, and the layer is mounted nosuid and nodev as
 * every layer is. The image config's Env, WorkingDir, User and
 * Entrypoint + Cmd become the template's env, workdir, user (root unless
 * it names another) and start command; the request's own win.
 *
 * A client that asked for events (Accept: text/event-stream) gets the
 * import's output as it comes, as the `log` events of step 1 that a build
 * sends (umoci reports each layer it applies), bounded by LOG_EVENTS_MAX;
 * a failure quotes its end either way. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "core/core.h"
#include "core/rootfs.h"
#include "core/templates.h"
#include "net/digest.h"
#include "ops/jsonv.h"
#include "ops/op_tmpl.h"
#include "sandbox/sandbox.h"

#define OCI_JSON_MAX (4u << 20)
#define LOG_EVENTS_MAX ((uint64_t)1 << 20)

struct oci {
        struct xb_core *core;
        int tenant;
        struct xb_call *client;
        json_t *spec;
        char dir[4200];       /* the unpacked layout */
        char layer[64];
        uint64_t logged;      /* bytes sent as log events */
};

static void
oci_left(void *owner)
{
        ((struct oci *)owner)->client = NULL;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
        (void)st, (void)f;
        return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void
oci_free(struct oci *o)
{
        if (o->dir[0])
                nftw(o->dir, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
        json_decref(o->spec);
        free(o);
}

static void oci_fail(struct oci *o, enum xb_ecode code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
oci_fail(struct oci *o, enum xb_ecode code, const char *fmt, ...)
{
        struct xb_err err = { .ecode = code, .code = EIO };
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(err.msg, sizeof(err.msg), fmt, ap);
        va_end(ap);
        if (o->client) {
                xb_call_on_cancel(o->client, NULL, NULL);
                xb_call_fail(o->client, &err);
        }
        oci_free(o);
}

/* A blob of the layout by its digest, as JSON. */
static json_t *
blob(const struct oci *o, const char *digest)
{
        char path[4400];
        struct stat st;
        _cleanup_close_ int fd = -EBADF;
        json_error_t je;

        if (!digest || strncmp(digest, "sha256:", 7) || strlen(digest) != 71 ||
            strspn(digest + 7, "0123456789abcdef") != 64)
                return NULL;
        snprintf(path, sizeof(path), "%s/blobs/sha256/%s", o->dir, digest + 7);
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > OCI_JSON_MAX)
                return NULL;
        return json_loadfd(fd, 0, &je);
}

/* Whether the blob of digest (checked by blob() first) holds what it is
 * named by. */
static bool
blob_hashes_to(const struct oci *o, const char *digest)
{
        char path[4400], hex[XB_SHA256_HEX], buf[65536];
        _cleanup_close_ int fd = -EBADF;
        struct xb_sha256 *h;
        struct xb_err err = { 0 };
        ssize_t r;

        snprintf(path, sizeof(path), "%s/blobs/sha256/%s", o->dir, digest + 7);
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || !(h = xb_sha256_new(&err)))
                return false;
        while ((r = read(fd, buf, sizeof(buf))) > 0)
                xb_sha256_add(h, buf, (size_t)r);
        xb_sha256_end(h, hex);
        return r == 0 && !strcmp(hex, digest + 7);
}

static json_t *
image_config(const struct oci *o, char *digest, size_t n)
{
        char path[4400];
        _cleanup_close_ int fd = -EBADF;
        _cleanup_(xb_json_decrefp) json_t *index = NULL, *manifest = NULL;
        json_error_t je;
        struct stat st;
        json_t *m;

        snprintf(path, sizeof(path), "%s/index.json", o->dir);
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > OCI_JSON_MAX ||
            !(index = json_loadfd(fd, 0, &je)))
                return NULL;
        m = json_array_get(json_object_get(index, "manifests"), 0);
        manifest = blob(o, json_string_value(json_object_get(m, "digest")));
        if (!manifest)
                return NULL;
        /* The layer is shared by this name with every tenant's import of
         * the image, so the name must be what was unpacked: the index's
         * only manifest (umoci unpacks the first tagged one, which need not
         * be the first listed), whose bytes hash to it (umoci checks the
         * layers' blobs it applies). Anything else keeps its random name. */
        if (json_array_size(json_object_get(index, "manifests")) == 1 &&
            blob_hashes_to(o, json_string_value(json_object_get(m, "digest"))))
                snprintf(digest, n, "%s", json_string_value(json_object_get(m, "digest")) + 7);
        return blob(o, json_string_value(json_object_get(json_object_get(manifest, "config"), "digest")));
}

/* 'a' 'b c' -> one shell line. */
static char *
shell_join(json_t *a, json_t *b)
{
        _cleanup_(xb_buf_free) struct xb_buf out = { 0 };
        json_t *lists[2] = { a, b }, *v;
        size_t i;

        for (size_t l = 0; l < 2; l++)
                json_array_foreach(lists[l], i, v) {
                        const char *s = json_string_value(v);

                        if (!s)
                                continue;
                        xb_buf_printf(&out, "%s'", out.len ? " " : "");
                        for (; *s; s++)
                                xb_buf_printf(&out, *s == '\'' ? "'\\''" : "%c", *s);
                        xb_buf_printf(&out, "'");
                }
        return out.len ? xb_buf_steal(&out) : NULL;
}

static void
imported(void *data, const char *layer, const struct xb_err *err)
{
        struct oci *o = data;
        struct xb_core *s = o->core;
        _cleanup_(xb_json_decrefp) json_t *conf = NULL;
        const char *name = json_string_value(json_object_get(o->spec, "name"));
        char *layers[] = { (char *)layer, NULL };
        struct xb_template *t;
        struct xb_err e2 = { 0 };
        json_t *cc, *env, *v;
        const char *user, *wd;
        char digest[80] = "", named[64];
        size_t i, n = 0;

        if (!layer) {
                oci_fail(o, XB_E_TEMPLATE_BUILD_FAILED, "importing the OCI archive failed: %s", err->msg);
                return;
        }
        conf = image_config(o, digest, sizeof(digest));
        cc = json_object_get(conf, "config");
        /* Named by the image's manifest digest: one image imported twice is
         * one layer (the second copy goes). */
        if (digest[0]) {
                snprintf(named, sizeof(named), "oci-%.32s", digest);
                if (xb_store_rename_layer(s->eng->store, layer, named, &e2) == 0 ||
                    (e2.code == EEXIST && !xb_store_delete(s->eng->store, "layers", layer, NULL)))
                        layer = layers[0] = named;
                e2 = (struct xb_err){ 0 };
        }
        if (xb_template_find(s, name, o->tenant)) {
                oci_fail(o, XB_E_TEMPLATE_EXISTS, "a template `%s` exists already", name);
                return;
        }
        if (xb_template_create(s, name, o->tenant, layers, true, &t, &e2) < 0) {
                oci_fail(o, XB_E_INTERNAL, "%s", e2.msg);
                return;
        }
        /* The image's config, under the request's. */
        env = json_object_get(cc, "Env");
        t->env = calloc(json_array_size(env) + json_object_size(json_object_get(o->spec, "env")) + 1, sizeof(char *));
        json_array_foreach(env, i, v)
                if (t->env && json_is_string(v) && strchr(json_string_value(v), '=') &&
                    strncmp(json_string_value(v), "PATH=", 5))
                        t->env[n++] = strdup(json_string_value(v));
        {
                const char *k;

                json_object_foreach(json_object_get(o->spec, "env"), k, v)
                        if (t->env && json_is_string(v) && asprintf(&t->env[n], "%s=%s", k, json_string_value(v)) > 0)
                                n++;
        }
        wd = json_string_value(json_object_get(o->spec, "workdir"))
                     ?: json_string_value(json_object_get(cc, "WorkingDir"));
        if (wd && wd[0] == '/')
                t->workdir = strdup(wd);
        user = json_string_value(json_object_get(o->spec, "user"));
        if (!user) {
                const char *u = json_string_value(json_object_get(cc, "User"));

                user = !u || !*u || !strcmp(u, "0") || !strncmp(u, "0:", 2) || !strcmp(u, "root") ||
                                       !strncmp(u, "root:", 5)
                               ? "root"
                               : "user";
        }
        t->uid = !strcmp(user, "root") ? 0 : XB_USER_UID;
        t->start_cmd = json_is_object(json_object_get(o->spec, "start"))
                               ? strdup(json_string_value(json_object_get(json_object_get(o->spec, "start"), "cmd")))
                               : shell_join(json_object_get(cc, "Entrypoint"), json_object_get(cc, "Cmd"));
        if (json_is_object(json_object_get(o->spec, "start"))) {
                json_t *st = json_object_get(o->spec, "start"), *ready = json_object_get(st, "ready");
                const char *file = json_string_value(json_object_get(ready, "file"));

                t->ready_port = (uint16_t)json_integer_value(json_object_get(ready, "port"));
                t->ready_file = file ? strdup(file) : NULL;
                t->ready_timeout_s = (unsigned)json_integer_value(json_object_get(st, "timeout_s"));
        }
        xb_template_save(s, t);
        if (o->client) {
                json_t *j = xb_template_json(t);

                json_object_set_new(j, "image",
                                    json_pack("{s:s?,s:s?}", "architecture",
                                              json_string_value(json_object_get(conf, "architecture")), "os",
                                              json_string_value(json_object_get(conf, "os"))));
                xb_call_on_cancel(o->client, NULL, NULL);
                xb_call_done(o->client, j);
                o->client = NULL;
        }
        oci_free(o);
}

static void
oci_output(void *data, const char *text, size_t n)
{
        struct oci *o = data;
        static const char cut[] = "\n[execbox: the rest of the import's output is not streamed]\n";
        json_t *ev;

        if (!o->client || !xb_call_wants_events(o->client) || o->logged >= LOG_EVENTS_MAX)
                return;
        o->logged += n;
        if (o->logged >= LOG_EVENTS_MAX) {
                text = cut;
                n = sizeof(cut) - 1;
        }
        ev = json_pack("{s:i,s:s,s:s%}", "step", 1, "stream", "stdout", "data", text, n);
        xb_call_event(o->client, "log", ev);
        json_decref(ev);
}

/* The archive's path: below an --allow-mount directory, a regular file. */
static int
open_archive(struct xb_core *s, const char *path, struct xb_err *err)
{
        _cleanup_free_ char *real = path[0] == '/' ? realpath(path, NULL) : NULL;
        bool ok = false;
        struct stat st;
        int fd;

        for (size_t i = 0; real && i < s->eng->nallow; i++) {
                size_t n = strlen(s->eng->allow[i]);

                ok |= !strncmp(real, s->eng->allow[i], n) && (real[n] == '/' || (n == 1 && real[0] == '/'));
        }
        if (!ok)
                return xb_err_code(err, XB_E_INVALID_MOUNT, EACCES, NULL,
                                   "`oci` must name an image archive below a directory the operator allowed with "
                                   "--allow-mount");
        {
                /* real has no symlink left: none may appear on the way now. */
                struct open_how how = { .flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC,
                                        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };

                fd = (int)syscall(SYS_openat2, AT_FDCWD, real, &how, sizeof(how));
        }
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                int e = fd < 0 ? errno : EINVAL;

                if (fd >= 0)
                        close(fd);
                return xb_err_code(err, XB_E_INVALID, e, NULL, "`oci`: %s is not a readable archive file", path);
        }
        return fd;
}

void
xb_op_oci_import(struct xb_core *s, int tenant, json_t *spec, struct xb_call *c)
{
        struct xb_err err = { 0 };
        int fd = open_archive(s, json_string_value(json_object_get(spec, "oci")), &err);

        if (fd < 0)
                xb_call_fail(c, &err);
        else
                xb_op_oci_import_fd(s, tenant, spec, fd, c);
}

void
xb_op_oci_import_fd(struct xb_core *s, int tenant, json_t *spec, int archive_fd, struct xb_call *c)
{
        /* $0: the layout dir. Only files and directories in the layout. */
        static const char script[] =
                "set -e; cd \"$0\"; tar --no-same-owner --no-same-permissions -xf - ; "
                "if [ -n \"$(find . ! -type f ! -type d -print -quit)\" ]; then "
                "echo 'the archive holds links or special files; an OCI layout has none' >&2; exit 3; fi; "
                "tag=$(umoci ls --layout . | head -n1); "
                "if [ -z \"$tag\" ]; then echo 'the archive names no image (index.json has no ref.name)' >&2; "
                "exit 4; fi; "
                "echo \"execbox: the archive holds image $tag; applying its layers\"; "
                "exec umoci --log info raw unpack --image \".:$tag\" \"$XB_ROOTFS\"";
        struct xb_err err = { 0 };
        struct oci *o;
        _cleanup_close_ int fd = archive_fd;
        char rnd[24];

        if (!(o = calloc(1, sizeof(*o)))) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        o->core = s;
        o->tenant = tenant;
        o->spec = json_incref(spec);
        xb_random_id(rnd, sizeof(rnd));
        snprintf(o->layer, sizeof(o->layer), "oci-%s", rnd);
        snprintf(o->dir, sizeof(o->dir), "%s/oci-%s", s->o.state_dir, rnd);
        if (mkdir(o->dir, 0700) < 0) {
                o->dir[0] = 0;
                oci_free(o);
                xb_call_failf(c, XB_E_INTERNAL, NULL, "cannot make a directory for the import: %s", strerror(errno));
                return;
        }
        o->client = c;
        xb_call_on_cancel(c, oci_left, o);
        if (xb_call_wants_events(c)) {
                json_t *ev = json_pack("{s:i,s:i,s:s,s:s}", "step", 1, "steps", 1, "kind", "oci", "label",
                                       "import the OCI archive");

                xb_call_event(c, "step", ev);
                json_decref(ev);
        }
        {
                char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)script, o->dir, NULL };

                if (xb_rootfs_import(s, o->layer, argv, fd, imported, oci_output, o, &err) < 0)
                        oci_fail(o, XB_E_TEMPLATE_BUILD_FAILED, "importing the OCI archive failed: %s", err.msg);
        }
}
