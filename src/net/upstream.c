/* libcurl's multi interface on the daemon's loop (see upstream.h). Each
 * socket curl wants watched gets an xb_io (struct sockw, kept with
 * curl_multi_assign), its timeout is one xb_timer, and finished transfers
 * are collected after every socket action. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "net/curl.h"
#include "net/upstream.h"

struct xb_upstream {
        struct xb_loop *loop;
        CURLM *multi;
        struct xb_timer timer;
        struct xb_defer defer;
};

struct sockw {
        struct xb_upstream *u;
        struct xb_io io;
        struct xb_defer defer;
};

struct xb_fetch {
        struct xb_upstream *u;
        CURL *easy;
        struct curl_slist *hdrs, *resolve;
        const struct xb_fetch_ops *ops;
        void *arg;
        int fd;                       /* until curl takes it */
        char *head;                   /* the response head as it comes */
        size_t head_len;
        long status;
        bool head_sent, paused, in_cb, cancelled, done;
        struct xb_defer defer;
};

static void check_done(struct xb_upstream *u);

static void
free_fetch(void *p)
{
        struct xb_fetch *f = p;

        if (f->easy)
                CURL(easy_cleanup)(f->easy);
        CURL(slist_free_all)(f->hdrs);
        CURL(slist_free_all)(f->resolve);
        if (f->fd >= 0)
                close(f->fd);
        free(f->head);
        free(f);
}

static void
on_sock_io(struct xb_io *io, uint32_t events)
{
        struct xb_upstream *u = io->data;
        int running, mask = 0;

        if (events & EPOLLIN)
                mask |= CURL_CSELECT_IN;
        if (events & EPOLLOUT)
                mask |= CURL_CSELECT_OUT;
        if (events & (EPOLLERR | EPOLLHUP))
                mask |= CURL_CSELECT_ERR;
        CURL(multi_socket_action)(u->multi, io->fd, mask, &running);
        check_done(u);
}

static int
on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *sockp)
{
        struct xb_upstream *u = userp;
        struct sockw *w = sockp;
        uint32_t ev = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);

        (void)easy;
        if (what == CURL_POLL_REMOVE) {
                if (w) {
                        xb_io_stop(&w->io);
                        CURL(multi_assign)(u->multi, s, NULL);
                        /* An event of this batch may still name w->io. */
                        xb_loop_defer(u->loop, &w->defer, free, w);
                }
                return 0;
        }
        if (!w) {
                w = calloc(1, sizeof(*w));
                if (!w)
                        return -1;
                w->u = u;
                if (xb_io_start(u->loop, &w->io, s, ev, on_sock_io, u) < 0) {
                        free(w);
                        return -1;
                }
                CURL(multi_assign)(u->multi, s, w);
        } else
                xb_io_modify(&w->io, ev);
        return 0;
}

