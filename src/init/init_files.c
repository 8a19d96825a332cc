/* File operations inside the sandbox, for the daemon (XB_REQ_FILE).
 *
 * Theory of operation. The daemon never opens a sandbox path: it sends
 * XB_REQ_FILE and init, pid 1 in the sandbox's pivoted root, does the work
 * in its own view. Every path is resolved with openat2(2) from a dirfd of
 * that root with RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS: ".." and
 * absolute symlinks stop at the root, and /proc magic links are refused.
 * An operation on a path's last component (create, mkdir, rename, unlink)
 * resolves the parent that way and then acts with an *at call on that
 * directory fd, so a rename race can move what is operated on, but never
 * out of the root. Each operation runs with the fsuid and fsgid the
 * request names (the sandbox user): the kernel applies the user's
 * permissions, since the fs capabilities leave the effective set while
 * fsuid != 0 (capabilities(7)), and new files belong to the user.
 *
 * Content never passes through init. READ and WRITE answer with one fd,
 * sent with SCM_RIGHTS, after which init closes its copy: the file is
 * first opened O_PATH and checked to be a regular file (a FIFO, socket or
 * device is never opened for I/O; nor are /proc's files, where "self" is
 * init), then reopened through /proc/self/fd/N, which cannot change the
 * inode. An absent file is created O_EXCL in its parent's fd. A symlink
 * as the last component is followed, inside the root, like a shell's ">"
 * (so no O_NOFOLLOW there); a dangling one is refused (ELOOP) rather than
 * creating its target. STAT, MOVE and DELETE act on the link itself.
 * Init is single-threaded and must never
 * block on what the sandbox controls: real opens are O_NONBLOCK (a FIFO
 * swapped in, a lease: open(2) fails with EWOULDBLOCK instead of
 * waiting), directories are walked with bounded depth and entry counts,
 * and LIST sends its entries in parts of at most XB_MSG_MAX bytes. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "init.h"
#include "base/cleanup.h"
#include "proto/pseudofs.h"

#define RM_DEPTH_MAX 128
#define RM_ENTRIES_MAX 100000
#define LIST_RESERVE 128        /* room left in a part for the final fields */
#define LIST_SEEN_MAX 100000    /* directory entries looked at, listed or not */
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)   /* linux/fs.h; musl has no renameat2 yet */
#endif

struct file_req {
        uint32_t tag;
        uint64_t op, uid, gid, mode, depth, flags;
        bool has_path2;
        char path[PATH_MAX];          /* not cleared between requests */
        char path2[PATH_MAX];
};

static int rootfd = -1;         /* "/" of the sandbox, as init sees it */
static int procfd = -1;         /* /proc/self/fd, for reopening O_PATH fds */
static struct stat root_st, home_st;
static bool have_home;
static uint8_t txbuf[XB_MSG_MAX];

/* ---- replies ---- */

static void
reply_error(uint32_t tag, int errnum, uint32_t type)
{
        uint8_t buf[64];
        struct xb_msgw w;

        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_FILE, tag);
        xb_msgw_u64(&w, XB_K_ERRNO, (uint64_t)(errnum > 0 && errnum < 4096 ? errnum : EIO));
        if (type)
                xb_msgw_u64(&w, XB_K_TYPE, type);
        xb_init_send(&w, NULL, 0);
}

static void
reply_ok(uint32_t tag, int fd, uint64_t count, bool with_count)
{
        uint8_t buf[64];
        struct xb_msgw w;

        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_FILE, tag);
        xb_msgw_u64(&w, XB_K_ERRNO, 0);
        if (with_count)
                xb_msgw_u64(&w, XB_K_COUNT, count);
        xb_init_send(&w, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0);
}

/* ---- resolution ---- */

static uint32_t
ftype(mode_t m)
{
        switch (m & S_IFMT) {
        case S_IFREG: return XB_FT_FILE;
        case S_IFDIR: return XB_FT_DIR;
        case S_IFLNK: return XB_FT_SYMLINK;
        case S_IFIFO: return XB_FT_FIFO;
        case S_IFSOCK: return XB_FT_SOCKET;
        case S_IFCHR: return XB_FT_CHR;
        case S_IFBLK: return XB_FT_BLK;
        default: return XB_FT_OTHER;
        }
}

