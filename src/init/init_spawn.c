/* Spawning commands inside the sandbox, signalling and reaping them. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "init.h"
#include "base/cleanup.h"
#include "sandbox/execspec.h"

#define MAX_STRS 8192

static struct xb_init_child children[XB_INIT_MAX_CHILDREN];
static size_t nchildren;

/* argv and envp point into this copy of the request, NUL-terminated. */
static char arena[XB_MSG_MAX + MAX_STRS];
static char *argv_[MAX_STRS / 2 + 1];
static char *envp_[MAX_STRS / 2 + 1];

struct exec_error {
        int err;
        char stage[60];
};

static void __attribute__((noreturn))
child(const struct xb_exec_spec *q, int pipefd)
{
        struct exec_error e = { 0 };
        const char *stage = "spawn";

        e.err = xb_exec_child(q, &stage);
        snprintf(e.stage, sizeof(e.stage), "%s", stage);
        if (write(pipefd, &e, sizeof(e)) < 0)
                _exit(126);
        _exit(127);
}

static int
parse(const struct xb_msgr *r, struct xb_exec_spec *q, uint64_t *flags)
{
        size_t cur = 0, used = 0, na = 0, ne = 0;
        struct xb_field f;

        memset(q, 0, sizeof(*q));
        q->std[0] = q->std[1] = q->std[2] = -1;
        *flags = XB_SPAWN_NEWSESSION;
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
                        if ((f.key == XB_K_UID || f.key == XB_K_GID) && v > 65535)
                                return -EINVAL;
                        if (f.key == XB_K_UID)
                                q->uid = (uint32_t)v;
                        else if (f.key == XB_K_GID)
                                q->gid = (uint32_t)v;
                        else if (f.key == XB_K_FLAGS)
                                *flags = v;
                        else if (f.key == XB_K_RLIMIT_CPU)
                                q->rl_cpu_s = v;
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
        q->argv = argv_;
        q->env = envp_;
        q->last = (*flags & XB_SPAWN_LAST) != 0;
        if (na == 0)
                return -EINVAL;
        return 0;
}

void
xb_init_spawn(const struct xb_msgr *r, int *fds, size_t nfds)
{
        struct xb_exec_spec q;
        uint64_t flags;
        int pipefd[2];
        struct exec_error e;
        size_t k = 0;
        ssize_t n;
        pid_t pid;
        int err;

        err = parse(r, &q, &flags);
        for (int i = 0; i < 3 && err == 0; i++)
                if (flags & (XB_SPAWN_STDIN << i)) {
                        if (k >= nfds)
                                err = -EINVAL;
                        else
                                q.std[i] = fds[k++];
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
                child(&q, pipefd[1]);
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
                return;   /* the child _exits; xb_init_reap() collects it */
        }
        xb_init_adopt(pid, r->tag, q.last);
}

void
xb_init_adopt(pid_t pid, uint32_t tag, bool last)
{
        uint8_t buf[64];
        struct xb_msgw w;

        children[nchildren++] = (struct xb_init_child){ .pid = pid, .tag = tag, .last = last };
        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_SPAWNED, tag);
        xb_msgw_u64(&w, XB_K_PID, (uint64_t)pid);
        xb_init_send(&w, NULL, 0);
}

static struct xb_init_child *
find_tag(uint32_t tag)
{
        for (size_t i = 0; i < nchildren; i++)
                if (children[i].tag == tag)
                        return &children[i];
        return NULL;
}

/* The process group of a live process, or -1 (also for a zombie: it is
 * dead already, and waits for its parent). */
static pid_t
pgrp_of(int procfd, const char *pid)
{
        char path[32], buf[512], *p, state;
        int fd;
        ssize_t n;
        long pgrp;

        snprintf(path, sizeof(path), "%s/stat", pid);
        fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        /* "pid (comm) state ppid pgrp ...": comm may hold anything but the last ')'. */
        p = strrchr(buf, ')');
        if (!p || sscanf(p + 1, " %c %*d %ld", &state, &pgrp) != 2 || state == 'Z' || state == 'X')
                return -1;
        return (pid_t)pgrp;
}

/* Signal every process of leader's group but the leader, over and over
 * until a pass finds none: a fork bomb's copies are born as fast as they
 * die, but a pass here (C, a few microseconds a process) outruns a fork.
 * It is how a session's interrupt ends what the interpreter forked without
 * ending the interpreter. Bounded, so init always gets back to work. */
static void
signal_others(pid_t leader, int sig)
{
        _cleanup_close_ int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (procfd < 0)
                return;
        for (int pass = 0; pass < 64; pass++) {
                _cleanup_close_ int dfd = dup(procfd);
                _cleanup_closedir_ DIR *d = xb_take_fdopendir(&dfd);
                struct dirent *de;
                int found = 0;

                if (!d)
                        break;
                rewinddir(d);
                while ((de = readdir(d))) {
                        char *end;
                        long pid = strtol(de->d_name, &end, 10);

                        if (*end || pid <= 1 || pid == leader || pgrp_of(procfd, de->d_name) != leader)
                                continue;
                        if (kill((pid_t)pid, sig) == 0)
                                found++;
                }
                if (!found || sig != SIGKILL)
                        break;
        }
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
        if (flags & XB_SIG_OTHERS)
                signal_others(c->pid, (int)sig);
        else if (flags & XB_SIG_GROUP)
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
