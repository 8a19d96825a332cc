/* Templates, snapshots and forks over the layer store; see templates.h. */
#define _GNU_SOURCE
#include "core/instcache.h"
#include "core/templates.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/core.h"
#include "proc/env.h"

static char **
strv_dup(char *const *v, size_t *ret_n)
{
        size_t n = 0;
        char **d;

        for (; v && v[n]; n++)
                ;
        d = calloc(n + 1, sizeof(*d));
        if (!d)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (!(d[i] = strdup(v[i]))) {
                        xb_strv_free(d);
                        return NULL;
                }
        if (ret_n)
                *ret_n = n;
        return d;
}

static void
template_free(struct xb_template *t)
{
        if (!t)
                return;
        xb_strv_free(t->layers);
        xb_strv_free(t->env);
        free(t->workdir);
        free(t->start_cmd);
        free(t->ready_file);
        free(t);
}

int
xb_template_name_check(const char *name, struct xb_err *err)
{
        size_t n = strlen(name);

        if (n == 0 || n > XB_TEMPLATE_NAME_MAX || name[0] == '.' || name[0] == '-' ||
            strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n)
                return xb_err_code(err, XB_E_INVALID, EINVAL, NULL, "a template name is 1 to 64 letters, digits, "
                                   "'.', '_' or '-', such as `python-ml`");
        if (!strcmp(name, "base") || !strcmp(name, "host") || !strcmp(name, "code-interpreter-v1"))
                return xb_err_code(err, XB_E_TEMPLATE_EXISTS, EEXIST, NULL, "`%s` is the built-in template", name);
        return 0;
}

struct xb_template *
xb_template_find(struct xb_core *s, const char *name, int tenant)
{
        for (struct xb_template *t = s->templates; t; t = t->next)
                if (!strcmp(t->name, name) && t->tenant == tenant)
                        return t;
        return NULL;
}

static struct xb_template *
find_any(struct xb_core *s, const char *name)
{
        for (struct xb_template *t = s->templates; t; t = t->next)
                if (!strcmp(t->name, name))
                        return t;
        return NULL;
}

json_t *
xb_template_json(const struct xb_template *t)
{
        json_t *layers = json_array(), *env = json_object();

        for (size_t i = 0; i < t->nlayers; i++)
                json_array_append_new(layers, json_string(t->layers[i]));
        for (char **e = t->env; e && *e; e++) {
                char *eq = strchr(*e, '=');

                if (eq) {
                        _cleanup_free_ char *k = strndup(*e, (size_t)(eq - *e));

                        if (k)
                                json_object_set_new(env, k, json_string(eq + 1));
                }
        }
        json_t *start = NULL, *j;

        if (t->start_cmd) {
                json_t *ready = t->ready_port ? json_pack("{s:i}", "port", (int)t->ready_port)
                                : t->ready_file ? json_pack("{s:s}", "file", t->ready_file) : json_null();

                start = json_pack("{s:s,s:o}", "cmd", t->start_cmd, "ready", ready);
                if (start && t->ready_timeout_s)
                        json_object_set_new(start, "timeout_s", json_integer(t->ready_timeout_s));
        }
        j = json_pack("{s:s,s:s,s:o,s:o,s:s,s:s?,s:s?,s:I,s:i,s:b}", "name", t->name, "state", "ready", "layers",
                      layers, "env", env, "user", t->uid == 0 ? "root" : "user", "parent",
                      t->parent[0] ? t->parent : NULL, "workdir", t->workdir, "created_at_ms",
                      (json_int_t)t->created_unix_ms, "in_use", (int)t->refs, "builtin", 0);
        if (j && start)
                json_object_set_new(j, "start", start);
        if (j && t->rootfs)
                json_object_set_new(j, "rootfs", json_true());
        return j;
}

json_t *
xb_templates_json(struct xb_core *s, int tenant)
{
        json_t *list = json_array();

        json_array_append_new(list, json_pack("{s:s,s:[],s:{},s:s,s:I,s:i,s:b}", "name", "base", "layers", "env",
                                              "user", "user", "created_at_ms", (json_int_t)0, "in_use", 0, "builtin",
                                              1));
        for (struct xb_template *t = s->templates; t; t = t->next)
                if (t->tenant == tenant)
                        json_array_append_new(list, xb_template_json(t));
        return json_pack("{s:o}", "templates", list);
}

/* ---- persistence ---- */

