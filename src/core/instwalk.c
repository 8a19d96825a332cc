/* The install cache's walks of a layer (its digest, its size, what an
 * apply removes) and its export as a tar stream.
 *
 * Every layer walked here is a read-only btrfs snapshot: nothing changes
 * it while we read. Each entry is opened relative to its directory's fd
 * with O_NOFOLLOW (directories with O_DIRECTORY too) and never by a path,
 * so a symlink a sandbox left is read as a link, never followed. The
 * host's GNU tar reads the same snapshot (it archives links as links);
 * its member list is ours (--no-recursion), without whiteouts, devices,
 * fifos and sockets. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "core/core.h"
#include "core/instcache_int.h"
#include "net/digest.h"
#include "proc/env.h"
#include "sandbox/store.h"

#define DEPTH_MAX 128
#define TAR "/usr/bin/tar"

struct walk {
        struct xb_sha256 *h;          /* NULL: no digest */
        uint64_t bytes;
        bool lists;                   /* saw a file under var/lib/apt/lists */
        int listfd;                   /* -1, or tar's member list (NUL-separated) */
        char **rm;                    /* paths an apply removes first */
        size_t nrm;
        int err;
};

bool
xb_inst_busy(const struct xb_instcache *c, const char *key)
{
        for (int i = 0; i < XB_INST_BUSY_MAX; i++)
                if (!strcmp(c->busy[i], key))
                        return true;
        return false;
}

/* "usr/bin/x" (the store's part, then the path) as the sandbox sees it, relative to /. */
static char *
inside(const char *rel)
{
        char *s = NULL;

        if (!strncmp(rel, "root/", 5))
                return strdup(rel + 5);
        if (!strncmp(rel, "dpkg/", 5))
                return asprintf(&s, "var/lib/dpkg/%s", rel + 5) < 0 ? NULL : s;
        return strdup(rel);
}

static void
add_rm(struct walk *w, const char *rel)
{
        char **n;

        if (w->nrm >= XB_INST_REMOVALS_MAX) {
                w->err = E2BIG;
                return;
        }
        if (!(n = realloc(w->rm, (w->nrm + 2) * sizeof(*n))) || !(n[w->nrm] = inside(rel))) {
                w->rm = n ? n : w->rm;
                w->err = ENOMEM;
                return;
        }
        w->rm = n;
        n[++w->nrm] = NULL;
}

static void
add_member(struct walk *w, const char *rel)
{
        if (w->listfd >= 0 && write(w->listfd, rel, strlen(rel) + 1) < 0)
                w->err = errno;
}

static void
meta(struct walk *w, const char *rel, char kind, const struct stat *st)
{
        char b[160];

        if (!w->h)
                return;
        xb_sha256_str(w->h, rel);
        snprintf(b, sizeof(b), "%c %o %u %u %llu %llx", kind, (unsigned)st->st_mode, (unsigned)st->st_uid,
                 (unsigned)st->st_gid, (unsigned long long)st->st_size, (unsigned long long)st->st_rdev);
        xb_sha256_str(w->h, b);
}

static int
cmp_name(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static void walk_dir(struct walk *w, int dfd, char *rel, size_t len, int depth);

static void
walk_entry(struct walk *w, int dfd, const char *name, char *rel, size_t len, int depth)
{
        size_t n = strlen(name);
        struct stat st;
        char v[8];

        if (len + 1 + n + 1 > 4096) {
                w->err = ENAMETOOLONG;
                return;
        }
        rel[len] = '/';
        memcpy(rel + len + 1, name, n + 1);
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                w->err = errno;
                return;
        }
        if (!strncmp(rel, "root/var/lib/apt/lists/", 23) && !S_ISDIR(st.st_mode))
                w->lists = true;
        if (S_ISCHR(st.st_mode) && st.st_rdev == 0) {
                meta(w, rel, 'w', &st);   /* an overlay whiteout: a removal */
                add_rm(w, rel);
        } else if (S_ISREG(st.st_mode)) {
                _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                char buf[65536];
                ssize_t k;

                if (fd < 0) {
                        w->err = errno;
                        return;
                }
                if (fgetxattr(fd, "user.overlay.whiteout", v, sizeof(v)) >= 0) {
                        meta(w, rel, 'w', &st);
                        add_rm(w, rel);
                        return;
                }
                meta(w, rel, 'f', &st);
                w->bytes += (uint64_t)st.st_size;
                add_member(w, rel);
                while (w->h && (k = read(fd, buf, sizeof(buf))) > 0)
                        xb_sha256_add(w->h, buf, (size_t)k);
        } else if (S_ISLNK(st.st_mode)) {
                char target[4097];
                ssize_t k = readlinkat(dfd, name, target, sizeof(target) - 1);

                if (k < 0) {
                        w->err = errno;
                        return;
                }
                target[k] = 0;
                meta(w, rel, 'l', &st);
                if (w->h)
                        xb_sha256_str(w->h, target);
                add_member(w, rel);
        } else if (S_ISDIR(st.st_mode)) {
                _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                ssize_t k;

                if (fd < 0) {
                        w->err = errno;
                        return;
                }
                k = fgetxattr(fd, "user.overlay.opaque", v, sizeof(v));
                meta(w, rel, k > 0 && v[0] == 'y' ? 'o' : 'd', &st);
                if (k > 0 && v[0] == 'y')
                        add_rm(w, rel);   /* replaces what the lowers have there */
                add_member(w, rel);
                walk_dir(w, fd, rel, len + 1 + n, depth + 1);
        } else {
                meta(w, rel, 'x', &st);   /* devices, fifos, sockets: not carried over */
        }
        rel[len] = 0;
}

