/* xbprobe: a static helper run INSIDE execbox sandboxes by the integration
 * suite (tests/integration). It attacks and inspects the sandbox and prints
 * facts, one JSON object per line; it never judges them. pytest asserts.
 *
 * Every attempt that could kill the caller (a foreign ABI, a seccomp kill)
 * runs in a forked child, and the report says how that child ended.
 * Usage: xbprobe COMMAND [ARGS]; `xbprobe help` lists the commands. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "xbprobe: the syscall attacks are written for x86_64"
#endif

/* x86_64 numbers, for libcs whose tables predate them. */
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_io_uring_enter
#define SYS_io_uring_enter 426
#endif
#ifndef SYS_io_uring_register
#define SYS_io_uring_register 427
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif
#ifndef SYS_fspick
#define SYS_fspick 433
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_userfaultfd
#define SYS_userfaultfd 323
#endif
#ifndef SYS_kexec_file_load
#define SYS_kexec_file_load 320
#endif
#define NR_STATMOUNT 457
#define NR_LISTMOUNT 458
#define NR_OPEN_TREE_ATTR 467

#define X32_BIT 0x40000000L

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef AF_MCTP
#define AF_MCTP 45
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#define KEY_SPEC_PROCESS_KEYRING (-2)
#define KEY_SPEC_SESSION_KEYRING (-3)
#define KEYCTL_GET_KEYRING_ID 0

/* ---- JSON output ---- */

static void
jstr(FILE *f, const char *s)
{
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
                if (*p == '"' || *p == '\\')
                        fprintf(f, "\\%c", *p);
                else if (*p == '\n')
                        fputs("\\n", f);
                else if (*p == '\t')
                        fputs("\\t", f);
                else if (*p < 0x20 || *p >= 0x7f)
                        fprintf(f, "\\u%04x", *p);
                else
                        fputc(*p, f);
        }
        fputc('"', f);
}

static void
jstrn(FILE *f, const char *s, size_t n)
{
        char *c = strndup(s, n);

        jstr(f, c ? c : "");
        free(c);
}

/* A minimal writer: key/value pairs separated automatically. */
struct jw {
        FILE *f;
        int first[16];
        int depth;
};

static void
jw_sep(struct jw *w)
{
        if (!w->first[w->depth])
                fputc(',', w->f);
        w->first[w->depth] = 0;
}

static void
jw_key(struct jw *w, const char *k)
{
        jw_sep(w);
        if (k) {
                jstr(w->f, k);
                fputc(':', w->f);
        }
}

static void
jw_open(struct jw *w, const char *k, char c)
{
        if (w->depth >= 0 && (k || w->depth > 0))
                jw_key(w, k);
        fputc(c, w->f);
        w->first[++w->depth] = 1;
}

static void
jw_close(struct jw *w, char c)
{
        fputc(c, w->f);
        w->depth--;
}

static void
jw_s(struct jw *w, const char *k, const char *v)
{
        jw_key(w, k);
        if (v)
                jstr(w->f, v);
        else
                fputs("null", w->f);
}

static void
jw_i(struct jw *w, const char *k, long long v)
{
        jw_key(w, k);
        fprintf(w->f, "%lld", v);
}

static void
jw_b(struct jw *w, const char *k, int v)
{
        jw_key(w, k);
        fputs(v ? "true" : "false", w->f);
}

static void
jw_null(struct jw *w, const char *k)
{
        jw_key(w, k);
        fputs("null", w->f);
}

static void
jw_begin(struct jw *w)
{
        w->f = stdout;
        w->depth = -1;
        jw_open(w, NULL, '{');
}

static void
jw_end(struct jw *w)
{
        jw_close(w, '}');
        fputc('\n', w->f);
        fflush(w->f);
}

