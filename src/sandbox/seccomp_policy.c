/* The seccomp policy, compiled with libseccomp. This runs at build time
 * (tools/gen_seccomp.c) and in unit tests; execbox itself embeds the result. */
#define _GNU_SOURCE
#include "seccomp.h"
#include "seccomp_policy.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/seccomp.h>

#include "base/cleanup.h"

#if defined(__x86_64__)
#define XB_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define XB_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "execbox supports x86_64 and aarch64"
#endif

/* clang-format off */
/* Allowed without conditions. Names unknown on this architecture are skipped. */
static const char *const allowed[] = {
        "accept", "accept4", "access", "adjtimex", "alarm", "arch_prctl", "bind", "brk",
        "capget", "capset", "chdir", "chmod", "chown", "chroot", "clock_adjtime",
        "clock_getres", "clock_gettime", "clock_nanosleep", "close", "close_range",
        "connect", "copy_file_range", "creat", "dup", "dup2", "dup3", "epoll_create",
        "epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2", "epoll_wait",
        "eventfd", "eventfd2", "execve", "execveat", "exit", "exit_group", "faccessat",
        "faccessat2", "fadvise64", "fallocate", "fanotify_mark", "fchdir", "fchmod",
        "fchmodat", "fchown", "fchownat", "fcntl", "fdatasync", "fgetxattr", "flistxattr",
        "flock", "fork", "fremovexattr", "fsetxattr", "fstat", "fstatfs", "fsync",
        "ftruncate", "futex", "futex_waitv", "futimesat", "getcpu", "getcwd", "getdents",
        "getdents64", "getegid", "geteuid", "getgid", "getgroups", "getitimer",
        "getpeername", "getpgid", "getpgrp", "getpid", "getppid", "getpriority",
        "getrandom", "getresgid", "getresuid", "getrlimit", "get_robust_list",
        "getrusage", "getsid", "getsockname", "getsockopt", "get_thread_area", "gettid",
        "gettimeofday", "getuid", "getxattr", "inotify_add_watch", "inotify_init",
        "inotify_init1", "inotify_rm_watch", "io_cancel", "io_destroy", "io_getevents",
        "io_pgetevents", "ioprio_get", "ioprio_set", "io_setup", "io_submit", "ipc",
        "kill", "landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self",
        "lchown", "lgetxattr", "link", "linkat", "listen", "listxattr", "llistxattr",
        "lremovexattr", "lseek", "lsetxattr", "lstat", "madvise", "membarrier",
        "memfd_create", "memfd_secret", "mincore", "mkdir", "mkdirat", "mknod", "mknodat",
        "mlock", "mlock2", "mlockall", "mmap", "modify_ldt", "mprotect", "mq_getsetattr",
        "mq_notify", "mq_open", "mq_timedreceive", "mq_timedsend", "mq_unlink", "mremap",
        "msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock", "munlockall", "munmap",
        "name_to_handle_at", "nanosleep", "newfstatat", "open", "openat", "openat2",
        "pause", "pidfd_getfd", "pidfd_open", "pidfd_send_signal", "pipe", "pipe2",
        "pkey_alloc", "pkey_free", "pkey_mprotect", "poll", "ppoll", "prctl", "pread64",
        "preadv", "preadv2", "prlimit64", "process_mrelease", "process_vm_readv",
        "process_vm_writev", "pselect6", "ptrace", "pwrite64", "pwritev", "pwritev2",
        "read", "readahead", "readlink", "readlinkat", "readv", "recvfrom", "recvmmsg",
        "recvmsg", "remap_file_pages", "removexattr", "rename", "renameat", "renameat2",
        "restart_syscall", "rmdir", "rseq", "rt_sigaction", "rt_sigpending",
        "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend",
        "rt_sigtimedwait", "rt_tgsigqueueinfo", "sched_getaffinity", "sched_getattr",
        "sched_getparam", "sched_get_priority_max", "sched_get_priority_min",
        "sched_getscheduler", "sched_rr_get_interval", "sched_setaffinity",
        "sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp",
        "select", "semctl", "semget", "semop", "semtimedop", "sendfile", "sendmmsg",
        "sendmsg", "sendto", "setfsgid", "setfsuid", "setgid", "setgroups", "setitimer",
        "setpgid", "setpriority", "setregid", "setresgid", "setresuid", "setreuid",
        "setrlimit", "set_robust_list", "setsid", "setsockopt", "set_thread_area",
        "set_tid_address", "setuid", "setxattr", "shmat", "shmctl", "shmdt", "shmget",
        "shutdown", "sigaltstack", "signalfd", "signalfd4", "splice", "stat", "statfs",
        "statx", "symlink", "symlinkat", "sync", "sync_file_range", "syncfs", "sysinfo",
        "tee", "tgkill", "time", "timer_create", "timer_delete", "timer_getoverrun",
        "timer_gettime", "timer_settime", "timerfd_create", "timerfd_gettime",
        "timerfd_settime", "times", "tkill", "truncate", "umask", "uname", "unlink",
        "unlinkat", "utime", "utimensat", "utimes", "vfork", "vmsplice", "wait4",
        "waitid", "write", "writev",
};

