/* fd helpers. */
#define _GNU_SOURCE
#include "fd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"

int
xb_write_all(int fd, const void *p, size_t n)
{
        const char *c = p;

        while (n > 0) {
                ssize_t w = write(fd, c, n);

                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                c += w;
                n -= (size_t)w;
        }
        return 0;
}

int
xb_write_file_atomic(int dirfd, const char *name, const void *data, size_t n, mode_t mode)
{
        char tmp[512];
        int r = 0;

        if (snprintf(tmp, sizeof(tmp), ".%s.tmp.%d", name, (int)getpid()) >= (int)sizeof(tmp))
                return -ENAMETOOLONG;
        unlinkat(dirfd, tmp, 0);
        {
                _cleanup_close_ int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);

                if (fd < 0)
                        return -errno;
                if ((r = xb_write_all(fd, data, n)) < 0 || (fsync(fd) < 0 && (r = -errno)))
                        goto fail;
        }
        if (renameat(dirfd, tmp, dirfd, name) < 0) {
                r = -errno;
                goto fail;
        }
        {
                _cleanup_close_ int d = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                /* The rename itself survives a crash once its directory is synced. */
                if (d >= 0)
                        fsync(d);
        }
        return 0;
fail:
        unlinkat(dirfd, tmp, 0);
        return r;
}

int
xb_read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        _cleanup_free_ char *p = NULL;
        size_t len = 0;

        if (fd < 0)
                return -errno;
        p = malloc(max + 1);
        if (!p)
                return -ENOMEM;
        while (len < max) {
                ssize_t r = read(fd, p + len, max - len);

                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (r == 0)
                        break;
                len += (size_t)r;
        }
        p[len] = '\0';
        if (ret_len)
                *ret_len = len;
        *ret = TAKE_PTR(p);
        return 0;
}

int
xb_write_file_at(int dirfd, const char *path, const char *s)
{
        _cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        size_t n = strlen(s);
        ssize_t w;

        if (fd < 0)
                return -errno;
        /* Kernel knobs take one write; a short write is an error. */
        w = write(fd, s, n);
        if (w < 0)
                return -errno;
        return (size_t)w == n ? 0 : -EIO;
}

int
xb_set_nonblock(int fd, bool on)
{
        int fl = fcntl(fd, F_GETFL);

        if (fl < 0)
                return -errno;
        fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
        return fcntl(fd, F_SETFL, fl) < 0 ? -errno : 0;
}

int
xb_set_cloexec(int fd, bool on)
{
        int fl = fcntl(fd, F_GETFD);

        if (fl < 0)
                return -errno;
        fl = on ? (fl | FD_CLOEXEC) : (fl & ~FD_CLOEXEC);
        return fcntl(fd, F_SETFD, fl) < 0 ? -errno : 0;
}

static int
cmp_int(const void *a, const void *b)
{
        int x = *(const int *)a, y = *(const int *)b;

        return (x > y) - (x < y);
}

int
xb_close_all_except(const int *keep, size_t n)
{
        int sorted[16];
        unsigned int from = 3;

        if (n > ARRAY_SIZE(sorted))
                return -EINVAL;
        memcpy(sorted, keep, n * sizeof(int));
        qsort(sorted, n, sizeof(int), cmp_int);
        for (size_t i = 0; i < n; i++) {
                if (sorted[i] < (int)from)
                        continue;
                if ((unsigned int)sorted[i] > from &&
                    syscall(SYS_close_range, from, (unsigned int)sorted[i] - 1, 0) < 0)
                        return -errno;
                from = (unsigned int)sorted[i] + 1;
        }
        if (syscall(SYS_close_range, from, ~0U, 0) < 0)
                return -errno;
        return 0;
}
