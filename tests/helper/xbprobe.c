/* xbprobe: a static helper run INSIDE execbox sandboxes by the integration
 * suite (tests/integration). It attacks and inspects the sandbox and prints
 * facts, one JSON object per line; it never judges them. pytest asserts.
 *
 * Every attempt that could kill the caller (a foreign ABI, a seccomp kill)
 * runs in a forked child, and the report says how that child ended.
 * Usage: xbprobe COMMAND [ARGS]; `xbprobe help` lists the commands. */
#define _GNU_SOURCE
#include "xbprobe.h"

/* ---- JSON output ---- */

void
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

void
jstrn(FILE *f, const char *s, size_t n)
{
        char *c = strndup(s, n);

        jstr(f, c ? c : "");
        free(c);
}

void
jw_sep(struct jw *w)
{
        if (!w->first[w->depth])
                fputc(',', w->f);
        w->first[w->depth] = 0;
}

void
jw_key(struct jw *w, const char *k)
{
        jw_sep(w);
        if (k) {
                jstr(w->f, k);
                fputc(':', w->f);
        }
}

void
jw_open(struct jw *w, const char *k, char c)
{
        if (w->depth >= 0 && (k || w->depth > 0))
                jw_key(w, k);
        fputc(c, w->f);
        w->first[++w->depth] = 1;
}

void
jw_close(struct jw *w, char c)
{
        fputc(c, w->f);
        w->depth--;
}

void
jw_s(struct jw *w, const char *k, const char *v)
{
        jw_key(w, k);
        if (v)
                jstr(w->f, v);
        else
                fputs("null", w->f);
}

void
jw_i(struct jw *w, const char *k, long long v)
{
        jw_key(w, k);
        fprintf(w->f, "%lld", v);
}

void
jw_b(struct jw *w, const char *k, int v)
{
        jw_key(w, k);
        fputs(v ? "true" : "false", w->f);
}

void
jw_null(struct jw *w, const char *k)
{
        jw_key(w, k);
        fputs("null", w->f);
}

void
jw_begin(struct jw *w)
{
        w->f = stdout;
        w->depth = -1;
        jw_open(w, NULL, '{');
}

void
jw_end(struct jw *w)
{
        jw_close(w, '}');
        fputc('\n', w->f);
        fflush(w->f);
}

const char *
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

void
jw_errno(struct jw *w, const char *k, int e)
{
        jw_s(w, k, e ? errname(e) : NULL);
}

int
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

unsigned long long
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

double
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

int
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
