/* The btrfs layer store: image, loop device, subvolumes, snapshots and
 * qgroup limits, all by ioctl (btrfs-progs only formats a new image). */
#define _GNU_SOURCE
#include "store.h"

#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/loop.h>
#include <linux/magic.h>

#include "base/cleanup.h"

const char *const xb_layer_parts[XB_LAYER_PARTS] = { "root", "usr", "etc", "dpkg" };

static const char *const store_dirs[] = { "sbx", "layers", "base" };

extern char **environ;

/* FNV-1a: a short stable name for the state directory's mount point. */
static unsigned long long
hash(const char *s)
{
        unsigned long long h = 1469598103934665603ULL;

        for (; *s; s++)
                h = (h ^ (unsigned char)*s) * 1099511628211ULL;
        return h;
}

static int
run_mkfs(const char *image, struct xb_err *err)
{
        static const char *const progs[] = { "/usr/sbin/mkfs.btrfs", "/sbin/mkfs.btrfs", "/usr/bin/mkfs.btrfs" };
        const char *prog = NULL;
        posix_spawn_file_actions_t fa;
        pid_t pid;
        int st, r;

        for (size_t i = 0; i < ARRAY_SIZE(progs) && !prog; i++)
                if (access(progs[i], X_OK) == 0)
                        prog = progs[i];
        if (!prog)
                return xb_err_msg(err, ENOENT, "mkfs.btrfs not found: install btrfs-progs, or use --layers=memory");
        {
                char *argv[] = { (char *)prog, (char *)"-q", (char *)"-f", (char *)image, NULL };

                posix_spawn_file_actions_init(&fa);
                posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
                posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
                r = posix_spawn(&pid, prog, &fa, NULL, argv, environ);
                posix_spawn_file_actions_destroy(&fa);
        }
        if (r)
                return xb_err_set(err, r, "run %s", prog);
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return xb_err_set(err, errno, "wait for mkfs.btrfs");
        if (!WIFEXITED(st) || WEXITSTATUS(st))
                return xb_err_msg(err, EIO, "mkfs.btrfs %s failed", image);
        return 0;
}

/* A free loop device backed by image, released at the last unmount. */
static int
loop_attach(int imgfd, char *name, size_t len, struct xb_err *err)
{
        _cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);

        if (ctl < 0)
                return xb_err_set(err, errno, "open /dev/loop-control");
        /* Another process may take the device between GET_FREE and CONFIGURE. */
        for (int tries = 0; tries < 16; tries++) {
                struct loop_config lc = { .fd = (unsigned)imgfd,
                                          .info = { .lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO } };
                int n = ioctl(ctl, LOOP_CTL_GET_FREE);
                int dev;

                if (n < 0)
                        return xb_err_set(err, errno, "find a free loop device");
                snprintf(name, len, "/dev/loop%d", n);
                dev = open(name, O_RDWR | O_CLOEXEC);
                if (dev < 0)
                        return xb_err_set(err, errno, "open %s", name);
                if (ioctl(dev, LOOP_CONFIGURE, &lc) == 0)
                        return dev;
                if (errno == EINVAL) {
                        /* Direct I/O needs the backing fs to support it. */
                        lc.info.lo_flags &= ~(unsigned)LO_FLAGS_DIRECT_IO;
                        if (ioctl(dev, LOOP_CONFIGURE, &lc) == 0)
                                return dev;
                }
                {
                        int e = errno;

                        close(dev);
                        if (e != EBUSY)
                                return xb_err_set(err, e, "configure %s", name);
                }
        }
        return xb_err_msg(err, EBUSY, "no loop device stayed free");
}

/* The loop device already backed by the image (st), if one is: a sandbox
 * of an earlier daemon may hold the store's superblock still. A second
 * device over the same btrfs would be a second device with one fsid, which
 * corrupts it; the existing one is opened (its open keeps autoclear off
 * until the mount holds it) and checked again once open. -ENOENT: none. */
