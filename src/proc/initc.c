/* Init protocol, daemon side. */
#define _GNU_SOURCE
#include "initc.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
xb_sandbox_pipe(int fds[2])
{
        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        if (fchmod(fds[0], 0666) < 0) {
                int e = errno;

                close(fds[0]);
                close(fds[1]);
                fds[0] = fds[1] = -1;
                return -e;
        }
        return 0;
}

int
xb_initc_spawn(int sock, uint32_t tag, const struct xb_exec_spec *q, struct xb_err *err)
{
        uint8_t *buf = malloc(XB_MSG_MAX);
        struct xb_msgw w;
        int fds[3];
        size_t nfds = 0;
        uint64_t flags = XB_SPAWN_NEWSESSION;
        int r;

        if (!buf)
                return xb_err_set(err, ENOMEM, "spawn request");
        xb_msgw_init(&w, buf, XB_MSG_MAX, XB_REQ_SPAWN, tag);
        for (char *const *a = q->argv; *a; a++)
                xb_msgw_str(&w, XB_K_ARGV, *a);
        for (char *const *e = q->env; e && *e; e++)
                xb_msgw_str(&w, XB_K_ENV, *e);
        if (q->cwd)
                xb_msgw_str(&w, XB_K_CWD, q->cwd);
        xb_msgw_u64(&w, XB_K_UID, q->uid);
        xb_msgw_u64(&w, XB_K_GID, q->gid);
        if (q->rl_cpu_s)
                xb_msgw_u64(&w, XB_K_RLIMIT_CPU, q->rl_cpu_s);
        if (q->rl_fsize)
                xb_msgw_u64(&w, XB_K_RLIMIT_FSIZE, q->rl_fsize);
        if (q->rl_nofile)
                xb_msgw_u64(&w, XB_K_RLIMIT_NOFILE, q->rl_nofile);
        for (int i = 0; i < 3 && !q->tty; i++)
                if (q->std[i] >= 0) {
                        fds[nfds++] = q->std[i];
                        flags |= XB_SPAWN_STDIN << i;
                }
        if (q->tty) {
                /* The command opens its pty and sends the master over tty_sock. */
                fds[nfds++] = q->tty_sock;
                flags |= XB_SPAWN_TTY;
                xb_msgw_u64(&w, XB_K_ROWS, q->tty_rows);
                xb_msgw_u64(&w, XB_K_COLS, q->tty_cols);
        }
        if (q->last)
                flags |= XB_SPAWN_LAST;
        if (q->keeper)
                flags |= XB_SPAWN_KEEPER;
        xb_msgw_u64(&w, XB_K_FLAGS, flags);
        if (w.overflow) {
                free(buf);
                return xb_err_msg(err, E2BIG, "the command and its environment are over %d KiB; "
                                  "pass large inputs through a file or stdin", XB_MSG_MAX / 1024);
        }
        r = xb_msg_send(sock, w.buf, w.len, fds, nfds);
        free(buf);
        if (r < 0)
                return xb_err_set(err, -r, "send the spawn request to the sandbox init");
        return 0;
}

int
xb_initc_signal(int sock, uint32_t tag, int signo, unsigned flags)
{
        uint8_t buf[128];
        struct xb_msgw w;

        xb_msgw_init(&w, buf, sizeof(buf), XB_REQ_SIGNAL, 0);
        xb_msgw_u64(&w, XB_K_TARGET, tag);
        xb_msgw_u64(&w, XB_K_SIGNO, (uint64_t)signo);
        xb_msgw_u64(&w, XB_K_FLAGS, flags & (XB_SIG_GROUP | XB_SIG_OTHERS | XB_SIG_TREE));
        return xb_msg_send(sock, w.buf, w.len, NULL, 0);
}

int
xb_initc_watch(int sock, uint32_t tag, const char *path, bool recursive, uint32_t uid, uint32_t gid)
{
        uint8_t buf[XB_FILE_PATH_MAX + 256];
        struct xb_msgw w;

        xb_msgw_init(&w, buf, sizeof(buf), XB_REQ_WATCH, tag);
        xb_msgw_str(&w, XB_K_PATH, path);
        xb_msgw_u64(&w, XB_K_FLAGS, recursive ? XB_WATCH_RECURSIVE : 0);
        xb_msgw_u64(&w, XB_K_UID, uid);
        xb_msgw_u64(&w, XB_K_GID, gid);
        if (w.overflow)
                return -ENAMETOOLONG;
        return xb_msg_send(sock, w.buf, w.len, NULL, 0);
}

