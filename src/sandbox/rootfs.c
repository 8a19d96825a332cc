/* A layered root, daemon side: the writable layer, the overlay options,
 * and the id-mapped mounts the setup child attaches (layers.h). Id-mapped
 * workspaces: the caller's binds are mounted so that the sandbox's user
 * (or root, for a root sandbox) acts as the directory's owner. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/mount.h>
#include <linux/openat2.h>

#include "base/cleanup.h"
#include "proto/wire.h"
#include "sandbox/sandbox_int.h"

void
xb__free_opts(char **opts)
{
        for (size_t i = 0; i < XB_LAYER_PARTS; i++) {
                free(opts[i]);
                opts[i] = NULL;
        }
}

/* The writable layer (a new subvolume, or a fork's snapshot) and the
 * overlay options; opts[0] is the root's, the others go into lo. */
int
xb__layered_prepare(struct xb_sandbox *sb, const struct xb_sandbox_config *cfg, char **opts,
                struct xb_layered_opts *lo, struct xb_err *err)
{
        struct xb_engine *e = sb->eng;
        int r;

        if (!e->base_root || (cfg->root->kind == XB_UPPER_DISK && !e->store))
                return xb_err_msg(err, EOPNOTSUPP, "this server has no layered roots");
        for (size_t i = 0; i < XB_LAYER_PARTS; i++)
                if ((r = xb_layers_overlay_opts(cfg->root, i, &opts[i], err)) < 0)
                        return r;
        for (size_t i = 1; i < XB_LAYER_PARTS; i++)
                lo->overlay_opts[i - 1] = opts[i];
        if (cfg->root->kind != XB_UPPER_DISK)
                return 0;
        if (cfg->root->from && cfg->root->adopt)
                r = xb_store_adopt(e->store, cfg->root->from, sb->id, cfg->limits.disk, err);
        else if (cfg->root->from)
                r = xb_store_snapshot(e->store, cfg->root->from, "sbx", sb->id, false, cfg->limits.disk, err);
        else
                r = xb_store_layer_create(e->store, sb->id, cfg->limits.disk, err);
        if (r < 0)
                return r;
        sb->has_layer = true;
        sb->disk = cfg->limits.disk;
        return 0;
}

