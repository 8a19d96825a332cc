/* What this kernel offers the sandbox, probed at run time for `execbox
 * --version`: the cgroup layout, Landlock, seccomp filters and user
 * namespaces. Read-only probes: nothing on the host is changed. */
#pragma once
#include <stdbool.h>

struct xb_features {
        const char *cgroup;       /* "v2", "hybrid" (v1 controllers and a v2 tree), "v1" or "none" */
        int landlock_abi;         /* 0: none */
        int landlock_errno;       /* why none: ENOSYS (not built), EOPNOTSUPP (disabled at boot) */
        bool seccomp;             /* filters can be installed */
        int seccomp_errno;
        bool userns;              /* this process can make a user namespace */
        int userns_errno;
};

void xb_features_probe(struct xb_features *f);
