/* xbprobe's attacks: raw system calls the policy must refuse (each tried in
 * a forked child, so a seccomp kill is reported, not suffered), and attacks
 * on the sandbox's init from inside. Facts only; pytest judges them. */
#define _GNU_SOURCE
#include "xbprobe.h"

/* ---- syscall attacks ---- */

static int
devnull(void)
{
        return open("/dev/null", O_RDWR | O_CLOEXEC);
}

static long a_unshare(long flags) { return syscall(SYS_unshare, flags); }
static long a_unshare_user(void) { return a_unshare(CLONE_NEWUSER); }
static long a_unshare_mnt(void) { return a_unshare(CLONE_NEWNS); }
static long a_unshare_net(void) { return a_unshare(CLONE_NEWNET); }
static long a_unshare_pid(void) { return a_unshare(CLONE_NEWPID); }
static long a_unshare_uts(void) { return a_unshare(CLONE_NEWUTS); }
static long a_unshare_ipc(void) { return a_unshare(CLONE_NEWIPC); }
static long a_unshare_cgroup(void) { return a_unshare(CLONE_NEWCGROUP); }
static long a_unshare_time(void) { return a_unshare(CLONE_NEWTIME); }

/* Raw clone(2): the child exits at once; the parent reaps it. */
static long
a_clone(unsigned long flags)
{
        long r = syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, 0);

        if (r == 0)
                _exit(0);
        if (r > 0)
                waitpid((pid_t)r, NULL, 0);
        return r;
}
static long a_clone_newuser(void) { return a_clone(CLONE_NEWUSER); }
static long a_clone_newns(void) { return a_clone(CLONE_NEWNS); }
static long a_clone_newnet(void) { return a_clone(CLONE_NEWNET); }
static long a_clone_newpid(void) { return a_clone(CLONE_NEWPID); }
/* Flags in the high half of the 64-bit argument: the kernel ignores them. */
static long a_clone_newuser_hi(void) { return a_clone((1UL << 32) | CLONE_NEWUSER); }
static long a_clone_plain(void) { return a_clone(0); }