/* personality(2) values Docker allows: none, UNAME26, ADDR_NO_RANDOMIZE, both, query. */
static const unsigned long personalities[] = { 0x0, 0x8, 0x20000, 0x20008, 0xffffffff };
static const int socket_families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };
/* clang-format on */

#define NS_FLAGS (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | \
                  CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME)

static int
add_rules(scmp_filter_ctx ctx)
{
        int r;

        for (size_t i = 0; i < ARRAY_SIZE(allowed); i++) {
                int nr = seccomp_syscall_resolve_name(allowed[i]);

                if (nr == __NR_SCMP_ERROR || nr < 0)
                        continue;
                if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0)) < 0)
                        return r;
        }
        /* clone: threads and plain forks, never new namespaces. */
        r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, NS_FLAGS, 0));
        if (r < 0)
                return r;
        /* clone3 hides its flags in memory: say it does not exist, so libc falls back to clone. */
        if ((r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0)) < 0)
                return r;
        for (size_t i = 0; i < ARRAY_SIZE(personalities); i++)
                if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(personality), 1,
                                          SCMP_A0(SCMP_CMP_EQ, personalities[i]))) < 0)
                        return r;
        for (size_t i = 0; i < ARRAY_SIZE(socket_families); i++)
                if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                                          SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)socket_families[i]))) < 0)
                        return r;
        if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair), 1,
                                  SCMP_A0(SCMP_CMP_EQ, AF_UNIX))) < 0)
                return r;
        /* ioctl is allowed here; the stub refuses TIOCSTI and TIOCLINUX. */
        return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 0);
}

/* Export the libseccomp program as raw BPF through a memfd. */
static int
export_bpf(scmp_filter_ctx ctx, struct sock_filter **ret, unsigned short *ret_len)
{
        _cleanup_close_ int fd = memfd_create("execbox-seccomp", MFD_CLOEXEC);
        off_t size;
        struct sock_filter *prog;
        int r;

        if (fd < 0)
                return -errno;
        if ((r = seccomp_export_bpf(ctx, fd)) < 0)
                return r;
        size = lseek(fd, 0, SEEK_END);
        if (size <= 0 || size % (off_t)sizeof(struct sock_filter) ||
            size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS)
                return -E2BIG;
        prog = malloc((size_t)size);
        if (!prog)
                return -ENOMEM;
        if (pread(fd, prog, (size_t)size, 0) != size) {
                free(prog);
                return -EIO;
        }
        *ret = prog;
        *ret_len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
        return 0;
}

/* The stub, a second filter written by hand:
 *  - ioctl(TIOCSTI) and ioctl(TIOCLINUX) get EPERM, comparing only the low
 *    32 bits of the command as the kernel does (a filter that compares all
 *    64 bits is bypassed by setting the high ones);
 *  - syscall numbers libseccomp cannot name get ENOSYS, so newer syscalls
 *    look absent rather than forbidden and libc falls back.
 * libseccomp refuses a rule whose action equals the default (EPERM), which
 * is why the ioctl check lives here. */