static int
setup(void)
{
        _cleanup_close_ int fd = -EBADF;

        if (rootfd >= 0)
                return 0;
        fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &root_st) < 0)
                return -errno;
        rootfd = TAKE_FD(fd);
        /* Without /proc, reads and writes of existing files fail; the rest works. */
        procfd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
        have_home = stat("/home/user", &home_st) == 0;
        return 0;
}

/* Open an absolute path inside the root. A rename during the walk makes
 * openat2 fail with EAGAIN (openat2(2)); retry a few times. */
static int
resolve(const char *path, int flags)
{
        struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC),
                                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };

        for (int i = 0; i < 16; i++) {
                int fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));

                if (fd >= 0)
                        return fd;
                if (errno != EAGAIN)
                        return -errno;
        }
        return -EAGAIN;
}

/* One component below dirfd: no symlinks, no magic links, no mount crossing. */
static int
open_below(int dirfd, const char *name, int flags)
{
        struct open_how how = { .flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
                                           RESOLVE_NO_XDEV };
        int fd = (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));

        return fd < 0 ? -errno : fd;
}

/* Reopen an O_PATH fd of a checked regular file for I/O: the magic link
 * names the same inode, whatever happened to the path since. */
static int
reopen(int pathfd, int flags)
{
        char name[16];
        int fd;

        if (procfd < 0)
                return -ENOSYS;
        snprintf(name, sizeof(name), "%d", pathfd);
        fd = openat(procfd, name, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Split an absolute path into parent and last component (in buf). "/" is
 * -EBUSY; "." and ".." as the last component are -EINVAL. */
static int
split(const char *path, char *buf, size_t cap, const char **parent, const char **name)
{
        size_t n = strlen(path);
        char *slash;

        if (n >= cap)
                return -ENAMETOOLONG;
        memcpy(buf, path, n + 1);
        while (n > 1 && buf[n - 1] == '/')
                buf[--n] = '\0';
        slash = strrchr(buf, '/');
        if (!slash)
                return -EINVAL;
        *name = slash + 1;
        if (!**name)
                return -EBUSY;
        if (!strcmp(*name, ".") || !strcmp(*name, ".."))
                return -EINVAL;
        if (slash == buf)
                *parent = "/";
        else {
                *slash = '\0';
                *parent = buf;
        }
        return 0;
}

/* The sandbox's root and the home directory are never deleted or moved. */
static bool
protected(const struct stat *st)
{
        return S_ISDIR(st->st_mode) &&
               ((st->st_dev == root_st.st_dev && st->st_ino == root_st.st_ino) ||
                (have_home && st->st_dev == home_st.st_dev && st->st_ino == home_st.st_ino));
}

/* Create every missing directory of path; the last gets mode, the rest 0755. */
static int
make_dirs(const char *path, uint32_t mode, uint64_t *made)
{
        char buf[PATH_MAX], tmp[PATH_MAX];
        size_t n = strlen(path);
        int fd;

        if (n >= sizeof(buf))
                return -ENAMETOOLONG;
        memcpy(buf, path, n + 1);
        for (size_t i = 1; i <= n; i++) {
                const char *parent, *name;
                char c = buf[i];
                int r;

                if ((c != '/' && c != '\0') || buf[i - 1] == '/')
                        continue;
                buf[i] = '\0';
                fd = resolve(buf, O_PATH | O_DIRECTORY);
                if (fd >= 0)
                        close(fd);
                else if (fd == -ENOTDIR && c == '\0')
                        return -EEXIST;   /* there, but not a directory */
                else if (fd != -ENOENT)
                        return fd;
                else if ((r = split(buf, tmp, sizeof(tmp), &parent, &name)) < 0)
                        return r;
                else {
                        int pfd = resolve(parent, O_PATH | O_DIRECTORY);

                        if (pfd < 0)
                                return pfd;
                        r = mkdirat(pfd, name, c == '\0' ? mode : 0755) < 0 ? -errno : 0;
                        close(pfd);
                        if (r == 0)
                                (*made)++;
                        else if (r != -EEXIST)   /* raced, or a dangling symlink: the next step tells */
                                return r;
                }
                buf[i] = c;
        }
        fd = resolve(path, O_PATH | O_DIRECTORY);
        if (fd < 0)
                return fd == -ENOTDIR ? -EEXIST : fd;
        close(fd);
        return 0;
}

/* ---- operations ---- */

static void
op_read(const struct file_req *q)
{
        _cleanup_close_ int fd = resolve(q->path, O_PATH), rfd = -EBADF;
        struct stat st, st2;

        if (fd < 0) {
                reply_error(q->tag, -fd, 0);
                return;
        }
        if (fstat(fd, &st) < 0) {
                reply_error(q->tag, errno, 0);
                return;
        }
        if (!S_ISREG(st.st_mode) || xb_pseudo_fs(fd)) {
                reply_error(q->tag, S_ISDIR(st.st_mode) ? EISDIR : S_ISREG(st.st_mode) ? EOPNOTSUPP : EINVAL,
                            ftype(st.st_mode));
                return;
        }
        rfd = reopen(fd, O_RDONLY);
        if (rfd < 0) {
                reply_error(q->tag, -rfd, 0);
                return;
        }
        if (fstat(rfd, &st2) < 0 || !S_ISREG(st2.st_mode) || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev) {
                reply_error(q->tag, EAGAIN, 0);
                return;
        }
        reply_ok(q->tag, rfd, 0, false);
}

/* The fd of an existing regular file at path (the last symlink followed,
 * inside the root), opened for writing; -ENOENT if nothing is there. */
static int
open_existing(const struct file_req *q, uint32_t *type)
{
        _cleanup_close_ int fd = resolve(q->path, O_PATH), wfd = -EBADF;
        struct stat st;

        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || xb_pseudo_fs(fd)) {
                *type = ftype(st.st_mode);
                return S_ISDIR(st.st_mode) ? -EISDIR : S_ISREG(st.st_mode) ? -EOPNOTSUPP : -EINVAL;
        }
        wfd = reopen(fd, O_WRONLY | ((q->flags & XB_FILE_APPEND) ? O_APPEND : 0));
        if (wfd < 0)
                return wfd;
        /* Permission to chmod first, so a refusal leaves the file as it was. */
        if (((q->flags & XB_FILE_MODE_SET) && fchmod(wfd, (mode_t)q->mode) < 0) ||
            (!(q->flags & XB_FILE_APPEND) && ftruncate(wfd, 0) < 0))
                return -errno;
        return TAKE_FD(wfd);
}

static void
op_write(const struct file_req *q)
{
        char buf[PATH_MAX];
        const char *parent, *name;
        uint64_t made = 0;
        uint32_t type = 0;
        struct stat st;
        _cleanup_close_ int fd = -ENOENT;   /* an fd, or -errno */
        int r;

        if ((r = split(q->path, buf, sizeof(buf), &parent, &name)) < 0 ||
            ((q->flags & XB_FILE_PARENTS) && (r = make_dirs(parent, 0755, &made)) < 0)) {
                reply_error(q->tag, r == -EBUSY ? EISDIR : -r, 0);
                return;
        }
        for (int tries = 0; fd == -ENOENT; tries++) {
                if (tries == 4) {
                        fd = -EAGAIN;   /* something keeps appearing and vanishing there */
                        break;
                }
                _cleanup_close_ int pfd = -EBADF;

                fd = open_existing(q, &type);
                if (fd != -ENOENT)
                        break;
                /* Absent: create it, O_EXCL, so whatever appears meanwhile is never opened. */
                pfd = resolve(parent, O_PATH | O_DIRECTORY);
                if (pfd < 0) {
                        fd = pfd;
                        break;
                }
                fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                                       ((q->flags & XB_FILE_APPEND) ? O_APPEND : 0), (mode_t)q->mode);
                if (fd < 0 && errno == EEXIST) {
                        /* Raced, or a dangling symlink: the latter stays refused. */
                        fd = fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode) ? -ELOOP
                                                                                                   : -ENOENT;
                } else if (fd < 0)
                        fd = -errno;
        }
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                reply_error(q->tag, fd < 0 ? -fd : EAGAIN, type);
                return;
        }
        reply_ok(q->tag, fd, 0, false);
}