static void
on_timer(struct xb_timer *t)
{
        struct xb_upstream *u = t->data;
        int running;

        CURL(multi_socket_action)(u->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        check_done(u);
}

static int
on_timeout_set(CURLM *m, long ms, void *userp)
{
        struct xb_upstream *u = userp;

        (void)m;
        if (ms < 0)
                xb_timer_stop(&u->timer);
        else
                xb_timer_start(u->loop, &u->timer, (uint64_t)ms, on_timer, u);
        return 0;
}

static void
check_done(struct xb_upstream *u)
{
        CURLMsg *msg;
        int left;

        while ((msg = CURL(multi_info_read)(u->multi, &left))) {
                struct xb_fetch *f = NULL;

                if (msg->msg != CURLMSG_DONE)
                        continue;
                CURL(easy_getinfo)(msg->easy_handle, CURLINFO_PRIVATE, (char **)&f);
                CURL(multi_remove_handle)(u->multi, msg->easy_handle);
                f->done = true;
                if (!f->cancelled) {
                        CURLcode rc = msg->data.result;
                        bool ok = rc == CURLE_OK && f->head_sent;

                        f->ops->done(f->arg, ok, rc == CURLE_OK ? "no response" : CURL(easy_strerror)(rc));
                }
                xb_loop_defer(u->loop, &f->defer, free_fetch, f);
        }
}

int
xb_upstream_open(struct xb_loop *loop, struct xb_upstream **ret, struct xb_err *err)
{
        struct xb_upstream *u;
        int r = xb_curl_load(err);

        if (r < 0)
                return r;
        u = calloc(1, sizeof(*u));
        if (!u)
                return xb_err_set(err, ENOMEM, "package cache");
        u->loop = loop;
        u->multi = CURL(multi_init)();
        if (!u->multi) {
                free(u);
                return xb_err_msg(err, ENOMEM, "libcurl: no multi handle");
        }
        CURL(multi_setopt)(u->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
        CURL(multi_setopt)(u->multi, CURLMOPT_SOCKETDATA, u);
        CURL(multi_setopt)(u->multi, CURLMOPT_TIMERFUNCTION, on_timeout_set);
        CURL(multi_setopt)(u->multi, CURLMOPT_TIMERDATA, u);
        *ret = u;
        return 0;
}

void
xb_upstream_close(struct xb_upstream *u)
{
        if (!u)
                return;
        xb_timer_stop(&u->timer);
        CURL(multi_cleanup)(u->multi);
        free(u);
}

/* curl's side: the socket is ours, connected already. */
static curl_socket_t
open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
        struct xb_fetch *f = clientp;
        int fd = f->fd;

        (void)purpose;
        (void)addr;
        f->fd = -1;       /* asked once: a second connect attempt gets none */
        return fd >= 0 ? fd : CURL_SOCKET_BAD;
}

static int
sock_opt(void *clientp, curl_socket_t fd, curlsocktype purpose)
{
        (void)clientp;
        (void)fd;
        (void)purpose;
        return CURL_SOCKOPT_ALREADY_CONNECTED;
}

static size_t
on_header(char *p, size_t size, size_t n, void *arg)
{
        struct xb_fetch *f = arg;
        size_t len = size * n;
        char *nh;

        if (f->cancelled)
                return 0;
        if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
                f->head_len = 0;   /* a new response (after a 1xx) */
                f->status = 0;
        }
        if (f->head_len + len > (64u << 10))
                return 0;
        nh = realloc(f->head, f->head_len + len + 1);
        if (!nh)
                return 0;
        f->head = nh;
        memcpy(f->head + f->head_len, p, len);
        f->head_len += len;
        f->head[f->head_len] = '\0';
        if ((len == 2 && p[0] == '\r') || (len == 1 && p[0] == '\n')) {
                CURL(easy_getinfo)(f->easy, CURLINFO_RESPONSE_CODE, &f->status);
                if (f->status >= 200 && !f->head_sent) {
                        f->head_sent = true;
                        f->in_cb = true;
                        f->ops->head(f->arg, f->status, f->head, f->head_len);
                        f->in_cb = false;
                        if (f->cancelled)
                                return 0;
                }
        }
        return len;
}

static size_t
on_data(char *p, size_t size, size_t n, void *arg)
{
        struct xb_fetch *f = arg;
        size_t len = size * n;
        int r;

        if (f->cancelled || !f->head_sent)
                return 0;
        f->in_cb = true;
        r = f->ops->data(f->arg, p, len);
        f->in_cb = false;
        if (f->cancelled || r < 0)
                return 0;
        if (r > 0) {
                f->paused = true;
                return CURL_WRITEFUNC_PAUSE;
        }
        return len;
}

