/* template_build: a template from steps (POST /v1/templates).
 *
 * The build is a chain of the ordinary operations, so its steps run under
 * the same limits, egress rules and checks as any sandbox's: it creates a
 * build sandbox from `from` (as root; network `packages` when there are
 * apt steps, which the operator's --network-max may refuse), installs the
 * apt packages, writes the files, runs the run steps (`/bin/sh -c`, in
 * workdir, with env), snapshots the sandbox into the template (a new
 * read-only layer on top of `from`'s) and deletes it. The template then
 * takes the build's metadata: env, workdir, user, start.
 *
 * A client that asked for events hears each step and its output; one that
 * leaves does not stop the build. While it runs, and after it failed,
 * GET /v1/templates/{name} shows its progress (builds_json). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "core/core.h"
#include "core/rootfs.h"
#include "core/templates.h"
#include "ops/jsonv.h"
#include "ops/op_args.h"
#include "ops/op_tbuild_int.h"
#include "ops/op_tmpl.h"
#include "ops/ops.h"
#include "ops/subcall.h"
#include "proc/env.h"

#define STEPS_MAX 256
#define STEP_TIMEOUT_DEFAULT_S 600

const char *const xb_tb_kind_names[] = { "apt", "file", "run", "rootfs" };
#define kind_names xb_tb_kind_names

static struct build **
builds_head(struct xb_core *s)
{
        return (struct build **)&s->builds;
}

static struct build *
build_find(struct xb_core *s, const char *name, int tenant)
{
        for (struct build *b = *builds_head(s); b; b = b->next)
                if (b->tenant == tenant && !strcmp(b->name, name))
                        return b;
        return NULL;
}

static void
build_free(struct build *b)
{
        for (struct build **pp = builds_head(b->core); *pp; pp = &(*pp)->next)
                if (*pp == b) {
                        *pp = b->next;
                        break;
                }
        for (size_t i = 0; i < b->nsteps; i++) {
                free(b->steps[i].arg);
                free(b->steps[i].content);
        }
        free(b->steps);
        json_decref(b->spec);
        json_decref(b->error);
        free(b);
}

static json_t *
progress_json(const struct build *b)
{
        const struct step *st = b->cur < b->nsteps ? &b->steps[b->cur] : NULL;

        return json_pack("{s:s,s:I,s:I,s:s?,s:s?,s:s%}", "state", b->state == B_BUILDING ? "building" : "failed",
                         "step", (json_int_t)(b->cur + 1 > b->nsteps ? b->nsteps : b->cur + 1), "steps",
                         (json_int_t)b->nsteps, "kind", st ? kind_names[st->kind] : NULL, "sandbox_id",
                         b->sbx[0] ? b->sbx : NULL, "log_tail", b->tail, b->ntail);
}

json_t *
xb_op_build_json(struct xb_core *s, const char *name, int tenant)
{
        struct build *b = build_find(s, name, tenant);
        json_t *j;

        if (!b)
                return NULL;
        j = json_pack("{s:s,s:s,s:s,s:o}", "name", b->name, "state", b->state == B_BUILDING ? "building" : "failed",
                      "from", json_string_value(json_object_get(b->spec, "from")) ?: "base", "progress",
                      progress_json(b));
        if (j && b->error)
                json_object_set(j, "error", b->error);
        return j;
}

void
xb_op_builds_list(struct xb_core *s, int tenant, json_t *list)
{
        for (struct build *b = *builds_head(s); b; b = b->next)
                if (b->tenant == tenant)
                        json_array_append_new(list, xb_op_build_json(s, b->name, tenant));
}

bool
xb_op_build_forget(struct xb_core *s, const char *name, int tenant, struct xb_err *err)
{
        struct build *b = build_find(s, name, tenant);

        if (!b)
                return false;
        if (b->state == B_BUILDING) {
                xb_err_code(err, XB_E_TEMPLATE_IN_USE, EBUSY, NULL, "template `%s` is being built; wait for it", name);
                return true;
        }
        build_free(b);
        return true;
}

/* ---- a step's output, and its operations ---- */

void
xb_tb_log(struct build *b, const char *stream, const char *d, size_t n)
{
        xb_tail_add(b->tail, &b->ntail, TAIL_MAX, d, n);
        if (b->client && xb_call_wants_events(b->client)) {
                json_t *ev = json_pack("{s:I,s:s,s:s%}", "step", (json_int_t)b->cur + 1, "stream", stream, "data", d, n);

                xb_call_event(b->client, "log", ev);
                json_decref(ev);
        }
}

