/* Outliving the daemon: see init.h.
 *
 * KEEP arms it: a listening socket the daemon bound in its state dir (out
 * of the sandbox's mount namespace), a secret, the uid slot's lock (an
 * open file description whose lock lives while any dup of it does) and
 * the egress sockets. HOLD keeps dups of a background command's output
 * pipes' read ends, with the daemon's note on it, so that writers never
 * see EPIPE while no daemon reads (a terminal's: its master, so the pty
 * is not hung up), and a polled watcher's note (no fds: the watch is
 * init's already). At EOF of fd 3 an armed init waits up
 * to the grace period for a peer that proves the secret; to it, it hands
 * back the lock and sockets (KEPT), the held pipes (HELD) and the events
 * it queued meanwhile (commands that exited). No peer in time: init exits
 * and the kernel ends the sandbox. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "init.h"

#define HOLD_MAX 256
#define QUEUE_MAX 512
#define QUEUE_MSG 256
#define NET_MAX 3

struct hold {
        uint32_t tag;
        pid_t pid;
        int fds[3];                   /* a process's stdout, stderr; a session's stdin too */
        size_t nfds;
        size_t note_len;
        char note[XB_HOLD_NOTE_MAX];
};

static struct {
        bool armed, alone;
        int lsock, lock;
        int net[NET_MAX];
        size_t nnet;
        char secret[XB_KEEP_SECRET_LEN];
        uint64_t grace_ms, deadline_ms;
        struct hold holds[HOLD_MAX];
        size_t nholds;
        uint8_t queue[QUEUE_MAX][QUEUE_MSG];
        uint16_t qlen[QUEUE_MAX];
        size_t nqueue;
} k = { .lsock = -1, .lock = -1 };

static uint64_t
now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
close_all(int *fds, size_t nfds)
{
        for (size_t i = 0; i < nfds; i++)
                close(fds[i]);
}

bool
xb_init_alone(void)
{
        return k.alone;
}

bool
xb_init_queue(const void *buf, size_t len)
{
        if (!k.alone)
                return false;
        /* An exit is what a new daemon needs. Watches are not read while
         * alone (init.c): their events wait in the kernel for it. */
        if (len >= 8 && ((const struct xb_msg_hdr *)buf)->type == XB_EV_EXITED && len <= QUEUE_MSG &&
            k.nqueue < QUEUE_MAX) {
                memcpy(k.queue[k.nqueue], buf, len);
                k.qlen[k.nqueue++] = (uint16_t)len;
        }
        return true;
}

void
xb_init_keep(const struct xb_msgr *r, int *fds, size_t nfds)
{
        const char *sec;
        size_t n;
        uint64_t grace;

        if (k.armed || nfds < 2 || nfds > 2 + NET_MAX || xb_msgr_str(r, XB_K_DATA, &sec, &n) < 0 ||
            n != XB_KEEP_SECRET_LEN || xb_msgr_u64(r, XB_K_TIMEOUT_MS, &grace) < 0 || grace == 0) {
                /* Not armed: it ends with this daemon, as without. A reply
                 * with tag 0 would be taken for a setup failure. */
                close_all(fds, nfds);
                return;
        }
        memcpy(k.secret, sec, n);
        k.lsock = fds[0];
        k.lock = fds[1];
        for (size_t i = 2; i < nfds; i++)
                k.net[k.nnet++] = fds[i];
        k.grace_ms = grace;
        k.armed = true;
}

static struct hold *
find_hold(uint32_t tag)
{
        for (size_t i = 0; i < k.nholds; i++)
                if (k.holds[i].tag == tag)
                        return &k.holds[i];
        return NULL;
}

void
xb_init_hold(const struct xb_msgr *r, int *fds, size_t nfds)
{
        const char *note;
        size_t n;
        uint64_t pid;
        struct hold *h;

        if (!k.armed || nfds > 3 || find_hold(r->tag) || k.nholds >= HOLD_MAX ||
            xb_msgr_str(r, XB_K_DATA, &note, &n) < 0 || n > XB_HOLD_NOTE_MAX ||
            xb_msgr_u64(r, XB_K_PID, &pid) < 0) {
                /* Not kept: the command's output dies with this daemon. */
                close_all(fds, nfds);
                return;
        }
        h = &k.holds[k.nholds++];
        h->tag = r->tag;
        h->pid = (pid_t)pid;
        memcpy(h->fds, fds, nfds * sizeof(int));
        h->nfds = nfds;
        memcpy(h->note, note, n);
        h->note_len = n;
}

void
xb_init_unhold_tag(uint32_t tag)
{
        struct hold *h = tag ? find_hold(tag) : NULL;

        if (!h)
                return;
        close_all(h->fds, h->nfds);
        *h = k.holds[--k.nholds];
}

void
xb_init_unhold(const struct xb_msgr *r)
{
        uint64_t tag;

        if (xb_msgr_u64(r, XB_K_TARGET, &tag) == 0 && tag <= UINT32_MAX)
                xb_init_unhold_tag((uint32_t)tag);
}

static bool
held(uint32_t tag)
{
        return find_hold(tag) != NULL;
}

/* What the dead daemon sent before it died may still be queued (a reply
 * to it failed first): a HOLD or UNHOLD among it must not go with the
 * socket, or a process it started just before is lost. The rest is
 * dropped: nobody waits for an answer now. Bounded by the socket's queue. */