static int
loop_find(const struct stat *st, char *name, size_t len)
{
        _cleanup_closedir_ DIR *d = opendir("/sys/block");
        struct dirent *de;

        if (!d)
                return -ENOENT;
        while ((de = readdir(d))) {
                struct loop_info64 li;
                char *end;
                int dev;

                if (strncmp(de->d_name, "loop", 4) || !de->d_name[4] || (strtoul(de->d_name + 4, &end, 10), *end))
                        continue;
                snprintf(name, len, "/dev/%s", de->d_name);
                dev = open(name, O_RDWR | O_CLOEXEC);
                if (dev < 0)
                        continue;
                if (ioctl(dev, LOOP_GET_STATUS64, &li) == 0 && li.lo_device == (uint64_t)st->st_dev &&
                    li.lo_inode == (uint64_t)st->st_ino)
                        return dev;
                close(dev);
        }
        return -ENOENT;
}

static int
mount_image(const char *image, const char *mnt, uint64_t size, struct xb_err *err)
{
        _cleanup_close_ int img = -EBADF, dev = -EBADF;
        char name[32];
        struct stat st;
        bool fresh = false;
        int r;

        img = open(image, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (img < 0 && errno == ENOENT) {
                img = open(image, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (img < 0)
                        return xb_err_set(err, errno, "create %s", image);
                if (ftruncate(img, (off_t)size) < 0) {
                        r = xb_err_set(err, errno, "size %s", image);
                        unlink(image);
                        return r;
                }
                fresh = true;
        } else if (img < 0)
                return xb_err_set(err, errno, "open %s", image);
        if (fstat(img, &st) < 0)
                return xb_err_set(err, errno, "stat %s", image);
        if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077))
                return xb_err_msg(err, EPERM, "%s must be a regular file of root's, mode 0600", image);
        if (fresh && (r = run_mkfs(image, err)) < 0) {
                unlink(image);
                return r;
        }
        if (fresh || (r = loop_find(&st, name, sizeof(name))) < 0)
                r = loop_attach(img, name, sizeof(name), err);
        if (r < 0)
                return r;
        dev = r;
        if (mount(name, mnt, "btrfs", MS_NOSUID | MS_NODEV | MS_NOATIME, "discard=async") < 0)
                return xb_err_set(err, errno, "mount %s on %s", image, mnt);
        return 0;
}

static int
quota_enable(int fd, struct xb_err *err)
{
        struct btrfs_ioctl_quota_ctl_args q = { .cmd = BTRFS_QUOTA_CTL_ENABLE };

        if (ioctl(fd, BTRFS_IOC_QUOTA_CTL, &q) < 0 && errno != EEXIST)
                return xb_err_set(err, errno, "enable btrfs quotas on the layer store");
        return 0;
}

/* The store's dirty page cache, bounded: a qgroup reserves a write's space
 * when it enters the page cache, but the image in the state directory
 * grows only at writeback, so without a bound a sandbox could have a GiB
 * on its way to a filesystem with less free, past any check of its free
 * space (core/diskguard.c). With strict_limit the bound holds whatever
 * the host's own dirty figures: writers wait for writeback, they do not
 * fail. Best effort: kernels before 6.2 have no max_bytes. */
static void
dirty_bound(int fd)
{
        struct btrfs_ioctl_fs_info_args fi = { 0 };
        const unsigned char *u = fi.fsid;
        static const char *const knobs[][2] = { { "max_bytes", "67108864" }, { "strict_limit", "1" } };

        if (ioctl(fd, BTRFS_IOC_FS_INFO, &fi) < 0)
                return;
        for (size_t i = 0; i < ARRAY_SIZE(knobs); i++) {
                char path[160];
                _cleanup_close_ int k = -EBADF;

                snprintf(path, sizeof(path),
                         "/sys/fs/btrfs/%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x/bdi/%s",
                         u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                         u[14], u[15], knobs[i][0]);
                k = open(path, O_WRONLY | O_CLOEXEC);
                if (k >= 0 && write(k, knobs[i][1], strlen(knobs[i][1])) < 0)
                        continue;
        }
}

int
xb_store_open(const char *state_dir, const char *runtime_dir, uint64_t size, struct xb_store **ret,
              struct xb_err *err)
{
        _cleanup_free_ struct xb_store *s = calloc(1, sizeof(*s));
        struct statfs sf;
        char buf[4096];
        int r;