static const char *
errname(int e)
{
        static char buf[32];

        switch (e) {
#define E(x) case x: return #x
                E(EPERM); E(ENOENT); E(ESRCH); E(EINTR); E(EIO); E(ENXIO); E(E2BIG); E(ENOEXEC);
                E(EBADF); E(ECHILD); E(EAGAIN); E(ENOMEM); E(EACCES); E(EFAULT); E(EBUSY);
                E(EEXIST); E(EXDEV); E(ENODEV); E(ENOTDIR); E(EISDIR); E(EINVAL); E(ENFILE);
                E(EMFILE); E(ENOTTY); E(ETXTBSY); E(EFBIG); E(ENOSPC); E(ESPIPE); E(EROFS);
                E(EMLINK); E(EPIPE); E(ERANGE); E(ENAMETOOLONG); E(ENOSYS); E(ENOTEMPTY);
                E(ELOOP); E(ENODATA); E(ENOTSOCK); E(EDESTADDRREQ); E(EPROTOTYPE);
                E(ENOPROTOOPT); E(EPROTONOSUPPORT); E(ESOCKTNOSUPPORT); E(EOPNOTSUPP);
                E(EPFNOSUPPORT); E(EAFNOSUPPORT); E(EADDRINUSE); E(EADDRNOTAVAIL); E(ENETDOWN);
                E(ENETUNREACH); E(ECONNABORTED); E(ECONNRESET); E(ENOBUFS); E(EISCONN);
                E(ENOTCONN); E(ETIMEDOUT); E(ECONNREFUSED); E(EHOSTDOWN); E(EHOSTUNREACH);
                E(EALREADY); E(EINPROGRESS); E(EDQUOT); E(ENOKEY); E(EKEYREJECTED);
                E(EOVERFLOW); E(EBADMSG);
#undef E
        case 0:
                return "OK";
        }
        snprintf(buf, sizeof(buf), "E%d", e);
        return buf;
}

static void
jw_errno(struct jw *w, const char *k, int e)
{
        jw_s(w, k, e ? errname(e) : NULL);
}

static int
read_file(const char *path, char *buf, size_t cap, size_t *len)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        size_t n = 0;

        if (fd < 0)
                return -errno;
        while (n + 1 < cap) {
                ssize_t r = read(fd, buf + n, cap - 1 - n);

                if (r < 0) {
                        int e = errno;

                        close(fd);
                        return -e;
                }
                if (r == 0)
                        break;
                n += (size_t)r;
        }
        buf[n] = '\0';
        close(fd);
        if (len)
                *len = n;
        return 0;
}

static unsigned long long
parse_size(const char *s)
{
        char *end;
        unsigned long long v = strtoull(s, &end, 10);

        switch (*end) {
        case 'k': case 'K': v <<= 10; break;
        case 'm': case 'M': v <<= 20; break;
        case 'g': case 'G': v <<= 30; break;
        default: break;
        }
        return v;
}

static double
now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- posture ---- */

static void
status_field(struct jw *w, const char *status, const char *field)
{
        char key[64];
        const char *p;

        snprintf(key, sizeof(key), "\n%s:", field);
        p = strstr(status, key);
        if (!p) {
                jw_null(w, field);
                return;
        }
        p += strlen(key);
        while (*p == '\t' || *p == ' ')
                p++;
        jw_key(w, field);
        jstrn(w->f, p, strcspn(p, "\n"));
}

static void
list_fds(struct jw *w)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        int self = d ? dirfd(d) : -1;

        jw_open(w, "fds", '[');
        while (d && (de = readdir(d))) {
                char path[64], target[PATH_MAX];
                ssize_t n;
                int fd;

                if (de->d_name[0] == '.')
                        continue;
                fd = atoi(de->d_name);
                if (fd == self)
                        continue;
                snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
                n = readlink(path, target, sizeof(target) - 1);
                target[n < 0 ? 0 : n] = '\0';
                jw_open(w, NULL, '{');
                jw_i(w, "fd", fd);
                jw_s(w, "target", target);
                jw_close(w, '}');
        }
        jw_close(w, ']');
        if (d)
                closedir(d);
}

static void
list_ns(struct jw *w)
{
        static const char *const names[] = { "user", "pid", "mnt", "net", "uts", "ipc", "cgroup", "time" };

        jw_open(w, "ns", '{');
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                char path[64];
                struct stat st;

                snprintf(path, sizeof(path), "/proc/self/ns/%s", names[i]);
                if (stat(path, &st) < 0)
                        jw_null(w, names[i]);
                else
                        jw_i(w, names[i], (long long)st.st_ino);
        }
        jw_close(w, '}');
}

