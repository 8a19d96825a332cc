/* install: apt packages into a sandbox through the shared install cache
 * (POST /v1/sandboxes/{id}/install {"apt": [...]}; core/instcache.h).
 *
 * The chain: freeze the target for the instant of a read-only snapshot of
 * its writable layer, key it (instcache.h says what the key covers) and
 * look the key up.
 *   - A miss: a builder sandbox (root, network `packages`, the target's
 *     limits) over that snapshot and the target's lowers, with an empty
 *     writable layer, runs the real `apt-get install` (the package cache
 *     serves the .debs); its writable layer is then exactly the install's
 *     changes, kept read-only as the entry. The builder is deleted.
 *   - Then, and at once on a hit: a root process of the target removes
 *     what the install removed and copies the entry in from a read-only
 *     view of it attached inside the target (`cp --reflink=auto`: the
 *     data is cloned, copy-on-write), or unpacks it from a tar stream on
 *     its stdin where no view can be made. The files come through the
 *     target's own overlay, in its cgroup, charged to its disk limit, and
 *     dpkg does not run. The upper directory is never touched behind the
 *     overlay's back.
 * A client that asked for events hears the phases and the builder's
 * output; one that leaves does not stop the install. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "core/core.h"
#include "core/instcache.h"
#include "ops/jsonv.h"
#include "ops/op_args.h"
#include "ops/ops.h"
#include "ops/subcall.h"
#include "proc/env.h"

#define PKGS_MAX 128
#define TAIL_MAX 2048
#define TIMEOUT_DEFAULT_S 1800

struct inst {
        struct inst *next;
        struct xb_core *core;
        int tenant;
        char id[XB_SANDBOX_ID_LEN + 1];    /* the target */
        struct xb_sbx *builder;            /* while it runs (a reference; sealed: no client finds it) */
        char bid[XB_SANDBOX_ID_LEN + 1];
        char snap[XB_INST_LAYER_MAX];      /* the target's snapshot, while needed */
        char key[XB_INST_KEY_HEX];
        char **pkgs;                       /* sorted, unique */
        bool fresh, hit, exporting, reflink;
        char view[XB_INST_VIEW_NAME];      /* the entry's view inside the target, while copying */
        struct xb_call *client;            /* NULL once it left */
        uint64_t t0_ms, timeout_s, bytes;
        int tar_pidfd;
        pid_t key_pid;                     /* the key's reader (key_start), while it runs */
        struct xb_io key_io;
        char keybuf[sizeof(((struct xb_err *)0)->msg) + 4];   /* "K" or "E", then the key or the message */
        size_t nkeybuf;
        char tail[TAIL_MAX + 1];
        size_t ntail;
};

static struct inst **
head(struct xb_core *s)
{
        return (struct inst **)&s->installs;
}

static void
inst_free(struct inst *in)
{
        for (struct inst **pp = head(in->core); *pp; pp = &(*pp)->next)
                if (*pp == in) {
                        *pp = in->next;
                        break;
                }
        xb_strv_free(in->pkgs);
        free(in);
}

static void
event(struct inst *in, const char *phase, json_t *extra)
{
        json_t *ev;

        if (!in->client || !xb_call_wants_events(in->client)) {
                json_decref(extra);
                return;
        }
        ev = extra ? extra : json_object();
        json_object_set_new(ev, "phase", json_string(phase));
        xb_call_event(in->client, "progress", ev);
        json_decref(ev);
}

static void
client_left(void *owner)
{
        ((struct inst *)owner)->client = NULL;
}

/* The builder's output: into the tail (quoted when it fails), and a
 * `log` event to a client that asked for events. */
static void
output(void *owner, const char *stream, const char *d, size_t n)
{
        struct inst *in = owner;

        xb_tail_add(in->tail, &in->ntail, TAIL_MAX, d, n);
        if (in->client && xb_call_wants_events(in->client)) {
                json_t *ev = json_pack("{s:s,s:s%}", "stream", stream, "data", d, n);

                xb_call_event(in->client, "log", ev);
                json_decref(ev);
        }
}

/* ---- the chain ---- */