int
xb_template_save(struct xb_core *s, const struct xb_template *t)
{
        _cleanup_(json_decrefp) json_t *j = xb_template_json(t);
        char path[4096], tmp[4200];

        if (!j)
                return -ENOMEM;
        json_object_del(j, "in_use");
        json_object_del(j, "builtin");
        json_object_del(j, "state");
        if (json_is_null(json_object_get(j, "workdir")))
                json_object_del(j, "workdir");
        if (json_is_null(json_object_get(j, "parent")))
                json_object_del(j, "parent");
        json_object_set_new(j, "tenant", json_integer(t->tenant));
        snprintf(path, sizeof(path), "%s/%s.json", s->templates_dir, t->name);
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        if (json_dump_file(j, tmp, JSON_COMPACT) < 0 || rename(tmp, path) < 0) {
                int e = errno ? errno : EIO;

                unlink(tmp);
                return -e;
        }
        return 0;
}

static struct xb_template *
load_one(struct xb_core *s, const char *file)
{
        char path[4096];
        json_error_t je;
        _cleanup_(json_decrefp) json_t *j = NULL;
        struct xb_template *t = calloc(1, sizeof(*t));
        const char *name = NULL, *user = "user", *parent = NULL, *workdir = NULL;
        json_t *layers = NULL, *env = NULL, *start = NULL, *v;
        json_int_t created = 0, tenant = 0;
        size_t i;

        snprintf(path, sizeof(path), "%s/%s", s->templates_dir, file);
        j = json_load_file(path, 0, &je);
        if (!t || !j ||
            json_unpack(j, "{s:s,s:o,s?o,s?s,s?s,s?s,s?o,s?I,s?I}", "name", &name, "layers", &layers, "env", &env,
                        "user", &user, "parent", &parent, "workdir", &workdir, "start", &start, "created_at_ms",
                        &created, "tenant", &tenant) < 0 ||
            xb_template_name_check(name, NULL) < 0 || !json_is_array(layers) || json_array_size(layers) > XB_LAYERS_MAX)
                goto bad;
        snprintf(t->name, sizeof(t->name), "%s", name);
        t->layers = calloc(json_array_size(layers) + 1, sizeof(char *));
        if (!t->layers)
                goto bad;
        json_array_foreach(layers, i, v) {
                struct stat st;
                char lp[4200];

                if (!json_is_string(v) || strchr(json_string_value(v), '/') || json_string_value(v)[0] == '.')
                        goto bad;
                snprintf(lp, sizeof(lp), "%s/layers/%s", s->eng->store->path, json_string_value(v));
                if (lstat(lp, &st) < 0 || !S_ISDIR(st.st_mode))
                        goto bad;
                t->layers[t->nlayers++] = strdup(json_string_value(v));
        }
        if (json_is_object(env)) {
                const char *k;
                size_t n = 0;

                t->env = calloc(json_object_size(env) + 1, sizeof(char *));
                json_object_foreach(env, k, v)
                        if (t->env && json_is_string(v) && asprintf(&t->env[n], "%s=%s", k, json_string_value(v)) > 0)
                                n++;
        }
        t->uid = !strcmp(user, "root") ? 0 : XB_USER_UID;
        t->rootfs = json_is_true(json_object_get(j, "rootfs"));
        if (workdir && workdir[0] == '/')
                t->workdir = strdup(workdir);
        if (json_is_object(start) && json_is_string(json_object_get(start, "cmd"))) {
                json_t *ready = json_object_get(start, "ready");
                json_int_t port = json_integer_value(json_object_get(ready, "port"));
                const char *rfile = json_string_value(json_object_get(ready, "file"));

                t->start_cmd = strdup(json_string_value(json_object_get(start, "cmd")));
                t->ready_port = port > 0 && port < 65536 ? (uint16_t)port : 0;
                t->ready_file = rfile && rfile[0] == '/' ? strdup(rfile) : NULL;
                port = json_integer_value(json_object_get(start, "timeout_s"));
                t->ready_timeout_s = port > 0 && port <= 600 ? (unsigned)port : 0;
        }
        snprintf(t->parent, sizeof(t->parent), "%s", parent ? parent : "");
        t->created_unix_ms = (uint64_t)created;
        t->tenant = (int)tenant;
        return t;
bad:
        xb_warn("template file %s is not usable; ignored", path);
        template_free(t);
        return NULL;
}

static bool
layer_listed(struct xb_core *s, const char *name)
{
        for (struct xb_template *t = s->templates; t; t = t->next)
                for (size_t i = 0; i < t->nlayers; i++)
                        if (!strcmp(t->layers[i], name))
                                return true;
        return false;
}