/* The id-mapped layer mounts, to the setup child (layers.h). */
int
xb__send_layers(struct xb_sandbox *sb, const struct xb_sandbox_config *cfg, struct xb_err *err)
{
        struct xb_engine *e = sb->eng;
        char upper[4200], layers[4200], dpkg[4200], ns[64];
        const char *srcs[XB_LAYER_NFDS];
        int fds[XB_LAYER_NFDS];
        _cleanup_close_ int userns = -EBADF;
        uint8_t buf[16];
        struct xb_msgw w;
        int r;

        snprintf(ns, sizeof(ns), "/proc/%d/ns/user", (int)sb->pid);
        userns = open(ns, O_RDONLY | O_CLOEXEC);
        if (userns < 0)
                return xb_err_set(err, errno, "open the sandbox's user namespace");
        srcs[0] = srcs[1] = NULL;
        if (e->store) {
                snprintf(layers, sizeof(layers), "%s/layers", e->store->path);
                srcs[1] = layers;
                if (cfg->root->kind == XB_UPPER_DISK) {
                        snprintf(upper, sizeof(upper), "%s/sbx/%s", e->store->path, sb->id);
                        srcs[0] = upper;
                }
        }
        srcs[2] = e->base_root;
        srcs[3] = "/usr";
        srcs[4] = e->etc_dir;
        /* A host without dpkg (or a unit whose /var/lib is a fresh tmpfs)
         * gets the skeleton's empty dpkg directory, not a failed create. */
        if (access("/var/lib/dpkg", F_OK) == 0)
                srcs[5] = "/var/lib/dpkg";
        else {
                snprintf(dpkg, sizeof(dpkg), "%s/var/lib/dpkg", e->base_root);
                srcs[5] = dpkg;
        }
        srcs[6] = e->dpkg_fix;
        if (cfg->root->own_root)   /* nothing of the host's */
                for (size_t i = 2; i < XB_LAYER_NFDS; i++)
                        srcs[i] = NULL;
        if ((r = xb_layers_idmapped(userns, srcs, fds, err)) < 0)
                return r;
        {
                /* A missing source travels as /dev/null's fd; the child
                 * knows from the root spec not to attach it. */
                int send[XB_LAYER_NFDS];
                int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

                for (size_t i = 0; i < XB_LAYER_NFDS; i++)
                        send[i] = fds[i] >= 0 ? fds[i] : devnull;
                xb_msgw_init(&w, buf, sizeof(buf), XB_SETUP_LAYERS, 0);
                r = devnull < 0 ? -errno : xb_msg_send(sb->sock, w.buf, w.len, send, XB_LAYER_NFDS);
                if (devnull >= 0)
                        close(devnull);
        }
        for (size_t i = 0; i < XB_LAYER_NFDS; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        return r < 0 ? xb_err_set(err, -r, "send the sandbox its layers") : 0;
}


/* ---- id-mapped workspaces ---- */

static int
wait_for_eof(void *arg)
{
        int *p = arg;
        char c;

        /* The parent writes our maps, opens our namespace and closes the
         * pipe; our copy of its write end must go first, or no EOF comes. */
        close(p[1]);
        while (read(p[0], &c, 1) < 0 && errno == EINTR)
                ;
        _exit(0);
}

static int
write_map(pid_t pid, const char *file, unsigned from, unsigned to)
{
        char path[64], map[64];
        _cleanup_close_ int fd = -EBADF;
        int n;

        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
        n = snprintf(map, sizeof(map), "%u %u 1\n", from, to);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return write(fd, map, (size_t)n) == n ? 0 : -errno;
}

/* A user namespace that maps exactly one uid and one gid: the disk's
 * owner ids (inside) to the sandbox's user on its host range (outside).
 * An id-mapped mount through it shows the owner's files as the sandbox
 * user's, and files that user makes get the owner's ids on disk. */
static int
owner_userns(uid_t disk_uid, gid_t disk_gid, uid_t host_uid, gid_t host_gid)
{
        const size_t stack_size = 16 * 1024;
        void *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        int p[2], ns = -1, r;
        pid_t pid;

        if (stack == MAP_FAILED)
                return -errno;
        if (pipe2(p, O_CLOEXEC) < 0) {
                r = -errno;
                munmap(stack, stack_size);
                return r;
        }
        pid = clone(wait_for_eof, (char *)stack + stack_size, CLONE_NEWUSER | SIGCHLD, p);
        if (pid < 0) {
                r = -errno;
                goto out;
        }
        if ((r = write_map(pid, "uid_map", disk_uid, host_uid)) == 0 &&
            (r = write_map(pid, "gid_map", disk_gid, host_gid)) == 0) {
                char path[64];

                snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
                ns = open(path, O_RDONLY | O_CLOEXEC);
                r = ns < 0 ? -errno : 0;
        }
        close(p[1]);
        p[1] = -1;
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
out:
        if (p[1] >= 0)
                close(p[1]);
        close(p[0]);
        munmap(stack, stack_size);
        return r < 0 ? r : ns;
}

/* One bind as a detached id-mapped mount, or -errno. */
static int
idmapped_bind(struct xb_sandbox *sb, const struct xb_sandbox_config *cfg, const struct xb_bind *b, struct xb_err *err)
{
        struct xb_engine *e = sb->eng;
        /* The path was resolved and checked: a symlink in it now is a swap. */
        struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS };
        _cleanup_close_ int src = (int)syscall(SYS_openat2, AT_FDCWD, b->host, &how, sizeof(how));
        _cleanup_close_ int ns = -EBADF, tree = -EBADF;
        struct mount_attr a = { .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                            (b->rw ? 0 : MOUNT_ATTR_RDONLY) };
        uid_t inside = cfg->bind_uid;
        struct stat st;

        if (src < 0 || fstat(src, &st) < 0)
                return xb_err_set(err, errno, "mount source %s", b->host);
        if (e->mount_owner_set) {
                st.st_uid = e->mount_uid;
                st.st_gid = e->mount_gid;
        }
        ns = owner_userns(st.st_uid, st.st_gid, sb->host_uid_base + inside, sb->host_uid_base + inside);
        if (ns < 0)
                return xb_err_set(err, -ns, "a user namespace for the mount of %s", b->host);
        tree = (int)syscall(SYS_open_tree, src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
        if (tree < 0)
                return xb_err_set(err, errno, "clone the mount of %s", b->host);
        a.userns_fd = (uint64_t)ns;
        if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &a, sizeof(a)) < 0)
                return xb_err_set(err, errno, "id-map the mount of %s (its filesystem may not support it)", b->host);
        return TAKE_FD(tree);
}

int
xb__send_binds(struct xb_sandbox *sb, const struct xb_sandbox_config *cfg, const struct xb_bind *binds,
               struct xb_err *err)
{
        for (size_t i = 0; i < cfg->nbinds; i += XB_MSG_MAXFDS) {
                int fds[XB_MSG_MAXFDS];
                size_t n = 0;
                uint8_t buf[16];
                struct xb_msgw w;
                int r = 0;

                for (; n < XB_MSG_MAXFDS && i + n < cfg->nbinds; n++) {
                        fds[n] = idmapped_bind(sb, cfg, &binds[i + n], err);
                        if (fds[n] < 0) {
                                r = fds[n];
                                break;
                        }
                }
                if (!r) {
                        xb_msgw_init(&w, buf, sizeof(buf), XB_SETUP_BINDS, 0);
                        r = xb_msg_send(sb->sock, w.buf, w.len, fds, n);
                        if (r < 0)
                                xb_err_set(err, -r, "send the sandbox its mounts");
                }
                for (size_t k = 0; k < n; k++)
                        close(fds[k]);
                if (r < 0)
                        return r;
        }
        return 0;
}