static void
output(void *owner, const char *stream, const char *d, size_t n)
{
        xb_tb_log(owner, stream, d, n);
}

/* Run op with args (taken) for b; then(b, result or NULL, err or NULL). */
static void
sub_run(struct build *b, const char *op, json_t *args, xb_subcall_then then)
{
        xb_subcall_run(b->core, b->tenant, op, args, b, then, output);
}

/* ---- the chain ---- */

static void next_step(struct build *b);

static void
client_left(void *owner)
{
        struct build *b = owner;

        b->client = NULL;
}

void
xb_tb_fail(struct build *b, enum xb_ecode code, const char *fmt, ...)
{
        struct xb_err err = { .ecode = code, .code = EIO };
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(err.msg, sizeof(err.msg), fmt, ap);
        va_end(ap);
        b->state = B_FAILED;
        b->error = json_pack("{s:s,s:s}", "code", xb_ecode_name(code), "message", err.msg);
        if (b->sbx[0])
                sub_run(b, "sandbox_delete", json_pack("{s:s}", "id", b->sbx), NULL);
        b->sbx[0] = 0;
        if (b->client) {
                xb_call_on_cancel(b->client, NULL, NULL);
                xb_call_fail(b->client, &err);
                b->client = NULL;
        }
}

static char *
step_label(const struct step *st)
{
        char *s = NULL;

        if (asprintf(&s, "%s: %.200s%s", kind_names[st->kind], st->arg, strlen(st->arg) > 200 ? "..." : "") < 0)
                return NULL;
        return s;
}

static void
step_done(void *owner, json_t *res, const struct xb_err *err)
{
        struct build *b = owner;
        const struct step *st = &b->steps[b->cur];
        _cleanup_free_ char *label = step_label(st);
        const char *status = json_string_value(json_object_get(res, "status"));
        json_int_t code = json_integer_value(json_object_get(res, "exit_code"));

        if (err) {
                xb_tb_fail(b, XB_E_TEMPLATE_BUILD_FAILED, "step %zu of %zu (%s) failed: %s", b->cur + 1, b->nsteps,
                            label ? label : "", err->msg);
                return;
        }
        if ((!status || strcmp(status, "ok") || code != 0)) {
                xb_tb_fail(b, XB_E_TEMPLATE_BUILD_FAILED,
                            "step %zu of %zu (%s) failed: %s %lld; the end of its output:\n%s", b->cur + 1, b->nsteps,
                            label ? label : "", status && strcmp(status, "exit_nonzero") ? status : "exit code",
                            (long long)code, b->ntail ? b->tail : "(none)");
                return;
        }
        b->cur++;
        next_step(b);
}

static char *
apt_cmd(const char *pkgs)
{
        char *s = NULL;

        /* The host-derived /etc has only root, user and nobody; maintainer
         * scripts want Debian's system accounts (man-db's trigger: man). */
        if (asprintf(&s,
                     "export DEBIAN_FRONTEND=noninteractive; "
                     "if command -v update-passwd >/dev/null; then update-passwd >/dev/null 2>&1; fi; "
                     "apt-get update -q && "
                     "apt-get install -y -q --no-install-recommends %s && apt-get clean && "
                     "rm -rf /var/lib/apt/lists/*",
                     pkgs) < 0)
                return NULL;
        return s;
}

static json_t *
env_of(struct build *b)
{
        json_t *e = json_object_get(b->spec, "env");

        return json_is_object(e) ? json_incref(e) : json_object();
}

static void snapshot_done(void *owner, json_t *res, const struct xb_err *err);