static void
op_stat(const struct file_req *q)
{
        uint8_t buf[256 + PATH_MAX];
        char target[PATH_MAX];
        struct xb_msgw w;
        struct stat st;
        _cleanup_close_ int fd = resolve(q->path, O_PATH | O_NOFOLLOW);

        if (fd < 0) {
                reply_error(q->tag, -fd, 0);
                return;
        }
        if (fstat(fd, &st) < 0) {
                reply_error(q->tag, errno, 0);
                return;
        }
        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_FILE, q->tag);
        xb_msgw_u64(&w, XB_K_ERRNO, 0);
        xb_msgw_u64(&w, XB_K_TYPE, ftype(st.st_mode));
        xb_msgw_u64(&w, XB_K_MODE, st.st_mode & 07777);
        xb_msgw_u64(&w, XB_K_SIZE, st.st_size > 0 ? (uint64_t)st.st_size : 0);
        xb_msgw_u64(&w, XB_K_MTIME_NS, (uint64_t)((int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec));
        /* A magic link's "target" would describe init's own fds: not sent. */
        if (S_ISLNK(st.st_mode) && !xb_pseudo_fs(fd)) {
                ssize_t n = readlinkat(fd, "", target, sizeof(target));

                if (n > 0 && (size_t)n < sizeof(target))
                        xb_msgw_put(&w, XB_K_DATA, target, (size_t)n);
        }
        xb_init_send(&w, NULL, 0);
}