/* mountinfo: "id parent maj:min root mountpoint opts [optional...] - fstype source superopts" */
static void
list_mounts(struct jw *w)
{
        static char buf[1 << 16];
        char *save = NULL;

        jw_open(w, "mounts", '[');
        if (read_file("/proc/self/mountinfo", buf, sizeof(buf), NULL) == 0) {
                for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                        char root[512], mnt[512], opts[512], fstype[64], src[512], sopts[1024];
                        char *sep = strstr(line, " - ");

                        if (!sep || sscanf(line, "%*s %*s %*s %511s %511s %511s", root, mnt, opts) != 3)
                                continue;
                        src[0] = sopts[0] = '\0';
                        if (sscanf(sep + 3, "%63s %511s %1023s", fstype, src, sopts) < 1)
                                continue;
                        jw_open(w, NULL, '{');
                        jw_s(w, "mount_point", mnt);
                        jw_s(w, "root", root);
                        jw_s(w, "fstype", fstype);
                        jw_s(w, "source", src);
                        jw_s(w, "options", opts);
                        jw_s(w, "super_options", sopts);
                        jw_close(w, '}');
                }
        }
        jw_close(w, ']');
}

static void
file_field(struct jw *w, const char *key, const char *path)
{
        static char buf[8192];
        int r = read_file(path, buf, sizeof(buf), NULL);

        if (r < 0)
                jw_null(w, key);
        else
                jw_s(w, key, buf);
}

static int
cmd_posture(int argc, char **argv)
{
        extern char **environ;
        static char status[8192], stat_buf[1024];
        char cwd[PATH_MAX], host[256];
        struct jw w;
        int tty_nr = -1, sid = -1, pgrp = -1, fd;

        (void)argc;
        (void)argv;
        read_file("/proc/self/status", status + 1, sizeof(status) - 1, NULL);
        status[0] = '\n';
        jw_begin(&w);
        jw_i(&w, "pid", getpid());
        jw_i(&w, "ppid", getppid());
        jw_i(&w, "uid", getuid());
        jw_i(&w, "euid", geteuid());
        jw_i(&w, "gid", getgid());
        jw_i(&w, "egid", getegid());
        {
                gid_t g[64];
                int n = getgroups(64, g);

                jw_open(&w, "groups", '[');
                for (int i = 0; i < n; i++)
                        jw_i(&w, NULL, g[i]);
                jw_close(&w, ']');
        }
        status_field(&w, status, "NoNewPrivs");
        status_field(&w, status, "Seccomp");
        status_field(&w, status, "Seccomp_filters");
        status_field(&w, status, "CapInh");
        status_field(&w, status, "CapPrm");
        status_field(&w, status, "CapEff");
        status_field(&w, status, "CapBnd");
        status_field(&w, status, "CapAmb");
        file_field(&w, "uid_map", "/proc/self/uid_map");
        file_field(&w, "gid_map", "/proc/self/gid_map");
        file_field(&w, "setgroups", "/proc/self/setgroups");
        file_field(&w, "cgroup", "/proc/self/cgroup");
        file_field(&w, "pid1_cmdline", "/proc/1/cmdline");  /* NULs end it at argv[0] */
        file_field(&w, "pid1_comm", "/proc/1/comm");
        list_fds(&w);
        list_ns(&w);
        jw_open(&w, "env", '[');
        for (char **e = environ; *e; e++)
                jw_s(&w, NULL, *e);
        jw_close(&w, ']');
        jw_s(&w, "cwd", getcwd(cwd, sizeof(cwd)) ? cwd : NULL);
        jw_s(&w, "hostname", gethostname(host, sizeof(host)) == 0 ? host : NULL);
        if (read_file("/proc/self/stat", stat_buf, sizeof(stat_buf), NULL) == 0) {
                /* Fields after the ")" of comm: state ppid pgrp session tty_nr. */
                char *p = strrchr(stat_buf, ')');

                if (p)
                        sscanf(p + 2, "%*c %*d %d %d %d", &pgrp, &sid, &tty_nr);
        }
        jw_i(&w, "pgrp", pgrp);
        jw_i(&w, "sid", sid);
        jw_i(&w, "tty_nr", tty_nr);
        fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
        jw_errno(&w, "open_dev_tty_errno", fd < 0 ? errno : 0);
        if (fd >= 0)
                close(fd);
        {
                long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1UL /* VERSION */);

                jw_i(&w, "landlock_abi", abi < 0 ? -errno : abi);
        }
        {
                static const struct { const char *name; int res; } rl[] = {
                        { "fsize", RLIMIT_FSIZE }, { "cpu", RLIMIT_CPU }, { "core", RLIMIT_CORE },
                        { "nofile", RLIMIT_NOFILE }, { "nproc", RLIMIT_NPROC },
                };

                jw_open(&w, "rlimits", '{');
                for (size_t i = 0; i < sizeof(rl) / sizeof(rl[0]); i++) {
                        struct rlimit r;

                        getrlimit(rl[i].res, &r);
                        jw_i(&w, rl[i].name, r.rlim_cur == RLIM_INFINITY ? -1 : (long long)r.rlim_cur);
                }
                jw_close(&w, '}');
        }
        jw_i(&w, "umask", (long long)umask(022));
        list_mounts(&w);
        jw_end(&w);
        return 0;
}