static void
next_step(struct build *b)
{
        const struct step *st;
        const char *wd = json_string_value(json_object_get(b->spec, "workdir"));
        _cleanup_free_ char *cmd = NULL;
        json_t *args;

        b->ntail = 0;
        b->tail[0] = 0;
        if (b->cur >= b->nsteps) {
                sub_run(b, "sandbox_snapshot", json_pack("{s:s,s:s}", "id", b->sbx, "name", b->name), snapshot_done);
                return;
        }
        st = &b->steps[b->cur];
        if (b->client && xb_call_wants_events(b->client)) {
                _cleanup_free_ char *label = step_label(st);
                json_t *ev = json_pack("{s:I,s:I,s:s,s:s?}", "step", (json_int_t)b->cur + 1, "steps",
                                       (json_int_t)b->nsteps, "kind", kind_names[st->kind], "label", label);

                xb_call_event(b->client, "step", ev);
                json_decref(ev);
        }
        if (st->kind == STEP_ROOTFS) {
                xb_tb_rootfs_step(b);
                return;
        }
        if (st->kind == STEP_FILE) {
                /* As root (the file API writes as the sandbox's user). */
                sub_run(b, "run_command",
                        json_pack("{s:s,s:[sssss],s:s,s:s,s:I}", "id", b->sbx, "argv", "/bin/sh", "-c",
                                  "mkdir -p -- \"$(dirname -- \"$1\")\" && cat > \"$1\"", "sh", st->arg, "stdin",
                                  st->content, "user", "root", "timeout_s", (json_int_t)60),
                        step_done);
                return;
        }
        cmd = st->kind == STEP_APT ? apt_cmd(st->arg) : strdup(st->arg);
        args = cmd ? json_pack("{s:s,s:[sss],s:s,s:o,s:I,s:I}", "id", b->sbx, "argv", "/bin/sh", "-c", cmd, "user",
                               "root", "env", env_of(b), "timeout_s",
                               (json_int_t)json_integer_value(json_object_get(b->spec, "_step_timeout")),
                               "output_limit", (json_int_t)(1 << 20))
                   : NULL;
        /* In workdir, made first if missing (as a Dockerfile's WORKDIR). */
        if (args && wd && st->kind == STEP_RUN)
                json_object_set_new(args, "argv",
                                    json_pack("[sssss]", "/bin/sh", "-c",
                                              "mkdir -p -- \"$0\" && cd -- \"$0\" && exec /bin/sh -c \"$1\"", wd, cmd));
        sub_run(b, "run_command", args, step_done);
}

static void
created(void *owner, json_t *res, const struct xb_err *err)
{
        struct build *b = owner;
        const char *id = json_string_value(json_object_get(res, "id"));

        if (err || !id) {
                xb_tb_fail(b, err && err->ecode ? err->ecode : XB_E_SANDBOX_FAILED,
                            "the build sandbox could not be created: %s", err ? err->msg : "no id");
                return;
        }
        snprintf(b->sbx, sizeof(b->sbx), "%s", id);
        next_step(b);
}

static void
snapshot_done(void *owner, json_t *res, const struct xb_err *err)
{
        struct build *b = owner;
        struct xb_core *s = b->core;
        struct xb_template *t, *from;
        json_t *start = json_object_get(b->spec, "start");
        const char *user = json_string_value(json_object_get(b->spec, "user"));
        const char *wd = json_string_value(json_object_get(b->spec, "workdir"));
        struct xb_call *c = b->client;

        (void)res;
        if (err || !(t = xb_template_find(s, b->name, b->tenant))) {
                xb_tb_fail(b, err && err->ecode ? err->ecode : XB_E_INTERNAL, "the build's snapshot failed: %s",
                            err ? err->msg : "no template");
                return;
        }
        from = xb_template_find(s, b->from, b->tenant);
        t->uid = user ? (!strcmp(user, "root") ? 0 : XB_USER_UID) : from ? from->uid : XB_USER_UID;
        t->parent[0] = 0;
        if (wd) {
                free(t->workdir);
                t->workdir = strdup(wd);
        }
        if (json_is_object(start)) {
                json_t *ready = json_object_get(start, "ready");
                const char *file = json_string_value(json_object_get(ready, "file"));

                t->start_cmd = strdup(json_string_value(json_object_get(start, "cmd")));
                t->ready_port = (uint16_t)json_integer_value(json_object_get(ready, "port"));
                t->ready_file = file ? strdup(file) : NULL;
                t->ready_timeout_s = (unsigned)json_integer_value(json_object_get(start, "timeout_s"));
        } else if (from && from->start_cmd) {
                t->start_cmd = strdup(from->start_cmd);
                t->ready_port = from->ready_port;
                t->ready_file = from->ready_file ? strdup(from->ready_file) : NULL;
                t->ready_timeout_s = from->ready_timeout_s;
        }
        xb_template_save(s, t);
        sub_run(b, "sandbox_delete", json_pack("{s:s}", "id", b->sbx), NULL);
        b->sbx[0] = 0;
        if (c) {
                json_t *j = xb_template_json(t);

                json_object_set_new(j, "build",
                                    json_pack("{s:I,s:I}", "steps", (json_int_t)b->nsteps, "duration_ms",
                                              (json_int_t)(xb_now_ms() - b->t0_ms)));
                xb_call_on_cancel(c, NULL, NULL);
                b->client = NULL;
                build_free(b);
                xb_call_done(c, j);
                return;
        }
        build_free(b);
}