struct lister {
        uint32_t tag;
        struct xb_msgw w;
        uint64_t count, bytes, seen;
        bool trunc;
        char rel[PATH_MAX];
        uint8_t entry[sizeof(struct xb_file_entry) + PATH_MAX];
};

static void
list_start(struct lister *l)
{
        xb_msgw_init(&l->w, txbuf, sizeof(txbuf), XB_EV_FILE, l->tag);
        xb_msgw_u64(&l->w, XB_K_ERRNO, 0);
}

static void
list_add(struct lister *l, const struct stat *st, size_t rel_len)
{
        struct xb_file_entry e = {
                .type = ftype(st->st_mode), .mode = st->st_mode & 07777,
                .size = st->st_size > 0 ? (uint64_t)st->st_size : 0,
                .mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
        };
        size_t need = 8 + ((sizeof(e) + rel_len + 3) & ~(size_t)3);

        if (l->count >= XB_FILE_LIST_MAX || l->bytes + rel_len > XB_FILE_LIST_BYTES_MAX) {
                l->trunc = true;
                return;
        }
        if (l->w.len + need + LIST_RESERVE > l->w.cap) {
                xb_msgw_u64(&l->w, XB_K_FLAGS, XB_FILE_MORE);
                xb_init_send(&l->w, NULL, 0);
                list_start(l);
        }
        memcpy(l->entry, &e, sizeof(e));
        memcpy(l->entry + sizeof(e), l->rel, rel_len);
        xb_msgw_put(&l->w, XB_K_ENTRY, l->entry, sizeof(e) + rel_len);
        l->count++;
        l->bytes += rel_len;
}

/* Depth-first, entries before their contents; takes dfd. Directories
 * are entered without following symlinks; unreadable ones are skipped. */
static void
list_dir(struct lister *l, int dfd, size_t rel_len, unsigned depth, unsigned maxdepth)
{
        DIR *d = fdopendir(dfd);
        struct dirent *de;

        if (!d) {
                close(dfd);
                return;
        }
        while (!l->trunc && (de = readdir(d))) {
                size_t nlen = strlen(de->d_name), len = rel_len + (rel_len ? 1 : 0) + nlen;
                struct stat st;

                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                        continue;
                /* Entries that cannot be listed (no search permission) still cost time. */
                if (++l->seen > LIST_SEEN_MAX) {
                        l->trunc = true;
                        break;
                }
                if (len >= XB_FILE_PATH_MAX || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (rel_len)
                        l->rel[rel_len] = '/';
                memcpy(l->rel + rel_len + (rel_len ? 1 : 0), de->d_name, nlen);
                list_add(l, &st, len);
                if (S_ISDIR(st.st_mode) && depth < maxdepth && !l->trunc) {
                        /* One component from readdir: O_NOFOLLOW covers symlinks and magic links. */
                        int c = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK |
                                                             O_CLOEXEC);

                        if (c >= 0)
                                list_dir(l, c, len, depth + 1, maxdepth);
                }
        }
        closedir(d);
}

static void
op_list(const struct file_req *q)
{
        static struct lister l;
        int fd = resolve(q->path, O_RDONLY | O_DIRECTORY | O_NONBLOCK);

        if (fd < 0) {
                reply_error(q->tag, -fd, 0);
                return;
        }
        memset(&l, 0, offsetof(struct lister, rel));
        l.tag = q->tag;
        list_start(&l);
        list_dir(&l, fd, 0, 1, (unsigned)q->depth);
        xb_msgw_u64(&l.w, XB_K_COUNT, l.count);
        xb_msgw_u64(&l.w, XB_K_TRUNC, l.trunc ? 1 : 0);
        xb_init_send(&l.w, NULL, 0);
}