        if (!s)
                return xb_err_set(err, ENOMEM, "store");
        s->fd = -1;
        if (statfs(state_dir, &sf) < 0)
                return xb_err_set(err, errno, "state directory %s", state_dir);
        if (sf.f_type == BTRFS_SUPER_MAGIC) {
                /* A real btrfs: the store is a directory of it. */
                snprintf(buf, sizeof(buf), "%s/layers", state_dir);
                if (mkdir(buf, 0700) < 0 && errno != EEXIST)
                        return xb_err_set(err, errno, "create %s", buf);
        } else {
                char image[4096];

                snprintf(image, sizeof(image), "%s/layers.img", state_dir);
                snprintf(buf, sizeof(buf), "%s/store-%016llx", runtime_dir, hash(state_dir));
                if (mkdir(buf, 0700) < 0 && errno != EEXIST)
                        return xb_err_set(err, errno, "create %s", buf);
                /* The store is mounted in a mount namespace of our own,
                 * a slave of the host's: the host's mounts still reach us
                 * (and the sandboxes), ours never reach the host, and when
                 * we die the namespace, the mount and (autoclear) the loop
                 * device go with us. Needs a single-threaded caller. */
                if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
                        return xb_err_set(err, errno, "a mount namespace for the layer store");
                if (statfs(buf, &sf) == 0 && sf.f_type == BTRFS_SUPER_MAGIC)
                        umount2(buf, MNT_DETACH);
                if ((r = mount_image(image, buf, size, err)) < 0)
                        return r;
                s->mounted = true;
        }
        s->path = strdup(buf);
        s->fd = open(buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (!s->path || s->fd < 0) {
                r = xb_err_set(err, s->path ? errno : ENOMEM, "open the layer store %s", buf);
                goto fail;
        }
        if (s->mounted)
                dirty_bound(s->fd);
        if (fchmod(s->fd, 0700) < 0 || (r = quota_enable(s->fd, err)) < 0) {
                if (!err->msg[0])
                        xb_err_set(err, errno, "chmod %s", buf);
                r = -EIO;
                goto fail;
        }
        for (size_t i = 0; i < ARRAY_SIZE(store_dirs); i++)
                if (mkdirat(s->fd, store_dirs[i], 0700) < 0 && errno != EEXIST) {
                        r = xb_err_set(err, errno, "create %s/%s", buf, store_dirs[i]);
                        goto fail;
                }
        *ret = TAKE_PTR(s);
        return 0;
fail:
        xb_store_close(TAKE_PTR(s));
        return r;
}

void
xb_store_close(struct xb_store *s)
{
        if (!s)
                return;
        if (s->fd >= 0)
                close(s->fd);
        /* Detached: sandboxes still dying hold it until their end; the
         * superblock, and with it the loop device, goes with the last. */
        if (s->mounted && umount2(s->path, MNT_DETACH) == 0)
                rmdir(s->path);
        free(s->path);
        free(s);
}

/* The limit of the subvolume of fd, set through root (the store's top):
 * the ioctl's transaction is then the top's, so a subvolume at or past its
 * limit can still be given a new one (through itself it gets EDQUOT). */
static int
limit_set2(int root, int fd, uint64_t limit)
{
        struct btrfs_ioctl_ino_lookup_args il = { .treeid = 0, .objectid = BTRFS_FIRST_FREE_OBJECTID };
        struct btrfs_ioctl_qgroup_limit_args q = {
                .lim = { .flags = BTRFS_QGROUP_LIMIT_MAX_RFER, .max_rfer = limit },
        };

        if (ioctl(fd, BTRFS_IOC_INO_LOOKUP, &il) < 0)
                return -errno;
        q.qgroupid = il.treeid;
        return ioctl(root, BTRFS_IOC_QGROUP_LIMIT, &q) < 0 ? -errno : 0;
}

static int
limit_set(int fd, uint64_t limit)
{
        struct btrfs_ioctl_qgroup_limit_args q = {
                .qgroupid = 0,   /* the subvolume of fd */
                .lim = { .flags = BTRFS_QGROUP_LIMIT_MAX_RFER, .max_rfer = limit },
        };

        return ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &q) < 0 ? -errno : 0;
}

