/* Spawning commands inside the sandbox, signalling and reaping them. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/close_range.h>

#include "init.h"

#define MAX_STRS 8192

static struct xb_init_child children[XB_INIT_MAX_CHILDREN];
static size_t nchildren;

/* argv and envp point into this copy of the request, NUL-terminated. */
static char arena[XB_MSG_MAX + MAX_STRS];
static char *argv_[MAX_STRS / 2 + 1];
static char *envp_[MAX_STRS / 2 + 1];

struct spawn_req {
        const char *cwd;
        const char *path;     /* PATH from the request's environment */
        uint64_t uid, gid, flags;
        uint64_t rl_cpu, rl_fsize, rl_nofile;
};

struct exec_error {
        int err;
        char stage[60];
};

static void __attribute__((noreturn))
child_fail(int pipefd, int err, const char *stage)
{
        struct exec_error e = { .err = err };

        snprintf(e.stage, sizeof(e.stage), "%s", stage);
        if (write(pipefd, &e, sizeof(e)) < 0)
                _exit(126);
        _exit(127);
}

/* execvpe with the PATH of the request, not of init. */
static int
exec_path(const char *file, const char *path)
{
        char buf[PATH_MAX];
        int saw_eacces = 0;

        if (strchr(file, '/')) {
                execve(file, argv_, envp_);
                return errno;
        }
        if (!path)
                path = "/usr/local/bin:/usr/bin:/bin";
        for (const char *p = path;; ) {
                const char *end = strchrnul(p, ':');
                size_t dlen = (size_t)(end - p);

                if (dlen + strlen(file) + 2 <= sizeof(buf)) {
                        if (dlen == 0)
                                snprintf(buf, sizeof(buf), "%s", file);
                        else
                                snprintf(buf, sizeof(buf), "%.*s/%s", (int)dlen, p, file);
                        execve(buf, argv_, envp_);
                        if (errno == EACCES)
                                saw_eacces = 1;
                        else if (errno != ENOENT && errno != ENOTDIR)
                                return errno;
                }
                if (!*end)
                        break;
                p = end + 1;
        }
        return saw_eacces ? EACCES : ENOENT;
}

static void __attribute__((noreturn))
child(const struct spawn_req *q, const int *std, int pipefd)
{
        sigset_t all;
        struct rlimit rl;
        int e;

        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
        signal(SIGPIPE, SIG_DFL);
        if ((q->flags & XB_SPAWN_NEWSESSION) && setsid() < 0)
                child_fail(pipefd, errno, "setsid");
        for (int i = 0; i < 3; i++) {
                int fd = std[i];

                if (fd < 0) {
                        fd = open("/dev/null", i == 0 ? O_RDONLY : O_WRONLY);
                        if (fd < 0)
                                child_fail(pipefd, errno, "open /dev/null");
                }
                if (fd != i && dup2(fd, i) < 0)
                        child_fail(pipefd, errno, "set up stdio");
        }
        /* Only 0-2 survive the exec; the error pipe lives until then. */
        syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
        rl = (struct rlimit){ 0, 0 };
        setrlimit(RLIMIT_CORE, &rl);
        if (q->rl_cpu) {
                rl = (struct rlimit){ q->rl_cpu, q->rl_cpu + 1 };
                setrlimit(RLIMIT_CPU, &rl);
        }
        if (q->rl_fsize) {
                rl = (struct rlimit){ q->rl_fsize, q->rl_fsize };
                setrlimit(RLIMIT_FSIZE, &rl);
        }
        if (q->rl_nofile) {
                rl = (struct rlimit){ q->rl_nofile, q->rl_nofile };
                setrlimit(RLIMIT_NOFILE, &rl);
        }
        umask(022);
        if (q->uid != 0 || q->gid != 0) {
                gid_t g = (gid_t)q->gid;

                /* Leaving uid 0 empties the permitted and effective sets. */
                if (setgroups(1, &g) < 0 || setresgid(g, g, g) < 0 ||
                    setresuid((uid_t)q->uid, (uid_t)q->uid, (uid_t)q->uid) < 0)
                        child_fail(pipefd, errno, "switch user");
        }
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        if (chdir(q->cwd ? q->cwd : "/") < 0)
                child_fail(pipefd, errno, "working directory");
        e = exec_path(argv_[0], q->path);
        child_fail(pipefd, e, "exec");
}

static int
parse(const struct xb_msgr *r, struct spawn_req *q)
{
        size_t cur = 0, used = 0, na = 0, ne = 0;
        struct xb_field f;

        memset(q, 0, sizeof(*q));
        q->flags = XB_SPAWN_NEWSESSION;
        while (xb_msgr_next(r, &cur, &f)) {
                char *s;

                switch (f.key) {
                case XB_K_ARGV:
                case XB_K_ENV:
                case XB_K_CWD:
                        if (!xb_field_is_str(&f) || used + f.len + 1 > sizeof(arena))
                                return -EINVAL;
                        s = arena + used;
                        memcpy(s, f.data, f.len);
                        s[f.len] = '\0';
                        used += f.len + 1;
                        if (f.key == XB_K_CWD)
                                q->cwd = s;
                        else if (f.key == XB_K_ARGV) {
                                if (na >= MAX_STRS / 2)
                                        return -E2BIG;
                                argv_[na++] = s;
                        } else {
                                if (ne >= MAX_STRS / 2)
                                        return -E2BIG;
                                envp_[ne++] = s;
                                if (strncmp(s, "PATH=", 5) == 0)
                                        q->path = s + 5;
                        }
                        break;
                case XB_K_UID:
                case XB_K_GID:
                case XB_K_FLAGS:
                case XB_K_RLIMIT_CPU:
                case XB_K_RLIMIT_FSIZE:
                case XB_K_RLIMIT_NOFILE: {
                        uint64_t v;

                        if (f.len != sizeof(v))
                                return -EINVAL;
                        memcpy(&v, f.data, sizeof(v));
                        if (f.key == XB_K_UID)
                                q->uid = v;
                        else if (f.key == XB_K_GID)
                                q->gid = v;
                        else if (f.key == XB_K_FLAGS)
                                q->flags = v;
                        else if (f.key == XB_K_RLIMIT_CPU)
                                q->rl_cpu = v;
                        else if (f.key == XB_K_RLIMIT_FSIZE)
                                q->rl_fsize = v;
                        else
                                q->rl_nofile = v;
                        break;
                }
                default:
                        return -EINVAL;
                }
        }
        argv_[na] = NULL;
        envp_[ne] = NULL;
        if (na == 0 || q->uid > 65535 || q->gid > 65535)
                return -EINVAL;
        return 0;
}