static void
gc_layer(const char *name, void *data)
{
        struct xb_core *s = data;
        struct xb_err err = { 0 };

        if (layer_listed(s, name) || xb_inst_owns_layer(name) || !strncmp(name, "xi-", 3))
                return;   /* the install cache's (instcache.c) */
        if (xb_store_delete(s->eng->store, "layers", name, &err) < 0)
                xb_warn("layer %s: %s", name, err.msg);
        else
                s->m.layers_deleted++;
}

static void
gc_upper(const char *name, void *data)
{
        struct xb_core *s = data;

        /* A writable layer here at start-up is a crash's leftover, unless
         * its sandbox was armed to outlive the daemon (adopt.c decides). */
        if (!xb_adopt_armed_id(s, name))
                xb_store_delete(s->eng->store, "sbx", name, NULL);
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
        (void)st, (void)f;
        return flag == FTW_DP ? rmdir(path) : unlink(path);
}

/* The layouts of OCI imports a crash interrupted (ops/op_toci.c). */
static void
gc_imports(const char *state_dir)
{
        _cleanup_closedir_ DIR *d = opendir(state_dir);
        struct dirent *de;

        while (d && (de = readdir(d))) {
                char path[4400];

                if (strncmp(de->d_name, "oci-", 4) || de->d_type != DT_DIR)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", state_dir, de->d_name);
                nftw(path, rm_entry, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
        }
}

int
xb_templates_open(struct xb_core *s, struct xb_err *err)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        char path[4096];

        if (!s->eng->store || !s->o.state_dir)
                return 0;
        snprintf(path, sizeof(path), "%s/templates", s->o.state_dir);
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return xb_err_set(err, errno, "create %s", path);
        if (!(s->templates_dir = strdup(path)))
                return xb_err_set(err, ENOMEM, "templates");
        d = opendir(path);
        while (d && (de = readdir(d))) {
                size_t n = strlen(de->d_name);
                struct xb_template *t;

                if (n < 6 || strcmp(de->d_name + n - 5, ".json") || de->d_name[0] == '.')
                        continue;
                if ((t = load_one(s, de->d_name))) {
                        t->next = s->templates;
                        s->templates = t;
                }
        }
        gc_imports(s->o.state_dir);
        xb_store_list(s->eng->store, "sbx", gc_upper, s);
        xb_store_list(s->eng->store, "layers", gc_layer, s);
        return 0;
}

void
xb_templates_close(struct xb_core *s)
{
        while (s->templates) {
                struct xb_template *t = s->templates;

                s->templates = t->next;
                template_free(t);
        }
        free(s->templates_dir);
        s->templates_dir = NULL;
}

/* ---- snapshot ---- */

static uint64_t
unix_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int
check_layered(struct xb_sbx *x, struct xb_err *err)
{
        if (!x->core->eng->store || !x->core->templates_dir)
                return xb_err_code(err, XB_E_LAYERS_UNSUPPORTED, EOPNOTSUPP, NULL,
                                   "snapshots and forks need the disk layer store (serve --layers disk)");
        if (x->state != XB_SBX_READY || !x->sb || !x->sb->has_layer)
                return xb_err_code(err, XB_E_SANDBOX_BUSY, EBUSY, NULL, "the sandbox is not running");
        return 0;
}

/* Freeze x (unless paused already) around fn: the instant of the snapshots. */
static int
frozen(struct xb_sbx *x, int (*fn)(struct xb_sbx *x, void *arg, struct xb_err *err), void *arg, struct xb_err *err)
{
        bool was = x->paused;
        int r;

        if (!was && (r = xb_sandbox_freeze(x->sb, true)) < 0)
                return xb_err_set(err, -r, "freeze sandbox %s", x->id);
        r = fn(x, arg, err);
        if (!was)
                xb_sandbox_freeze(x->sb, false);
        return r;
}

struct snap {
        const char *layer;
};

static int
snap_one(struct xb_sbx *x, void *arg, struct xb_err *err)
{
        struct snap *sn = arg;

        return xb_store_snapshot(x->core->eng->store, x->id, "layers", sn->layer, true, 0, err);
}

