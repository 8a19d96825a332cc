/* The package cache's store (pkgcache.h). The index is also held in
 * memory (an array: thousands of entries at most, scanned linearly), read
 * back from DIR/index at open. SHA-256 is GnuTLS's, found with dlopen(3)
 * where libmicrohttpd has loaded it already (as transport/sign.c does). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/loop.h"
#include "net/pkgcache.h"

#ifndef XB_GNUTLS_SONAME
#define XB_GNUTLS_SONAME "libgnutls.so.30"
#endif

#define HEX 65

struct entry {
        char key[HEX];                /* sha256(url) */
        char obj[HEX];                /* sha256(bytes) */
        uint64_t size, used;
};

struct xb_pkgcache {
        char *dir;
        struct entry *e;
        size_t n, cap;
        struct xb_pkgcache_stats st;
};

struct xb_pkgfill {
        struct xb_pkgcache *pc;
        char *url;
        char tmp[4096];
        int fd;
        gnutls_hash_hd_t h;
        uint64_t len, checked;        /* checked: len at the last free-space check */
        bool bad;
};

static struct {
        __typeof__(&gnutls_hash_fast) fast;
        __typeof__(&gnutls_hash_init) init;
        __typeof__(&gnutls_hash) hash;
        __typeof__(&gnutls_hash_deinit) deinit;
} gt;

static int
load_gnutls(struct xb_err *err)
{
        void *h;

        if (gt.fast)
                return 0;
        h = dlopen(XB_GNUTLS_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h || !(*(void **)&gt.init = dlsym(h, "gnutls_hash_init")) ||
            !(*(void **)&gt.hash = dlsym(h, "gnutls_hash")) ||
            !(*(void **)&gt.deinit = dlsym(h, "gnutls_hash_deinit")) ||
            !(*(void **)&gt.fast = dlsym(h, "gnutls_hash_fast")))
                return xb_err_msg(err, ENOENT, "the package cache needs GnuTLS's SHA-256 (%s)", XB_GNUTLS_SONAME);
        return 0;
}

static void
hex(const uint8_t d[32], char out[HEX])
{
        for (int i = 0; i < 32; i++)
                sprintf(out + 2 * i, "%02x", d[i]);
}

static void
url_key(const char *url, char out[HEX])
{
        uint8_t d[32];

        gt.fast(GNUTLS_DIG_SHA256, url, strlen(url), d);
        hex(d, out);
}

static void
path_of(const struct xb_pkgcache *pc, const char *sub, const char *name, char *out, size_t len)
{
        snprintf(out, len, "%s/%s/%s", pc->dir, sub, name);
}

static bool
obj_shared(const struct xb_pkgcache *pc, const char *obj, size_t except)
{
        for (size_t i = 0; i < pc->n; i++)
                if (i != except && !strcmp(pc->e[i].obj, obj))
                        return true;
        return false;
}

static void
drop(struct xb_pkgcache *pc, size_t i)
{
        char p[4096];

        path_of(pc, "index", pc->e[i].key, p, sizeof(p));
        unlink(p);
        if (!obj_shared(pc, pc->e[i].obj, i)) {
                path_of(pc, "objects", pc->e[i].obj, p, sizeof(p));
                unlink(p);
                pc->st.size -= pc->e[i].size;
        }
        pc->e[i] = pc->e[--pc->n];
        pc->st.entries = pc->n;
}

/* The least recently used go until the store fits max. */
static void
evict(struct xb_pkgcache *pc, uint64_t max)
{
        while (pc->st.size > max && pc->n) {
                size_t old = 0;

                for (size_t i = 1; i < pc->n; i++)
                        if (pc->e[i].used < pc->e[old].used)
                                old = i;
                drop(pc, old);
                pc->st.evictions++;
        }
}

static ssize_t
find(const struct xb_pkgcache *pc, const char *key)
{
        for (size_t i = 0; i < pc->n; i++)
                if (!strcmp(pc->e[i].key, key))
                        return (ssize_t)i;
        return -1;
}

static int
add(struct xb_pkgcache *pc, const struct entry *e)
{
        ssize_t i = find(pc, e->key);

        if (i >= 0) {   /* the same URL again (two fills at once): the newer wins */
                struct entry old = pc->e[i];

                pc->e[i] = pc->e[--pc->n];
                if (!obj_shared(pc, old.obj, SIZE_MAX)) {
                        pc->st.size -= old.size;
                        if (strcmp(old.obj, e->obj)) {
                                char p[4096];

                                path_of(pc, "objects", old.obj, p, sizeof(p));
                                unlink(p);
                        }
                }
        }
        if (pc->n == pc->cap) {
                size_t cap = pc->cap ? pc->cap * 2 : 256;
                struct entry *ne = reallocarray(pc->e, cap, sizeof(*ne));

                if (!ne)
                        return -ENOMEM;
                pc->e = ne;
                pc->cap = cap;
        }
        if (!obj_shared(pc, e->obj, SIZE_MAX))
                pc->st.size += e->size;
        pc->e[pc->n++] = *e;
        pc->st.entries = pc->n;
        return 0;
}

