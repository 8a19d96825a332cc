/* Spawning commands inside the sandbox, signalling and reaping them.
 *
 * Each spawned command gets a keeper: a fork of init that is a child
 * subreaper (PR_SET_CHILD_SUBREAPER, prctl(2)) and forks the command. An
 * orphan reparents to its nearest living subreaper ancestor, so whatever
 * the command starts, setsid'd or double-forked, stays a descendant of
 * the keeper until it dies: the tree can be found from /proc's parent
 * links and killed (XB_SIG_TREE), which process groups and sessions cannot
 * do. The keeper reports the command's exit itself (so its wait4 rusage
 * is the command's), reaps the tree's orphans, and exits once the tree is
 * empty. Init learns the command's pid, or its exec error, from the
 * keeper over a socketpair, and tells it when SPAWNED is sent, so that
 * EXITED never overtakes it. A keeper killed from inside (sandbox root
 * can) loses its tree to init: init reports the command as killed, and
 * the sandbox's own kill still ends everything. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
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

/* Keeper -> init: the command's pid, or why it did not start. */
struct keeper_report {
        pid_t pid;
        struct exec_error e;
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
                case XB_K_ROWS:
                case XB_K_COLS:
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
                        if ((f.key == XB_K_UID || f.key == XB_K_GID || f.key == XB_K_ROWS ||
                             f.key == XB_K_COLS) && v > 65535)
                                return -EINVAL;
                        if (f.key == XB_K_ROWS)
                                q->tty_rows = (uint16_t)v;
                        else if (f.key == XB_K_COLS)
                                q->tty_cols = (uint16_t)v;
                        else if (f.key == XB_K_UID)
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
        q->tty = (*flags & XB_SPAWN_TTY) != 0;
        q->keeper = (*flags & XB_SPAWN_KEEPER) != 0;
        q->tty_sock = -1;
        if (na == 0 || (q->tty && (*flags & (XB_SPAWN_STDIN | XB_SPAWN_STDOUT | XB_SPAWN_STDERR))))
                return -EINVAL;
        return 0;
}

static void send_exited(uint32_t tag, int status, const struct rusage *ru);

/* Exits a keeper could not report (its fd 3 is an earlier daemon's, gone):
 * a page shared with init, which reports them when it reaps the keeper. */
struct lost_exit {
        uint32_t tag;                 /* 0: free; claimed with a CAS */
        int status;
        struct rusage ru;
};
#define LOST_MAX 256
static struct lost_exit *lost;

/* tag's XB_EV_EXITED, in buf (EXITED_BYTES): what init and a keeper send. */
#define EXITED_BYTES 128
static void
exited_msg(struct xb_msgw *w, uint8_t *buf, uint32_t tag, int status, const struct rusage *ru)
{
        xb_msgw_init(w, buf, EXITED_BYTES, XB_EV_EXITED, tag);
        xb_msgw_u64(w, XB_K_STATUS, (uint64_t)(uint32_t)status);
        xb_msgw_u64(w, XB_K_UTIME_US, (uint64_t)ru->ru_utime.tv_sec * 1000000 + (uint64_t)ru->ru_utime.tv_usec);
        xb_msgw_u64(w, XB_K_STIME_US, (uint64_t)ru->ru_stime.tv_sec * 1000000 + (uint64_t)ru->ru_stime.tv_usec);
        xb_msgw_u64(w, XB_K_MAXRSS_KB, (uint64_t)ru->ru_maxrss);
}

static void
keeper_exited(uint32_t tag, int status, const struct rusage *ru)
{
        uint8_t buf[EXITED_BYTES];
        struct xb_msgw w;

        exited_msg(&w, buf, tag, status, ru);
        if (xb_msg_send(XB_INIT_SOCK, w.buf, w.len, NULL, 0) >= 0 || !lost)
                return;
        for (size_t i = 0; i < LOST_MAX; i++) {
                uint32_t zero = 0;

                if (__atomic_compare_exchange_n(&lost[i].tag, &zero, UINT32_MAX, false, __ATOMIC_ACQ_REL,
                                                __ATOMIC_ACQUIRE)) {
                        lost[i].status = status;
                        lost[i].ru = *ru;
                        __atomic_store_n(&lost[i].tag, tag, __ATOMIC_RELEASE);
                        return;
                }
        }
}

