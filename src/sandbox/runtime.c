/* The runtime directory and the cached init image.
 *
 * Why a file and not a memfd per process: copying the 700 KB image into a
 * fresh memfd on every `execbox run` and faulting it in cost a tenth of a
 * sandbox start. The file is executed from the page cache instead. A
 * sandbox cannot rewrite it: it is owned by the host's root, which no
 * sandbox maps, and the kernel refuses writes to a running executable
 * (ETXTBSY); the directory is not mounted in any sandbox. */
#define _GNU_SOURCE
#include "runtime.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"

extern const unsigned char xb_init_image[];
extern const unsigned char xb_init_image_end[];
/* Execute-only: a sandbox cannot read it, so the kernel starts init not
 * dumpable (fs/exec.c, would_dump), with no window before init's own
 * PR_SET_DUMPABLE in which a process of the sandbox could ptrace it or take
 * its socket. (The daemon reads it as the host's root.) */
#define XB_INIT_MODE 0111

extern const char xb_init_hash[];

int
xb_runtime_open(const char *dir, struct xb_err *err)
{
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return xb_err_set(err, errno, "create %s", dir);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return xb_err_set(err, errno, "open %s", dir);
        if (fstat(fd, &st) < 0 || st.st_uid != 0)
                return xb_err_msg(err, EPERM, "%s is not owned by root; remove it and try again", dir);
        if ((st.st_mode & 07777) != 0700)
                fchmod(fd, 0700);
        return TAKE_FD(fd);
}

static bool
image_ok(int fd, size_t size)
{
        struct stat st;

        return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && st.st_gid == 0 &&
               (st.st_mode & 07777) == XB_INIT_MODE && st.st_nlink == 1 && (size_t)st.st_size == size;
}

/* Remove other builds' images once they are an hour old: a process of
 * another build may be between writing its image and opening it, and a
 * running sandbox keeps its inode anyway. */
static void
remove_stale(int dirfd, const char *keep)
{
        _cleanup_close_ int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_closedir_ DIR *d = xb_take_fdopendir(&fd);
        struct dirent *de;

        if (!d)
                return;
        while ((de = readdir(d))) {
                struct stat st;

                if (strncmp(de->d_name, "init-", 5) == 0 && strcmp(de->d_name, keep) != 0 &&
                    fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && time(NULL) - st.st_mtime > 3600)
                        unlinkat(dirfd, de->d_name, 0);
        }
}

int
xb_runtime_init_image(int dirfd, struct xb_err *err)
{
        size_t size = (size_t)(xb_init_image_end - xb_init_image);
        char name[64], tmp[96];

        snprintf(name, sizeof(name), "init-%s", xb_init_hash);
        {
                _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

                if (fd >= 0 && image_ok(fd, size))
                        return TAKE_FD(fd);
        }

        snprintf(tmp, sizeof(tmp), ".%s.%d", name, (int)getpid());
        unlinkat(dirfd, tmp, 0);
        {
                /* Closed before the rename: a file open for writing cannot be run (ETXTBSY). */
                _cleanup_close_ int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                                0500);

                if (fd < 0)
                        return xb_err_set(err, errno, "write the init image");
                if (xb_write_all(fd, xb_init_image, size) < 0 || fchmod(fd, XB_INIT_MODE) < 0 || fsync(fd) < 0) {
                        int e = errno;

                        unlinkat(dirfd, tmp, 0);
                        return xb_err_set(err, e, "write the init image");
                }
        }
        if (renameat(dirfd, tmp, dirfd, name) < 0) {
                int e = errno;

                unlinkat(dirfd, tmp, 0);
                return xb_err_set(err, e, "install the init image");
        }
        remove_stale(dirfd, name);
        {
                _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

                if (fd < 0 || !image_ok(fd, size))
                        return xb_err_msg(err, EIO, "the init image in the runtime directory is not as written");
                return TAKE_FD(fd);
        }
}
