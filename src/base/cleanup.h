/* Scope-bound cleanup, after systemd's _cleanup_ idiom.
 * Every owning local is initialised and released on every return path;
 * TAKE_PTR/TAKE_FD hand ownership to the caller. */
#pragma once
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void xb_freep(void *p) { free(*(void **)p); }
static inline void xb_closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
static inline void xb_fclosep(FILE **f) { if (*f) fclose(*f); }
static inline void xb_closedirp(DIR **d) { if (*d) closedir(*d); }

#define _cleanup_free_ _cleanup_(xb_freep)
#define _cleanup_close_ _cleanup_(xb_closep)
#define _cleanup_fclose_ _cleanup_(xb_fclosep)
#define _cleanup_closedir_ _cleanup_(xb_closedirp)

#define TAKE_PTR(p) ({ __typeof__(p) _p = (p); (p) = NULL; _p; })
#define TAKE_FD(fd) ({ int _fd = (fd); (fd) = -EBADF; _fd; })

/* fdopendir(3) that takes *fd: on success the DIR owns it and *fd is
 * -EBADF; on failure (or *fd < 0) *fd is left to its owner. */
static inline DIR *
xb_take_fdopendir(int *fd)
{
        DIR *d = *fd >= 0 ? fdopendir(*fd) : NULL;

        if (d)
                *fd = -EBADF;
        return d;
}

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define XB_MIN(a, b) ((a) < (b) ? (a) : (b))
#define XB_MAX(a, b) ((a) > (b) ? (a) : (b))
