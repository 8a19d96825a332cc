/* Capabilities with capget/capset and prctl, no libcap: the static init
 * links this too. */
#define _GNU_SOURCE
#include "caps.h"

#include <errno.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

uint64_t
xb_caps_default_mask(void)
{
        static const int caps[] = {
                CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_KILL, CAP_SETGID,
                CAP_SETUID, CAP_SETPCAP, CAP_NET_BIND_SERVICE, CAP_NET_RAW, CAP_SYS_CHROOT,
                CAP_MKNOD, CAP_AUDIT_WRITE, CAP_SETFCAP,
        };
        uint64_t m = 0;

        for (unsigned i = 0; i < sizeof(caps) / sizeof(caps[0]); i++)
                m |= 1ULL << caps[i];
        return m;
}

int
xb_caps_bound(uint64_t keep)
{
        for (int c = 0; c < 64; c++) {
                if (keep & (1ULL << c))
                        continue;
                if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
                        if (errno == EINVAL)
                                break;   /* past CAP_LAST_CAP */
                        return -errno;
                }
        }
        return 0;
}

static int
set_caps(int keep_pe)
{
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2];

        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        for (int i = 0; i < 2; i++) {
                d[i].inheritable = 0;
                if (!keep_pe)
                        d[i].permitted = d[i].effective = 0;
        }
        if (syscall(SYS_capset, &h, d) < 0)
                return -errno;
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return -errno;
        return 0;
}

int
xb_caps_clear_inheritable(void)
{
        return set_caps(1);
}

int
xb_caps_drop_all(void)
{
        return set_caps(0);
}