/* ---- syscall attacks ---- */

static int devnull(void)
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

static int
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

/* ---- resources ---- */

static int
cmd_memhog(int argc, char **argv)
{
        unsigned long long want = argc > 1 ? parse_size(argv[1]) : 1ULL << 30, done = 0;
        const size_t chunk = 1 << 20;

        while (done < want) {
                char *p = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

                if (p == MAP_FAILED)
                        break;
                for (size_t i = 0; i < chunk; i += 4096)
                        p[i] = (char)(i + 1);
                done += chunk;
        }
        printf("{\"allocated\":%llu,\"wanted\":%llu}\n", done, want);
        fflush(stdout);
        return done >= want ? 0 : 1;
}

static int
count_procs(void)
{
        DIR *d = opendir("/proc");
        struct dirent *de;
        int n = 0;

        while (d && (de = readdir(d)))
                if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
                        n++;
        if (d)
                closedir(d);
        return n;
}

/* Children fork without end; the parent watches for SECONDS, reports, and
 * exits (which ends a one-shot sandbox). */
static int
cmd_forkbomb(int argc, char **argv)
{
        double secs = argc > 1 ? atof(argv[1]) : 2.0, end = now_s() + secs;
        long ok = 0, eagain = 0, other = 0;
        int max_procs = 0;

        while (now_s() < end) {
                pid_t pid = fork();

                if (pid == 0) {
                        for (;;)
                                if (fork() < 0)
                                        sched_yield();
                }
                if (pid > 0)
                        ok++;
                else if (errno == EAGAIN)
                        eagain++;
                else
                        other++;
                if ((ok + eagain + other) % 64 == 0) {
                        int n = count_procs();

                        if (n > max_procs)
                                max_procs = n;
                }
        }
        {
                int n = count_procs();

                if (n > max_procs)
                        max_procs = n;
        }
        printf("{\"forked\":%ld,\"eagain\":%ld,\"other\":%ld,\"max_procs\":%d}\n", ok, eagain, other, max_procs);
        fflush(stdout);
        return 0;
}

/* HEAD marker line, filler, TAIL marker line. BYTES 0 = forever. */
static int
cmd_flood(int argc, char **argv)
{
        unsigned long long want = argc > 1 ? parse_size(argv[1]) : 1ULL << 20, done = 0;
        static char buf[65536];
        const char *head = "XB-HEAD-MARKER\n", *tail = "XB-TAIL-MARKER\n";

        for (size_t i = 0; i < sizeof(buf); i++)
                buf[i] = (i % 64 == 63) ? '\n' : (char)('a' + i % 26);
        signal(SIGPIPE, SIG_DFL);
        if (write(1, head, strlen(head)) < 0)
                return 1;
        done = strlen(head);
        for (;;) {
                size_t n = sizeof(buf);

                if (want) {
                        if (done + strlen(tail) >= want)
                                break;
                        if (n > want - done - strlen(tail))
                                n = (size_t)(want - done - strlen(tail));
                }
                ssize_t w = write(1, buf, n);

                if (w <= 0)
                        return 1;
                done += (size_t)w;
        }
        return write(1, tail, strlen(tail)) < 0;
}

