/* Layered roots: the base skeleton, the overlay options, the id-mapped
 * mounts (daemon side) and entering the root overlay (setup child). */
#define _GNU_SOURCE
#include "layers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/mount.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "sandbox/store.h"

#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif

/* The base root: what / shows besides the overlays mounted on it. */
struct skel {
        const char *path;
        mode_t mode;      /* 0: a symlink to target */
        const char *target;
        bool user;        /* owned by the sandbox user */
};

/* clang-format off */
static const struct skel skeleton[] = {
        { "usr", 0755, NULL, false }, { "etc", 0755, NULL, false }, { "proc", 0555, NULL, false },
        { "dev", 0755, NULL, false }, { "tmp", 01777, NULL, false }, { "root", 0700, NULL, false },
        { "home", 0755, NULL, false }, { "home/user", 0755, NULL, true }, { "opt", 0755, NULL, false },
        { "mnt", 0755, NULL, false }, { "srv", 0755, NULL, false }, { "run", 0755, NULL, false },
        { "run/lock", 01777, NULL, false }, { "var", 0755, NULL, false }, { "var/lib", 0755, NULL, false },
        { "var/lib/dpkg", 0755, NULL, false }, { "var/lib/apt", 0755, NULL, false },
        { "var/lib/apt/lists", 0755, NULL, false }, { "var/lib/apt/lists/partial", 0700, NULL, false },
        { "var/cache", 0755, NULL, false }, { "var/cache/apt", 0755, NULL, false },
        { "var/cache/apt/archives", 0755, NULL, false }, { "var/cache/apt/archives/partial", 0700, NULL, false },
        { "var/cache/debconf", 0755, NULL, false }, { "var/log", 0755, NULL, false },
        { "var/log/apt", 0755, NULL, false }, { "var/tmp", 01777, NULL, false },
        { "var/local", 0755, NULL, false }, { "var/mail", 0755, NULL, false }, { "var/spool", 0755, NULL, false },
        { "var/lock", 0, "../run/lock", false }, { "var/run", 0, "../run", false },
};
/* clang-format on */