static void finish_fail(struct inst *in, enum xb_ecode code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
drop_builder(struct inst *in)
{
        if (!in->builder)
                return;
        xb_sbx_destroy(in->builder, XB_SBX_DELETED, "the install ended");
        xb_sbx_unref(in->builder);
        in->builder = NULL;
}

static void
key_stop(struct inst *in)
{
        if (!in->key_pid)
                return;
        xb_io_stop(&in->key_io);
        close(in->key_io.fd);
        kill(in->key_pid, SIGKILL);
        waitpid(in->key_pid, NULL, 0);
        in->key_pid = 0;
}

static void
cleanup(struct inst *in)
{
        struct xb_sbx *x = in->view[0] ? xb_sbx_find(in->core, in->id, in->tenant) : NULL;

        if (x)
                xb_inst_detach(x, in->view);
        in->view[0] = 0;
        key_stop(in);
        drop_builder(in);
        xb_inst_unstage(in->core, in->snap);
        in->snap[0] = 0;
}

static void
finish_fail(struct inst *in, enum xb_ecode code, const char *fmt, ...)
{
        struct xb_err err = { .ecode = code, .code = EIO };
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(err.msg, sizeof(err.msg), fmt, ap);
        va_end(ap);
        cleanup(in);
        if (in->client) {
                xb_call_on_cancel(in->client, NULL, NULL);
                xb_call_fail(in->client, &err);
        }
        inst_free(in);
}

static json_t *
pkgs_json(const struct inst *in)
{
        json_t *a = json_array();

        for (char **p = in->pkgs; *p; p++)
                json_array_append_new(a, json_string(*p));
        return a;
}

static void
applied(void *owner, json_t *res, const struct xb_err *err)
{
        struct inst *in = owner;
        const char *status = json_string_value(json_object_get(res, "status"));
        json_int_t code = json_integer_value(json_object_get(res, "exit_code"));
        const char *stderr_s = json_string_value(json_object_get(res, "stderr"));
        bool ok = !err && status && !strcmp(status, "ok") && code == 0;
        int r = xb_inst_export_end(in->core, in->key, in->tar_pidfd, ok, in->bytes);
        struct xb_call *c = in->client;
        json_t *j;

        in->exporting = false;
        if (in->view[0]) {
                struct xb_sbx *x = xb_sbx_find(in->core, in->id, in->tenant);

                if (x)
                        xb_inst_detach(x, in->view);
                in->view[0] = 0;
        }
        if (!ok || r < 0) {
                finish_fail(in, XB_E_INSTALL_FAILED, "applying the installed files failed: %s",
                            err ? err->msg : stderr_s && *stderr_s ? stderr_s : "the host's tar failed");
                return;
        }
        j = json_pack("{s:s,s:o,s:b,s:s,s:I,s:s,s:I}", "id", in->id, "packages", pkgs_json(in), "cached", in->hit,
                      "key", in->key, "bytes", (json_int_t)in->bytes, "copy", in->reflink ? "reflink" : "tar",
                      "duration_ms", (json_int_t)(xb_now_ms() - in->t0_ms));
        inst_free(in);
        if (c) {
                xb_call_on_cancel(c, NULL, NULL);
                xb_call_done(c, j);
        } else {
                json_decref(j);
        }
}

/* The entry into the target: a host tar into a root tar of the target. */
static void
apply(struct inst *in)
{
        static const char script[] = "for p in \"$@\"; do rm -rf -- \"/$p\"; done; "
                                     "exec tar -x -f - -C / -p --numeric-owner --no-overwrite-dir "
                                     "--keep-directory-symlink";
        /* stdin: the entry's read-only view (instview.c); cp's copy_file_range reflinks. */
        static const char cow[] = "for p in \"$@\"; do rm -rf -- \"/$p\"; done; "
                                  "cd \"/tmp/$XB_VIEW\" || exit 97; "
                                  "c() { [ -d \"$1\" ] || return 0; cp -R -P --preserve=mode,ownership,timestamps,links "
                                  "--reflink=auto --remove-destination -- \"$1/.\" \"$2\" </dev/null; }; "
                                  "c root / && c usr /usr/ && c etc /etc/ && c dpkg /var/lib/dpkg/";
        struct xb_sbx *x = xb_sbx_find(in->core, in->id, in->tenant);
        struct xb_err err = { 0 };
        char **rm = NULL, **argv = NULL, venv[80],
             *env[] = { (char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", (char *)"LC_ALL=C", venv, NULL };
        struct xb_proc_spec spec = { 0 };
        struct xb_call *c;
        struct xb_proc *p;
        size_t n = 0;
        int fd = -1, none = -1;

        if (!x) {
                finish_fail(in, XB_E_SANDBOX_GONE, "sandbox %s ended during the install", in->id);
                return;
        }
        /* Copy-on-write when the kernel can make the view; else a tar stream. */
        in->reflink = xb_inst_attach(x, in->key, in->view, &err) == 0;
        if (!in->reflink)
                xb_warn("install %s: no copy-on-write view (%s): copying with tar", in->id, err.msg);
        err = (struct xb_err){ 0 };
        event(in, "apply", json_pack("{s:b,s:s}", "cached", in->hit, "copy", in->reflink ? "reflink" : "tar"));
        if (xb_inst_export(in->core, in->key, !in->reflink, in->reflink ? &none : &fd, &in->tar_pidfd, &rm, &in->bytes,
                           &err) < 0) {
                finish_fail(in, XB_E_INSTALL_FAILED, "reading the cached install failed: %s", err.msg);
                return;
        }
        in->exporting = true;
        snprintf(venv, sizeof(venv), "XB_VIEW=%s", in->reflink ? in->view : "");
        n = 0;
        for (; rm[n]; n++)
                ;
        if (!(argv = calloc(n + 5, sizeof(*argv))) || !(c = xb_subcall_new(in, applied, output))) {
                free(argv);
                xb_strv_free(rm);
                close(fd);
                xb_inst_export_end(in->core, in->key, in->tar_pidfd, false, 0);
                finish_fail(in, XB_E_NOMEM, "out of memory");
                return;
        }
        argv[0] = (char *)"/bin/sh";
        argv[1] = (char *)"-c";
        argv[2] = (char *)(in->reflink ? cow : script);
        argv[3] = (char *)"sh";
        memcpy(argv + 4, rm, n * sizeof(*argv));
        spec = (struct xb_proc_spec){ .argv = argv, .env = env, .cwd = "/", .uid = 0,
                                      .timeout_ms = in->timeout_s * 1000, .output_limit = 64 << 10, .stdin_fd = fd > 0 ? fd : -1 };
        p = xb_proc_start(x, &spec, false, &err);
        if (fd >= 0)
                close(fd);
        free(argv);
        xb_strv_free(rm);
        if (!p) {
                /* The call never ran: end it through its own sink. */
                xb_call_fail(c, &err);
                return;
        }
        xb_proc_exec(p, c);
}

static void
built(void *owner, json_t *res, const struct xb_err *err)
{
        struct inst *in = owner;
        const char *status = json_string_value(json_object_get(res, "status"));
        json_int_t code = json_integer_value(json_object_get(res, "exit_code"));
        struct xb_sbx *b = in->builder;
        struct xb_err e2 = { 0 };

        if (err || !status || strcmp(status, "ok") || code != 0 || !b || b->state != XB_SBX_READY) {
                finish_fail(in, XB_E_INSTALL_FAILED, "apt-get install %s failed: %s; the end of its output:\n%s",
                            in->pkgs[0], err ? err->msg : status ? status : "no builder", in->ntail ? in->tail : "(none)");
                return;
        }
        if (xb_inst_capture(b, in->key, in->pkgs, in->fresh, &e2) < 0) {
                finish_fail(in, XB_E_INSTALL_FAILED, "keeping the install failed: %s", e2.msg);
                return;
        }
        event(in, "captured", NULL);
        cleanup(in);
        apply(in);
}

static void
build(struct inst *in, struct xb_sbx *x)
{
        static const char script[] =
                "export DEBIAN_FRONTEND=noninteractive; "
                "if command -v update-passwd >/dev/null; then update-passwd >/dev/null 2>&1; fi; "
                /* No lists: fetch them for the install, and drop them after
                 * (unless every package is installed already). */
                "fresh=0; ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1 || fresh=1; "
                "if [ $fresh = 1 ]; then fresh=0; for p in \"$@\"; do dpkg-query -W -f='${Status}' \"${p%%=*}\" "
                "2>/dev/null | grep -q 'install ok installed' || fresh=1; done; fi; "
                "if [ $fresh = 1 ]; then apt-get update -q || exit 100; fi; "
                "apt-get install -y -q --no-install-recommends -o Dpkg::Use-Pty=0 \"$@\" || exit 101; "
                "apt-get clean; "
                "if [ $fresh = 1 ]; then find /var/lib/apt/lists -maxdepth 1 -type f -delete; fi; "
                "for p in \"$@\"; do dpkg-query -W -f='${Status}\\n' \"${p%%=*}\" | grep -q 'install ok installed' || "
                "{ echo \"$p is not installed\" >&2; exit 102; }; done";
        struct xb_err err = { 0 };
        struct xb_proc_spec spec = { 0 };
        const char *const *net;
        char **env = NULL, **argv = NULL;
        struct xb_call *c = NULL;
        struct xb_sbx *b;
        struct xb_proc *p;
        size_t n = 0;

        if (xb_inst_builder(x, in->snap, &b, &err) < 0) {
                finish_fail(in, err.ecode ? err.ecode : XB_E_INSTALL_FAILED, "the install's builder sandbox: %s",
                            err.msg);
                return;
        }
        xb_sbx_ref(b);
        in->builder = b;
        snprintf(in->bid, sizeof(in->bid), "%s", b->id);
        event(in, "install", json_pack("{s:s}", "builder", in->bid));
        /* Its commands are the server's: no client can reach a sealed sandbox. */
        for (net = xb_sbx_net_env(b); net && net[n]; n++)
                ;
        if (xb_env_build("/root", 0, xb_sbx_net_env(b), n, &env, &err) < 0 ||
            !(argv = calloc(5 + PKGS_MAX, sizeof(*argv))) || !(c = xb_subcall_new(in, built, output))) {
                xb_strv_free(env);
                free(argv);
                finish_fail(in, XB_E_NOMEM, "out of memory");
                return;
        }
        argv[0] = (char *)"/bin/sh";
        argv[1] = (char *)"-c";
        argv[2] = (char *)script;
        argv[3] = (char *)"sh";
        for (n = 0; in->pkgs[n]; n++)
                argv[4 + n] = in->pkgs[n];
        spec = (struct xb_proc_spec){ .argv = argv, .env = env, .cwd = "/", .uid = 0,
                                      .timeout_ms = in->timeout_s * 1000, .output_limit = 1 << 20 };
        p = xb_proc_start(b, &spec, false, &err);
        free(argv);
        xb_strv_free(env);
        if (!p) {
                xb_call_fail(c, &err);
                return;
        }
        xb_proc_exec(p, c);
}

/* ---- the request ---- */

static int
cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
parse_pkgs(json_t *apt, char ***ret, struct xb_err *err)
{
        size_t n = 0, i, u = 0;
        char **v;
        json_t *e;

        if (!json_is_array(apt) || !json_array_size(apt) || json_array_size(apt) > PKGS_MAX)
                return xb_err_msg(err, EINVAL, "`apt` is required: a list of 1 to %d Debian package names", PKGS_MAX);
        if (!(v = calloc(json_array_size(apt) + 1, sizeof(*v))))
                return xb_err_set(err, ENOMEM, "install");
        json_array_foreach(apt, i, e) {
                const char *p = json_string_value(e);

                if (!p || !xb_op_apt_name_ok(p)) {
                        xb_strv_free(v);
                        return xb_err_msg(err, EINVAL,
                                          "`apt[%zu]` is not a Debian package name (lower-case letters, digits, "
                                          "+ - . and an optional =version)",
                                          i);
                }
                if (!(v[n++] = strdup(p))) {
                        xb_strv_free(v);
                        return xb_err_set(err, ENOMEM, "install");
                }
        }
        qsort(v, n, sizeof(*v), cmp_str);
        for (i = 0; i < n; i++) {
                if (u && !strcmp(v[u - 1], v[i])) {
                        free(v[i]);
                        continue;
                }
                v[u++] = v[i];
        }
        v[u] = NULL;
        *ret = v;
        return 0;
}

/* ---- the key, off the loop ----
 * The key reads every byte of the target's writable layer, which the
 * tenant sizes (up to its disk limit): a forked child reads it, at the
 * lowest priority, and writes "K<0|1><hex>" or "E<message>" to a pipe,
 * so the loop serves everyone else meanwhile. */

static void
keyed(struct inst *in)
{
        struct xb_sbx *x;

        in->hit = xb_inst_lookup(in->core, in->key);
        event(in, "key", json_pack("{s:s,s:b}", "key", in->key, "cached", in->hit));
        if (in->hit) {
                xb_inst_unstage(in->core, in->snap);
                in->snap[0] = 0;
                apply(in);
                return;
        }
        if (!(x = xb_sbx_find(in->core, in->id, in->tenant)) || x->state != XB_SBX_READY) {
                finish_fail(in, XB_E_INSTALL_FAILED, "sandbox %s ended during the install", in->id);
                return;
        }
        build(in, x);
}

static void
key_read(struct xb_io *io, uint32_t events)
{
        struct inst *in = io->data;
        ssize_t n;
        int st = 0;

        (void)events;
        n = read(io->fd, in->keybuf + in->nkeybuf, sizeof(in->keybuf) - 1 - in->nkeybuf);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n > 0 && (in->nkeybuf += (size_t)n) < sizeof(in->keybuf) - 1)
                return;
        /* EOF (or a full buffer): the child is done. */
        in->keybuf[in->nkeybuf] = 0;
        xb_io_stop(io);
        close(io->fd);
        waitpid(in->key_pid, &st, 0);
        in->key_pid = 0;
        if (in->keybuf[0] == 'K' && strlen(in->keybuf) == 2 + XB_INST_KEY_HEX - 1) {
                in->fresh = in->keybuf[1] == '1';
                memcpy(in->key, in->keybuf + 2, XB_INST_KEY_HEX);
                keyed(in);
        } else if (in->keybuf[0] == 'E') {
                finish_fail(in, XB_E_INSTALL_FAILED, "%s", in->keybuf + 1);
        } else {
                finish_fail(in, XB_E_INSTALL_FAILED, "the install's key could not be read (status %d)", st);
        }
}

static int
key_start(struct inst *in, struct xb_sbx *x, struct xb_err *err)
{
        int p[2];
        pid_t pid;

        if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
                return xb_err_set(err, errno, "a pipe for the install's key");
        if ((pid = fork()) < 0) {
                int e = errno;

                close(p[0]);
                close(p[1]);
                return xb_err_set(err, e, "fork the install's key reader");
        }
        if (pid == 0) {
                struct xb_err e = { 0 };
                char key[XB_INST_KEY_HEX];
                bool fresh = false;

                prctl(PR_SET_PDEATHSIG, SIGKILL);
                close(p[0]);
                if (setpriority(PRIO_PROCESS, 0, 19) < 0)
                        _exit(2);
                if (xb_inst_key(x, in->snap, in->pkgs, key, &fresh, &e) < 0)
                        dprintf(p[1], "E%s", e.msg);
                else
                        dprintf(p[1], "K%c%s", fresh ? '1' : '0', key);
                _exit(0);
        }
        close(p[1]);
        in->key_pid = pid;
        if (xb_io_start(in->core->loop, &in->key_io, p[0], EPOLLIN, key_read, in) < 0) {
                in->key_io.fd = p[0];
                key_stop(in);
                return xb_err_set(err, errno ? errno : EIO, "watch the install's key reader");
        }
        return 0;
}

static void
op_install(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "id", "apt", "timeout_s", NULL };
        struct xb_err err = { 0 };
        const char *id = NULL;
        uint64_t tmo = TIMEOUT_DEFAULT_S * 1000;
        struct xb_sbx *x;
        struct inst *in;
        char **pkgs = NULL;

        if (xb_jsonv_fields(args, fields, &err) < 0 || xb_jsonv_str(args, "id", 64, &id, &err) < 0 ||
            xb_jsonv_seconds(args, "timeout_s", 1, 7200, &tmo, &err) < 0 ||
            parse_pkgs(json_object_get(args, "apt"), &pkgs, &err) < 0) {
                err.ecode = XB_E_INVALID;
                xb_call_fail(c, &err);
                return;
        }
        if (!(x = xb_sbx_use(s, id ? id : "", tenant, &err))) {
                xb_strv_free(pkgs);
                xb_call_fail(c, &err);
                return;
        }
        if (!s->inst) {
                xb_strv_free(pkgs);
                xb_call_failf(c, XB_E_LAYERS_UNSUPPORTED, NULL,
                              "installs through the cache need the disk layer store (serve --layers disk) and "
                              "--install-cache-size above 0; run apt-get install as root instead");
                return;
        }
        for (in = *head(s); in; in = in->next)
                if (!strcmp(in->id, x->id)) {
                        xb_strv_free(pkgs);
                        xb_call_failf(c, XB_E_SANDBOX_BUSY, NULL, "an install runs in sandbox %s; wait for it", x->id);
                        return;
                }
        if (!(in = calloc(1, sizeof(*in)))) {
                xb_strv_free(pkgs);
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        in->core = s;
        in->tenant = tenant;
        in->pkgs = pkgs;
        in->t0_ms = xb_now_ms();
        in->timeout_s = (tmo + 999) / 1000;
        in->tar_pidfd = -1;
        snprintf(in->id, sizeof(in->id), "%s", x->id);
        in->next = *head(s);
        *head(s) = in;
        in->client = c;
        xb_call_on_cancel(c, client_left, in);
        if (xb_call_wants_events(c))
                xb_call_begin(c);
        xb_sbx_used(x);
        if (xb_inst_stage(x, in->snap, &err) < 0 || key_start(in, x, &err) < 0)
                finish_fail(in, err.ecode ? err.ecode : XB_E_INSTALL_FAILED, "%s", err.msg);
}

const struct xb_op xb_ops_install[] = {
        { "install", op_install },
        { NULL, NULL },
};
