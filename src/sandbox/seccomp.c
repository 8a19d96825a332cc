/* Installing the seccomp filters. The filters themselves are compiled at
 * build time by tools/gen_seccomp.c from seccomp_policy.c (libseccomp) and
 * embedded (blobs.S), so a sandbox start costs no filter compilation. */
#define _GNU_SOURCE
#include "seccomp.h"

#include <errno.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/seccomp.h>

extern const unsigned char xb_seccomp_main_bpf[], xb_seccomp_main_bpf_end[];
extern const unsigned char xb_seccomp_stub_bpf[], xb_seccomp_stub_bpf_end[];

int
xb_seccomp_embedded(struct xb_seccomp *s, struct xb_err *err)
{
        size_t main_len = (size_t)(xb_seccomp_main_bpf_end - xb_seccomp_main_bpf);
        size_t stub_len = (size_t)(xb_seccomp_stub_bpf_end - xb_seccomp_stub_bpf);

        if (!main_len || !stub_len || main_len % sizeof(struct sock_filter) ||
            stub_len % sizeof(struct sock_filter))
                return xb_err_msg(err, EINVAL, "the embedded seccomp filter is damaged; rebuild execbox");
        /* The blobs are aligned by blobs.S; the kernel copies them in. */
        s->main = (struct sock_filter *)(uintptr_t)xb_seccomp_main_bpf;
        s->main_len = (unsigned short)(main_len / sizeof(struct sock_filter));
        s->stub = (struct sock_filter *)(uintptr_t)xb_seccomp_stub_bpf;
        s->stub_len = (unsigned short)(stub_len / sizeof(struct sock_filter));
        return 0;
}

int
xb_seccomp_install(const struct xb_seccomp *s)
{
        struct sock_fprog main = { .len = s->main_len, .filter = s->main };
        struct sock_fprog stub = { .len = s->stub_len, .filter = s->stub };

        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &main) < 0)
                return -errno;
        /* Last installed wins among equal actions: ENOSYS beats the default EPERM. */
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &stub) < 0)
                return -errno;
        return 0;
}