int
xb_initc_unwatch(int sock, uint32_t tag)
{
        uint8_t buf[64];
        struct xb_msgw w;

        xb_msgw_init(&w, buf, sizeof(buf), XB_REQ_UNWATCH, 0);
        xb_msgw_u64(&w, XB_K_TARGET, tag);
        return xb_msg_send(sock, w.buf, w.len, NULL, 0);
}

/* Copy an untrusted string, keeping printable ASCII only. */
static void
copy_printable(char *dst, size_t cap, const char *src, size_t len)
{
        size_t j = 0;

        for (size_t i = 0; i < len && j + 1 < cap; i++)
                dst[j++] = (src[i] >= 0x20 && src[i] < 0x7f) ? src[i] : '?';
        dst[j] = '\0';
}

int
xb_initc_recv(int sock, void *buf, struct xb_init_event *ev, int *fds, size_t *nfds)
{
        ssize_t n;
        uint64_t v;
        int r;

        *nfds = 0;
        n = xb_msg_recv(sock, buf, XB_MSG_MAX, fds, nfds, true);
        if (n == -EAGAIN || n == -EWOULDBLOCK)
                return -EAGAIN;
        if (n == 0 || n == -ECONNRESET)
                return -EPIPE;
        if (n < 0)
                return (int)n == -EBADMSG ? -EBADMSG : -EPIPE;
        memset(ev, 0, sizeof(*ev));
        if ((r = xb_msgr_init(&ev->msg, buf, (size_t)n)) < 0)
                goto bad;
        ev->tag = ev->msg.tag;
        switch (ev->msg.type) {
        case XB_EV_READY:
                ev->kind = XB_IEV_READY;
                if (xb_msgr_u64(&ev->msg, XB_K_VERSION, &v) < 0 || v != XB_PROTO_VERSION)
                        goto bad;
                break;
        case XB_EV_SPAWNED:
                ev->kind = XB_IEV_SPAWNED;
                if (xb_msgr_u64(&ev->msg, XB_K_PID, &v) < 0 || v < 2 || v > 4194304)
                        goto bad;
                ev->pid = (pid_t)v;
                break;
        case XB_EV_EXITED:
                ev->kind = XB_IEV_EXITED;
                if (xb_msgr_u64(&ev->msg, XB_K_STATUS, &v) < 0 || v > UINT32_MAX)
                        goto bad;
                ev->status = (int)(uint32_t)v;
                xb_msgr_u64(&ev->msg, XB_K_UTIME_US, &ev->utime_us);
                xb_msgr_u64(&ev->msg, XB_K_STIME_US, &ev->stime_us);
                xb_msgr_u64(&ev->msg, XB_K_MAXRSS_KB, &ev->maxrss_kb);
                break;
        case XB_EV_ERROR: {
                const char *s;
                size_t len;

                ev->kind = XB_IEV_ERROR;
                if (xb_msgr_u64(&ev->msg, XB_K_ERRNO, &v) < 0 || v < 1 || v > 4095)
                        goto bad;
                ev->errnum = (int)v;
                if (xb_msgr_str(&ev->msg, XB_K_STAGE, &s, &len) == 0)
                        copy_printable(ev->stage, sizeof(ev->stage), s, len);
                break;
        }
        case XB_EV_FILE:
                ev->kind = XB_IEV_FILE;
                break;
        case XB_EV_WATCH:
                ev->kind = XB_IEV_WATCH;
                break;
        default:
                goto bad;
        }
        /* Only file replies may carry fds. */
        if (*nfds && ev->kind != XB_IEV_FILE)
                goto bad;
        return 0;
bad:
        for (size_t i = 0; i < *nfds; i++)
                close(fds[i]);
        *nfds = 0;
        return -EBADMSG;
}
