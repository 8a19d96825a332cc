/* The install cache's entries, keys and LRU bound (core/instcache.h); the
 * walk of a layer and the export are in instwalk.c. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "core/core.h"
#include "core/instcache.h"
#include "core/instcache_int.h"
#include "net/digest.h"
#include "proc/env.h"
#include "net/policy.h"
#include "sandbox/store.h"

static struct xb_instcache *
ic(const struct xb_core *s)
{
        return s->inst;
}

bool
xb_inst_owns_layer(const char *name)
{
        return !strncmp(name, "inst-", 5);
}

const struct xb_inst_stats *
xb_inst_stats(const struct xb_core *s)
{
        return ic(s) ? &ic(s)->st : NULL;
}

void
xb_inst_layer_name(const char *key, char out[XB_INST_LAYER_MAX])
{
        snprintf(out, XB_INST_LAYER_MAX, "inst-%.40s", key);
}

static bool
key_ok(const char *k)
{
        return strlen(k) == 64 && strspn(k, "0123456789abcdef") == 64;
}

/* ---- open: entries and layers agree ---- */

static void
drop_layer(const char *name, void *data)
{
        struct xb_core *s = data;
        struct xb_instcache *c = ic(s);
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        if (!strncmp(name, "xi-", 3)) {
                xb_store_delete(s->eng->store, "layers", name, NULL);
                return;
        }
        if (!xb_inst_owns_layer(name))
                return;
        /* An entry names its layer by the key's first 40 digits. */
        d = opendir(c->dir);
        while (d && (de = readdir(d)))
                if (key_ok(de->d_name) && !strncmp(de->d_name, name + 5, 40))
                        return;
        xb_store_delete(s->eng->store, "layers", name, NULL);
}

