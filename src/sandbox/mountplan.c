/* Mount plans: building (pure), opening sources, executing in the child. */
#define _GNU_SOURCE
#include "mountplan.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "sandbox/pools.h"

#define XB_STR_(x) #x
#define XB_STR(x) XB_STR_(x)

/* The table below is laid out by hand. */
/* clang-format off */
const char *const xb_etc_allowlist[] = {
        /* the dynamic linker */
        "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
        /* TLS trust: certificates only, never ssl/private */
        "ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf",
        /* interpreters and their configuration */
        "alternatives", "python3", "python3.11", "perl", "R", "jupyter", "ipython",
        "java-17-openjdk", "gitconfig", "vim",
        /* fonts and plotting */
        "fonts", "matplotlibrc",
        /* time, locale, names */
        "localtime", "timezone", "locale.alias", "mime.types", "protocols", "services",
        "host.conf", "gai.conf", "magic", "magic.mime",
        /* shells */
        "bash.bashrc", "profile", "inputrc",
        /* what system this is */
        "os-release", "debian_version", "lsb-release",
        /* packages: apt's and dpkg's configuration, so installs inside work
         * like the host's; never apt's credentials (apt/auth.conf*) */
        "apt/apt.conf.d", "apt/preferences.d", "apt/sources.list", "apt/sources.list.d", "apt/trusted.gpg",
        "apt/trusted.gpg.d", "apt/keyrings", "dpkg", "debconf.conf", "shells", "login.defs", "adduser.conf",
        "deluser.conf", "skel", "ucf.conf", "pip.conf", "npmrc",
        NULL,
};

/* Docker's masked and read-only /proc paths. */
static const char *const proc_masked[] = {
        "proc/acpi", "proc/asound", "proc/interrupts", "proc/kcore", "proc/keys",
        "proc/latency_stats", "proc/timer_list", "proc/timer_stats", "proc/sched_debug",
        "proc/scsi", NULL,
};
static const char *const proc_readonly[] = {
        "proc/bus", "proc/fs", "proc/irq", "proc/sys", "proc/sysrq-trigger", NULL,
};
static const char *const dev_nodes[] = { "null", "zero", "full", "random", "urandom", "tty", NULL };
/* clang-format on */

static char *
dup_or_null(const char *s)
{
        return s ? strdup(s) : NULL;
}

int
xb_mountplan_add(struct xb_mount_plan *plan, enum xb_mop op, unsigned flags, const char *dest,
                 const char *src, const char *data, uint64_t size, mode_t mode)
{
        struct xb_mop_step *s;

        if (plan->n == plan->cap) {
                size_t cap = plan->cap ? plan->cap * 2 : 64;
                struct xb_mop_step *p = realloc(plan->steps, cap * sizeof(*p));

                if (!p)
                        return -ENOMEM;
                plan->steps = p;
                plan->cap = cap;
        }
        s = &plan->steps[plan->n];
        *s = (struct xb_mop_step){ .op = op, .flags = flags, .size = size, .mode = mode, .src_fd = -1 };
        s->dest = strdup(dest);
        s->src = dup_or_null(src);
        s->data = dup_or_null(data);
        if (!s->dest || (src && !s->src) || (data && !s->data)) {
                free(s->dest);
                free(s->src);
                free(s->data);
                return -ENOMEM;
        }
        plan->n++;
        return 0;
}

void
xb_mountplan_free(struct xb_mount_plan *plan)
{
        xb_mountplan_close_sources(plan);
        for (size_t i = 0; i < plan->n; i++) {
                free(plan->steps[i].dest);
                free(plan->steps[i].src);
                free(plan->steps[i].data);
        }
        free(plan->steps);
        *plan = (struct xb_mount_plan){ 0 };
}