static bool
is_hex(const char *s)
{
        return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

static void
load_index(struct xb_pkgcache *pc)
{
        char p[4096];
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        snprintf(p, sizeof(p), "%s/index", pc->dir);
        d = opendir(p);
        while (d && (de = readdir(d))) {
                struct entry e = { 0 };
                char line[256], obj[HEX + 1];
                unsigned long long size;
                struct stat st, ost;
                FILE *f;
                bool ok = false;

                if (!is_hex(de->d_name))
                        continue;
                path_of(pc, "index", de->d_name, p, sizeof(p));
                f = fopen(p, "re");
                if (f && fgets(line, sizeof(line), f) && sscanf(line, "xbpkg1 %64s %llu", obj, &size) == 2 &&
                    is_hex(obj) && fstat(fileno(f), &st) == 0) {
                        char op[4096];

                        path_of(pc, "objects", obj, op, sizeof(op));
                        ok = stat(op, &ost) == 0 && (uint64_t)ost.st_size == size;
                        snprintf(e.key, sizeof(e.key), "%s", de->d_name);
                        snprintf(e.obj, sizeof(e.obj), "%s", obj);
                        e.size = size;
                        e.used = (uint64_t)st.st_mtim.tv_sec * 1000 + (uint64_t)st.st_mtim.tv_nsec / 1000000;
                }
                if (f)
                        fclose(f);
                if (!ok || add(pc, &e) < 0)
                        unlink(p);
        }
}

/* Objects no entry names, and leftover fills, go. */
static void
sweep(struct xb_pkgcache *pc, const char *sub)
{
        char p[4096];
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        snprintf(p, sizeof(p), "%s/%s", pc->dir, sub);
        d = opendir(p);
        while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                if (!strcmp(sub, "objects") && is_hex(de->d_name) && obj_shared(pc, de->d_name, SIZE_MAX))
                        continue;
                path_of(pc, sub, de->d_name, p, sizeof(p));
                unlink(p);
        }
}

int
xb_pkgcache_open(const char *dir, uint64_t max, struct xb_pkgcache **ret, struct xb_err *err)
{
        struct xb_pkgcache *pc;
        char p[4096];
        int r = load_gnutls(err);

        if (r < 0)
                return r;
        pc = calloc(1, sizeof(*pc));
        if (!pc || !(pc->dir = strdup(dir))) {
                free(pc);
                return xb_err_set(err, ENOMEM, "package cache");
        }
        pc->st.max = max;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
                r = xb_err_set(err, errno, "create the package cache %s", dir);
                xb_pkgcache_close(pc);
                return r;
        }
        for (const char *const *s = (const char *const[]){ "objects", "index", "tmp", NULL }; *s; s++) {
                snprintf(p, sizeof(p), "%s/%s", dir, *s);
                if (mkdir(p, 0700) < 0 && errno != EEXIST) {
                        r = xb_err_set(err, errno, "create %s", p);
                        xb_pkgcache_close(pc);
                        return r;
                }
        }
        load_index(pc);
        sweep(pc, "objects");
        sweep(pc, "tmp");
        evict(pc, max);
        *ret = pc;
        return 0;
}

void
xb_pkgcache_close(struct xb_pkgcache *pc)
{
        if (!pc)
                return;
        free(pc->e);
        free(pc->dir);
        free(pc);
}

const struct xb_pkgcache_stats *
xb_pkgcache_stats(const struct xb_pkgcache *pc)
{
        return &pc->st;
}

int
xb_pkgcache_lookup(struct xb_pkgcache *pc, const char *url, uint64_t *size)
{
        char key[HEX], p[4096];
        ssize_t i;
        struct stat st;
        int fd;

        url_key(url, key);
        i = find(pc, key);
        if (i < 0)
                return -ENOENT;
        path_of(pc, "objects", pc->e[i].obj, p, sizeof(p));
        fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || fstat(fd, &st) < 0 || (uint64_t)st.st_size != pc->e[i].size) {
                /* Gone or changed under us: forget it. */
                if (fd >= 0)
                        close(fd);
                drop(pc, (size_t)i);
                return -ENOENT;
        }
        pc->e[i].used = xb_now_ms();
        path_of(pc, "index", key, p, sizeof(p));
        utimensat(AT_FDCWD, p, NULL, 0);
        pc->st.hits++;
        *size = pc->e[i].size;
        return fd;
}

void
xb_pkgcache_count_miss(struct xb_pkgcache *pc)
{
        pc->st.misses++;
}