struct xb_clone_args {
        uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

static long
a_clone3_flags(uint64_t flags)
{
        struct xb_clone_args ca = { .flags = flags, .exit_signal = SIGCHLD };
        long r = syscall(SYS_clone3, &ca, sizeof(ca));

        if (r == 0)
                _exit(0);
        if (r > 0)
                waitpid((pid_t)r, NULL, 0);
        return r;
}
static long a_clone3(void) { return a_clone3_flags(0); }
static long a_clone3_newuser(void) { return a_clone3_flags(CLONE_NEWUSER); }

static long a_mount(void) { return syscall(SYS_mount, "none", "/tmp", "tmpfs", 0UL, NULL); }
static long a_mount_bind(void) { return syscall(SYS_mount, "/", "/tmp", NULL, (unsigned long)MS_BIND, NULL); }
static long a_mount_remount_rw(void)
{
        return syscall(SYS_mount, NULL, "/", NULL, (unsigned long)(MS_REMOUNT | MS_BIND), NULL);
}
static long a_umount2(void) { return syscall(SYS_umount2, "/proc/sys", MNT_DETACH); }
static long a_pivot_root(void) { return syscall(SYS_pivot_root, "/tmp", "/tmp"); }
static long a_chroot(void) { return syscall(SYS_chroot, "/tmp"); }
static long a_keyctl(void) { return syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0); }
static long a_add_key(void) { return syscall(SYS_add_key, "user", "xb", "v", 1, KEY_SPEC_PROCESS_KEYRING); }
static long a_request_key(void) { return syscall(SYS_request_key, "user", "xb", NULL, KEY_SPEC_PROCESS_KEYRING); }
static long a_io_uring_setup(void)
{
        unsigned char params[120] = { 0 };

        return syscall(SYS_io_uring_setup, 4, params);
}
static long a_io_uring_enter(void) { return syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0); }
static long a_io_uring_register(void) { return syscall(SYS_io_uring_register, -1, 0, NULL, 0); }
static long a_userfaultfd(void) { return syscall(SYS_userfaultfd, O_CLOEXEC); }
static long a_bpf(void)
{
        /* BPF_MAP_CREATE of an array: type 2, key 4, value 4, 1 entry. */
        uint32_t attr[32] = { 2, 4, 4, 1 };

        return syscall(SYS_bpf, 0, attr, sizeof(attr));
}
static long a_perf_event_open(void)
{
        /* PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, this process. */
        uint32_t attr[32] = { 1, 128, 0, 0 };

        return syscall(SYS_perf_event_open, attr, 0, -1, -1, 0);
}
static long a_init_module(void) { return syscall(SYS_init_module, NULL, 0, ""); }
static long a_finit_module(void) { return syscall(SYS_finit_module, -1, "", 0); }
static long a_delete_module(void) { return syscall(SYS_delete_module, "xb_none", 0); }
static long a_kexec_load(void) { return syscall(SYS_kexec_load, 0, 0, NULL, 0); }
static long a_kexec_file_load(void) { return syscall(SYS_kexec_file_load, -1, -1, 0, "", 0); }
static long a_open_by_handle_at(void)
{
        unsigned char h[8 + 128] = { 0 };
        int root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        h[0] = 8;   /* handle_bytes */
        return syscall(SYS_open_by_handle_at, root, h, O_RDONLY);
}
static long a_setns(void)
{
        int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

        return syscall(SYS_setns, fd, 0);
}
static long a_setns_pid1_mnt(void)
{
        int fd = open("/proc/1/ns/mnt", O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -1;
        return syscall(SYS_setns, fd, CLONE_NEWNS);
}
static long a_fsopen(void) { return syscall(SYS_fsopen, "tmpfs", 0); }
static long a_fsconfig(void) { return syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0); }
static long a_fsmount(void) { return syscall(SYS_fsmount, -1, 0, 0); }
static long a_fspick(void) { return syscall(SYS_fspick, AT_FDCWD, "/tmp", 0); }
static long a_open_tree(void) { return syscall(SYS_open_tree, AT_FDCWD, "/tmp", 1 /* OPEN_TREE_CLONE */); }
static long a_move_mount(void) { return syscall(SYS_move_mount, -1, "", AT_FDCWD, "/tmp", 4 /* F_EMPTY_PATH */); }
static long a_mount_setattr(void) { return syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, NULL, 0); }
static long a_statmount(void) { return syscall(NR_STATMOUNT, NULL, NULL, 0, 0); }
static long a_listmount(void) { return syscall(NR_LISTMOUNT, NULL, NULL, 0, 0); }
static long a_open_tree_attr(void) { return syscall(NR_OPEN_TREE_ATTR, AT_FDCWD, "/tmp", 1, NULL, 0); }
static long a_syslog(void) { return syscall(SYS_syslog, 10 /* SIZE_BUFFER */, NULL, 0); }
static long a_acct(void) { return syscall(SYS_acct, NULL); }
static long a_swapoff(void) { return syscall(SYS_swapoff, "/nonexistent"); }
/* A bad magic: even if the call got through, the kernel refuses it. */
static long a_reboot(void) { return syscall(SYS_reboot, 0, 0, 0, NULL); }
static long a_clock_settime(void)
{
        struct timespec ts = { 0 };

        /* CLOCK_MONOTONIC cannot be set: harmless if the call got through. */
        return syscall(SYS_clock_settime, CLOCK_MONOTONIC, &ts);
}
static long a_settimeofday(void) { return syscall(SYS_settimeofday, NULL, NULL); }
static long a_sethostname(void) { return syscall(SYS_sethostname, "pwned", 5); }
static long a_setdomainname(void) { return syscall(SYS_setdomainname, "pwned", 5); }
static long a_iopl(void) { return syscall(SYS_iopl, 3); }
static long a_ioperm(void) { return syscall(SYS_ioperm, 0x80, 1, 1); }
static long a_quotactl(void) { return syscall(SYS_quotactl, 0, NULL, 0, NULL); }
static long a_lookup_dcookie(void) { return syscall(SYS_lookup_dcookie, 0, NULL, 0); }
static long a_vhangup(void) { return syscall(SYS_vhangup); }
static long a_nfsservctl(void) { return syscall(SYS_nfsservctl, 0, NULL, NULL); }
static long a_fanotify_init(void) { return syscall(SYS_fanotify_init, 0, O_RDONLY); }
static long a_name_to_handle_at(void)
{
        unsigned char h[8 + 128] = { 0 };
        int mnt;

        h[0] = 128;
        return syscall(SYS_name_to_handle_at, AT_FDCWD, "/tmp", h, &mnt, 0);
}
static long a_personality_linux32(void) { return syscall(SYS_personality, 0x0008); }
static long a_personality_bad(void) { return syscall(SYS_personality, 0x0400000 /* READ_IMPLIES_EXEC */); }
static long a_mbind(void) { return syscall(SYS_mbind, NULL, 0, 0, NULL, 0, 0); }
static long a_move_pages(void) { return syscall(SYS_move_pages, 0, 0, NULL, NULL, NULL, 0); }
static long a_process_madvise(void) { return syscall(440 /* process_madvise */, -1, NULL, 0, 0, 0); }
static long a_uselib(void) { return syscall(SYS_uselib, NULL); }
static long a_nr_1000(void) { return syscall(1000); }
static long a_nr_470(void) { return syscall(470); }
static long a_nr_999999(void) { return syscall(999999); }