void
xb_init_spawn(const struct xb_msgr *r, int *fds, size_t nfds)
{
        struct spawn_req q;
        int std[3] = { -1, -1, -1 }, pipefd[2];
        struct exec_error e;
        size_t k = 0;
        ssize_t n;
        pid_t pid;
        int err;

        err = parse(r, &q);
        for (int i = 0; i < 3 && err == 0; i++)
                if (q.flags & (XB_SPAWN_STDIN << i)) {
                        if (k >= nfds)
                                err = -EINVAL;
                        else
                                std[i] = fds[k++];
                }
        if (err == 0 && k != nfds)
                err = -EINVAL;
        if (err == 0 && nchildren >= XB_INIT_MAX_CHILDREN)
                err = -EAGAIN;
        if (err < 0 || pipe2(pipefd, O_CLOEXEC) < 0) {
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
                xb_init_error(r->tag, err < 0 ? -err : errno, err == -EAGAIN ? "too many processes" : "spawn request");
                return;
        }
        pid = fork();
        if (pid == 0) {
                close(pipefd[0]);
                child(&q, std, pipefd[1]);
        }
        err = errno;
        close(pipefd[1]);
        for (size_t i = 0; i < nfds; i++)
                close(fds[i]);
        if (pid < 0) {
                close(pipefd[0]);
                xb_init_error(r->tag, err, "fork");
                return;
        }
        /* EOF: the exec succeeded (the pipe was close-on-exec). */
        do
                n = read(pipefd[0], &e, sizeof(e));
        while (n < 0 && errno == EINTR);
        close(pipefd[0]);
        if (n == (ssize_t)sizeof(e)) {
                e.stage[sizeof(e.stage) - 1] = '\0';
                xb_init_error(r->tag, e.err, e.stage);
                return;   /* the child _exits; reap() collects it */
        }
        children[nchildren++] = (struct xb_init_child){ .pid = pid, .tag = r->tag,
                                                        .last = (q.flags & XB_SPAWN_LAST) != 0 };
        {
                uint8_t buf[64];
                struct xb_msgw w;

                xb_msgw_init(&w, buf, sizeof(buf), XB_EV_SPAWNED, r->tag);
                xb_msgw_u64(&w, XB_K_PID, (uint64_t)pid);
                xb_init_send(&w, NULL, 0);
        }
}

static struct xb_init_child *
find_tag(uint32_t tag)
{
        for (size_t i = 0; i < nchildren; i++)
                if (children[i].tag == tag)
                        return &children[i];
        return NULL;
}

void
xb_init_signal(const struct xb_msgr *r)
{
        uint64_t target, sig, flags = 0;
        struct xb_init_child *c;

        if (xb_msgr_u64(r, XB_K_TARGET, &target) < 0 || xb_msgr_u64(r, XB_K_SIGNO, &sig) < 0 ||
            sig < 1 || sig > 64 || target > UINT32_MAX)
                return;
        xb_msgr_u64(r, XB_K_FLAGS, &flags);
        c = find_tag((uint32_t)target);
        if (!c)
                return;
        if (flags & XB_SIG_GROUP)
                kill(-c->pid, (int)sig);
        else
                kill(c->pid, (int)sig);
}

void
xb_init_reap(void)
{
        for (;;) {
                struct rusage ru;
                int status;
                pid_t pid = wait4(-1, &status, WNOHANG, &ru);

                if (pid <= 0)
                        return;
                for (size_t i = 0; i < nchildren; i++) {
                        uint8_t buf[128];
                        struct xb_msgw w;

                        if (children[i].pid != pid)
                                continue;
                        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_EXITED, children[i].tag);
                        xb_msgw_u64(&w, XB_K_STATUS, (uint64_t)(uint32_t)status);
                        xb_msgw_u64(&w, XB_K_UTIME_US,
                                    (uint64_t)ru.ru_utime.tv_sec * 1000000 + (uint64_t)ru.ru_utime.tv_usec);
                        xb_msgw_u64(&w, XB_K_STIME_US,
                                    (uint64_t)ru.ru_stime.tv_sec * 1000000 + (uint64_t)ru.ru_stime.tv_usec);
                        xb_msgw_u64(&w, XB_K_MAXRSS_KB, (uint64_t)ru.ru_maxrss);
                        xb_init_send(&w, NULL, 0);
                        /* A one-shot sandbox ends with its command: dying
                         * here kills the rest at once (pid_namespaces(7)). */
                        if (children[i].last)
                                _exit(0);
                        children[i] = children[--nchildren];
                        break;
                }
        }
}