static void
op_mkdir(const struct file_req *q)
{
        char buf[PATH_MAX];
        const char *parent, *name;
        uint64_t made = 0;
        _cleanup_close_ int pfd = -EBADF;
        int r;

        if (q->flags & XB_FILE_PARENTS) {
                r = make_dirs(q->path, (uint32_t)q->mode, &made);
        } else if ((r = split(q->path, buf, sizeof(buf), &parent, &name)) == 0 &&
                   (r = pfd = resolve(parent, O_PATH | O_DIRECTORY)) >= 0) {
                r = mkdirat(pfd, name, (mode_t)q->mode) < 0 ? -errno : 0;
                made = r == 0;
        }
        if (r < 0)
                reply_error(q->tag, r == -EBUSY ? EEXIST : -r, 0);
        else
                reply_ok(q->tag, -1, made, true);
}

static void
op_move(const struct file_req *q)
{
        char sbuf[PATH_MAX], dbuf[PATH_MAX];
        const char *sparent, *sname, *dparent, *dname;
        struct stat st;
        _cleanup_close_ int spfd = -EBADF, dpfd = -EBADF;
        int r;

        if ((r = split(q->path, sbuf, sizeof(sbuf), &sparent, &sname)) < 0 ||
            (r = split(q->path2, dbuf, sizeof(dbuf), &dparent, &dname)) < 0 ||
            (r = spfd = resolve(sparent, O_PATH | O_DIRECTORY)) < 0 ||
            (r = dpfd = resolve(dparent, O_PATH | O_DIRECTORY)) < 0)
                goto out;
        if (fstatat(spfd, sname, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                r = -errno;
                goto out;
        }
        if (protected(&st)) {
                r = -EBUSY;
                goto out;
        }
        r = syscall(SYS_renameat2, spfd, sname, dpfd, dname,
                    (q->flags & XB_FILE_OVERWRITE) ? 0 : RENAME_NOREPLACE) < 0 ? -errno : 0;
out:
        if (r < 0)
                reply_error(q->tag, -r, 0);
        else
                reply_ok(q->tag, -1, 0, false);
}

/* Empty the directory dfd (taken) depth-first, on one mount, without
 * following symlinks; counts what it removes. */
static int
rm_tree(int dfd, unsigned depth, uint64_t *count)
{
        DIR *d = fdopendir(dfd);
        struct dirent *de;
        int r = 0;

        if (!d) {
                r = -errno;
                close(dfd);
                return r;
        }
        while (r == 0) {
                struct stat st;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        r = errno ? -errno : 0;
                        break;
                }
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                        continue;
                if (*count >= RM_ENTRIES_MAX) {
                        r = -E2BIG;
                        break;
                }
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = errno == ENOENT ? 0 : -errno;
                        continue;
                }
                if (S_ISDIR(st.st_mode)) {
                        int c;

                        if (depth >= RM_DEPTH_MAX) {
                                r = -E2BIG;
                                break;
                        }
                        c = open_below(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
                        if (c < 0) {
                                r = c == -EXDEV ? -EBUSY : c;   /* a mount point: stay on this one */
                                break;
                        }
                        r = rm_tree(c, depth + 1, count);
                        if (r == 0 && unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0)
                                r = -errno;
                } else if (unlinkat(dirfd(d), de->d_name, 0) < 0)
                        r = errno == ENOENT ? 0 : -errno;
                if (r == 0)
                        (*count)++;
        }
        closedir(d);
        return r;
}

static void
op_delete(const struct file_req *q)
{
        char buf[PATH_MAX];
        const char *parent, *name;
        uint64_t count = 0;
        struct stat st;
        _cleanup_close_ int pfd = -EBADF;
        int r;

        if ((r = split(q->path, buf, sizeof(buf), &parent, &name)) < 0 ||
            (r = pfd = resolve(parent, O_PATH | O_DIRECTORY)) < 0)
                goto out;
        if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                r = -errno;
                goto out;
        }
        if (protected(&st)) {
                r = -EBUSY;
                goto out;
        }
        if (!S_ISDIR(st.st_mode)) {
                r = unlinkat(pfd, name, 0) < 0 ? -errno : 0;
                count = r == 0;
                goto out;
        }
        if (q->flags & XB_FILE_RECURSIVE) {
                int dfd = open_below(pfd, name, O_RDONLY | O_DIRECTORY | O_NONBLOCK);

                if (dfd < 0) {
                        r = dfd == -EXDEV ? -EBUSY : dfd;
                        goto out;
                }
                if ((r = rm_tree(dfd, 1, &count)) < 0)
                        goto out;
        }
        r = unlinkat(pfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
        if (r == 0)
                count++;
out:
        if (r < 0)
                reply_error(q->tag, -r, 0);
        else
                reply_ok(q->tag, -1, count, true);
}