/* In init, reaping tag's keeper: the exit it could not send. */
static bool
lost_take(uint32_t tag)
{
        for (size_t i = 0; lost && tag && i < LOST_MAX; i++)
                if (__atomic_load_n(&lost[i].tag, __ATOMIC_ACQUIRE) == tag) {
                        send_exited(tag, lost[i].status, &lost[i].ru);
                        __atomic_store_n(&lost[i].tag, 0, __ATOMIC_RELEASE);
                        return true;
                }
        return false;
}

static ssize_t
read_full(int fd, void *buf, size_t n)
{
        size_t got = 0;

        while (got < n) {
                ssize_t r = read(fd, (char *)buf + got, n - got);

                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                got += (size_t)r;
        }
        return (ssize_t)got;
}

/* The keeper: see the top of this file. sock is its end of the socketpair
 * to init; fd 3 stays the daemon's socket. */
static void __attribute__((noreturn))
keeper(const struct xb_exec_spec *q, int sock, uint32_t tag)
{
        struct keeper_report rep = { 0 };
        int errp[2];
        char go;
        pid_t c;

        prctl(PR_SET_NAME, "xb-keeper", 0, 0, 0);
        if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
                rep.e.err = errno;
                snprintf(rep.e.stage, sizeof(rep.e.stage), "keeper");
                (void)!write(sock, &rep, sizeof(rep));
                _exit(0);
        }
        c = fork();
        if (c == 0) {
                close(errp[0]);
                close(sock);
                child(q, errp[1]);
        }
        rep.pid = c;
        if (c < 0) {
                rep.e.err = errno;
                snprintf(rep.e.stage, sizeof(rep.e.stage), "fork");
        }
        close(errp[1]);
        /* Nothing of init's but the daemon's socket: the command's pipes
         * must reach EOF, and a cancelled watch must free its inotify. */
        for (int i = 0; i < 3; i++)
                if (q->std[i] > XB_INIT_SOCK)
                        close(q->std[i]);
        if (q->tty_sock > XB_INIT_SOCK)
                close(q->tty_sock);
        /* EOF: the exec succeeded (the pipe was close-on-exec). */
        if (c > 0 && read_full(errp[0], &rep.e, sizeof(rep.e)) != (ssize_t)sizeof(rep.e))
                rep.e.err = 0;
        close(errp[0]);
        if (write(sock, &rep, sizeof(rep)) != (ssize_t)sizeof(rep) || rep.e.err) {
                if (c > 0)
                        waitpid(c, NULL, 0);
                _exit(0);
        }
        /* Init sent SPAWNED (or died: then so does everything). */
        if (read_full(sock, &go, 1) != 1)
                _exit(0);
        close(sock);
        syscall(SYS_close_range, XB_INIT_SOCK + 1, ~0U, 0);
        for (;;) {
                struct rusage ru;
                int status;
                pid_t pid = wait4(-1, &status, 0, &ru);

                if (pid < 0 && errno == EINTR)
                        continue;
                if (pid < 0)
                        _exit(0);   /* ECHILD: the tree is empty */
                if (pid == c)
                        keeper_exited(tag, status, &ru);
        }
}

/* Without a keeper (sessions' drivers): init forks the command itself. */
static void
spawn_direct(const struct xb_msgr *r, const struct xb_exec_spec *q, int *fds, size_t nfds)
{
        struct exec_error e;
        int pipefd[2], err;
        ssize_t n;
        pid_t pid;

        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                err = errno;
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
                xb_init_error(r->tag, err, "spawn request");
                return;
        }
        pid = fork();
        if (pid == 0) {
                close(pipefd[0]);
                child(q, pipefd[1]);
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
        n = read_full(pipefd[0], &e, sizeof(e));
        close(pipefd[0]);
        if (n == (ssize_t)sizeof(e)) {
                e.stage[sizeof(e.stage) - 1] = '\0';
                xb_init_error(r->tag, e.err, e.stage);
                return;   /* the child _exits; xb_init_reap() collects it */
        }
        xb_init_adopt(pid, r->tag, q->last);
}