/* ioctl on /dev/null: the kernel answers ENOTTY to every tty ioctl there, so
 * EPERM can only come from seccomp. */
static long a_ioctl_tcgets(void)
{
        struct termios t;

        return syscall(SYS_ioctl, devnull(), TCGETS, &t);
}
static long a_ioctl_tiocsti(void)
{
        char c = 'x';

        return syscall(SYS_ioctl, devnull(), (unsigned long)TIOCSTI, &c);
}
static long a_ioctl_tiocsti_hi(void)
{
        char c = 'x';

        return syscall(SYS_ioctl, devnull(), 0x100000000UL | TIOCSTI, &c);
}
static long a_ioctl_tioclinux(void)
{
        char c = 0;

        return syscall(SYS_ioctl, devnull(), (unsigned long)TIOCLINUX, &c);
}
static long a_ioctl_tioclinux_hi(void)
{
        char c = 0;

        return syscall(SYS_ioctl, devnull(), 0xffffffff00000000UL | TIOCLINUX, &c);
}
/* On a real pty: TIOCSTI into our own fresh pty pair. */
static long
a_ioctl_tiocsti_pty(void)
{
        int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
        char c = 'x';

        if (m < 0)
                return -1;
        return syscall(SYS_ioctl, m, 0x100000000UL | TIOCSTI, &c);
}

static long a_socket(int fam, int type) { return syscall(SYS_socket, fam, type, 0); }
static long a_sock_unix(void) { return a_socket(AF_UNIX, SOCK_STREAM); }
static long a_sock_inet(void) { return a_socket(AF_INET, SOCK_STREAM); }
static long a_sock_inet6(void) { return a_socket(AF_INET6, SOCK_DGRAM); }
static long a_sock_netlink(void) { return a_socket(AF_NETLINK, SOCK_RAW); }
static long a_sock_vsock(void) { return a_socket(AF_VSOCK, SOCK_STREAM); }
static long a_sock_alg(void) { return a_socket(AF_ALG, SOCK_SEQPACKET); }
static long a_sock_packet(void) { return a_socket(AF_PACKET, SOCK_RAW); }
static long a_sock_bluetooth(void) { return a_socket(AF_BLUETOOTH, SOCK_RAW); }
static long a_sock_key(void) { return a_socket(AF_KEY, SOCK_RAW); }
static long a_sock_xdp(void) { return a_socket(AF_XDP, SOCK_RAW); }
static long a_sock_can(void) { return a_socket(AF_CAN, SOCK_RAW); }
static long a_sock_tipc(void) { return a_socket(AF_TIPC, SOCK_RDM); }
static long a_sock_rds(void) { return a_socket(AF_RDS, SOCK_SEQPACKET); }
static long a_sock_pppox(void) { return a_socket(AF_PPPOX, SOCK_STREAM); }
static long a_sock_llc(void) { return a_socket(AF_LLC, SOCK_DGRAM); }
static long a_sock_mctp(void) { return a_socket(AF_MCTP, SOCK_DGRAM); }
/* The family in the high half of the 64-bit argument. */
static long a_sock_unix_hi(void) { return syscall(SYS_socket, (1L << 32) | AF_UNIX, SOCK_STREAM, 0); }
static long a_socketpair_inet(void) { int sv[2]; return syscall(SYS_socketpair, AF_INET, SOCK_STREAM, 0, sv); }
static long a_socketpair_unix(void) { int sv[2]; return syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, sv); }

/* i386 getpid through int $0x80: a foreign ABI. */
static long
a_int80(void)
{
        long r = 20;   /* __NR_getpid on i386 */

        __asm__ volatile("int $0x80" : "+a"(r) : : "memory", "rcx", "r11");
        if (r < 0 && r > -4096) {
                errno = (int)-r;
                return -1;
        }
        return r;
}