void
xb_tb_create_sandbox(struct build *b)
{
        json_t *spec = b->spec, *cargs;
        bool apt = false;

        for (size_t i = 0; i < b->nsteps; i++)
                apt |= b->steps[i].kind == STEP_APT;
        /* The build sandbox: root, the template's env, packages egress for apt. */
        cargs = json_pack("{s:s,s:s,s:o,s:i}", "template", b->from, "user", "root", "env", env_of(b), "timeout_s",
                          3600);
        if (cargs && json_is_object(json_object_get(spec, "limits")))
                json_object_set(cargs, "limits", json_object_get(spec, "limits"));
        if (cargs && apt)
                json_object_set_new(cargs, "network", json_string("packages"));
        sub_run(b, "sandbox_create", cargs, created);
}

/* ---- the request ---- */

static int
add_step(struct build *b, enum step_kind k, const char *arg, const char *content)
{
        struct step *st;

        if (b->nsteps >= STEPS_MAX)
                return -E2BIG;
        st = &b->steps[b->nsteps];
        st->kind = k;
        st->arg = strdup(arg);
        st->content = content ? strdup(content) : NULL;
        if (!st->arg || (content && !st->content))
                return -ENOMEM;
        b->nsteps++;
        return 0;
}

static int
parse_steps(struct build *b, json_t *spec, struct xb_err *err)
{
        json_t *apt = json_object_get(spec, "apt"), *run = json_object_get(spec, "run");
        json_t *files = json_object_get(spec, "files"), *v;
        const char *k;
        size_t i;

        if (apt && !json_is_null(apt)) {
                _cleanup_free_ char *all = NULL;
                size_t len = 0;

                if (!json_is_array(apt))
                        return xb_err_msg(err, EINVAL, "`apt` must be a list of Debian package names");
                json_array_foreach(apt, i, v) {
                        const char *p = json_string_value(v);
                        char *n;

                        if (!p || !xb_op_apt_name_ok(p))
                                return xb_err_msg(err, EINVAL,
                                                  "`apt[%zu]` is not a Debian package name "
                                                  "(lower-case letters, digits, + - . and an optional =version)",
                                                  i);
                        if (!(n = realloc(all, len + strlen(p) + 2)))
                                return xb_err_set(err, ENOMEM, "build");
                        all = n;
                        len += (size_t)sprintf(all + len, "%s%s", len ? " " : "", p);
                }
                if (all && add_step(b, STEP_APT, all, NULL) < 0)
                        return xb_err_set(err, ENOMEM, "build");
        }
        if (files && !json_is_null(files)) {
                if (!json_is_object(files))
                        return xb_err_msg(err, EINVAL, "`files` must be an object of absolute path: text content");
                json_object_foreach(files, k, v) {
                        if (k[0] != '/' || !json_is_string(v))
                                return xb_err_msg(err, EINVAL,
                                                  "`files`: `%.200s` must be an absolute path with "
                                                  "a string content",
                                                  k);
                        if (add_step(b, STEP_FILE, k, json_string_value(v)) < 0)
                                return xb_err_msg(err, E2BIG, "at most %d steps", STEPS_MAX);
                }
        }
        if (run && !json_is_null(run)) {
                if (!json_is_array(run))
                        return xb_err_msg(err, EINVAL, "`run` must be a list of shell command lines");
                json_array_foreach(run, i, v) {
                        if (!json_is_string(v) || !json_string_length(v))
                                return xb_err_msg(err, EINVAL, "`run[%zu]` must be a non-empty shell command line", i);
                        if (add_step(b, STEP_RUN, json_string_value(v), NULL) < 0)
                                return xb_err_msg(err, E2BIG, "at most %d steps", STEPS_MAX);
                }
        }
        return 0;
}