static bool
layer_exists(struct xb_core *s, const char *key)
{
        char name[XB_INST_LAYER_MAX];
        _cleanup_close_ int dir = -1, sub = -1;

        xb_inst_layer_name(key, name);
        dir = openat(s->eng->store->fd, "layers", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        sub = dir < 0 ? -1 : openat(dir, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        return sub >= 0;
}

static uint64_t
entry_bytes(struct xb_instcache *c, const char *key)
{
        char path[4400];
        json_t *j;
        uint64_t n;

        snprintf(path, sizeof(path), "%s/%s", c->dir, key);
        j = json_load_file(path, 0, NULL);
        n = (uint64_t)json_integer_value(json_object_get(j, "bytes"));
        json_decref(j);
        return n;
}

static void
recount(struct xb_instcache *c)
{
        _cleanup_closedir_ DIR *d = opendir(c->dir);
        struct dirent *de;

        c->st.entries = c->st.size = 0;
        while (d && (de = readdir(d)))
                if (key_ok(de->d_name)) {
                        c->st.entries++;
                        c->st.size += entry_bytes(c, de->d_name);
                }
}

int
xb_inst_open(struct xb_core *s, uint64_t max, struct xb_err *err)
{
        struct xb_instcache *c;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        char path[4400];

        if (!s->eng->store || !s->o.state_dir || !max)
                return 0;
        if (!(c = calloc(1, sizeof(*c))) || asprintf(&c->dir, "%s/install-cache", s->o.state_dir) < 0) {
                free(c);
                return xb_err_set(err, ENOMEM, "install cache");
        }
        if (mkdir(c->dir, 0700) < 0 && errno != EEXIST) {
                int r = xb_err_set(err, errno, "create %s", c->dir);

                free(c->dir);
                free(c);
                return r;
        }
        c->st.max = max;
        s->inst = c;
        /* Entries whose layer went (a store made anew) go too. */
        d = opendir(c->dir);
        while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                if (!key_ok(de->d_name) || !layer_exists(s, de->d_name)) {
                        snprintf(path, sizeof(path), "%s/%s", c->dir, de->d_name);
                        unlink(path);
                }
        }
        xb_store_list(s->eng->store, "layers", drop_layer, s);
        recount(c);
        return 0;
}

void
xb_inst_close(struct xb_core *s)
{
        if (!ic(s))
                return;
        free(ic(s)->dir);
        free(ic(s));
        s->inst = NULL;
}

/* ---- stage ---- */

int
xb_inst_stage(struct xb_sbx *x, char *snap, struct xb_err *err)
{
        bool was = x->paused;
        int r;

        if (!x->core->eng->store || !x->sb || !x->sb->has_layer)
                return xb_err_code(err, XB_E_LAYERS_UNSUPPORTED, EOPNOTSUPP, NULL,
                                   "installs need the disk layer store (serve --layers disk)");
        memcpy(snap, "xi-", 3);
        _Static_assert(3 + XB_SANDBOX_ID_LEN + 1 <= XB_INST_LAYER_MAX, "xi- and an id");
        if (xb_random_id(snap + 3, XB_SANDBOX_ID_LEN + 1) < 0)
                return xb_err_set(err, EIO, "random");
        if (!was && (r = xb_sandbox_freeze(x->sb, true)) < 0)
                return xb_err_set(err, -r, "freeze sandbox %s", x->id);
        r = xb_store_snapshot(x->core->eng->store, x->id, "layers", snap, true, 0, err);
        if (!was)
                xb_sandbox_freeze(x->sb, false);
        return r;
}

void
xb_inst_unstage(struct xb_core *s, const char *snap)
{
        if (snap && snap[0] && s->eng->store)
                xb_store_delete(s->eng->store, "layers", snap, NULL);
}

/* ---- key ---- */

/* A host file's bytes (or that it is missing) into h. */
static void
hash_file(struct xb_sha256 *h, const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        char buf[65536];
        ssize_t n;

        xb_sha256_str(h, path);
        if (fd < 0) {
                xb_sha256_str(h, "-");
                return;
        }
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                xb_sha256_add(h, buf, (size_t)n);
}

static int
cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every file of a host /etc/apt directory, by name. */
static void
hash_dir(struct xb_sha256 *h, const char *dir)
{
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *de;
        char *names[256];
        size_t n = 0;

        while (d && (de = readdir(d)) && n < 256)
                if (de->d_name[0] != '.')
                        names[n++] = strdup(de->d_name);
        qsort(names, n, sizeof(*names), cmp_str);
        for (size_t i = 0; i < n; i++) {
                char path[4400];

                if (names[i]) {
                        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                        hash_file(h, path);
                }
                free(names[i]);
        }
}

int
xb_inst_key(struct xb_sbx *x, const char *snap, char *const *pkgs, char key[XB_INST_KEY_HEX], bool *fresh_index,
            struct xb_err *err)
{
        struct xb_sha256 *h = xb_sha256_new(err);
        int r;

        if (!h)
                return -err->code;
        xb_sha256_str(h, "execbox-install-v1");
        xb_sha256_str(h, x->own_root ? "own-root" : "host-base");
        for (char **l = x->lowers; l && *l; l++)
                xb_sha256_str(h, *l);
        if (!x->own_root) {
                /* The host-derived lowers: what the host's dpkg has, how apt is set up. */
                hash_file(h, "/var/lib/dpkg/status");
                hash_file(h, "/etc/os-release");
                hash_file(h, "/etc/apt/sources.list");
                hash_dir(h, "/etc/apt/sources.list.d");
                hash_dir(h, "/etc/apt/apt.conf.d");
                hash_dir(h, "/etc/apt/preferences.d");
                hash_dir(h, "/etc/apt/trusted.gpg.d");
        }
        xb_sha256_str(h, "upper");
        if ((r = xb_inst_digest(x->core, snap, h, fresh_index, err)) < 0) {
                char junk[XB_SHA256_HEX];

                xb_sha256_end(h, junk);
                return r;
        }
        xb_sha256_str(h, "packages");
        for (char *const *p = pkgs; *p; p++)
                xb_sha256_str(h, *p);
        xb_sha256_end(h, key);
        return 0;
}

bool
xb_inst_lookup(struct xb_core *s, const char *key)
{
        struct xb_instcache *c = ic(s);
        char path[4400];
        json_t *j;
        bool ok, fresh;

        if (!c)
                return false;
        snprintf(path, sizeof(path), "%s/%s", c->dir, key);
        j = json_load_file(path, 0, NULL);
        fresh = json_is_true(json_object_get(j, "fresh_index"));
        ok = j && layer_exists(s, key) &&
             (!fresh || (uint64_t)json_integer_value(json_object_get(j, "created_unix_ms")) + XB_INST_INDEX_TTL_MS >
                                (uint64_t)time(NULL) * 1000);
        json_decref(j);
        if (ok) {
                utimensat(AT_FDCWD, path, NULL, 0);
                c->st.hits++;
        } else {
                c->st.misses++;
        }
        return ok;
}

/* ---- the builder and the capture ---- */

int
xb_inst_builder(struct xb_sbx *x, const char *snap, struct xb_sbx **ret, struct xb_err *err)
{
        struct xb_core *s = x->core;
        size_t n = 0;
        const char **lowers;
        struct xb_netpol *pol = xb_netpol_new(XB_NET_PACKAGES);
        char **env = NULL;
        struct xb_sbx *b;
        int r;

        for (char **l = x->lowers; l && *l; l++)
                n++;
        if (n + 1 > XB_LAYERS_MAX) {
                xb_netpol_unref(pol);
                return xb_err_code(err, XB_E_INVALID, E2BIG, NULL, "the sandbox has %zu layers, the most there may be",
                                   n);
        }
        lowers = calloc(n + 2, sizeof(*lowers));
        env = calloc(1, sizeof(*env));
        if (!lowers || !pol || !env) {
                free(lowers);
                free(env);
                xb_netpol_unref(pol);
                return xb_err_set(err, ENOMEM, "install");
        }
        if ((r = xb_core_network_check(s, pol, err)) < 0) {
                free(lowers);
                free(env);
                xb_netpol_unref(pol);
                return r;
        }
        lowers[0] = snap;
        for (size_t i = 0; i < n; i++)
                lowers[i + 1] = x->lowers[i];
        {
                struct xb_root_spec root = { .kind = XB_UPPER_DISK, .lowers = lowers, .nlowers = n + 1, .user = 0,
                                             .own_root = x->own_root };
                json_t *meta = json_pack("{s:s,s:s}", "execbox", "install builder", "for", x->id);

                r = xb_sbx_create_root(s, x->tenant, &x->limits, NULL, 0, &root, env, meta, 3600 * 1000, &b, err);
                json_decref(meta);
        }
        free(lowers);
        if (r < 0) {
                xb_strv_free(env);
                xb_netpol_unref(pol);
                return r;
        }
        b->uid = 0;
        b->own_root = x->own_root;
        /* No client may reach it: what it captures is shared with every tenant. */
        b->sealed = true;
        if ((r = xb_sbx_set_network(b, pol, err)) < 0) {
                xb_netpol_unref(pol);
                xb_sbx_destroy(b, XB_SBX_SETUP_FAILED, NULL);
                return r;
        }
        xb_netpol_unref(pol);
        *ret = b;
        return 0;
}

/* Drop the least recently used entries until the total fits (keep: the new one). */
static void
evict(struct xb_core *s, const char *keep)
{
        struct xb_instcache *c = ic(s);

        recount(c);
        while (c->st.size > c->st.max && c->st.entries > 1) {
                _cleanup_closedir_ DIR *d = opendir(c->dir);
                struct dirent *de;
                char oldest[XB_INST_KEY_HEX] = "", path[4400], layer[XB_INST_LAYER_MAX];
                struct timespec t = { 0 };
                struct stat st;

                while (d && (de = readdir(d))) {
                        if (!key_ok(de->d_name) || !strcmp(de->d_name, keep) || xb_inst_busy(c, de->d_name))
                                continue;
                        snprintf(path, sizeof(path), "%s/%s", c->dir, de->d_name);
                        if (stat(path, &st) == 0 &&
                            (!oldest[0] || st.st_mtim.tv_sec < t.tv_sec ||
                             (st.st_mtim.tv_sec == t.tv_sec && st.st_mtim.tv_nsec < t.tv_nsec))) {
                                t = st.st_mtim;
                                snprintf(oldest, sizeof(oldest), "%s", de->d_name);
                        }
                }
                if (!oldest[0])
                        break;
                snprintf(path, sizeof(path), "%s/%s", c->dir, oldest);
                unlink(path);
                xb_inst_layer_name(oldest, layer);
                xb_store_delete(s->eng->store, "layers", layer, NULL);
                c->st.evictions++;
                recount(c);
        }
}

int
xb_inst_capture(struct xb_sbx *b, const char *key, char *const *pkgs, bool fresh_index, struct xb_err *err)
{
        struct xb_core *s = b->core;
        struct xb_instcache *c = ic(s);
        char layer[XB_INST_LAYER_MAX], path[4400], tmp[4500];
        uint64_t bytes = 0;
        json_t *j, *list;
        int r;

        if (!c)
                return xb_err_code(err, XB_E_LAYERS_UNSUPPORTED, EOPNOTSUPP, NULL, "no install cache");
        xb_inst_layer_name(key, layer);
        /* One a concurrent install of the same key made is as good (and may
         * be being applied): it stays. */
        if (!layer_exists(s, key)) {
                if ((r = xb_sandbox_freeze(b->sb, true)) < 0)
                        return xb_err_set(err, -r, "freeze the builder");
                r = xb_store_snapshot(s->eng->store, b->id, "layers", layer, true, 0, err);
                xb_sandbox_freeze(b->sb, false);
                if (r < 0)
                        return r;
        }
        if ((r = xb_inst_layer_bytes(s, layer, &bytes, err)) < 0) {
                xb_store_delete(s->eng->store, "layers", layer, NULL);
                return r;
        }
        list = json_array();
        for (char *const *p = pkgs; *p; p++)
                json_array_append_new(list, json_string(*p));
        j = json_pack("{s:o,s:I,s:I,s:b}", "packages", list, "bytes", (json_int_t)bytes, "created_unix_ms",
                      (json_int_t)time(NULL) * 1000, "fresh_index", fresh_index);
        snprintf(path, sizeof(path), "%s/%s", c->dir, key);
        snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", c->dir, key);
        if (!j || json_dump_file(j, tmp, JSON_COMPACT) < 0 || rename(tmp, path) < 0) {
                json_decref(j);
                unlink(tmp);
                xb_store_delete(s->eng->store, "layers", layer, NULL);
                return xb_err_set(err, EIO, "save the install cache's entry");
        }
        json_decref(j);
        c->st.bytes_stored += bytes;
        evict(s, key);
        return 0;
}
