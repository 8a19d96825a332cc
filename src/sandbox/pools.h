/* Kernel pools that sandboxes would otherwise share with each other and
 * with the host's root: inotify instances and watches, ptys, and queued
 * signals. Each sandbox gets a cap of its own, and the host's limits are
 * raised (never lowered) so that every sandbox at its cap still leaves
 * the host what it had. */
#pragma once
#include <stdint.h>

#include "base/err.h"

#define XB_SBX_INOTIFY_INSTANCES 128   /* per uid of a sandbox (user.max_inotify_instances) */
#define XB_SBX_INOTIFY_WATCHES 16384   /* per uid of a sandbox (user.max_inotify_watches) */
#define XB_SBX_PTYS 64                 /* its devpts instance's max= */
#define XB_SBX_SIGPENDING_MIN 16

/* Raise the host's fs.inotify.max_user_instances, max_user_watches and
 * kernel.pty.max so that max_sandboxes sandboxes at their caps fit beside
 * what the host already has. Returns the queued-signal cap each sandbox
 * gets (a quarter of this process's RLIMIT_SIGPENDING, shared out, at
 * least XB_SBX_SIGPENDING_MIN). A sysctl that cannot be raised (a
 * read-only /proc/sys) is left, with err naming it and -errno. */
int xb_pools_reserve(unsigned max_sandboxes, uint64_t *ret_sigpending, struct xb_err *err);

/* In the sandbox's user namespace, with CAP_SYS_RESOURCE there: its own
 * inotify caps (/proc/sys/user, see namespaces(7)). 0 as well where the
 * kernel has no such files or /proc/sys is read-only. */
int xb_pools_limit_userns(struct xb_err *err);