static void
drain(void)
{
        static uint8_t buf[XB_MSG_MAX];

        for (;;) {
                int fds[XB_MSG_MAXFDS];
                size_t nfds = 0;
                ssize_t n = xb_msg_recv(XB_INIT_SOCK, buf, sizeof(buf), fds, &nfds, true);
                struct xb_msgr r;

                if (n == -EBADMSG)
                        continue;   /* its fds are closed already */
                if (n <= 0)
                        return;
                if (xb_msgr_init(&r, buf, (size_t)n) == 0 && r.type == XB_REQ_HOLD) {
                        xb_init_hold(&r, fds, nfds);
                        continue;
                }
                if (xb_msgr_init(&r, buf, (size_t)n) == 0 && r.type == XB_REQ_UNHOLD)
                        xb_init_unhold(&r);
                close_all(fds, nfds);
        }
}

bool
xb_init_detach(void)
{
        if (!k.armed)
                return false;
        drain();
        close(XB_INIT_SOCK);
        k.alone = true;
        k.deadline_ms = now_ms() + k.grace_ms;
        return true;
}

int
xb_init_wait_fd(int *timeout_ms)
{
        uint64_t now = now_ms();

        if (now >= k.deadline_ms)
                return -1;
        *timeout_ms = k.deadline_ms - now > 60000 ? 60000 : (int)(k.deadline_ms - now);
        return k.lsock;
}

static bool
send_or_drop(int sock, const struct xb_msgw *w, const int *fds, size_t nfds)
{
        return !w->overflow && xb_msg_send(sock, w->buf, w->len, fds, nfds) >= 0;
}

/* Hand everything kept to the peer on sock; false if it went away. */
static bool
hand_back(int sock)
{
        static uint8_t buf[XB_HOLD_NOTE_MAX + 256];
        struct xb_msgw w;
        int fds[1 + NET_MAX];

        fds[0] = k.lock;
        memcpy(fds + 1, k.net, k.nnet * sizeof(int));
        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_KEPT, 0);
        xb_msgw_u64(&w, XB_K_COUNT, k.nnet);
        {
                uint32_t m = xb_init_max_tag();

                for (size_t i = 0; i < k.nholds; i++)
                        if (k.holds[i].tag > m)
                                m = k.holds[i].tag;
                xb_msgw_u64(&w, XB_K_TARGET, m);
        }
        if (!send_or_drop(sock, &w, fds, 1 + k.nnet))
                return false;
        /* A watch nobody kept (an event stream's) has no owner now; a
         * watcher's note whose watch ended is stale. */
        xb_init_watch_keep_only(held);
        for (size_t i = 0; i < k.nholds;)
                if (!k.holds[i].nfds && !xb_init_watch_live(k.holds[i].tag))
                        xb_init_unhold_tag(k.holds[i].tag);
                else
                        i++;
        for (size_t i = 0; i < k.nholds; i++) {
                struct hold *h = &k.holds[i];

                xb_msgw_init(&w, buf, sizeof(buf), XB_EV_HELD, h->tag);
                xb_msgw_u64(&w, XB_K_PID, (uint64_t)h->pid);
                xb_msgw_put(&w, XB_K_DATA, h->note, h->note_len);
                if (!send_or_drop(sock, &w, h->fds, h->nfds))
                        return false;
        }
        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_HELD, 0);
        xb_msgw_u64(&w, XB_K_FLAGS, XB_HELD_END);
        if (!send_or_drop(sock, &w, NULL, 0))
                return false;
        for (size_t i = 0; i < k.nqueue; i++)
                if (xb_msg_send(sock, k.queue[i], k.qlen[i], NULL, 0) < 0)
                        return false;
        k.nqueue = 0;
        return true;
}

void
xb_init_accept(void)
{
        static uint8_t buf[512];
        struct ucred cred;
        socklen_t clen = sizeof(cred);
        struct timeval tv = { .tv_sec = 2 };
        struct xb_msgr r;
        const char *sec;
        size_t n, nfds = 0;
        int fds[XB_MSG_MAXFDS];
        unsigned char diff = 0;
        ssize_t got;
        int c = accept4(k.lsock, NULL, NULL, SOCK_CLOEXEC);

        if (c < 0)
                return;
        /* From outside our pid namespace (the host's daemon), and only
         * within 2 s: a slow peer must not hold init. */
        if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.pid != 0 ||
            setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
            setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
                goto refuse;
        got = xb_msg_recv(c, buf, sizeof(buf), fds, &nfds, false);
        close_all(fds, nfds);
        if (got <= 0 || xb_msgr_init(&r, buf, (size_t)got) < 0 || r.type != XB_REQ_HELLO ||
            xb_msgr_str(&r, XB_K_DATA, &sec, &n) < 0 || n != XB_KEEP_SECRET_LEN)
                goto refuse;
        for (size_t i = 0; i < n; i++)
                diff |= (unsigned char)(sec[i] ^ k.secret[i]);
        if (diff)
                goto refuse;
        if (!hand_back(c))
                goto refuse;
        tv.tv_sec = 0;
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        /* fd 3 is free while alone: accept may have returned it. */
        if (c != XB_INIT_SOCK) {
                if (dup2(c, XB_INIT_SOCK) < 0)
                        goto refuse;
                close(c);
        }
        k.alone = false;
        return;
refuse:
        close(c);
}