void
xb_init_spawn(const struct xb_msgr *r, int *fds, size_t nfds)
{
        struct xb_exec_spec q;
        struct keeper_report rep = { 0 };
        uint64_t flags;
        int sp[2];
        size_t k = 0;
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
        if (err == 0 && q.tty) {
                if (k >= nfds)
                        err = -EINVAL;
                else
                        q.tty_sock = fds[k++];
        }
        if (err == 0 && k != nfds)
                err = -EINVAL;
        if (err == 0 && nchildren >= XB_INIT_MAX_CHILDREN)
                err = -EAGAIN;
        if (err == 0 && q.keeper && !lost) {
                void *m = mmap(NULL, sizeof(*lost) * LOST_MAX, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                               -1, 0);

                lost = m == MAP_FAILED ? NULL : m;
        }
        if (err == 0 && !q.keeper) {
                spawn_direct(r, &q, fds, nfds);
                return;
        }
        /* A one-shot command is reaped by init itself: its exit ends the sandbox. */
        if (err == 0 && q.last)
                err = -EINVAL;
        if (err < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
                xb_init_error(r->tag, err < 0 ? -err : errno, err == -EAGAIN ? "too many processes" : "spawn request");
                return;
        }
        pid = fork();
        if (pid == 0) {
                close(sp[0]);
                keeper(&q, sp[1], r->tag);
        }
        err = errno;
        close(sp[1]);
        for (size_t i = 0; i < nfds; i++)
                close(fds[i]);
        if (pid < 0) {
                close(sp[0]);
                xb_init_error(r->tag, err, "fork");
                return;
        }
        if (read_full(sp[0], &rep, sizeof(rep)) != (ssize_t)sizeof(rep)) {
                rep.e.err = EIO;
                snprintf(rep.e.stage, sizeof(rep.e.stage), "keeper");
        }
        if (rep.e.err) {
                close(sp[0]);
                rep.e.stage[sizeof(rep.e.stage) - 1] = '\0';
                xb_init_error(r->tag, rep.e.err, rep.e.stage);
                /* The keeper exits; xb_init_reap() collects it. */
                children[nchildren++] = (struct xb_init_child){ .pid = 0, .keeper = pid, .tag = 0 };
                return;
        }
        children[nchildren++] = (struct xb_init_child){ .pid = rep.pid, .keeper = pid, .tag = r->tag };
        {
                uint8_t buf[64];
                struct xb_msgw w;

                xb_msgw_init(&w, buf, sizeof(buf), XB_EV_SPAWNED, r->tag);
                xb_msgw_u64(&w, XB_K_PID, (uint64_t)rep.pid);
                xb_init_send(&w, NULL, 0);
        }
        (void)!write(sp[0], "g", 1);
        close(sp[0]);
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
        for (size_t i = 0; i < nchildren && tag; i++)
                if (children[i].tag == tag)
                        return &children[i];
        return NULL;
}

/* The parent and process group of a live process from its stat; -1 if
 * it is gone or a zombie (dead already, and waiting for its parent). */
static int
stat_of(int procfd, const char *pid, pid_t *ppid, pid_t *pgrp)
{
        char path[32], buf[512], *p, state;
        int fd;
        ssize_t n;
        long pp, pg;

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
        if (!p || sscanf(p + 1, " %c %ld %ld", &state, &pp, &pg) != 3 || state == 'Z' || state == 'X')
                return -1;
        *ppid = (pid_t)pp;
        *pgrp = (pid_t)pg;
        return 0;
}