static int
make_skeleton(int dir, const struct xb_host_layout *l, unsigned user_uid)
{
        static const char *const links[] = { "bin", "sbin", "lib", "lib64", "lib32", "libx32" };

        for (size_t i = 0; i < ARRAY_SIZE(skeleton); i++) {
                const struct skel *k = &skeleton[i];

                if (!k->mode) {
                        if (symlinkat(k->target, dir, k->path) < 0)
                                return -errno;
                        continue;
                }
                if (mkdirat(dir, k->path, k->mode) < 0)
                        return -errno;
                /* mkdir applies the umask, and a setgid bit never comes from it. */
                if (fchmodat(dir, k->path, k->mode, 0) < 0)
                        return -errno;
                if (k->user && fchownat(dir, k->path, user_uid, user_uid, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
        }
        if (!l->merged_usr)
                return 0;
        for (size_t i = 0; i < ARRAY_SIZE(links); i++) {
                char target[32];
                bool have = i < 3 || (i == 3 && l->has_lib64) || (i == 4 && l->has_lib32) ||
                            (i == 5 && l->has_libx32);

                snprintf(target, sizeof(target), "usr/%s", links[i]);
                if (have && symlinkat(target, dir, links[i]) < 0)
                        return -errno;
        }
        return 0;
}

int
xb_layers_base_prepare(const char *runtime_dir, const struct xb_host_layout *l, unsigned user_uid,
                       char **ret_path, struct xb_err *err)
{
        /* Versioned by its content: a new skeleton is a new directory, and
         * running sandboxes keep the one they mounted. */
        char path[4096], tmp[4200];
        _cleanup_close_ int d = -EBADF;
        int r;

        snprintf(path, sizeof(path), "%s/base-root-v1-%s%s%s%s", runtime_dir, l->merged_usr ? "m" : "s",
                 l->has_lib64 ? "6" : "", l->has_lib32 ? "3" : "", l->has_libx32 ? "x" : "");
        if (access(path, F_OK) == 0)
                goto done;
        snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
        if (mkdir(tmp, 0755) < 0)
                return xb_err_set(err, errno, "create %s", tmp);
        d = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (d < 0 || fchmod(d, 0755) < 0 || (r = make_skeleton(d, l, user_uid)) < 0 || rename(tmp, path) < 0) {
                r = xb_err_set(err, errno, "build the base root %s", path);
                /* Another process may have won the rename: use its copy. */
                if (access(path, F_OK) != 0)
                        return r;
        }
done:
        *ret_path = strdup(path);
        return *ret_path ? 0 : xb_err_set(err, ENOMEM, "base root");
}

static bool
known_account(const char *name, bool group)
{
        static const char *const users[] = { "root", "user", "nobody", NULL };
        static const char *const groups[] = { "root", "tty", "users", "user", "nogroup", NULL };

        if (name[0] == '#')
                return true;   /* a numeric id */
        for (const char *const *k = group ? groups : users; *k; k++)
                if (!strcmp(*k, name))
                        return true;
        return false;
}

int
xb_layers_dpkg_prepare(const char *runtime_dir, char **ret_path, struct xb_err *err)
{
        _cleanup_free_ char *text = NULL;
        _cleanup_(xb_buf_free) struct xb_buf out = { 0 };
        char path[4096], tmp[4200], *save = NULL;
        unsigned long long h = 1469598103934665603ULL;
        _cleanup_close_ int d = -EBADF, f = -EBADF;
        int r;

        if (xb_read_file_at(AT_FDCWD, "/var/lib/dpkg/statoverride", 4 << 20, &text, NULL) < 0 &&
            !(text = strdup("")))
                return xb_err_set(err, ENOMEM, "dpkg layer");
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char user[64], group[64];

                if (sscanf(line, "%63s %63s", user, group) == 2 && known_account(user, false) &&
                    known_account(group, true) && xb_buf_printf(&out, "%s\n", line) < 0)
                        return xb_err_set(err, ENOMEM, "dpkg layer");
        }
        for (size_t i = 0; i < out.len; i++)
                h = (h ^ (unsigned char)out.data[i]) * 1099511628211ULL;
        snprintf(path, sizeof(path), "%s/dpkg-fix-%016llx", runtime_dir, h);
        if (access(path, F_OK) == 0)
                goto done;
        snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
                return xb_err_set(err, errno, "create %s", tmp);
        d = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (d < 0 || fchmod(d, 0755) < 0)
                return xb_err_set(err, errno, "open %s", tmp);
        f = openat(d, "statoverride", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (f < 0 || (out.len && xb_write_all(f, out.data, out.len) < 0) || fchmod(f, 0644) < 0)
                return xb_err_set(err, errno, "write %s/statoverride", tmp);
        if (rename(tmp, path) < 0 && access(path, F_OK) != 0) {
                r = xb_err_set(err, errno, "rename %s", tmp);
                return r;
        }
done:
        *ret_path = strdup(path);
        return *ret_path ? 0 : xb_err_set(err, ENOMEM, "dpkg layer");
}

int
xb_layers_overlay_opts(const struct xb_root_spec *root, size_t part, char **ret, struct xb_err *err)
{
        _cleanup_(xb_buf_free) struct xb_buf b = { 0 };
        const char *name = xb_layer_parts[part];
        const char *up = root->kind == XB_UPPER_DISK ? XB_LAYER_STAGE "/0" : XB_LAYER_STAGE "/m";
        int r;

        if (part >= XB_LAYER_PARTS || root->nlowers > XB_LAYERS_MAX)
                return xb_err_msg(err, EINVAL, "too many layers");
        if (root->own_root && !root->nlowers)
                return xb_err_msg(err, EINVAL, "a template with its own root has layers");
        r = xb_buf_printf(&b, "lowerdir=");
        for (size_t i = 0; i < root->nlowers && !r; i++)
                r = xb_buf_printf(&b, XB_LAYER_STAGE "/1/%s/up/%s%s", root->lowers[i], name,
                                  root->own_root && i + 1 == root->nlowers ? "" : ":");
        /* A template with a root of its own replaces the host's lowers. */
        if (!r && part == 3 && !root->own_root)
                r = xb_buf_printf(&b, XB_LAYER_STAGE "/6:");
        if (!r && !root->own_root)
                r = xb_buf_printf(&b, XB_LAYER_STAGE "/%zu", 2 + part);
        if (!r)
                r = xb_buf_printf(&b, ",upperdir=%s/up/%s,workdir=%s/wk/%s,userxattr", up, name, up, name);
        if (r)
                return xb_err_set(err, ENOMEM, "overlay options");
        if (b.len >= 4000)
                return xb_err_msg(err, E2BIG, "the template has too many layers to mount");
        *ret = xb_buf_steal(&b);
        return *ret ? 0 : xb_err_set(err, ENOMEM, "overlay options");
}

int
xb_layers_idmapped(int userns_fd, const char *const srcs[XB_LAYER_NFDS], int fds[XB_LAYER_NFDS], struct xb_err *err)
{
        for (size_t i = 0; i < XB_LAYER_NFDS; i++)
                fds[i] = -1;
        for (size_t i = 0; i < XB_LAYER_NFDS; i++) {
                /* Only the sandbox's own layer is writable. */
                struct mount_attr a = {
                        .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                    (i == 0 ? 0 : MOUNT_ATTR_RDONLY),
                        .userns_fd = (uint64_t)userns_fd,
                };

                if (!srcs[i])
                        continue;
                fds[i] = (int)syscall(SYS_open_tree, AT_FDCWD, srcs[i], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
                if (fds[i] < 0)
                        goto fail;
                if (syscall(SYS_mount_setattr, fds[i], "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)
                        goto fail;
                continue;
        fail:
                {
                        int e = errno;

                        for (size_t j = 0; j <= i; j++)
                                if (fds[j] >= 0)
                                        close(fds[j]);
                        for (size_t j = 0; j < XB_LAYER_NFDS; j++)
                                fds[j] = -1;
                        return xb_err_set(err, e, "id-mapped mount of %s", srcs[i]);
                }
        }
        return 0;
}

int
xb_layers_enter(const struct xb_root_spec *root, const int fds[XB_LAYER_NFDS], uint64_t size, const char *root_opts,
                struct xb_err *err)
{
        char path[64];

        /* The staging area: a tmpfs over /tmp, seen only by this mount
         * namespace, detached with the old root after pivot_root. */
        if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=64k,nr_inodes=64") < 0)
                return xb_err_set(err, errno, "mount the staging tmpfs");
        if (mkdir(XB_LAYER_STAGE, 0700) < 0 || mkdir("/tmp/r", 0755) < 0)
                return xb_err_set(err, errno, "make the staging directories");
        for (size_t i = 0; i < XB_LAYER_NFDS; i++) {
                if (fds[i] < 0 || (i == 0 && root->kind != XB_UPPER_DISK) || (i == 1 && !root->nlowers) ||
                    (i >= 2 && root->own_root))
                        continue;
                snprintf(path, sizeof(path), XB_LAYER_STAGE "/%zu", i);
                if (mkdir(path, 0700) < 0)
                        return xb_err_set(err, errno, "make %s", path);
                if (syscall(SYS_move_mount, fds[i], "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                        return xb_err_set(err, errno, "attach layer %zu", i);
        }
        if (root->kind == XB_UPPER_MEMORY) {
                char opts[64];

                snprintf(opts, sizeof(opts), "mode=0755,size=%llu", (unsigned long long)size);
                if (mkdir(XB_LAYER_STAGE "/m", 0700) < 0 ||
                    mount("tmpfs", XB_LAYER_STAGE "/m", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0 ||
                    mkdir(XB_LAYER_STAGE "/m/up", 0755) < 0 || mkdir(XB_LAYER_STAGE "/m/wk", 0700) < 0)
                        return xb_err_set(err, errno, "mount the memory layer");
                for (size_t i = 0; i < XB_LAYER_PARTS; i++) {
                        snprintf(path, sizeof(path), XB_LAYER_STAGE "/m/up/%s", xb_layer_parts[i]);
                        if (mkdir(path, 0755) < 0)
                                return xb_err_set(err, errno, "make %s", path);
                        snprintf(path, sizeof(path), XB_LAYER_STAGE "/m/wk/%s", xb_layer_parts[i]);
                        if (mkdir(path, 0700) < 0)
                                return xb_err_set(err, errno, "make %s", path);
                }
        }
        if (mount("overlay", "/tmp/r", "overlay", MS_NOSUID | MS_NODEV, root_opts) < 0)
                return xb_err_set(err, errno, "mount the layered root");
        if (chdir("/tmp/r") < 0)
                return xb_err_set(err, errno, "enter the new root");
        return 0;
}
