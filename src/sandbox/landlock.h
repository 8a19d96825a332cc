/* Landlock, best effort at the best ABI the kernel offers: reads and
 * executes anywhere in the sandbox's root, writes only below the writable
 * mounts (and to existing files of /proc and /dev), ioctls on devices only
 * in /dev. Returns the ABI used (0 when the
 * kernel has no Landlock, which is not an error). */
#pragma once
#include <stddef.h>

#include "base/err.h"

struct xb_landlock_path {
        const char *path;
        int writable;         /* else read, execute and list only */
};

/* Restrict the calling process (after no_new_privs). Setup child only.
 * exec_fd, if not -1, is one file outside the root that may still be run:
 * the init image. */
int xb_landlock_apply(const struct xb_landlock_path *paths, size_t n, int exec_fd, struct xb_err *err);
/* The Landlock ABI version of this kernel, 0 if none. */
int xb_landlock_abi(void);
