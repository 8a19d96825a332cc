/* The sandbox's system call filter, compiled at build time with libseccomp
 * (seccomp_policy.h) and installed in the setup child before init is exec'd, so
 * every process in a sandbox runs under it.
 *
 * Policy: an allowlist (Docker's default set without io_uring) with
 * default errno EPERM; ENOSYS for clone3 and for every number libseccomp
 * does not know (newer syscalls), so programs fall back; foreign ABIs
 * (i386, x32) kill the process. Namespace creation, the mount family,
 * keyrings, bpf, perf, userfaultfd, modules, kexec and open_by_handle_at
 * are not in the allowlist. TIOCSTI and TIOCLINUX are refused on the
 * 32-bit ioctl command; sockets are limited to unix, inet, inet6 and
 * netlink. */
#pragma once
#include <stddef.h>
#include <linux/filter.h>

#include "base/err.h"

struct xb_seccomp {
        struct sock_filter *main;   /* from libseccomp */
        unsigned short main_len;
        struct sock_filter *stub;   /* ENOSYS for unknown numbers; installed last */
        unsigned short stub_len;
};

/* Point s at the filters compiled into this binary (no allocation). */
int xb_seccomp_embedded(struct xb_seccomp *s, struct xb_err *err);
/* Install both filters; the caller has set no_new_privs. Async-signal-safe. */
int xb_seccomp_install(const struct xb_seccomp *s);