static int
cmd_spin(int argc, char **argv)
{
        double secs = argc > 1 ? atof(argv[1]) : 0, end = now_s() + secs;
        volatile unsigned long x = 0;

        printf("spinning\n");
        fflush(stdout);
        while (secs <= 0 || now_s() < end)
                for (int i = 0; i < 1000000; i++)
                        x += (unsigned long)i;
        printf("done\n");
        return 0;
}

static int
cmd_sleep(int argc, char **argv)
{
        double secs = argc > 1 ? atof(argv[1]) : 1;
        struct timespec ts = { (time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9) };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
        return 0;
}

static void
name_self(const char *token)
{
        if (token)
                prctl(PR_SET_NAME, token, 0, 0, 0);
}

/* Double fork and setsid: a grandchild in its own session that closes its
 * output and sleeps forever. Prints its pid; the caller exits at once. */
static int
cmd_setsid_escape(int argc, char **argv)
{
        const char *token = argc > 1 ? argv[1] : NULL;
        int p[2];
        pid_t pid, gpid = 0;

        if (pipe(p) < 0)
                return 2;
        pid = fork();
        if (pid == 0) {
                close(p[0]);
                setsid();
                if (fork() == 0) {
                        pid_t me = getpid();
                        int fd = open("/dev/null", O_RDWR);

                        signal(SIGHUP, SIG_IGN);
                        name_self(token);
                        dup2(fd, 0);
                        dup2(fd, 1);
                        dup2(fd, 2);
                        if (write(p[1], &me, sizeof(me)) < 0)
                                _exit(1);
                        close(p[1]);
                        for (;;)
                                pause();
                }
                _exit(0);
        }
        close(p[1]);
        if (read(p[0], &gpid, sizeof(gpid)) != sizeof(gpid))
                return 1;
        waitpid(pid, NULL, 0);
        printf("{\"escapee_pid\":%d}\n", (int)gpid);
        fflush(stdout);
        return 0;
}

/* A background child keeps stdout and stderr open and sleeps; the parent
 * exits at once. */
static int
cmd_bg_holder(int argc, char **argv)
{
        const char *token = argc > 1 ? argv[1] : NULL;
        double secs = argc > 2 ? atof(argv[2]) : 30;
        pid_t pid = fork();

        if (pid == 0) {
                struct timespec ts = { (time_t)secs, 0 };

                name_self(token);
                nanosleep(&ts, NULL);
                _exit(0);
        }
        printf("{\"holder_pid\":%d}\n", (int)pid);
        fflush(stdout);
        return 0;
}

/* ---- network ---- */

static int
try_connect(const char *ip, int port, int type)
{
        struct sockaddr_in6 a6 = { 0 };
        struct sockaddr_in a4 = { 0 };
        struct sockaddr *sa;
        socklen_t len;
        int fam = strchr(ip, ':') ? AF_INET6 : AF_INET;
        int fd = socket(fam, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), r;

        if (fd < 0)
                return errno;
        if (fam == AF_INET) {
                a4.sin_family = AF_INET;
                a4.sin_port = htons((uint16_t)port);
                inet_pton(AF_INET, ip, &a4.sin_addr);
                sa = (struct sockaddr *)&a4;
                len = sizeof(a4);
        } else {
                a6.sin6_family = AF_INET6;
                a6.sin6_port = htons((uint16_t)port);
                inet_pton(AF_INET6, ip, &a6.sin6_addr);
                sa = (struct sockaddr *)&a6;
                len = sizeof(a6);
        }
        if (type == SOCK_DGRAM) {
                r = (int)sendto(fd, "x", 1, 0, sa, len) < 0 ? errno : 0;
                close(fd);
                return r;
        }
        r = connect(fd, sa, len);
        if (r < 0 && errno == EINPROGRESS) {
                struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                int soerr = 0;
                socklen_t sl = sizeof(soerr);

                if (poll(&pfd, 1, 1500) == 0) {
                        close(fd);
                        return ETIMEDOUT;
                }
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
                close(fd);
                return soerr;
        }
        r = r < 0 ? errno : 0;
        close(fd);
        return r;
}