static pid_t
pgrp_of(int procfd, const char *pid)
{
        pid_t pp, pg;

        return stat_of(procfd, pid, &pp, &pg) < 0 ? -1 : pg;
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

/* Live processes and their parents, from one pass over /proc. */
#define TREE_SCAN_MAX 16384
static struct { pid_t pid, ppid; bool in; } scan[TREE_SCAN_MAX];

/* Signal every live descendant of keeper (not keeper itself), over and
 * over for SIGKILL until a pass finds none, as signal_others does: each
 * orphan is the keeper's child by then, so a pass misses only what was
 * born during it. */
static void
signal_tree(pid_t keeper, int sig)
{
        _cleanup_close_ int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (procfd < 0)
                return;
        for (int pass = 0; pass < 64; pass++) {
                _cleanup_close_ int dfd = dup(procfd);
                _cleanup_closedir_ DIR *d = xb_take_fdopendir(&dfd);
                struct dirent *de;
                size_t n = 0;
                int found = 0;
                bool grew = true;

                if (!d)
                        break;
                rewinddir(d);
                while ((de = readdir(d)) && n < TREE_SCAN_MAX) {
                        char *end;
                        long pid = strtol(de->d_name, &end, 10);
                        pid_t pp, pg;

                        if (*end || pid <= 1 || stat_of(procfd, de->d_name, &pp, &pg) < 0)
                                continue;
                        scan[n].pid = (pid_t)pid;
                        scan[n].ppid = pp;
                        scan[n].in = pp == keeper;
                        n++;
                }
                while (grew) {
                        grew = false;
                        for (size_t i = 0; i < n; i++) {
                                if (scan[i].in)
                                        continue;
                                for (size_t j = 0; j < n; j++)
                                        if (scan[j].in && scan[j].pid == scan[i].ppid) {
                                                scan[i].in = grew = true;
                                                break;
                                        }
                        }
                }
                for (size_t i = 0; i < n; i++)
                        if (scan[i].in && scan[i].pid != keeper && kill(scan[i].pid, sig) == 0)
                                found++;
                if (!found || sig != SIGKILL)
                        break;
        }
}

/* Whether c's command is still the keeper's child, not a reused pid. */
static bool
command_alive(const struct xb_init_child *c)
{
        char name[16];
        pid_t pp, pg;
        _cleanup_close_ int procfd = -1;

        if (!c->keeper)
                return true;
        procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        snprintf(name, sizeof(name), "%d", (int)c->pid);
        return procfd >= 0 && stat_of(procfd, name, &pp, &pg) == 0 && pp == c->keeper;
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
        if (flags & XB_SIG_TREE) {
                /* The command first, so its shell cannot respawn what dies. */
                if (command_alive(c))
                        kill(c->pid, (int)sig);
                if (c->keeper)
                        signal_tree(c->keeper, (int)sig);
                else
                        kill(-c->pid, (int)sig);
                return;
        }
        if (!command_alive(c))
                return;
        if (flags & XB_SIG_OTHERS)
                signal_others(c->pid, (int)sig);
        else if (flags & XB_SIG_GROUP)
                kill(-c->pid, (int)sig);
        else
                kill(c->pid, (int)sig);
}

static void
send_exited(uint32_t tag, int status, const struct rusage *ru)
{
        uint8_t buf[EXITED_BYTES];
        struct xb_msgw w;

        exited_msg(&w, buf, tag, status, ru);
        xb_init_send(&w, NULL, 0);
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
                        struct xb_init_child *c = &children[i];

                        if (c->keeper ? c->keeper != pid : c->pid != pid)
                                continue;
                        /* A keeper exits 0 once its tree is empty, having
                         * reported the command; one killed may not have. A
                         * second EXITED for a tag is ignored by the daemon. */
                        if (c->keeper && lost_take(c->tag))
                                ;
                        else if (!c->keeper || (c->tag && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)))
                                send_exited(c->tag, status, &ru);
                        /* A one-shot sandbox ends with its command: dying
                         * here kills the rest at once (pid_namespaces(7)). */
                        if (c->last)
                                _exit(0);
                        children[i] = children[--nchildren];
                        break;
                }
        }
}

uint32_t
xb_init_max_tag(void)
{
        uint32_t m = xb_init_watch_max_tag();

        for (size_t i = 0; i < nchildren; i++)
                if (children[i].tag > m)
                        m = children[i].tag;
        return m;
}
