/* Kernel feature probes (features.h). Each asks the kernel the way the
 * sandbox would use the feature, so "available" means usable here: user
 * namespaces are tried in a short-lived child, since a sysctl, an LSM or
 * a container's seccomp profile may each refuse them. */
#define _GNU_SOURCE
#include "sandbox/features.h"

#include <errno.h>
#include <linux/landlock.h>
#include <linux/magic.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static bool
fs_is(const char *path, long magic)
{
        struct statfs sfs;

        return statfs(path, &sfs) == 0 && sfs.f_type == magic;
}

static const char *
cgroup_layout(void)
{
        if (fs_is("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC))
                return "v2";
        if (fs_is("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC))
                return "hybrid";
        /* The controllers execbox needs on v1: memory and pids. */
        if (fs_is("/sys/fs/cgroup/memory", CGROUP_SUPER_MAGIC) || fs_is("/sys/fs/cgroup/pids", CGROUP_SUPER_MAGIC))
                return "v1";
        return "none";
}

static int
userns_errno(void)
{
        int status;
        pid_t pid = fork();

        if (pid < 0)
                return errno;
        if (pid == 0)
                _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : errno & 0xff);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return errno;
        return WIFEXITED(status) ? WEXITSTATUS(status) : EIO;
}

void
xb_features_probe(struct xb_features *f)
{
        uint32_t action = SECCOMP_RET_ERRNO;
        long abi;

        *f = (struct xb_features){ .cgroup = cgroup_layout() };
        abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        f->landlock_abi = abi > 0 ? (int)abi : 0;
        f->landlock_errno = abi > 0 ? 0 : errno;
        /* The filter mode and the action the sandbox's filter returns. */
        f->seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 &&
                     syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
        f->seccomp_errno = f->seccomp ? 0 : errno;
        f->userns_errno = userns_errno();
        f->userns = f->userns_errno == 0;
}
