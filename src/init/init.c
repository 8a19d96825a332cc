/* The sandbox init's main loop. See init.h. */
#define _GNU_SOURCE
#include "init.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

static uint8_t rxbuf[XB_MSG_MAX];

void
xb_init_send(const struct xb_msgw *w, const int *fds, size_t nfds)
{
        if (w->overflow) {
                /* A reply that does not fit is a bug in init, not in the caller. */
                _exit(70);
        }
        if (xb_init_queue(w->buf, w->len))
                return;
        if (xb_msg_send(XB_INIT_SOCK, w->buf, w->len, fds, nfds) < 0) {
                /* The daemon is gone: dying takes the namespace down,
                 * unless armed to wait for the next one. */
                if (!xb_init_detach())
                        _exit(0);
                xb_init_queue(w->buf, w->len);
        }
}

void
xb_init_error(uint32_t tag, int errnum, const char *stage)
{
        uint8_t buf[512];
        struct xb_msgw w;

        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_ERROR, tag);
        xb_msgw_u64(&w, XB_K_ERRNO, (uint64_t)errnum);
        xb_msgw_str(&w, XB_K_STAGE, stage);
        xb_init_send(&w, NULL, 0);
}

static void
handle(const uint8_t *buf, size_t len, int *fds, size_t nfds)
{
        struct xb_msgr r;

        if (xb_msgr_init(&r, buf, len) < 0) {
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
                xb_init_error(0, EBADMSG, "malformed request");
                return;
        }
        switch (r.type) {
        case XB_REQ_SPAWN:
                xb_init_spawn(&r, fds, nfds);
                return;
        case XB_REQ_SIGNAL:
                xb_init_signal(&r);
                break;
        case XB_REQ_FILE:
                xb_init_file(&r, fds, nfds);
                return;
        case XB_REQ_WATCH:
                xb_init_watch(&r);
                break;
        case XB_REQ_UNWATCH:
                xb_init_unwatch(&r);
                break;
        case XB_REQ_KEEP:
                xb_init_keep(&r, fds, nfds);
                return;
        case XB_REQ_HOLD:
                xb_init_hold(&r, fds, nfds);
                return;
        case XB_REQ_UNHOLD:
                xb_init_unhold(&r);
                break;
        default:
                xb_init_error(r.tag, ENOSYS, "unknown request");
                break;
        }
        for (size_t i = 0; i < nfds; i++)
                close(fds[i]);
}

/* "--first=PID:TAG:LAST": a one-shot command the setup child started
 * before exec'ing us; it is our child already. Reap once in case it has
 * exited (its SIGCHLD came before the signalfd existed). */
static void
adopt_first(int argc, char **argv)
{
        for (int i = 1; i < argc; i++) {
                unsigned long pid, tag, last;
                char tail;

                if (strncmp(argv[i], "--first=", 8) != 0 ||
                    sscanf(argv[i] + 8, "%lu:%lu:%lu%c", &pid, &tag, &last, &tail) != 3 || pid < 2 ||
                    pid > 4194304 || tag > UINT32_MAX)
                        continue;
                xb_init_adopt((pid_t)pid, (uint32_t)tag, last != 0);
                xb_init_reap();
        }
}

int
main(int argc, char **argv)
{
        uint8_t buf[64];
        struct xb_msgw w;
        struct pollfd pfd[2 + XB_WATCHES_MAX];
        int widx[XB_WATCHES_MAX];
        size_t nw;
        sigset_t mask;
        int sfd;

        /* Not dumpable: root in the sandbox (without CAP_SYS_PTRACE) cannot
         * ptrace init, read its memory or take its fds, such as the daemon's
         * socket (ptrace(2), "ptrace access mode checking"). */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return 74;
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGPIPE);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return 71;
        sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0)
                return 71;

        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_READY, 0);
        xb_msgw_u64(&w, XB_K_VERSION, XB_PROTO_VERSION);
        xb_msgw_u64(&w, XB_K_PID, (uint64_t)getpid());
        xb_init_send(&w, NULL, 0);
        adopt_first(argc, argv);

        pfd[0] = (struct pollfd){ .fd = XB_INIT_SOCK, .events = POLLIN };
        pfd[1] = (struct pollfd){ .fd = sfd, .events = POLLIN };
        for (;;) {
                int timeout = -1;

                /* Alone, watches are not read: the kernel queues their
                 * events (bounded) for the next daemon (init_keep.c). */
                nw = xb_init_alone() ? 0 : xb_init_watch_fds(pfd + 2, XB_WATCHES_MAX, widx);
                pfd[0].fd = XB_INIT_SOCK;
                if (xb_init_alone() && (pfd[0].fd = xb_init_wait_fd(&timeout)) < 0)
                        return 0;   /* no daemon came back in time */
                if (poll(pfd, 2 + nw, timeout) < 0) {
                        if (errno == EINTR)
                                continue;
                        return 72;
                }
                if (pfd[1].revents & POLLIN) {
                        struct signalfd_siginfo si;

                        while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                                ;
                        xb_init_reap();
                }
                if (xb_init_alone()) {
                        if (pfd[0].revents & POLLIN)
                                xb_init_accept();
                } else if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
                        int fds[XB_MSG_MAXFDS];
                        size_t nfds = 0;
                        ssize_t n = xb_msg_recv(XB_INIT_SOCK, rxbuf, sizeof(rxbuf), fds, &nfds, true);

                        if (n == 0 || (n < 0 && n != -EAGAIN && n != -EBADMSG)) {
                                if (xb_init_detach())
                                        continue;
                                return 0;   /* the daemon closed us: end the sandbox */
                        }
                        if (n == -EBADMSG)
                                xb_init_error(0, EBADMSG, "malformed request");
                        else if (n > 0)
                                handle(rxbuf, (size_t)n, fds, nfds);
                }
                /* After requests: an unwatch may have freed a watch polled here. */
                for (size_t i = 0; i < nw; i++)
                        if (pfd[2 + i].revents & POLLIN)
                                xb_init_watch_read(widx[i]);
        }
}
