/* `execbox --version`: the release, the commit it was built from (baked in
 * by the Makefile from `git describe`, else "unknown"), and what this
 * kernel offers the sandbox, probed now: a sandbox needs all four. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/version.h"
#include "cli/cli.h"
#include "sandbox/features.h"

extern const char xb_git_commit[];

static const char *
why(int errnum, char *buf, size_t size)
{
        snprintf(buf, size, "unavailable (%s)", strerror(errnum));
        return buf;
}

int
xb_cmd_version(void)
{
        struct xb_features f;
        char buf[160];

        xb_features_probe(&f);
        printf("execbox %s\n", XB_VERSION);
        printf("commit: %s\n", xb_git_commit[0] ? xb_git_commit : "unknown");
        printf("cgroup: %s\n", f.cgroup);
        if (f.landlock_abi)
                printf("landlock: ABI %d\n", f.landlock_abi);
        else
                printf("landlock: %s\n", f.landlock_errno == EOPNOTSUPP ? "unavailable (disabled at boot)"
                                                                        : why(f.landlock_errno, buf, sizeof(buf)));
        printf("seccomp: %s\n", f.seccomp ? "available" : why(f.seccomp_errno, buf, sizeof(buf)));
        printf("user namespaces: %s\n", f.userns ? "available" : why(f.userns_errno, buf, sizeof(buf)));
        return fflush(stdout) == 0 ? 0 : XB_EXIT_OWN_ERROR;
}