/* A TCP server on loopback, a client, one round trip. */
static int
loopback_roundtrip(const char *ip)
{
        int fam = strchr(ip, ':') ? AF_INET6 : AF_INET;
        struct sockaddr_storage ss = { 0 };
        socklen_t len = fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
        int srv = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0), cli, acc;
        char buf[8] = { 0 };

        if (srv < 0)
                return errno;
        ss.ss_family = (sa_family_t)fam;
        if (fam == AF_INET)
                inet_pton(AF_INET, ip, &((struct sockaddr_in *)&ss)->sin_addr);
        else
                inet_pton(AF_INET6, ip, &((struct sockaddr_in6 *)&ss)->sin6_addr);
        if (bind(srv, (struct sockaddr *)&ss, len) < 0 || listen(srv, 1) < 0 ||
            getsockname(srv, (struct sockaddr *)&ss, &len) < 0)
                return errno;
        cli = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (cli < 0 || connect(cli, (struct sockaddr *)&ss, len) < 0)
                return errno;
        acc = accept(srv, NULL, NULL);
        if (acc < 0 || write(cli, "ping", 4) != 4 || read(acc, buf, 4) != 4)
                return errno ? errno : EIO;
        close(acc);
        close(cli);
        close(srv);
        return strcmp(buf, "ping") == 0 ? 0 : EBADMSG;
}

static int
cmd_net(int argc, char **argv)
{
        struct ifaddrs *ifa = NULL, *i;
        struct jw w;
        char seen[64][IF_NAMESIZE + 1];
        int nseen = 0;

        (void)argc;
        (void)argv;
        jw_begin(&w);
        jw_open(&w, "interfaces", '[');
        if (getifaddrs(&ifa) == 0) {
                for (i = ifa; i; i = i->ifa_next) {
                        int dup = 0;

                        for (int k = 0; k < nseen; k++)
                                dup |= strcmp(seen[k], i->ifa_name) == 0;
                        if (dup || nseen == 64)
                                continue;
                        snprintf(seen[nseen++], IF_NAMESIZE + 1, "%s", i->ifa_name);
                        jw_open(&w, NULL, '{');
                        jw_s(&w, "name", i->ifa_name);
                        jw_b(&w, "up", (i->ifa_flags & IFF_UP) != 0);
                        jw_b(&w, "loopback", (i->ifa_flags & IFF_LOOPBACK) != 0);
                        jw_close(&w, '}');
                }
                freeifaddrs(ifa);
        }
        jw_close(&w, ']');
        jw_errno(&w, "connect_1.1.1.1:53", try_connect("1.1.1.1", 53, SOCK_STREAM));
        jw_errno(&w, "connect_10.0.2.2:80", try_connect("10.0.2.2", 80, SOCK_STREAM));
        jw_errno(&w, "connect_[2606:4700:4700::1111]:53", try_connect("2606:4700:4700::1111", 53, SOCK_STREAM));
        jw_errno(&w, "udp_8.8.8.8:53", try_connect("8.8.8.8", 53, SOCK_DGRAM));
        jw_errno(&w, "loopback_tcp_v4", loopback_roundtrip("127.0.0.1"));
        jw_errno(&w, "loopback_tcp_v6", loopback_roundtrip("::1"));
        jw_end(&w);
        return 0;
}

/* ---- files ---- */

/* Write BYTES (default 1) to PATH, reporting where it failed. SIGXFSZ is
 * ignored so an RLIMIT_FSIZE shows as EFBIG. */
static int
cmd_write(int argc, char **argv)
{
        unsigned long long want = argc > 2 ? parse_size(argv[2]) : 1, done = 0;
        static char buf[1 << 16];
        int fd, werr = 0;
        struct jw w;

        if (argc < 2)
                return 2;
        signal(SIGXFSZ, SIG_IGN);
        memset(buf, 'x', sizeof(buf));
        fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        jw_begin(&w);
        jw_s(&w, "path", argv[1]);
        jw_errno(&w, "open_errno", fd < 0 ? errno : 0);
        while (fd >= 0 && done < want) {
                size_t n = want - done < sizeof(buf) ? (size_t)(want - done) : sizeof(buf);
                ssize_t r = write(fd, buf, n);

                if (r < 0) {
                        werr = errno;
                        break;
                }
                done += (size_t)r;
        }
        if (fd >= 0 && !werr && fsync(fd) < 0 && errno != EINVAL)
                werr = errno;
        jw_errno(&w, "write_errno", werr);
        jw_i(&w, "written", (long long)done);
        jw_end(&w);
        if (fd >= 0)
                close(fd);
        return 0;
}