int
xb_template_snapshot(struct xb_sbx *x, const char *name, struct xb_template **ret, struct xb_err *err)
{
        struct xb_core *s = x->core;
        struct xb_template *t;
        char layer[XB_SANDBOX_ID_LEN + 1];
        struct snap sn = { layer };
        uint64_t t0 = xb_mono_us();
        size_t nlow = 0;
        int r;

        if ((r = check_layered(x, err)) < 0 || (r = xb_template_name_check(name, err)) < 0)
                return r;
        if (find_any(s, name))
                return xb_err_code(err, XB_E_TEMPLATE_EXISTS, EEXIST, NULL, "a template `%s` exists already", name);
        for (char **l = x->lowers; l && *l; l++)
                nlow++;
        if (nlow + 1 > XB_LAYERS_MAX)
                return xb_err_code(err, XB_E_INVALID, E2BIG, NULL, "the sandbox has %zu layers, the most a template "
                                   "may have; snapshot a sandbox made from base", nlow);
        if (!(t = calloc(1, sizeof(*t))) || !(t->layers = calloc(nlow + 2, sizeof(char *))) ||
            xb_random_id(layer, sizeof(layer)) < 0) {
                template_free(t);
                return xb_err_set(err, ENOMEM, "template");
        }
        snprintf(t->name, sizeof(t->name), "%s", name);
        t->layers[0] = strdup(layer);
        for (size_t i = 0; i < nlow; i++)
                t->layers[i + 1] = strdup(x->lowers[i]);
        t->nlayers = nlow + 1;
        t->env = strv_dup(x->env, NULL);
        t->uid = x->uid;
        if (x->cwd)
                t->workdir = strdup(x->cwd);
        t->rootfs = x->own_root;
        t->tenant = x->tenant;
        t->created_unix_ms = unix_ms();
        snprintf(t->parent, sizeof(t->parent), "%s", x->id);
        for (size_t i = 0; i < t->nlayers; i++)
                if (!t->layers[i] || !t->env) {
                        template_free(t);
                        return xb_err_set(err, ENOMEM, "template");
                }
        if ((r = frozen(x, snap_one, &sn, err)) < 0) {
                template_free(t);
                return r;
        }
        if ((r = xb_template_save(s, t)) < 0) {
                xb_store_delete(s->eng->store, "layers", layer, NULL);
                template_free(t);
                return xb_err_set(err, -r, "save template %s", name);
        }
        t->next = s->templates;
        s->templates = t;
        s->m.snapshots++;
        s->m.layers_created++;
        xb_hist_observe(&s->m.snapshot_duration, xb_mono_us() - t0);
        *ret = t;
        return 0;
}

int
xb_template_create(struct xb_core *s, const char *name, int tenant, char *const *layers, bool rootfs,
                   struct xb_template **ret, struct xb_err *err)
{
        struct xb_template *t = calloc(1, sizeof(*t));
        int r;

        if (!t || !(t->layers = strv_dup(layers, &t->nlayers))) {
                free(t);
                return xb_err_set(err, ENOMEM, "template");
        }
        snprintf(t->name, sizeof(t->name), "%s", name);
        t->uid = XB_USER_UID;
        t->rootfs = rootfs;
        t->tenant = tenant;
        t->created_unix_ms = unix_ms();
        if ((r = xb_template_save(s, t)) < 0) {
                template_free(t);
                return xb_err_set(err, -r, "save template %s", name);
        }
        t->next = s->templates;
        s->templates = t;
        *ret = t;
        return 0;
}

int
xb_template_delete(struct xb_core *s, struct xb_template *t, struct xb_err *err)
{
        char path[4096];

        if (t->refs)
                return xb_err_code(err, XB_E_TEMPLATE_IN_USE, EBUSY, NULL,
                                   "template `%s` is used by %u sandbox(es); delete them first", t->name, t->refs);
        snprintf(path, sizeof(path), "%s/%s.json", s->templates_dir, t->name);
        if (unlink(path) < 0 && errno != ENOENT)
                return xb_err_set(err, errno, "delete template %s", t->name);
        for (struct xb_template **pp = &s->templates; *pp; pp = &(*pp)->next)
                if (*pp == t) {
                        *pp = t->next;
                        break;
                }
        /* Its layers go unless another template stacks on them. */
        for (size_t i = 0; i < t->nlayers; i++)
                if (!layer_listed(s, t->layers[i]))
                        gc_layer(t->layers[i], s);
        template_free(t);
        return 0;
}

int
xb_template_attach(struct xb_sbx *x, struct xb_template *t)
{
        char **l = strv_dup(t->layers, NULL);

        if (!l)
                return -ENOMEM;
        xb_strv_free(x->lowers);
        x->lowers = l;
        x->tmpl = t;
        t->refs++;
        free(x->cwd);
        x->cwd = t->workdir ? strdup(t->workdir) : NULL;
        x->own_root = t->rootfs;
        return 0;
}

void
xb_template_release(struct xb_sbx *x)
{
        if (x->tmpl) {
                x->tmpl->refs--;
                x->tmpl = NULL;
        }
}