/* x32 getpid: the native instruction, the x32 bit set in the number. */
static long
a_x32(void)
{
        long r = X32_BIT | 39;

        __asm__ volatile("syscall" : "+a"(r) : : "memory", "rcx", "r11");
        if (r < 0 && r > -4096) {
                errno = (int)-r;
                return -1;
        }
        return r;
}

/* Control calls the policy allows: they show the filter is not "deny all". */
static long a_getpid(void) { return syscall(SYS_getpid); }
static long a_fork(void) { return a_clone_plain(); }
static long a_mknod_chr(void) { return syscall(SYS_mknodat, AT_FDCWD, "/tmp/xb-null", S_IFCHR | 0666, makedev(1, 3)); }
static long a_mknod_fifo(void) { return syscall(SYS_mknodat, AT_FDCWD, "/tmp/xb-fifo", S_IFIFO | 0666, 0); }
static long a_setuid0(void) { return syscall(SYS_setuid, 0); }
static long a_ptrace_traceme(void) { return syscall(SYS_ptrace, PTRACE_TRACEME, 0, NULL, NULL); }
static long a_noop(void) { return 0; }

struct attack {
        const char *name;
        long (*fn)(void);
};

static const struct attack attacks[] = {
        { "getpid", a_getpid },
        { "fork", a_fork },
        { "unshare_user", a_unshare_user },
        { "unshare_mnt", a_unshare_mnt },
        { "unshare_net", a_unshare_net },
        { "unshare_pid", a_unshare_pid },
        { "unshare_uts", a_unshare_uts },
        { "unshare_ipc", a_unshare_ipc },
        { "unshare_cgroup", a_unshare_cgroup },
        { "unshare_time", a_unshare_time },
        { "clone_newuser", a_clone_newuser },
        { "clone_newns", a_clone_newns },
        { "clone_newnet", a_clone_newnet },
        { "clone_newpid", a_clone_newpid },
        { "clone_newuser_hi", a_clone_newuser_hi },
        { "clone3", a_clone3 },
        { "clone3_newuser", a_clone3_newuser },
        { "mount", a_mount },
        { "mount_bind", a_mount_bind },
        { "mount_remount_rw", a_mount_remount_rw },
        { "umount2", a_umount2 },
        { "pivot_root", a_pivot_root },
        { "chroot", a_chroot },
        { "keyctl", a_keyctl },
        { "add_key", a_add_key },
        { "request_key", a_request_key },
        { "io_uring_setup", a_io_uring_setup },
        { "io_uring_enter", a_io_uring_enter },
        { "io_uring_register", a_io_uring_register },
        { "userfaultfd", a_userfaultfd },
        { "bpf", a_bpf },
        { "perf_event_open", a_perf_event_open },
        { "init_module", a_init_module },
        { "finit_module", a_finit_module },
        { "delete_module", a_delete_module },
        { "kexec_load", a_kexec_load },
        { "kexec_file_load", a_kexec_file_load },
        { "open_by_handle_at", a_open_by_handle_at },
        { "name_to_handle_at", a_name_to_handle_at },
        { "setns", a_setns },
        { "setns_pid1_mnt", a_setns_pid1_mnt },
        { "fsopen", a_fsopen },
        { "fsconfig", a_fsconfig },
        { "fsmount", a_fsmount },
        { "fspick", a_fspick },
        { "open_tree", a_open_tree },
        { "move_mount", a_move_mount },
        { "mount_setattr", a_mount_setattr },
        { "statmount", a_statmount },
        { "listmount", a_listmount },
        { "open_tree_attr", a_open_tree_attr },
        { "syslog", a_syslog },
        { "acct", a_acct },
        { "swapoff", a_swapoff },
        { "reboot", a_reboot },
        { "clock_settime", a_clock_settime },
        { "settimeofday", a_settimeofday },
        { "sethostname", a_sethostname },
        { "setdomainname", a_setdomainname },
        { "iopl", a_iopl },
        { "ioperm", a_ioperm },
        { "quotactl", a_quotactl },
        { "lookup_dcookie", a_lookup_dcookie },
        { "vhangup", a_vhangup },
        { "nfsservctl", a_nfsservctl },
        { "fanotify_init", a_fanotify_init },
        { "personality_linux32", a_personality_linux32 },
        { "personality_read_implies_exec", a_personality_bad },
        { "mbind", a_mbind },
        { "move_pages", a_move_pages },
        { "process_madvise", a_process_madvise },
        { "uselib", a_uselib },
        { "nr_1000", a_nr_1000 },
        { "nr_470", a_nr_470 },
        { "nr_999999", a_nr_999999 },
        { "ioctl_tcgets", a_ioctl_tcgets },
        { "ioctl_tiocsti", a_ioctl_tiocsti },
        { "ioctl_tiocsti_hi", a_ioctl_tiocsti_hi },
        { "ioctl_tioclinux", a_ioctl_tioclinux },
        { "ioctl_tioclinux_hi", a_ioctl_tioclinux_hi },
        { "ioctl_tiocsti_pty", a_ioctl_tiocsti_pty },
        { "socket_unix", a_sock_unix },
        { "socket_inet", a_sock_inet },
        { "socket_inet6", a_sock_inet6 },
        { "socket_netlink", a_sock_netlink },
        { "socket_vsock", a_sock_vsock },
        { "socket_alg", a_sock_alg },
        { "socket_packet", a_sock_packet },
        { "socket_bluetooth", a_sock_bluetooth },
        { "socket_key", a_sock_key },
        { "socket_xdp", a_sock_xdp },
        { "socket_can", a_sock_can },
        { "socket_tipc", a_sock_tipc },
        { "socket_rds", a_sock_rds },
        { "socket_pppox", a_sock_pppox },
        { "socket_llc", a_sock_llc },
        { "socket_mctp", a_sock_mctp },
        { "socket_unix_hi", a_sock_unix_hi },
        { "socketpair_unix", a_socketpair_unix },
        { "socketpair_inet", a_socketpair_inet },
        { "int80", a_int80 },
        { "x32", a_x32 },
        { "mknod_chr", a_mknod_chr },
        { "mknod_fifo", a_mknod_fifo },
        { "setuid0", a_setuid0 },
        { "ptrace_traceme", a_ptrace_traceme },
        { "noop", a_noop },
};