static int
open_dir(int at, const char *name)
{
        return openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
}

static int
valid_name(const char *name)
{
        size_t n = strlen(name);

        if (n == 0 || n > 64 || strchr(name, '/') || name[0] == '.')
                return -EINVAL;
        return 0;
}

int
xb_store_layer_create(struct xb_store *s, const char *name, uint64_t limit, struct xb_err *err)
{
        struct btrfs_ioctl_vol_args va = { 0 };
        _cleanup_close_ int dir = -EBADF, sub = -EBADF, up = -EBADF, wk = -EBADF;
        int r;

        if (valid_name(name) < 0)
                return xb_err_msg(err, EINVAL, "bad layer name");
        dir = open_dir(s->fd, "sbx");
        if (dir < 0)
                return xb_err_set(err, errno, "open the store's sbx");
        snprintf(va.name, sizeof(va.name), "%s", name);
        if (ioctl(dir, BTRFS_IOC_SUBVOL_CREATE, &va) < 0)
                return xb_err_set(err, errno, "create the writable layer %s", name);
        sub = open_dir(dir, name);
        if (sub < 0) {
                r = xb_err_set(err, errno, "open the writable layer %s", name);
                goto fail;
        }
        if (limit && (r = limit_set(sub, limit)) < 0) {
                xb_err_set(err, -r, "set the disk limit of %s", name);
                goto fail;
        }
        if (mkdirat(sub, "up", 0755) < 0 || mkdirat(sub, "wk", 0700) < 0 ||
            (up = open_dir(sub, "up")) < 0 || (wk = open_dir(sub, "wk")) < 0) {
                r = xb_err_set(err, errno, "fill the writable layer %s", name);
                goto fail;
        }
        for (size_t i = 0; i < XB_LAYER_PARTS; i++)
                if (mkdirat(up, xb_layer_parts[i], 0755) < 0 || mkdirat(wk, xb_layer_parts[i], 0700) < 0) {
                        r = xb_err_set(err, errno, "fill the writable layer %s", name);
                        goto fail;
                }
        return 0;
fail:
        xb_store_delete(s, "sbx", name, NULL);
        return r;
}

int
xb_store_snapshot(struct xb_store *s, const char *src, const char *dir, const char *dst, bool readonly,
                  uint64_t limit, struct xb_err *err)
{
        struct btrfs_ioctl_vol_args_v2 va = { .flags = readonly ? BTRFS_SUBVOL_RDONLY : 0 };
        _cleanup_close_ int sdir = -EBADF, sfd = -EBADF, ddir = -EBADF;
        int r;

        if (valid_name(src) < 0 || valid_name(dst) < 0 || (strcmp(dir, "sbx") && strcmp(dir, "layers")))
                return xb_err_msg(err, EINVAL, "bad layer name");
        sdir = open_dir(s->fd, "sbx");
        ddir = open_dir(s->fd, dir);
        if (sdir < 0 || ddir < 0)
                return xb_err_set(err, errno, "open the layer store");
        /* The source is our own subvolume, opened without following links:
         * nothing the sandbox made is ever looked up by the daemon. */
        sfd = open_dir(sdir, src);
        if (sfd < 0)
                return xb_err_set(err, errno, "open the writable layer %s", src);
        va.fd = sfd;
        snprintf(va.name, sizeof(va.name), "%s", dst);
        if (ioctl(ddir, BTRFS_IOC_SNAP_CREATE_V2, &va) < 0)
                return xb_err_set(err, errno, "snapshot %s", src);
        if (limit) {
                _cleanup_close_ int nfd = open_dir(ddir, dst);

                if (nfd < 0 || (r = limit_set(nfd, limit)) < 0) {
                        r = xb_err_set(err, nfd < 0 ? errno : -r, "set the disk limit of %s", dst);
                        xb_store_delete(s, dir, dst, NULL);
                        return r;
                }
        }
        return 0;
}

