/* The last steps of a command's start, in its own process. */
#define _GNU_SOURCE
#include "execspec.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>
#include <linux/close_range.h>

#include "proto/wire.h"

static const char *
env_path(char *const *env)
{
        for (char *const *e = env; e && *e; e++)
                if (strncmp(*e, "PATH=", 5) == 0)
                        return *e + 5;
        return "/usr/local/bin:/usr/bin:/bin";
}

/* execvpe with the spec's PATH, not the caller's. */
static int
exec_path(const struct xb_exec_spec *s)
{
        const char *file = s->argv[0], *path = env_path(s->env);
        char buf[PATH_MAX];
        int saw_eacces = 0;

        if (strchr(file, '/')) {
                execve(file, s->argv, s->env);
                return errno;
        }
        for (const char *p = path;;) {
                const char *end = strchrnul(p, ':');
                size_t dlen = (size_t)(end - p);

                if (dlen + strlen(file) + 2 <= sizeof(buf)) {
                        if (dlen == 0)
                                snprintf(buf, sizeof(buf), "%s", file);
                        else
                                snprintf(buf, sizeof(buf), "%.*s/%s", (int)dlen, p, file);
                        execve(buf, s->argv, s->env);
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

/* A pty pair of the devpts this process sees (the sandbox's own
 * instance), the slave made our controlling terminal (we lead a new
 * session) and owned by the command's user, as grantpt(3) would; the
 * master goes to whoever relays it. Returns the slave or -errno. */
static int
open_tty(const struct xb_exec_spec *s)
{
        struct xb_msg_hdr h = { .type = XB_SETUP_PTY };
        struct winsize ws = { .ws_row = s->tty_rows, .ws_col = s->tty_cols };
        int m, sl, unlock = 0, r;

        m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (m < 0)
                return -errno;
        /* TIOCGPTPEER (Linux 4.13) opens the slave without a path lookup. */
        if (ioctl(m, TIOCSPTLCK, &unlock) < 0 || (sl = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
                r = -errno;
                close(m);
                return r;
        }
        if ((s->tty_rows || s->tty_cols) && ioctl(sl, TIOCSWINSZ, &ws) < 0)
                goto fail;
        if (fchown(sl, s->uid, (gid_t)-1) < 0 || ioctl(sl, TIOCSCTTY, 0) < 0)
                goto fail;
        if ((r = xb_msg_send(s->tty_sock, &h, sizeof(h), &m, 1)) < 0) {
                errno = -r;
                goto fail;
        }
        close(m);
        return sl;
fail:
        r = -errno;
        close(sl);
        close(m);
        return r;
}

int
xb_exec_child(const struct xb_exec_spec *s, const char **stage)
{
        int std[3] = { s->std[0], s->std[1], s->std[2] };
        sigset_t all;
        struct rlimit rl;

        /* Dispositions are the defaults already: the setup child reset
         * them for init and everything after (sandbox.c, child_main). */
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
        *stage = "setsid";
        if (setsid() < 0)
                return errno;
        if (s->tty) {
                *stage = "open a terminal";
                std[0] = std[1] = std[2] = open_tty(s);
                if (std[0] < 0)
                        return -std[0];
        }
        *stage = "set up stdio";
        for (int i = 0; i < 3; i++) {
                int fd = std[i];

                if (fd < 0) {
                        fd = open("/dev/null", i == 0 ? O_RDONLY : O_WRONLY);
                        if (fd < 0)
                                return errno;
                }
                if (fd != i && dup2(fd, i) < 0)
                        return errno;
        }
        /* Only 0-2 survive the exec; whatever reports errors lives until then. */
        syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
        rl = (struct rlimit){ 0, 0 };
        setrlimit(RLIMIT_CORE, &rl);
        if (s->rl_cpu_s) {
                rl = (struct rlimit){ s->rl_cpu_s, s->rl_cpu_s + 1 };
                setrlimit(RLIMIT_CPU, &rl);
        }
        if (s->rl_fsize) {
                rl = (struct rlimit){ s->rl_fsize, s->rl_fsize };
                setrlimit(RLIMIT_FSIZE, &rl);
        }
        if (s->rl_nofile) {
                rl = (struct rlimit){ s->rl_nofile, s->rl_nofile };
                setrlimit(RLIMIT_NOFILE, &rl);
        }
        umask(022);
        *stage = "switch user";
        if (s->uid != 0 || s->gid != 0) {
                gid_t g = (gid_t)s->gid;

                /* Leaving uid 0 empties the permitted and effective sets. */
                if (setgroups(1, &g) < 0 || setresgid(g, g, g) < 0 ||
                    setresuid((uid_t)s->uid, (uid_t)s->uid, (uid_t)s->uid) < 0)
                        return errno;
        }
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        *stage = "working directory";
        if (chdir(s->cwd ? s->cwd : "/") < 0)
                return errno;
        *stage = "exec";
        return exec_path(s);
}