struct xb_fetch *
xb_fetch_start(struct xb_upstream *u, const struct xb_fetch_req *r, const struct xb_fetch_ops *ops, void *arg)
{
        struct xb_fetch *f = calloc(1, sizeof(*f));
        char res[512];
        bool v6 = strchr(r->addr, ':') != NULL;

        if (!f) {
                close(r->fd);
                return NULL;
        }
        f->u = u;
        f->fd = r->fd;
        f->ops = ops;
        f->arg = arg;
        f->easy = CURL(easy_init)();
        snprintf(res, sizeof(res), "%s:%u:%s%s%s", r->host, r->port, v6 ? "[" : "", r->addr, v6 ? "]" : "");
        f->resolve = CURL(slist_append)(NULL, res);
        for (size_t i = 0; r->headers && r->headers[i]; i++) {
                struct curl_slist *s = CURL(slist_append)(f->hdrs, r->headers[i]);

                if (s)
                        f->hdrs = s;
        }
        if (!f->easy || !f->resolve) {
                free_fetch(f);
                return NULL;
        }
        CURL(easy_setopt)(f->easy, CURLOPT_URL, r->url);
        CURL(easy_setopt)(f->easy, CURLOPT_PRIVATE, (char *)f);
        /* Only the socket we give it, to the address the policy checked. */
        CURL(easy_setopt)(f->easy, CURLOPT_RESOLVE, f->resolve);
        CURL(easy_setopt)(f->easy, CURLOPT_OPENSOCKETFUNCTION, open_socket);
        CURL(easy_setopt)(f->easy, CURLOPT_OPENSOCKETDATA, f);
        CURL(easy_setopt)(f->easy, CURLOPT_SOCKOPTFUNCTION, sock_opt);
        CURL(easy_setopt)(f->easy, CURLOPT_FORBID_REUSE, 1L);
        CURL(easy_setopt)(f->easy, CURLOPT_FRESH_CONNECT, 1L);
        CURL(easy_setopt)(f->easy, CURLOPT_PROXY, "");
        CURL(easy_setopt)(f->easy, CURLOPT_NOSIGNAL, 1L);
        CURL(easy_setopt)(f->easy, CURLOPT_PROTOCOLS_STR, "http,https");
        CURL(easy_setopt)(f->easy, CURLOPT_FOLLOWLOCATION, 0L);
        CURL(easy_setopt)(f->easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        CURL(easy_setopt)(f->easy, CURLOPT_SSL_VERIFYPEER, 1L);
        CURL(easy_setopt)(f->easy, CURLOPT_SSL_VERIFYHOST, 2L);
        /* A stalled upstream ends: under 1 byte/s for 30 s. */
        CURL(easy_setopt)(f->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
        CURL(easy_setopt)(f->easy, CURLOPT_LOW_SPEED_TIME, 30L);
        CURL(easy_setopt)(f->easy, CURLOPT_HTTPHEADER, f->hdrs);
        if (r->head_only)
                CURL(easy_setopt)(f->easy, CURLOPT_NOBODY, 1L);
        CURL(easy_setopt)(f->easy, CURLOPT_HEADERFUNCTION, on_header);
        CURL(easy_setopt)(f->easy, CURLOPT_HEADERDATA, f);
        CURL(easy_setopt)(f->easy, CURLOPT_WRITEFUNCTION, on_data);
        CURL(easy_setopt)(f->easy, CURLOPT_WRITEDATA, f);
        if (CURL(multi_add_handle)(u->multi, f->easy) != CURLM_OK) {
                free_fetch(f);
                return NULL;
        }
        return f;
}

void
xb_fetch_resume(struct xb_fetch *f)
{
        if (!f->paused || f->done || f->cancelled)
                return;
        f->paused = false;
        /* This may call the data callback at once. */
        CURL(easy_pause)(f->easy, CURLPAUSE_CONT);
        check_done(f->u);
}

void
xb_fetch_cancel(struct xb_fetch *f)
{
        if (!f || f->cancelled)
                return;
        f->cancelled = true;
        if (f->done || f->in_cb)
                return;   /* check_done frees it, or the callback's return ends it */
        CURL(multi_remove_handle)(f->u->multi, f->easy);
        f->done = true;
        xb_loop_defer(f->u->loop, &f->defer, free_fetch, f);
}