static int
parse_start(json_t *spec, struct xb_err *err)
{
        static const char *const fields[] = { "cmd", "ready", "timeout_s", NULL };
        static const char *const rfields[] = { "port", "file", NULL };
        json_t *st = json_object_get(spec, "start"), *ready;
        const char *cmd = NULL, *file = NULL;
        uint64_t port = 0, tmo = 0;
        int r;

        if (!st || json_is_null(st)) {
                json_object_del(spec, "start");
                return 0;
        }
        if (!json_is_object(st))
                return xb_err_msg(err, EINVAL, "`start` must be {\"cmd\": \"...\", \"ready\": {\"port\": 8000}}");
        if ((r = xb_jsonv_fields(st, fields, err)) < 0 || (r = xb_jsonv_str(st, "cmd", 65536, &cmd, err)) < 0 ||
            (r = xb_jsonv_seconds(st, "timeout_s", 1, 600, &tmo, err)) < 0)
                return r;
        if (!cmd || !*cmd)
                return xb_err_msg(err, EINVAL, "`start.cmd` is required: the command to run at create");
        if (tmo)
                json_object_set_new(st, "timeout_s", json_integer((json_int_t)((tmo + 999) / 1000)));
        ready = json_object_get(st, "ready");
        if (ready && !json_is_null(ready)) {
                if (!json_is_object(ready) || (r = xb_jsonv_fields(ready, rfields, err)) < 0 ||
                    (r = xb_jsonv_uint(ready, "port", 1, 65535, &port, err)) < 0 ||
                    (r = xb_jsonv_str(ready, "file", 4096, &file, err)) < 0 || (port && file) ||
                    (file && file[0] != '/'))
                        return xb_err_msg(err, EINVAL,
                                          "`start.ready` must be {\"port\": N} or {\"file\": "
                                          "\"/absolute/path\"}");
        }
        return 0;
}

/* The checks every template_build takes, up to the layer store: 0 (and
 * the step timeout in *step_ms), or -1 with err (its ecode set). fields:
 * the ones allowed. */
static int
spec_check(struct xb_core *s, json_t *spec, const char *const *fields, uint64_t *step_ms, struct xb_err *err)
{
        const char *name = NULL, *from = NULL, *wd = NULL, *user = NULL;
        char **env = NULL;

        if (xb_jsonv_fields(spec, fields, err) < 0 || xb_jsonv_str(spec, "name", 64, &name, err) < 0 ||
            xb_jsonv_str(spec, "from", 64, &from, err) < 0 || xb_jsonv_str(spec, "workdir", 4096, &wd, err) < 0 ||
            xb_jsonv_str(spec, "user", 16, &user, err) < 0 || xb_jsonv_env(spec, "env", &env, NULL, err) < 0 ||
            xb_jsonv_seconds(spec, "timeout_s", 1, 86400, step_ms, err) < 0 || parse_start(spec, err) < 0)
                goto invalid;
        xb_strv_free(env);
        if (!name) {
                xb_err_msg(err, EINVAL, "`name` is required: the new template's name, such as `py-ml`");
                goto invalid;
        }
        if (xb_template_name_check(name, err) < 0)
                return -1;
        if (wd && wd[0] != '/') {
                xb_err_msg(err, EINVAL, "`workdir` must be an absolute path such as /srv/app");
                goto invalid;
        }
        if (user && strcmp(user, "user") && strcmp(user, "root")) {
                xb_err_msg(err, EINVAL, "`user` must be \"user\" (uid 1000) or \"root\"");
                goto invalid;
        }
        if (!s->eng->store || !s->templates_dir) {
                xb_err_code(err, XB_E_LAYERS_UNSUPPORTED, EOPNOTSUPP, NULL,
                            "building templates needs the disk layer store (serve --layers disk)");
                return -1;
        }
        return 0;
invalid:
        err->ecode = XB_E_INVALID;
        return -1;
}

/* A template, or a build in flight, of that name: XB_E_TEMPLATE_EXISTS. */
static int
name_free(struct xb_core *s, const char *name, int tenant, struct xb_err *err)
{
        struct build *old = build_find(s, name, tenant);

        if (xb_template_find(s, name, tenant) || (old && old->state == B_BUILDING))
                return xb_err_code(err, XB_E_TEMPLATE_EXISTS, EEXIST, NULL, "a template `%s` exists already", name);
        return 0;
}