struct attempt {
        long ret;
        int err;
};

/* Run one attack in a child; report its result, or how it died. */
static void
run_attack(const struct attack *a)
{
        struct attempt res = { 0 };
        int p[2], status = 0;
        struct jw w;
        ssize_t n;
        pid_t pid;

        if (pipe2(p, O_CLOEXEC) < 0) {
                perror("pipe2");
                exit(2);
        }
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
                close(p[0]);
                errno = 0;
                res.ret = a->fn();
                res.err = res.ret < 0 ? errno : 0;
                if (write(p[1], &res, sizeof(res)) < 0)
                        _exit(3);
                _exit(0);
        }
        close(p[1]);
        n = pid < 0 ? -1 : read(p[0], &res, sizeof(res));
        close(p[0]);
        if (pid > 0)
                waitpid(pid, &status, 0);
        jw_begin(&w);
        jw_s(&w, "name", a->name);
        if (n == (ssize_t)sizeof(res)) {
                jw_i(&w, "ret", res.ret);
                jw_errno(&w, "errno", res.err);
        } else {
                jw_null(&w, "ret");
                jw_null(&w, "errno");
        }
        if (pid > 0 && WIFSIGNALED(status)) {
                jw_i(&w, "signal", WTERMSIG(status));
                jw_null(&w, "exit");
        } else {
                jw_null(&w, "signal");
                jw_i(&w, "exit", pid > 0 ? WEXITSTATUS(status) : -1);
        }
        jw_end(&w);
}