int
xb_mountplan_host(struct xb_mount_plan *p, const struct xb_image_opts *o, struct xb_err *err)
{
        static const char *const lib_links[] = { "bin", "sbin", "lib" };
        char opts[64];
        int r = 0;

        if (o->layered) {
                /* The root skeleton holds the merged-usr links and the dirs. */
                r |= xb_mountplan_add(p, XB_MOP_OVERLAY, XB_MOPF_LAYER, "usr", NULL, o->layered->overlay_opts[0], 0, 0);
                r |= xb_mountplan_add(p, XB_MOP_OVERLAY, XB_MOPF_LAYER, "etc", NULL, o->layered->overlay_opts[1], 0, 0);
                r |= xb_mountplan_add(p, XB_MOP_OVERLAY, XB_MOPF_LAYER, "var/lib/dpkg", NULL,
                                      o->layered->overlay_opts[2], 0, 0);
                goto system;
        }
        r |= xb_mountplan_add(p, XB_MOP_BIND, XB_MOPF_RO, "usr", "/usr", NULL, 0, 0);
        for (size_t i = 0; i < ARRAY_SIZE(lib_links); i++) {
                char target[32], src[32];

                snprintf(target, sizeof(target), "usr/%s", lib_links[i]);
                snprintf(src, sizeof(src), "/%s", lib_links[i]);
                if (o->layout.merged_usr)
                        r |= xb_mountplan_add(p, XB_MOP_SYMLINK, 0, lib_links[i], NULL, target, 0, 0);
                else
                        r |= xb_mountplan_add(p, XB_MOP_BIND, XB_MOPF_RO | XB_MOPF_OPTIONAL, lib_links[i], src, NULL, 0, 0);
        }
        if (o->layout.has_lib64)
                r |= o->layout.merged_usr
                        ? xb_mountplan_add(p, XB_MOP_SYMLINK, 0, "lib64", NULL, "usr/lib64", 0, 0)
                        : xb_mountplan_add(p, XB_MOP_BIND, XB_MOPF_RO | XB_MOPF_OPTIONAL, "lib64", "/lib64", NULL, 0, 0);
        if (o->layout.has_lib32)
                r |= xb_mountplan_add(p, XB_MOP_SYMLINK, 0, "lib32", NULL, "usr/lib32", 0, 0);
        if (o->layout.has_libx32)
                r |= xb_mountplan_add(p, XB_MOP_SYMLINK, 0, "libx32", NULL, "usr/libx32", 0, 0);

        /* /etc: one read-only bind of the prepared view (etcview.h). */
        r |= xb_mountplan_add(p, XB_MOP_BIND, XB_MOPF_RO, "etc", o->etc_dir, NULL, 0, 0);

system:
        r |= xb_mountplan_add(p, XB_MOP_PROC, o->layered ? XB_MOPF_LAYER : 0, "proc", NULL, NULL, 0, 0555);
        for (const char *const *m = proc_masked; *m; m++)
                r |= xb_mountplan_add(p, XB_MOP_MASK, 0, *m, NULL, NULL, 0, 0);
        for (const char *const *m = proc_readonly; *m; m++)
                r |= xb_mountplan_add(p, XB_MOP_RO, 0, *m, NULL, NULL, 0, 0);

        r |= xb_mountplan_add(p, XB_MOP_TMPFS, XB_MOPF_NOEXEC | (o->layered ? XB_MOPF_LAYER : 0), "dev", NULL,
                              NULL, 64 << 10, 0755);
        for (const char *const *d = dev_nodes; *d; d++) {
                char src[32], dest[32];

                snprintf(src, sizeof(src), "/dev/%s", *d);
                snprintf(dest, sizeof(dest), "dev/%s", *d);
                r |= xb_mountplan_add(p, XB_MOP_BIND, XB_MOPF_DEV | XB_MOPF_NOEXEC, dest, src, NULL, 0, 0);
        }
        r |= xb_mountplan_add(p, XB_MOP_DEVPTS, 0, "dev/pts", NULL, NULL, 0, 0755);
        r |= xb_mountplan_add(p, XB_MOP_SYMLINK, 0, "dev/ptmx", NULL, "pts/ptmx", 0, 0);
        r |= xb_mountplan_add(p, XB_MOP_SYMLINK, 0, "dev/fd", NULL, "/proc/self/fd", 0, 0);
        r |= xb_mountplan_add(p, XB_MOP_SYMLINK, 0, "dev/stdin", NULL, "/proc/self/fd/0", 0, 0);
        r |= xb_mountplan_add(p, XB_MOP_SYMLINK, 0, "dev/stdout", NULL, "/proc/self/fd/1", 0, 0);
        r |= xb_mountplan_add(p, XB_MOP_SYMLINK, 0, "dev/stderr", NULL, "/proc/self/fd/2", 0, 0);
        r |= xb_mountplan_add(p, XB_MOP_TMPFS, XB_MOPF_NOEXEC, "dev/shm", NULL, NULL,
                              o->disk < (64u << 20) ? o->disk : (64u << 20), 01777);
        r |= xb_mountplan_add(p, XB_MOP_REMOUNT_RO, 0, "dev", NULL, NULL, 0, 0);

        /* /tmp is a tmpfs, cleared like a reboot's on a fork or a template;
         * a layered root keeps /home/user in its layer. */
        r |= xb_mountplan_add(p, XB_MOP_TMPFS, o->layered ? XB_MOPF_LAYER : 0, "tmp", NULL, NULL, o->disk, 01777);
        if (!o->layered) {
                snprintf(opts, sizeof(opts), "uid=%u,gid=%u", o->user_uid, o->user_gid);
                r |= xb_mountplan_add(p, XB_MOP_TMPFS, 0, "home/user", NULL, opts, o->disk, 0755);
                r |= xb_mountplan_add(p, XB_MOP_DIR, 0, "root", NULL, NULL, 0, 0700);
                r |= xb_mountplan_add(p, XB_MOP_DIR, 0, "var", NULL, NULL, 0, 0755);
                r |= xb_mountplan_add(p, XB_MOP_SYMLINK, 0, "var/tmp", NULL, "../tmp", 0, 0);
        }

        for (size_t i = 0; i < o->nbinds; i++) {
                const struct xb_bind *b = &o->binds[i];

                r |= xb_mountplan_add(p, XB_MOP_BIND, XB_MOPF_USER | (b->rw ? 0 : XB_MOPF_RO) |
                                                      (o->layered ? XB_MOPF_LAYER : 0),
                                      b->dest + 1, b->host, NULL, 0, 0);
        }
        if (r) {
                xb_mountplan_free(p);
                return xb_err_set(err, ENOMEM, "build mount plan");
        }
        return 0;
}