static int
cmd_read(int argc, char **argv)
{
        static char buf[4097];
        struct jw w;
        ssize_t n = 0;
        int fd, rerr = 0;

        if (argc < 2)
                return 2;
        fd = open(argv[1], O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                n = read(fd, buf, sizeof(buf) - 1);
                if (n < 0) {
                        rerr = errno;
                        n = 0;
                }
                close(fd);
        }
        buf[n] = '\0';
        jw_begin(&w);
        jw_s(&w, "path", argv[1]);
        jw_errno(&w, "open_errno", fd < 0 ? errno : 0);
        jw_errno(&w, "read_errno", rerr);
        jw_i(&w, "bytes", n);
        jw_key(&w, "data");
        jstrn(w.f, buf, (size_t)n > 512 ? 512 : (size_t)n);
        jw_end(&w);
        return 0;
}

static int
cmd_ls(int argc, char **argv)
{
        DIR *d;
        struct dirent *de;
        struct jw w;

        if (argc < 2)
                return 2;
        d = opendir(argv[1]);
        jw_begin(&w);
        jw_s(&w, "path", argv[1]);
        jw_errno(&w, "errno", d ? 0 : errno);
        jw_open(&w, "entries", '[');
        while (d && (de = readdir(d)))
                if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                        jw_s(&w, NULL, de->d_name);
        jw_close(&w, ']');
        jw_end(&w);
        if (d)
                closedir(d);
        return 0;
}

static int
cmd_stat(int argc, char **argv)
{
        struct stat st;
        struct jw w;
        int r;

        if (argc < 2)
                return 2;
        r = lstat(argv[1], &st);
        jw_begin(&w);
        jw_s(&w, "path", argv[1]);
        jw_errno(&w, "errno", r < 0 ? errno : 0);
        if (r == 0) {
                jw_i(&w, "mode", st.st_mode);
                jw_i(&w, "uid", st.st_uid);
                jw_i(&w, "gid", st.st_gid);
                jw_i(&w, "size", st.st_size);
                jw_i(&w, "ino", (long long)st.st_ino);
        }
        jw_end(&w);
        return 0;
}

static int
cmd_mkdir(int argc, char **argv)
{
        struct jw w;
        int r;

        if (argc < 2)
                return 2;
        r = mkdir(argv[1], 0755);
        jw_begin(&w);
        jw_s(&w, "path", argv[1]);
        jw_errno(&w, "errno", r < 0 ? errno : 0);
        jw_end(&w);
        return 0;
}

/* mknod PATH chr|blk|fifo */
static int
cmd_mknod(int argc, char **argv)
{
        struct jw w;
        mode_t type = S_IFCHR;
        int r;

        if (argc < 2)
                return 2;
        if (argc > 2 && strcmp(argv[2], "blk") == 0)
                type = S_IFBLK;
        else if (argc > 2 && strcmp(argv[2], "fifo") == 0)
                type = S_IFIFO;
        r = mknod(argv[1], type | 0666, type == S_IFIFO ? 0 : makedev(1, 3));
        jw_begin(&w);
        jw_s(&w, "path", argv[1]);
        jw_errno(&w, "errno", r < 0 ? errno : 0);
        if (r == 0 && type != S_IFIFO) {
                /* A node that exists: can it be opened as a device? */
                int fd = open(argv[1], O_RDWR | O_CLOEXEC);

                jw_errno(&w, "open_errno", fd < 0 ? errno : 0);
                if (fd >= 0)
                        close(fd);
        }
        jw_end(&w);
        return 0;
}

/* Every process this pid namespace shows. */
static int
cmd_ps(int argc, char **argv)
{
        DIR *d = opendir("/proc");
        struct dirent *de;
        struct jw w;

        (void)argc;
        (void)argv;
        jw_begin(&w);
        jw_open(&w, "procs", '[');
        while (d && (de = readdir(d))) {
                char path[300], comm[64] = "", status[4096];
                int uid = -1;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
                read_file(path, comm, sizeof(comm), NULL);
                comm[strcspn(comm, "\n")] = '\0';
                snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
                if (read_file(path, status, sizeof(status), NULL) == 0) {
                        char *u = strstr(status, "\nUid:");

                        if (u)
                                uid = atoi(u + 5);
                }
                jw_open(&w, NULL, '{');
                jw_i(&w, "pid", atoi(de->d_name));
                jw_s(&w, "comm", comm);
                jw_i(&w, "uid", uid);
                jw_close(&w, '}');
        }
        jw_close(&w, ']');
        jw_end(&w);
        if (d)
                closedir(d);
        return 0;
}