int
cmd_syscall(int argc, char **argv)
{
        size_t n = sizeof(attacks) / sizeof(attacks[0]);

        if (argc < 2) {
                fprintf(stderr, "usage: xbprobe syscall NAME...|all|list\n");
                return 2;
        }
        for (int i = 1; i < argc; i++) {
                int found = 0;

                for (size_t k = 0; k < n; k++) {
                        if (strcmp(argv[i], "list") == 0) {
                                printf("%s\n", attacks[k].name);
                                found = 1;
                        } else if (strcmp(argv[i], "all") == 0 || strcmp(argv[i], attacks[k].name) == 0) {
                                run_attack(&attacks[k]);
                                found = 1;
                        }
                }
                if (!found) {
                        fprintf(stderr, "xbprobe: unknown syscall attack %s\n", argv[i]);
                        return 2;
                }
        }
        return 0;
}
/* Attacks on init (pid 1) from inside: ptrace, its fds, its memory. */
int
cmd_ptrace_init(int argc, char **argv)
{
        struct jw w;
        long r;
        int pidfd, fd;
        char buf[16];
        struct iovec local = { buf, sizeof(buf) }, remote = { (void *)0x10000, sizeof(buf) };

        (void)argc;
        (void)argv;
        jw_begin(&w);
        r = ptrace(PTRACE_SEIZE, 1, NULL, NULL);
        jw_errno(&w, "ptrace_seize", r < 0 ? errno : 0);
        if (r == 0)
                ptrace(PTRACE_DETACH, 1, NULL, NULL);
        pidfd = (int)syscall(SYS_pidfd_open, 1, 0);
        jw_errno(&w, "pidfd_open", pidfd < 0 ? errno : 0);
        fd = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, 3, 0);
        jw_errno(&w, "pidfd_getfd_3", pidfd < 0 ? EBADF : fd < 0 ? errno : 0);
        if (fd >= 0) {
                char target[128] = "";
                char path[64];
                ssize_t n;

                snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
                n = readlink(path, target, sizeof(target) - 1);
                target[n < 0 ? 0 : n] = '\0';
                jw_s(&w, "stolen_fd_target", target);
                close(fd);
        }
        fd = open("/proc/1/mem", O_RDWR | O_CLOEXEC);
        jw_errno(&w, "open_proc1_mem_rw", fd < 0 ? errno : 0);
        if (fd >= 0)
                close(fd);
        /* CVE-2019-5736's shape: rewrite the runtime's own binary through /proc. */
        fd = open("/proc/1/exe", O_WRONLY | O_CLOEXEC);
        jw_errno(&w, "open_proc1_exe_w", fd < 0 ? errno : 0);
        if (fd >= 0)
                close(fd);
        fd = open("/proc/self/exe", O_WRONLY | O_CLOEXEC);
        jw_errno(&w, "open_self_exe_w", fd < 0 ? errno : 0);
        if (fd >= 0)
                close(fd);
        fd = open("/proc/1/environ", O_RDONLY | O_CLOEXEC);
        jw_errno(&w, "open_proc1_environ", fd < 0 ? errno : 0);
        if (fd >= 0)
                close(fd);
        r = process_vm_readv(1, &local, 1, &remote, 1, 0);
        /* EFAULT means the access check passed and only the address was bad. */
        jw_errno(&w, "process_vm_readv", r < 0 ? errno : 0);
        {
                DIR *d = opendir("/proc/1/fd");

                jw_errno(&w, "list_proc1_fd", d ? 0 : errno);
                if (d)
                        closedir(d);
        }
        r = kill(1, 0);
        jw_errno(&w, "kill_1_sig0", r < 0 ? errno : 0);
        jw_end(&w);
        return 0;
}

/* Steal init's socket to the daemon (fd 3) and send a forged "command
 * exited with status 0" for spawn tag 1 (`execbox run` uses tag 1); then
 * burn CPU. A sound engine ends this run with a timeout, never "ok". The
 * message follows src/proto/wire.h: a {type, tag} header, then fields of
 * {key, length, bytes padded to 4}. */
int
cmd_forge_exit(int argc, char **argv)
{
        uint32_t msg[2 + 2 + 2] = { 102 /* XB_EV_EXITED */, 1, 21 /* XB_K_STATUS */, 8, 0, 0 };
        int pidfd, fd;
        struct jw w;
        ssize_t n = -1;

        pidfd = (int)syscall(SYS_pidfd_open, 1, 0);
        fd = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, 3, 0);
        if (fd >= 0)
                n = send(fd, msg, sizeof(msg), MSG_NOSIGNAL);
        jw_begin(&w);
        jw_errno(&w, "steal_errno", fd < 0 ? errno : 0);
        jw_i(&w, "sent", n);
        jw_end(&w);
        return cmd_spin(argc, argv);
}

/* Steal init's socket and flood the daemon with valid READY events from
 * WRITERS processes, forever: the daemon must still enforce its limits. */
int
cmd_forge_flood(int argc, char **argv)
{
        uint32_t msg[2 + 2 + 2] = { 100 /* XB_EV_READY */, 0, 27 /* XB_K_VERSION */, 8, 1, 0 };
        int writers = argc > 1 ? atoi(argv[1]) : 4;
        int pidfd = (int)syscall(SYS_pidfd_open, 1, 0);
        int fd = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, 3, 0);

        printf("{\"steal_errno\":%s%s%s}\n", fd < 0 ? "\"" : "", fd < 0 ? errname(errno) : "null",
               fd < 0 ? "\"" : "");
        fflush(stdout);
        if (fd < 0)
                return 1;
        for (int i = 1; i < writers; i++)
                if (fork() == 0)
                        break;
        for (;;)
                send(fd, msg, sizeof(msg), MSG_NOSIGNAL);
}