static int
build_stub(struct sock_filter **ret, unsigned short *ret_len)
{
        uint32_t lo[64], hi[64];
        size_t nr = 0, n = 0;
        struct sock_filter *p;
        int prev_unknown = 0;

        for (int i = 0; i < 1024; i++) {
                char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, i);
                int unknown = name == NULL;

                free(name);
                if (unknown && !prev_unknown) {
                        if (nr == ARRAY_SIZE(lo))
                                return -E2BIG;
                        lo[nr] = hi[nr] = (uint32_t)i;
                        nr++;
                } else if (unknown)
                        hi[nr - 1] = (uint32_t)i;
                prev_unknown = unknown;
        }
        /* Everything past the table up to the x32 bit is unknown too. */
        if (prev_unknown)
                hi[nr - 1] = 0x3fffffff;
        else {
                lo[nr] = 1024;
                hi[nr] = 0x3fffffff;
                nr++;
        }
        /* Layout: 0-3 arch and x32 checks, 4-8 ioctl, 2 per range, then
         * ALLOW, ENOSYS, EPERM. Jumps are relative to the next instruction. */
        size_t allow_at = 9 + 2 * nr, enosys_at = allow_at + 1, eperm_at = allow_at + 2;
        if (eperm_at > 250)
                return -E2BIG;
        p = calloc(eperm_at + 1, sizeof(*p));
        if (!p)
                return -ENOMEM;
#define J(cond, k, t, f) p[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | (cond) | BPF_K, (k), (uint8_t)(t), (uint8_t)(f)), n++
#define S(code, k) p[n] = (struct sock_filter)BPF_STMT((code), (k)), n++
        S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        J(BPF_JEQ, XB_AUDIT_ARCH, 0, allow_at - n - 1);
        S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        J(BPF_JGE, 0x40000000, allow_at - n - 1, 0);          /* x32: the main filter kills it */
        J(BPF_JEQ, SYS_ioctl, 0, 3);                          /* not ioctl: skip to the ranges */
        S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1]));  /* low word (LE) */
        J(BPF_JEQ, TIOCSTI, eperm_at - n - 1, 0);
        J(BPF_JEQ, TIOCLINUX, eperm_at - n - 1, allow_at - n - 1);
        S(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        for (size_t i = 0; i < nr; i++) {
                J(BPF_JGE, lo[i], 0, 1);                      /* nr >= lo ? */
                J(BPF_JGT, hi[i], 0, enosys_at - n - 1);      /* nr <= hi ? ENOSYS */
        }
        S(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        S(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
        S(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
#undef J
#undef S
        *ret = p;
        *ret_len = (unsigned short)n;
        return 0;
}

int
xb_seccomp_policy_build(struct xb_seccomp *s, struct xb_err *err)
{
        scmp_filter_ctx ctx;
        int r;

        memset(s, 0, sizeof(*s));
        ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
        if (!ctx)
                return xb_err_set(err, ENOMEM, "seccomp_init");
        /* Only the native ABI is in the filter; i386 and x32 calls get this. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r >= 0)
                r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
        if (r >= 0)
                r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        if (r >= 0)
                r = add_rules(ctx);
        if (r >= 0)
                r = export_bpf(ctx, &s->main, &s->main_len);
        seccomp_release(ctx);
        if (r < 0)
                return xb_err_set(err, -r, "build seccomp filter");
        r = build_stub(&s->stub, &s->stub_len);
        if (r < 0) {
                xb_seccomp_policy_free(s);
                return xb_err_set(err, -r, "build seccomp ENOSYS stub");
        }
        return 0;
}

void
xb_seccomp_policy_free(struct xb_seccomp *s)
{
        free(s->main);
        free(s->stub);
        memset(s, 0, sizeof(*s));
}