void
xb_host_layout_detect(struct xb_host_layout *l)
{
        struct stat st;

        l->merged_usr = lstat("/bin", &st) == 0 && S_ISLNK(st.st_mode);
        l->has_lib64 = lstat("/lib64", &st) == 0;
        l->has_lib32 = lstat("/lib32", &st) == 0 && S_ISLNK(st.st_mode);
        l->has_libx32 = lstat("/libx32", &st) == 0 && S_ISLNK(st.st_mode);
}

int
xb_mountplan_open_sources(struct xb_mount_plan *plan, struct xb_err *err)
{
        for (size_t i = 0; i < plan->n; i++) {
                struct xb_mop_step *s = &plan->steps[i];

                if (!s->src || s->src_fd >= 0)
                        continue;
                if (s->flags & XB_MOPF_USER) {
                        /* src is a resolved path: a symlink appearing in it
                         * now is a swap after the allowlist check. */
                        struct open_how how = { .flags = O_PATH | O_CLOEXEC,
                                                .resolve = RESOLVE_NO_SYMLINKS };

                        s->src_fd = (int)syscall(SYS_openat2, AT_FDCWD, s->src, &how, sizeof(how));
                } else
                        s->src_fd = open(s->src, O_PATH | O_CLOEXEC);
                if (s->src_fd < 0) {
                        if (errno == ENOENT && (s->flags & XB_MOPF_OPTIONAL)) {
                                s->skip = true;
                                continue;
                        }
                        return xb_err_set(err, errno, "open mount source %s", s->src);
                }
        }
        return 0;
}