/* ---- fork ---- */

struct fork_snaps {
        char (*names)[XB_SANDBOX_ID_LEN + 3];
        unsigned n, made;
};

static int
fork_snaps(struct xb_sbx *x, void *arg, struct xb_err *err)
{
        struct fork_snaps *f = arg;

        for (; f->made < f->n; f->made++) {
                int r = xb_store_snapshot(x->core->eng->store, x->id, "sbx", f->names[f->made], false, 0, err);

                if (r < 0)
                        return r;
        }
        return 0;
}

/* a, then b: a copy. */
static char **
strv_cat(char *const *a, char *const *b)
{
        size_t na = 0, nb = 0;
        char **d;

        for (; a && a[na]; na++)
                ;
        for (; b && b[nb]; nb++)
                ;
        d = calloc(na + nb + 1, sizeof(*d));
        for (size_t i = 0; d && i < na + nb; i++)
                if (!(d[i] = strdup(i < na ? a[i] : b[i - na]))) {
                        xb_strv_free(d);
                        return NULL;
                }
        return d;
}

int
xb_sbx_fork(struct xb_sbx *parent, const struct xb_fork_spec *spec, struct xb_sbx **ret, struct xb_err *err)
{
        struct xb_core *s = parent->core;
        unsigned n = spec->n;
        struct fork_snaps f = { .n = n };
        unsigned started = 0;
        uint64_t t0 = xb_mono_us();
        int r;

        if ((r = check_layered(parent, err)) < 0)
                return r;
        if (s->nsandboxes + n > s->o.max_sandboxes)
                return xb_err_code(err, XB_E_TOO_MANY_SANDBOXES, EAGAIN, NULL,
                                   "the server runs %u sandboxes and allows %u; delete some first", s->nsandboxes,
                                   s->o.max_sandboxes);
        f.names = calloc(n, sizeof(*f.names));
        if (!f.names)
                return xb_err_set(err, ENOMEM, "fork");
        for (unsigned i = 0; i < n; i++) {
                f.names[i][0] = 'f';
                f.names[i][1] = '-';
                xb_random_id(f.names[i] + 2, XB_SANDBOX_ID_LEN + 1);
        }
        if ((r = frozen(parent, fork_snaps, &f, err)) < 0)
                goto out;
        for (; started < n; started++) {
                struct xb_root_spec root = { .kind = XB_UPPER_DISK, .from = f.names[started], .adopt = true,
                                             .lowers = (const char *const *)parent->lowers, .user = parent->uid,
                                             .own_root = parent->own_root };
                char **env = strv_cat(parent->env, spec->env);
                struct xb_sbx *x;

                for (char **l = parent->lowers; l && *l; l++)
                        root.nlowers++;
                r = env ? xb_sbx_create_root(s, parent->tenant, spec->limits ? spec->limits : &parent->limits, NULL, 0,
                                             &root, env, spec->metadata ? spec->metadata : parent->metadata,
                                             spec->ttl_ms ? spec->ttl_ms : parent->ttl_ms, &x, err)
                        : xb_err_set(err, ENOMEM, "fork");
                if (r < 0) {
                        xb_strv_free(env);
                        break;
                }
                x->uid = parent->uid;
                x->own_root = parent->own_root;
                x->auto_pause = parent->auto_pause;
                x->paused_ttl_ms = parent->paused_ttl_ms;
                x->max_lifetime_ms = parent->max_lifetime_ms;
                xb_sbx_arm(x);
                /* The parent's egress policy, unless the request names one. */
                if ((r = xb_sbx_copy_network(x, parent, spec->network, err)) < 0) {
                        xb_sbx_destroy(x, XB_SBX_SETUP_FAILED, NULL);
                        break;
                }
                if (parent->tmpl && xb_template_attach(x, parent->tmpl) < 0) {
                        xb_sbx_destroy(x, XB_SBX_SETUP_FAILED, NULL);
                        r = xb_err_set(err, ENOMEM, "fork");
                        break;
                }
                ret[started] = x;
        }
        if (r < 0)
                for (unsigned i = 0; i < started; i++)
                        xb_sbx_destroy(ret[i], XB_SBX_SETUP_FAILED, "the fork failed");
        else {
                s->m.forks++;
                xb_hist_observe(&s->m.fork_duration, xb_mono_us() - t0);
        }
out:
        /* Snapshots no child adopted (adopting renames them away). */
        for (unsigned i = started; i < f.made; i++)
                xb_store_delete(s->eng->store, "sbx", f.names[i], NULL);
        free(f.names);
        return r < 0 ? r : 0;
}