/* Attacks on init (pid 1) from inside: ptrace, its fds, its memory. */
static int
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
static int
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
static int
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

static int
cmd_exit(int argc, char **argv)
{
        return argc > 1 ? atoi(argv[1]) : 0;
}

static int
cmd_kill_self(int argc, char **argv)
{
        int sig = argc > 1 ? atoi(argv[1]) : SIGTERM;

        signal(sig, SIG_DFL);
        kill(getpid(), sig);
        pause();
        return 1;
}

/* Print a line, then hold: output printed before a limit must survive. */
static int
cmd_say_then(int argc, char **argv)
{
        if (argc < 3)
                return 2;
        printf("%s\n", argv[1]);
        fflush(stdout);
        if (strcmp(argv[2], "sleep") == 0)
                return cmd_sleep(argc - 2, argv + 2);
        if (strcmp(argv[2], "spin") == 0)
                return cmd_spin(argc - 2, argv + 2);
        return 2;
}

struct cmd {
        const char *name;
        int (*fn)(int, char **);
        const char *help;
};

static int cmd_help(int argc, char **argv);

static const struct cmd cmds[] = {
        { "posture", cmd_posture, "ids, caps, seccomp, maps, fds, namespaces, env, cwd, mounts" },
        { "syscall", cmd_syscall, "NAME...|all|list: try raw syscalls in a child, report errno or signal" },
        { "memhog", cmd_memhog, "BYTES: allocate and touch" },
        { "forkbomb", cmd_forkbomb, "SECONDS: children fork forever; the parent reports and exits" },
        { "flood", cmd_flood, "BYTES (0 = forever): head marker, filler, tail marker to stdout" },
        { "spin", cmd_spin, "SECONDS (0 = forever): burn CPU" },
        { "sleep", cmd_sleep, "SECONDS" },
        { "say-then", cmd_say_then, "TEXT sleep|spin SECONDS: print a line first" },
        { "setsid-escape", cmd_setsid_escape, "[TOKEN]: double fork + setsid, grandchild sleeps forever (comm TOKEN)" },
        { "bg-holder", cmd_bg_holder, "[TOKEN [SECONDS]]: a child holds stdout and sleeps; the parent exits" },
        { "net", cmd_net, "interfaces, outside connects, loopback round trips" },
        { "write", cmd_write, "PATH [BYTES]: create and write, report errno (SIGXFSZ ignored)" },
        { "read", cmd_read, "PATH: open and read up to 4 KiB" },
        { "ls", cmd_ls, "PATH: list a directory" },
        { "stat", cmd_stat, "PATH: lstat" },
        { "mkdir", cmd_mkdir, "PATH" },
        { "mknod", cmd_mknod, "PATH [chr|blk|fifo]" },
        { "ps", cmd_ps, "every visible process" },
        { "ptrace-init", cmd_ptrace_init, "ptrace, pidfd_getfd, /proc/1/mem against pid 1" },
        { "forge-exit", cmd_forge_exit, "[SECONDS]: steal init's fd 3, forge an exit 0, then spin" },
        { "forge-flood", cmd_forge_flood, "[WRITERS]: steal init's fd 3 and flood the daemon with events" },
        { "exit", cmd_exit, "CODE" },
        { "kill-self", cmd_kill_self, "SIGNO" },
        { "help", cmd_help, "this list" },
};

static int
cmd_help(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
                printf("%-14s %s\n", cmds[i].name, cmds[i].help);
        return 0;
}

int
main(int argc, char **argv)
{
        if (argc < 2) {
                cmd_help(0, NULL);
                return 2;
        }
        for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
                if (strcmp(argv[1], cmds[i].name) == 0)
                        return cmds[i].fn(argc - 1, argv + 1);
        fprintf(stderr, "xbprobe: unknown command %s\n", argv[1]);
        return 2;
}