void
xb_mountplan_close_sources(struct xb_mount_plan *plan)
{
        for (size_t i = 0; i < plan->n; i++)
                if (plan->steps[i].src_fd >= 0) {
                        close(plan->steps[i].src_fd);
                        plan->steps[i].src_fd = -1;
                }
}

/* ---- execution, in the setup child ---- */

/* mkdir -p relative to the cwd (the new root). Every directory on the way
 * is one this plan made on a tmpfs of its own, and bind paths are checked
 * (xb_bind_dest_validate, xb_binds_validate) never to pass a symlink, so a
 * plain mkdir suffices: try the whole path, and on ENOENT the parent first. */
static int
mkdir_p(const char *path, mode_t mode, bool last_is_dir)
{
        char buf[PATH_MAX];
        char *slash;

        if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
                return -ENAMETOOLONG;
        if (!last_is_dir) {
                slash = strrchr(buf, '/');
                if (!slash)
                        return 0;
                *slash = '\0';
        }
        if (mkdir(buf, mode) == 0 || errno == EEXIST)
                return 0;
        if (errno != ENOENT || !(slash = strrchr(buf, '/')))
                return -errno;
        *slash = '\0';
        {
                int r = mkdir_p(buf, 0755, true);

                if (r < 0)
                        return r;
        }
        *slash = '/';
        return mkdir(buf, mode) == 0 || errno == EEXIST ? 0 : -errno;
}

/* Create a non-directory with `make` (which returns -errno), making its
 * parent directories only when they are missing: most of a plan's files
 * go into directories that already exist (/dev, /etc). */
static int
make_entry(const char *path, int (*make)(const char *path, const void *arg), const void *arg)
{
        int r = make(path, arg);

        if (r != -ENOENT)
                return r;
        if ((r = mkdir_p(path, 0755, false)) < 0)
                return r;
        return make(path, arg);
}

static int
make_mountpoint(const char *path, const void *arg)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);

        (void)arg;
        if (fd < 0)
                return errno == EEXIST ? 0 : -errno;
        close(fd);
        return 0;
}

static int
make_symlink(const char *path, const void *target)
{
        return symlink(target, path) < 0 ? -errno : 0;
}

static int
make_file(const char *path, const void *step)
{
        const struct xb_mop_step *s = step;
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, s->mode);

        if (fd < 0 || xb_write_all(fd, s->data, strlen(s->data)) < 0)
                return -errno;
        return 0;
}

/* Flags a remount inside a user namespace must keep: the kernel locks
 * nosuid, nodev, noexec and the atime flags of mounts from outside
 * (mount(2), EPERM on MS_REMOUNT). */
static unsigned long
locked_flags(const char *path)
{
        struct statvfs sv;
        unsigned long f = 0;

        if (statvfs(path, &sv) < 0)
                return 0;
        if (sv.f_flag & ST_NOSUID)
                f |= MS_NOSUID;
        if (sv.f_flag & ST_NODEV)
                f |= MS_NODEV;
        if (sv.f_flag & ST_NOEXEC)
                f |= MS_NOEXEC;
        if (sv.f_flag & ST_NOATIME)
                f |= MS_NOATIME;
        if (sv.f_flag & ST_NODIRATIME)
                f |= MS_NODIRATIME;
        if (sv.f_flag & ST_RELATIME)
                f |= MS_RELATIME;
        return f;
}

static int
remount(const char *dest, unsigned long flags)
{
        flags |= locked_flags(dest) | MS_BIND | MS_REMOUNT;
        return mount(NULL, dest, NULL, flags, NULL) < 0 ? -errno : 0;
}