/* ---- the request ---- */

static int
copy_path(const struct xb_field *f, char *dst)
{
        if (f->len >= PATH_MAX)
                return -ENAMETOOLONG;
        if (!xb_field_is_str(f) || f->len == 0 || f->data[0] != '/')
                return -EINVAL;
        memcpy(dst, f->data, f->len);
        dst[f->len] = '\0';
        return 0;
}

static int
parse(const struct xb_msgr *r, struct file_req *q)
{
        size_t cur = 0;
        struct xb_field f;
        bool has_path = false, has_uid = false, has_gid = false;

        memset(q, 0, offsetof(struct file_req, path));
        q->tag = r->tag;
        q->mode = 0644;
        q->depth = 1;
        while (xb_msgr_next(r, &cur, &f)) {
                uint64_t v;

                if (f.key == XB_K_PATH || f.key == XB_K_PATH2) {
                        int e = copy_path(&f, f.key == XB_K_PATH ? q->path : q->path2);

                        if (e < 0)
                                return e;
                        if (f.key == XB_K_PATH)
                                has_path = true;
                        else
                                q->has_path2 = true;
                        continue;
                }
                if (f.len != sizeof(v))
                        return -EINVAL;
                memcpy(&v, f.data, sizeof(v));
                switch (f.key) {
                case XB_K_OP: q->op = v; break;
                case XB_K_UID: q->uid = v; has_uid = true; break;
                case XB_K_GID: q->gid = v; has_gid = true; break;
                case XB_K_MODE: q->mode = v; break;
                case XB_K_DEPTH: q->depth = v; break;
                case XB_K_FLAGS: q->flags = v; break;
                default: return -EINVAL;
                }
        }
        if (!has_path || !has_uid || !has_gid || q->uid > 65535 || q->gid > 65535 || q->mode > 07777 ||
            q->depth < 1 || q->depth > XB_FILE_DEPTH_MAX || q->op < XB_FOP_READ || q->op > XB_FOP_DELETE ||
            q->has_path2 != (q->op == XB_FOP_MOVE))
                return -EINVAL;
        return 0;
}

/* Act as uid:gid for the filesystem; verified, since setfsuid(2) reports
 * no error. Init must never stay at another fsuid: its root commands
 * would inherit it. */
static bool
become(uint32_t uid, uint32_t gid)
{
        setfsgid(gid);
        setfsuid(uid);
        return (uint32_t)setfsuid(uid) == uid && (uint32_t)setfsgid(gid) == gid;
}

void
xb_init_file(const struct xb_msgr *r, int *fds, size_t nfds)
{
        static struct file_req q;
        mode_t old_umask;
        int e;

        for (size_t i = 0; i < nfds; i++)
                close(fds[i]);
        if ((e = nfds ? -EINVAL : parse(r, &q)) < 0) {
                reply_error(r->tag, -e, 0);
                return;
        }
        if ((e = setup()) < 0) {
                reply_error(r->tag, -e, 0);
                return;
        }
        /* Modes are exact: no umask. */
        old_umask = umask(0);
        if (!become((uint32_t)q.uid, (uint32_t)q.gid)) {
                reply_error(r->tag, EPERM, 0);
        } else {
                switch (q.op) {
                case XB_FOP_READ: op_read(&q); break;
                case XB_FOP_WRITE: op_write(&q); break;
                case XB_FOP_STAT: op_stat(&q); break;
                case XB_FOP_LIST: op_list(&q); break;
                case XB_FOP_MKDIR: op_mkdir(&q); break;
                case XB_FOP_MOVE: op_move(&q); break;
                case XB_FOP_DELETE: op_delete(&q); break;
                }
        }
        umask(old_umask);
        if (!become(0, 0))
                _exit(74);
}