int
xb_store_limit(struct xb_store *s, const char *name, uint64_t limit)
{
        _cleanup_close_ int dir = -EBADF, sub = -EBADF;

        if (valid_name(name) < 0)
                return -EINVAL;
        dir = open_dir(s->fd, "sbx");
        if (dir < 0 || (sub = open_dir(dir, name)) < 0)
                return -errno;
        return limit_set2(s->fd, sub, limit);
}

int
xb_store_adopt(struct xb_store *s, const char *from, const char *name, uint64_t limit, struct xb_err *err)
{
        _cleanup_close_ int dir = -EBADF, sub = -EBADF;
        int r;

        if (valid_name(from) < 0 || valid_name(name) < 0)
                return xb_err_msg(err, EINVAL, "bad layer name");
        dir = open_dir(s->fd, "sbx");
        if (dir < 0)
                return xb_err_set(err, errno, "open the store's sbx");
        if (renameat2(dir, from, dir, name, RENAME_NOREPLACE) < 0)
                return xb_err_set(err, errno, "take the writable layer %s", from);
        if (limit && ((sub = open_dir(dir, name)) < 0 || (r = limit_set(sub, limit)) < 0)) {
                r = xb_err_set(err, sub < 0 ? errno : -r, "set the disk limit of %s", name);
                xb_store_delete(s, "sbx", name, NULL);
                return r;
        }
        return 0;
}

int
xb_store_delete(struct xb_store *s, const char *dir, const char *name, struct xb_err *err)
{
        _cleanup_close_ int d = -EBADF, sub = -EBADF;
        struct btrfs_ioctl_vol_args va = { 0 };
        uint64_t id = 0;

        if (valid_name(name) < 0)
                return xb_err_msg(err, EINVAL, "bad layer name");
        d = open_dir(s->fd, dir);
        if (d < 0)
                return xb_err_set(err, errno, "open the layer store");
        sub = open_dir(d, name);
        if (sub < 0)
                return errno == ENOENT ? 0 : xb_err_set(err, errno, "open layer %s", name);
        {
                struct btrfs_ioctl_ino_lookup_args il = { .objectid = BTRFS_FIRST_FREE_OBJECTID };

                if (ioctl(sub, BTRFS_IOC_INO_LOOKUP, &il) == 0)
                        id = il.treeid;
        }
        close(TAKE_FD(sub));
        snprintf(va.name, sizeof(va.name), "%s", name);
        if (ioctl(d, BTRFS_IOC_SNAP_DESTROY, &va) < 0)
                return xb_err_set(err, errno, "delete layer %s", name);
        if (id) {
                /* Its qgroup stays behind otherwise; the kernel refuses while
                 * the cleaner still accounts the subvolume, which is harmless. */
                struct btrfs_ioctl_qgroup_create_args qc = { .create = 0, .qgroupid = id };

                ioctl(s->fd, BTRFS_IOC_QGROUP_CREATE, &qc);
        }
        return 0;
}

int
xb_store_list(struct xb_store *s, const char *dir, void (*fn)(const char *name, void *data), void *data)
{
        int fd = open_dir(s->fd, dir);
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        fn(de->d_name, data);
        return 0;
}

int
xb_store_rename_layer(struct xb_store *s, const char *from, const char *to, struct xb_err *err)
{
        _cleanup_close_ int d = -EBADF;

        if (valid_name(from) < 0 || valid_name(to) < 0)
                return xb_err_msg(err, EINVAL, "bad layer name");
        d = open_dir(s->fd, "layers");
        if (d < 0)
                return xb_err_set(err, errno, "open the layer store");
        if (renameat2(d, from, d, to, RENAME_NOREPLACE) < 0)
                return xb_err_set(err, errno, "rename layer %s", from);
        return 0;
}

bool
xb_store_has(struct xb_store *s, const char *dir, const char *name)
{
        char path[128];
        struct stat st;

        if (valid_name(name) < 0 || (strcmp(dir, "sbx") && strcmp(dir, "layers")))
                return false;
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        return fstatat(s->fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}