static int
do_bind(const struct xb_mop_step *s, const char *src_path, struct xb_err *err)
{
        struct stat st;
        unsigned long fl = MS_NOSUID;
        int r;

        if (fstat(s->src_fd, &st) < 0)
                return xb_err_set(err, errno, "stat %s", s->src);
        r = S_ISDIR(st.st_mode) ? mkdir_p(s->dest, 0755, true) : make_entry(s->dest, make_mountpoint, NULL);
        if (r < 0)
                return xb_err_set(err, -r, "create mount point /%s", s->dest);
        /* Made by the daemon, nosuid, nodev and read-only as asked. */
        if (s->flags & XB_MOPF_IDMAPPED) {
                if (syscall(SYS_move_mount, s->src_fd, "", AT_FDCWD, s->dest, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                        return xb_err_set(err, errno, "mount %s on /%s", s->src, s->dest);
                return 0;
        }
        if (mount(src_path, s->dest, NULL, MS_BIND | MS_REC, NULL) < 0)
                return xb_err_set(err, errno, "bind %s on /%s", s->src, s->dest);
        /* A device node keeps its mount's flags: nosuid and noexec mean
         * nothing for a character device, and nodev would disable it. */
        if (s->flags & XB_MOPF_DEV)
                return 0;
        fl |= MS_NODEV;
        if (s->flags & XB_MOPF_RO)
                fl |= MS_RDONLY;
        if (s->flags & XB_MOPF_NOEXEC)
                fl |= MS_NOEXEC;
        r = remount(s->dest, fl);
        if (r < 0)
                return xb_err_set(err, -r, "remount /%s", s->dest);
        return 0;
}

static int
do_tmpfs(const struct xb_mop_step *s, unsigned long extra, struct xb_err *err)
{
        char opts[256];
        int r = mkdir_p(s->dest, 0755, true);

        if (r < 0)
                return xb_err_set(err, -r, "create mount point /%s", s->dest);
        snprintf(opts, sizeof(opts), "mode=%o,size=%llu%s%s", (unsigned)s->mode,
                 (unsigned long long)(s->size ? s->size : 4096), s->data ? "," : "", s->data ? s->data : "");
        if (mount("tmpfs", s->dest, "tmpfs", MS_NOSUID | MS_NODEV | extra, opts) < 0)
                return xb_err_set(err, errno, "mount tmpfs on /%s", s->dest);
        return 0;
}

/* A layered root is the sandbox's own, possibly from a parent it forked
 * from: a symlink it left where we mount (/proc -> /somewhere) would move
 * the mount. Every component of dest must be a real directory or file
 * below the new root. No sandbox process runs yet, so it cannot change
 * between this check and the mount. */
static int
check_beneath(const char *dest)
{
        /* Not O_NOFOLLOW: a symlink as the last component must fail too. */
        struct open_how how = { .flags = O_PATH | O_CLOEXEC,
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
        int fd = (int)syscall(SYS_openat2, AT_FDCWD, dest, &how, sizeof(how));

        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        close(fd);
        return 0;
}

static int
do_overlay(const struct xb_mop_step *s, struct xb_err *err)
{
        int r = mkdir_p(s->dest, 0755, true);

        if (r < 0)
                return xb_err_set(err, -r, "create mount point /%s", s->dest);
        if ((r = check_beneath(s->dest)) < 0)
                return xb_err_set(err, -r, "mount point /%s", s->dest);
        if (mount("overlay", s->dest, "overlay", MS_NOSUID | MS_NODEV, s->data) < 0)
                return xb_err_set(err, errno, "mount the layered /%s", s->dest);
        return 0;
}

static int
step(const struct xb_mop_step *s, int devnull_fd, struct xb_err *err)
{
        char fdpath[64];
        struct stat st;
        int r;

        if ((s->flags & XB_MOPF_LAYER) && s->op != XB_MOP_OVERLAY) {
                /* Create it first, so the check sees what the mount will use. */
                if (s->op == XB_MOP_PROC || s->op == XB_MOP_TMPFS)
                        mkdir_p(s->dest, 0755, true);
                if ((r = check_beneath(s->dest)) < 0)
                        return xb_err_msg(err, -r, "the sandbox's root has a symlink on the way to /%s", s->dest);
        }
        switch (s->op) {
        case XB_MOP_OVERLAY:
                return do_overlay(s, err);
        case XB_MOP_BIND:
                snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", s->src_fd);
                return do_bind(s, fdpath, err);
        case XB_MOP_TMPFS:
                return do_tmpfs(s, (s->flags & XB_MOPF_NOEXEC) ? MS_NOEXEC : 0, err);
        case XB_MOP_PROC:
                if ((r = mkdir_p(s->dest, 0555, true)) < 0)
                        return xb_err_set(err, -r, "create /%s", s->dest);
                if (mount("proc", s->dest, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                        return xb_err_set(err, errno, "mount proc");
                return 0;
        case XB_MOP_DEVPTS:
                /* max=: its own share of kernel.pty.max (pools.h). */
                if ((r = mkdir_p(s->dest, 0755, true)) < 0)
                        return xb_err_set(err, -r, "create /%s", s->dest);
                if (mount("devpts", s->dest, "devpts", MS_NOSUID | MS_NOEXEC,
                          "newinstance,ptmxmode=0666,mode=0620,gid=5,max=" XB_STR(XB_SBX_PTYS)) < 0)
                        return xb_err_set(err, errno, "mount devpts");
                return 0;
        case XB_MOP_DIR:
                if ((r = mkdir_p(s->dest, s->mode, true)) < 0)
                        return xb_err_set(err, -r, "create /%s", s->dest);
                return 0;
        case XB_MOP_SYMLINK:
                if ((r = make_entry(s->dest, make_symlink, s->data)) < 0)
                        return xb_err_set(err, -r, "symlink /%s", s->dest);
                return 0;
        case XB_MOP_FILE:
                if ((r = make_entry(s->dest, make_file, s)) < 0)
                        return xb_err_set(err, -r, "write /%s", s->dest);
                return 0;
        case XB_MOP_MASK:
                if (lstat(s->dest, &st) < 0)
                        return 0;
                if (S_ISDIR(st.st_mode)) {
                        if (mount("tmpfs", s->dest, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                  "size=4k,mode=0555") < 0)
                                return xb_err_set(err, errno, "mask /%s", s->dest);
                        return 0;
                }
                /* /dev/null over the file, as Docker does; like the other
                 * device binds it keeps its mount's flags. */
                snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", devnull_fd);
                if (mount(fdpath, s->dest, NULL, MS_BIND, NULL) < 0)
                        return xb_err_set(err, errno, "mask /%s", s->dest);
                return 0;
        case XB_MOP_RO:
                if (lstat(s->dest, &st) < 0)
                        return 0;
                if (mount(s->dest, s->dest, NULL, MS_BIND | MS_REC, NULL) < 0 ||
                    (r = remount(s->dest, MS_RDONLY | MS_NOSUID | MS_NODEV)) < 0)
                        return xb_err_set(err, errno, "make /%s read-only", s->dest);
                return 0;
        case XB_MOP_REMOUNT_RO:
                if ((r = remount(s->dest, MS_RDONLY | MS_NOSUID | MS_NODEV)) < 0)
                        return xb_err_set(err, -r, "make /%s read-only", s->dest);
                return 0;
        }
        return xb_err_set(err, EINVAL, "unknown mount step %d", (int)s->op);
}

int
xb_mountplan_execute(const struct xb_mount_plan *plan, struct xb_err *err)
{
        /* Masks bind the host's /dev/null: opened here, in our namespace. */
        _cleanup_close_ int devnull = open("/dev/null", O_PATH | O_CLOEXEC);

        if (devnull < 0)
                return xb_err_set(err, errno, "open /dev/null");
        for (size_t i = 0; i < plan->n; i++) {
                const struct xb_mop_step *s = &plan->steps[i];
                int r;

                if (s->skip)
                        continue;
                r = step(s, devnull, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- the caller's binds ---- */

void
xb_bind_free(struct xb_bind *b)
{
        free(b->host);
        free(b->dest);
        b->host = b->dest = NULL;
}

int
xb_bind_parse(const char *spec, struct xb_bind *ret, struct xb_err *err)
{
        const char *c1 = strchr(spec, ':');
        const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        size_t dlen;
        bool rw = false;

        if (!c1 || c1 == spec)
                return xb_err_msg(err, EINVAL, "mount `%.200s` must look like HOST:PATH[:ro|:rw]", spec);
        if (c2) {
                if (strcmp(c2 + 1, "rw") == 0)
                        rw = true;
                else if (strcmp(c2 + 1, "ro") != 0)
                        return xb_err_msg(err, EINVAL, "mount `%.200s`: the mode must be ro or rw", spec);
        }
        dlen = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
        ret->host = strndup(spec, (size_t)(c1 - spec));
        ret->dest = strndup(c1 + 1, dlen);
        ret->rw = rw;
        if (!ret->host || !ret->dest) {
                xb_bind_free(ret);
                return xb_err_set(err, ENOMEM, "mount");
        }
        {
                int r = xb_bind_dest_validate(ret->dest, err);

                if (r < 0)
                        xb_bind_free(ret);
                return r;
        }
}

static bool
has_prefix_dir(const char *path, const char *dir)
{
        size_t n = strlen(dir);

        return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int
xb_bind_dest_validate(const char *dest, struct xb_err *err)
{
        static const char *const reserved[] = {
                "/proc", "/dev", "/sys", "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32",
                "/lib64", "/libx32", "/var/tmp", "/root",
        };
        size_t len = strlen(dest);

        if (dest[0] != '/' || len < 2 || len > 1024)
                return xb_err_msg(err, EINVAL, "mount path `%.200s` must be absolute, e.g. /home/user/project", dest);
        if (dest[len - 1] == '/' || strstr(dest, "//") || strstr(dest, "/./") || strstr(dest, "/../") ||
            (len >= 2 && strcmp(dest + len - 2, "/.") == 0) || (len >= 3 && strcmp(dest + len - 3, "/..") == 0))
                return xb_err_msg(err, EINVAL, "mount path `%.200s` must be normalised: no //, . or .. parts, no trailing /", dest);
        for (size_t i = 0; i < ARRAY_SIZE(reserved); i++)
                if (has_prefix_dir(dest, reserved[i]))
                        return xb_err_msg(err, EPERM, "mount path `%.200s` is inside %s, which execbox provides; "
                                          "use a path such as /home/user/NAME or /mnt/NAME", dest, reserved[i]);
        return 0;
}

bool
xb_bind_allowed(const char *real, const char *const *allow, size_t nallow)
{
        for (size_t i = 0; i < nallow; i++) {
                if (strcmp(allow[i], "/") == 0)
                        return real[0] == '/';
                if (has_prefix_dir(real, allow[i]))
                        return true;
        }
        return false;
}

int
xb_bind_resolve(struct xb_bind *b, const char *const *allow, size_t nallow, struct xb_err *err)
{
        static const char *const never[] = { "/proc", "/sys", "/dev" };
        char *real = realpath(b->host, NULL);

        if (!real)
                return xb_err_set(err, errno, "mount source %.200s", b->host);
        for (size_t i = 0; i < ARRAY_SIZE(never); i++)
                if (has_prefix_dir(real, never[i])) {
                        int r = xb_err_msg(err, EPERM, "mount source %.200s is inside %s, which is never bound into a sandbox",
                                           real, never[i]);
                        free(real);
                        return r;
                }
        if (!xb_bind_allowed(real, allow, nallow)) {
                int r = xb_err_msg(err, EPERM,
                                   "mount source %.200s is not in the operator's allowlist; allow it with "
                                   "--allow-mount DIR (or EXECBOX_ALLOW_MOUNTS=DIR:DIR)", real);
                free(real);
                return r;
        }
        free(b->host);
        b->host = real;
        return 0;
}

int
xb_binds_validate(const struct xb_bind *b, size_t n, struct xb_err *err)
{
        for (size_t i = 0; i < n; i++) {
                int r = xb_bind_dest_validate(b[i].dest, err);

                if (r < 0)
                        return r;
                for (size_t j = 0; j < n; j++)
                        if (i != j && has_prefix_dir(b[j].dest, b[i].dest))
                                return xb_err_msg(err, EINVAL,
                                                  strcmp(b[i].dest, b[j].dest) == 0
                                                          ? "two mounts use the same path %.200s"
                                                          : "mount path %.200s is inside another mount; use separate paths",
                                                  b[j].dest);
        }
        return 0;
}