void
xb_pkgcache_served(struct xb_pkgcache *pc, uint64_t bytes)
{
        pc->st.bytes_served += bytes;
}

struct xb_pkgfill *
xb_pkgfill_begin(struct xb_pkgcache *pc, const char *url)
{
        struct xb_pkgfill *f = calloc(1, sizeof(*f));
        uint64_t rnd;

        if (!f)
                return NULL;
        f->pc = pc;
        f->url = strdup(url);
        if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
                rnd = xb_now_ms() ^ (uint64_t)(uintptr_t)f;
        snprintf(f->tmp, sizeof(f->tmp), "%s/tmp/%016llx", pc->dir, (unsigned long long)rnd);
        f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (!f->url || f->fd < 0 || gt.init(&f->h, GNUTLS_DIG_SHA256) < 0) {
                if (f->fd >= 0) {
                        close(f->fd);
                        unlink(f->tmp);
                }
                free(f->url);
                free(f);
                return NULL;
        }
        return f;
}

int
xb_pkgfill_write(struct xb_pkgfill *f, const void *p, size_t n)
{
        const char *b = p;

        if (f->bad)
                return -EIO;
        if (f->len + n > f->pc->st.max) {   /* it could never be kept */
                f->bad = true;
                return -EFBIG;
        }
        /* The cache never takes the state directory's last free space
         * (its records and token, and sandboxes' layers, need it): below
         * XB_PKGCACHE_FREE_MIN the fill is dropped (the sandbox still gets
         * its bytes). Checked every MiB. */
        if (f->len + n - f->checked >= (1u << 20) || !f->checked) {
                struct statvfs sv;

                f->checked = f->len + n;
                if (fstatvfs(f->fd, &sv) == 0 && (uint64_t)sv.f_bavail * sv.f_frsize < XB_PKGCACHE_FREE_MIN + n) {
                        f->bad = true;
                        return -ENOSPC;
                }
        }
        gt.hash(f->h, p, n);
        f->len += n;
        while (n) {
                ssize_t w = write(f->fd, b, n);

                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        f->bad = true;
                        return -errno;
                }
                b += w;
                n -= (size_t)w;
        }
        return 0;
}

static void
fill_free(struct xb_pkgfill *f, bool keep_tmp)
{
        uint8_t d[32];

        gt.deinit(f->h, d);
        if (f->fd >= 0)
                close(f->fd);
        if (!keep_tmp)
                unlink(f->tmp);
        free(f->url);
        free(f);
}

void
xb_pkgfill_abort(struct xb_pkgfill *f)
{
        if (f)
                fill_free(f, false);
}

int
xb_pkgfill_commit(struct xb_pkgfill *f, uint64_t expect)
{
        struct xb_pkgcache *pc = f->pc;
        struct entry e = { 0 };
        uint8_t d[32];
        char obj[4096], idx[4096], itmp[4096 + 8];
        FILE *o;
        int r;

        if (f->bad || (expect != UINT64_MAX && f->len != expect) || fdatasync(f->fd) < 0) {
                fill_free(f, false);
                return -EIO;
        }
        gt.deinit(f->h, d);
        f->h = NULL;
        hex(d, e.obj);
        url_key(f->url, e.key);
        e.size = f->len;
        e.used = xb_now_ms();
        close(f->fd);
        f->fd = -1;
        path_of(pc, "objects", e.obj, obj, sizeof(obj));
        path_of(pc, "index", e.key, idx, sizeof(idx));
        snprintf(itmp, sizeof(itmp), "%s.i", f->tmp);
        if (rename(f->tmp, obj) < 0) {
                r = -errno;
                goto fail;
        }
        o = fopen(itmp, "wxe");
        if (!o) {
                r = -errno;
                goto fail;
        }
        fprintf(o, "xbpkg1 %s %llu\n%s\n", e.obj, (unsigned long long)e.size, f->url);
        if (fflush(o) != 0 || fdatasync(fileno(o)) < 0) {
                fclose(o);
                unlink(itmp);
                r = -EIO;
                goto fail;
        }
        fclose(o);
        if (rename(itmp, idx) < 0) {
                r = -errno;
                unlink(itmp);
                goto fail;
        }
        if ((r = add(pc, &e)) < 0)
                goto fail;
        pc->st.bytes_stored += e.size;
        /* The newest entry is never the one evicted for itself. */
        e.used = UINT64_MAX;
        pc->e[pc->n - 1].used = UINT64_MAX;
        evict(pc, pc->st.max);
        {
                ssize_t i = find(pc, e.key);

                if (i >= 0)
                        pc->e[i].used = xb_now_ms();
        }
        free(f->url);
        free(f);
        return 0;
fail:
        unlink(f->tmp);
        if (!obj_shared(pc, e.obj, SIZE_MAX))
                unlink(obj);
        free(f->url);
        free(f);
        return r;
}
