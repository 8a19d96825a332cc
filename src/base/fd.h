/* Small fd helpers: full reads and writes, flags, and closing every fd
 * but a kept set. All return -errno on failure. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

int xb_write_all(int fd, const void *p, size_t n);
/* Read up to max bytes of a file at dirfd/path into a NUL-terminated malloc'd string. */
int xb_read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len);
/* Write a whole small string into an existing file (cgroup and /proc knobs). */
int xb_write_file_at(int dirfd, const char *path, const char *s);
/* Replace dirfd/name with data atomically: a temp file beside it, fsync,
 * rename, fsync of the directory. A crash or a full disk leaves the old
 * file or none, never a part; the temp is removed on failure. */
int xb_write_file_atomic(int dirfd, const char *name, const void *data, size_t n, mode_t mode);
int xb_set_nonblock(int fd, bool on);
int xb_set_cloexec(int fd, bool on);
/* Close every fd >= 3 that is not in keep[0..n). */
int xb_close_all_except(const int *keep, size_t n);