static void
walk_dir(struct walk *w, int dfd, char *rel, size_t len, int depth)
{
        int dup_fd;
        DIR *d;
        struct dirent *de;
        char **names = NULL;
        size_t n = 0, cap = 0;

        if (depth > DEPTH_MAX) {
                w->err = ELOOP;
                return;
        }
        if ((dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3)) < 0 || !(d = fdopendir(dup_fd))) {
                if (dup_fd >= 0)
                        close(dup_fd);
                w->err = errno;
                return;
        }
        while ((de = readdir(d))) {
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                        continue;
                if (n == cap) {
                        char **m = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*m));

                        if (!m) {
                                w->err = ENOMEM;
                                break;
                        }
                        names = m;
                }
                if (!(names[n] = strdup(de->d_name))) {
                        w->err = ENOMEM;
                        break;
                }
                n++;
        }
        closedir(d);
        qsort(names, n, sizeof(*names), cmp_name);
        for (size_t i = 0; i < n; i++) {
                if (!w->err)
                        walk_entry(w, dfd, names[i], rel, len, depth);
                free(names[i]);
        }
        free(names);
        rel[len] = 0;
}

/* Walk the four upper parts of layers/<layer>. */
static int
walk_layer(struct xb_core *s, const char *layer, struct walk *w, struct xb_err *err)
{
        _cleanup_close_ int dir = -1, sub = -1, up = -1;
        char rel[4096];

        dir = openat(s->eng->store->fd, "layers", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        sub = dir < 0 ? -1 : openat(dir, layer, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        up = sub < 0 ? -1 : openat(sub, "up", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (up < 0)
                return xb_err_set(err, errno, "open the layer %s", layer);
        for (size_t i = 0; i < XB_LAYER_PARTS && !w->err; i++) {
                _cleanup_close_ int part = openat(up, xb_layer_parts[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);

                if (part < 0)
                        continue;
                if (w->h)
                        xb_sha256_str(w->h, xb_layer_parts[i]);
                snprintf(rel, sizeof(rel), "%s", xb_layer_parts[i]);
                walk_dir(w, part, rel, strlen(rel), 0);
        }
        if (w->err)
                return xb_err_set(err, w->err, "read the layer %s", layer);
        return 0;
}

int
xb_inst_digest(struct xb_core *s, const char *layer, struct xb_sha256 *h, bool *fresh_index, struct xb_err *err)
{
        struct walk w = { .h = h, .listfd = -1 };
        int r = walk_layer(s, layer, &w, err);

        xb_strv_free(w.rm);
        *fresh_index = !w.lists;
        return r;
}

int
xb_inst_layer_bytes(struct xb_core *s, const char *layer, uint64_t *ret, struct xb_err *err)
{
        struct walk w = { .listfd = -1 };
        int r = walk_layer(s, layer, &w, err);

        xb_strv_free(w.rm);
        *ret = w.bytes;
        return r;
}

static void
busy_set(struct xb_instcache *c, const char *key, bool on)
{
        for (int i = 0; i < XB_INST_BUSY_MAX; i++)
                if (on ? !c->busy[i][0] : !strcmp(c->busy[i], key)) {
                        snprintf(c->busy[i], sizeof(c->busy[i]), "%s", on ? key : "");
                        return;
                }
}

int
xb_inst_export(struct xb_core *s, const char *key, bool tar, int *ret_fd, int *ret_pidfd, char ***ret_removals,
               uint64_t *ret_bytes, struct xb_err *err)
{
        char layer[XB_INST_LAYER_MAX], dir[4400];
        _cleanup_close_ int listfd = tar ? memfd_create("xb-install-list", MFD_CLOEXEC) : -1;
        struct walk w = { .listfd = listfd };
        posix_spawn_file_actions_t fa;
        char *argv[] = { (char *)TAR,
                         (char *)"--create",
                         (char *)"--file=-",
                         (char *)"--format=posix",
                         (char *)"--numeric-owner",
                         (char *)"--no-recursion",
                         (char *)"--null",
                         /* The parts as the sandbox mounts them; link targets stay. */
                         (char *)"--transform=s,^dpkg/,var/lib/dpkg/,S",
                         (char *)"--transform=s,^root/,,S",
                         dir,
                         (char *)"--files-from=/dev/fd/3",
                         NULL };
        char *envp[] = { (char *)"PATH=/usr/bin:/bin", (char *)"LC_ALL=C", NULL };
        int p[2], r, pidfd;
        pid_t pid;

        if (!s->inst)
                return xb_err_code(err, XB_E_LAYERS_UNSUPPORTED, EOPNOTSUPP, NULL, "no install cache");
        if (tar && listfd < 0)
                return xb_err_set(err, errno, "memfd");
        xb_inst_layer_name(key, layer);
        if ((r = walk_layer(s, layer, &w, err)) < 0) {
                xb_strv_free(w.rm);
                return r;
        }
        if (!tar) {
                if (!w.rm && !(w.rm = calloc(1, sizeof(char *))))
                        return xb_err_set(err, ENOMEM, "install");
                busy_set(s->inst, key, true);
                *ret_fd = *ret_pidfd = -1;
                *ret_removals = w.rm;
                *ret_bytes = w.bytes;
                return 0;
        }
        if (lseek(listfd, 0, SEEK_SET) < 0 || pipe2(p, O_CLOEXEC) < 0) {
                xb_strv_free(w.rm);
                return xb_err_set(err, errno, "pipe");
        }
        snprintf(dir, sizeof(dir), "--directory=%s/layers/%s/up", s->eng->store->path, layer);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, p[1], 1);
        posix_spawn_file_actions_adddup2(&fa, listfd, 3);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        r = posix_spawn(&pid, TAR, &fa, NULL, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        close(p[1]);
        if (r) {
                close(p[0]);
                xb_strv_free(w.rm);
                return xb_err_set(err, r, "run %s", TAR);
        }
        if ((pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) < 0) {
                r = xb_err_set(err, errno, "pidfd");
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                close(p[0]);
                xb_strv_free(w.rm);
                return r;
        }
        if (!w.rm && !(w.rm = calloc(1, sizeof(char *)))) {
                close(p[0]);
                kill(pid, SIGKILL);
                xb_inst_export_end(s, "", pidfd, false, 0);
                return xb_err_set(err, ENOMEM, "install");
        }
        busy_set(s->inst, key, true);
        *ret_fd = p[0];
        *ret_pidfd = pidfd;
        *ret_removals = w.rm;
        *ret_bytes = w.bytes;
        return 0;
}

int
xb_inst_export_end(struct xb_core *s, const char *key, int pidfd, bool ok, uint64_t bytes)
{
        struct pollfd pf = { .fd = pidfd, .events = POLLIN };
        siginfo_t si = { 0 };
        int r;

        if (pidfd < 0) {   /* no tar: a copy from the view */
                if (s->inst && key[0])
                        busy_set(s->inst, key, false);
                if (ok && s->inst)
                        s->inst->st.bytes_applied += bytes;
                return 0;
        }
        /* The unpacker has read all it will: tar ends now (EPIPE at worst). */
        if (poll(&pf, 1, 5000) <= 0)
                syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        do
                r = waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED);
        while (r < 0 && errno == EINTR);
        close(pidfd);
        if (s->inst && key[0])
                busy_set(s->inst, key, false);
        if (r < 0 || si.si_code != CLD_EXITED || si.si_status != 0)
                return -EIO;
        if (ok && s->inst)
                s->inst->st.bytes_applied += bytes;
        return 0;
}