static void
op_build(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        static const char *const fields[] = { "name",  "from",  "apt",    "run",       "env", "workdir", "user",
                                              "files", "start", "limits", "timeout_s", "oci", NULL };
        _cleanup_(xb_json_decrefp) json_t *spec = json_deep_copy(args);
        struct xb_err err = { 0 };
        const char *name, *from;
        uint64_t step_ms = STEP_TIMEOUT_DEFAULT_S * 1000;
        struct build *b, *old = NULL;
        const char *rootfs_suite = NULL;
        char from_name[XB_TEMPLATE_NAME_MAX + 1] = "";
        int r;

        if (!spec) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        if (spec_check(s, spec, fields, &step_ms, &err) < 0) {
                xb_call_fail(c, &err);
                return;
        }
        name = json_string_value(json_object_get(spec, "name"));
        from = json_string_value(json_object_get(spec, "from"));
        if ((r = xb_tb_debian_from(s, tenant, from, from_name, &rootfs_suite, c, &err)) < 0) {
                if (r == -EINVAL)
                        goto invalid;
                return;
        }
        if (r > 0) {
                from = NULL;
        } else if (from && strcmp(from, "base") && !xb_template_find(s, from, tenant)) {
                xb_call_failf(c, XB_E_TEMPLATE_NOT_FOUND, NULL, "no template `%.64s` to build from", from);
                return;
        }
        if (name_free(s, name, tenant, &err) < 0) {
                xb_call_fail(c, &err);
                return;
        }
        if ((old = build_find(s, name, tenant)))
                build_free(old);   /* a failed build of that name: replaced */
        if (json_object_get(spec, "oci") && !json_is_null(json_object_get(spec, "oci"))) {
                if (!json_is_string(json_object_get(spec, "oci")) || from || from_name[0] ||
                    (json_object_get(spec, "apt") && !json_is_null(json_object_get(spec, "apt"))) ||
                    (json_object_get(spec, "run") && !json_is_null(json_object_get(spec, "run"))) ||
                    (json_object_get(spec, "files") && !json_is_null(json_object_get(spec, "files")))) {
                        xb_err_msg(&err, EINVAL,
                                   "`oci` is the host path of an image archive, and an import "
                                   "takes no `from`, `apt`, `run` or `files` (build on the imported template)");
                        goto invalid;
                }
                xb_op_oci_import(s, tenant, spec, c);
                return;
        }
        if (!(b = calloc(1, sizeof(*b)))) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        b->core = s;
        b->tenant = tenant;
        if (!(b->steps = calloc(STEPS_MAX, sizeof(*b->steps)))) {
                free(b);
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        b->t0_ms = xb_now_ms();
        snprintf(b->name, sizeof(b->name), "%s", name);
        snprintf(b->from, sizeof(b->from), "%s", from_name[0] ? from_name : from ? from : "base");
        b->next = *builds_head(s);
        *builds_head(s) = b;
        if ((rootfs_suite && add_step(b, STEP_ROOTFS, rootfs_suite, NULL) < 0) || parse_steps(b, spec, &err) < 0) {
                build_free(b);
                goto invalid;
        }
        json_object_set_new(spec, "_step_timeout", json_integer((json_int_t)((step_ms + 999) / 1000)));
        b->spec = json_incref(spec);
        b->client = c;
        xb_call_on_cancel(c, client_left, b);
        if (xb_call_wants_events(c))
                xb_call_begin(c);
        if (b->nsteps && b->steps[0].kind == STEP_ROOTFS)
                next_step(b);
        else
                xb_tb_create_sandbox(b);
        return;
invalid:
        err.ecode = XB_E_INVALID;
        xb_call_fail(c, &err);
}

static const char *const upload_fields[] = { "name", "env", "workdir", "user", NULL };

int
xb_op_template_upload_check(struct xb_core *s, int tenant, json_t *args, struct xb_err *err)
{
        uint64_t step_ms = 0;

        if (spec_check(s, args, upload_fields, &step_ms, err) < 0)
                return -1;
        return name_free(s, json_string_value(json_object_get(args, "name")), tenant, err) < 0 ? -1 : 0;
}

void
xb_op_template_upload(struct xb_core *s, int tenant, json_t *args, int fd, struct xb_call *c)
{
        _cleanup_(xb_json_decrefp) json_t *spec = json_deep_copy(args);
        struct xb_err err = { 0 };
        struct build *old;

        if (!spec) {
                close(fd);
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        if (xb_op_template_upload_check(s, tenant, spec, &err) < 0) {
                close(fd);
                xb_call_fail(c, &err);
                return;
        }
        if ((old = build_find(s, json_string_value(json_object_get(spec, "name")), tenant)))
                build_free(old);   /* a failed build of that name: replaced */
        xb_op_oci_import_fd(s, tenant, spec, fd, c);
}

const struct xb_op xb_ops_tbuild[] = {
        { "template_build", op_build },
        { NULL, NULL },
};
