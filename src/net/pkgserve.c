/* The package cache in the proxy's path. A plain http:// request that the
 * policy allowed, for a URL under a package source, is taken here:
 *   - an immutable artefact (GET of *.deb, npm's /-/ *.tgz, *.whl; no
 *     query, Range, Authorization or Cookie) is served from the store
 *     when it is there (a hit: no upstream connection at all), or
 *     fetched by the daemon itself and stored as it streams to the
 *     sandbox (a miss);
 *   - anything else under an https source (npm's packuments, a pip index
 *     page) is fetched upstream over TLS and passed through, never
 *     stored: that is how npm inside reaches an https registry through a
 *     plain-http URL (its env names http://<registry host>/), which is
 *     what makes its tarballs cacheable at all (a CONNECT tunnel cannot
 *     be);
 *   - anything else under an http source (apt's Release and Packages
 *     files) goes the proxy's usual way, untouched.
 * The store's key is the URL the daemon fetched from (the host the
 * policy decided on, which also named the connection), never anything the
 * sandbox's request or the upstream's response says, so a sandbox can
 * only ever make the daemon store what that URL's upstream answered. The
 * upstream connection is the proxy's own (name and address checked as
 * for any connection); libcurl (upstream.c) speaks HTTP and TLS on it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/pkgcache.h"
#include "net/proxy_int.h"
#include "net/upstream.h"

#define OUT_HIGH (256u << 10)         /* pause the upstream above this much queued */
#define SEND_STEP (256u << 10)        /* at most this much per write event */
#define IDLE_MS 60000

struct xb_pkgreq {
        struct xb_conn *c;
        struct xb_defer defer;
        struct xb_io cio;
        char *url;
        char **hdrs;                  /* NULL-terminated */
        bool cacheable, head_only, store, head_done, fetch_done, shut, paused, c_eof;
        struct xb_fetch *fetch;
        struct xb_pkgfill *fill;
        uint64_t expect;
        char *out;
        size_t off, len, cap;
        int file_fd;
        off_t file_off;
        uint64_t file_left;
};

static struct xb_pkgcache *
cache_of(struct xb_conn *c)
{
        return c->net ? c->net->ns->pkg : NULL;
}

static bool
ends_with(const char *s, size_t len, const char *suffix)
{
        size_t l = strlen(suffix);

        return len >= l && !memcmp(s + len - l, suffix, l);
}

/* Immutable by name: a new version is a new file name. */
static bool
immutable(const char *path, size_t len)
{
        /* One spelling a file: no query, fragment, dot segment or
         * backslash, which curl or the upstream would read otherwise. */
        if (memchr(path, '?', len) || memchr(path, '#', len) || memchr(path, '\\', len) || memmem(path, len, "/.", 2))
                return false;
        return ends_with(path, len, ".deb") || ends_with(path, len, ".udeb") || ends_with(path, len, ".whl") ||
               (ends_with(path, len, ".tgz") && memmem(path, len, "/-/", 3));
}

static int
queue(struct xb_pkgreq *p, const void *d, size_t n)
{
        if (p->off && p->off == p->len)
                p->off = p->len = 0;
        if (p->len + n > p->cap) {
                size_t cap = p->cap ? p->cap : 16384;
                char *o;

                if (p->off) {
                        memmove(p->out, p->out + p->off, p->len - p->off);
                        p->len -= p->off;
                        p->off = 0;
                }
                while (cap < p->len + n)
                        cap *= 2;
                if (cap != p->cap) {
                        o = realloc(p->out, cap);
                        if (!o)
                                return -ENOMEM;
                        p->out = o;
                        p->cap = cap;
                }
        }
        memcpy(p->out + p->len, d, n);
        p->len += n;
        return 0;
}

static void on_client_io(struct xb_io *io, uint32_t events);

static void
want(struct xb_pkgreq *p)
{
        uint32_t ev = p->c_eof ? 0 : EPOLLIN | EPOLLRDHUP;

        if (p->c->dead)
                return;
        if (p->len > p->off || p->file_left)
                ev |= EPOLLOUT;
        if (!p->cio.active)
                xb_io_start(p->c->loop, &p->cio, p->c->cfd, ev, on_client_io, p);
        else if (p->cio.events != ev)
                xb_io_modify(&p->cio, ev);
}

static void
on_idle(struct xb_timer *t)
{
        xb__px_close(t->data);
}

static void
touch(struct xb_pkgreq *p)
{
        xb_timer_start(p->c->loop, &p->c->timer, p->shut ? 5000 : IDLE_MS, on_idle, p->c);
}

static void
count_in(struct xb_conn *c, uint64_t n)
{
        c->in += n;
        if (c->net) {
                c->net->bytes_in += n;
                c->net->ns->st.bytes_in += n;
        }
}

/* The response is all out: end our side, and wait (bounded) for the
 * client's end so unread bytes of its do not reset what it has not read. */
static void
finish(struct xb_pkgreq *p)
{
        if (p->shut)
                return;
        p->shut = true;
        shutdown(p->c->cfd, SHUT_WR);
        touch(p);
        if (p->c_eof)
                xb__px_close(p->c);
}

static void
on_client_io(struct xb_io *io, uint32_t events)
{
        struct xb_pkgreq *p = io->data;
        struct xb_conn *c = p->c;

        if (events & (EPOLLERR | EPOLLHUP)) {   /* nothing more can reach it */
                xb__px_close(c);
                return;
        }
        if (events & (EPOLLIN | EPOLLRDHUP) && !p->c_eof) {
                char junk[4096];
                ssize_t r = recv(c->cfd, junk, sizeof(junk), MSG_DONTWAIT);

                /* More requests on this connection are not answered: the
                 * reply says Connection: close, and the client asks again. */
                if (r < 0 && errno != EAGAIN && errno != EINTR) {
                        xb__px_close(c);   /* gone: a fill in flight is dropped */
                        return;
                }
                if (r == 0) {
                        /* Its end after ours: done. Before ours it may only
                         * have half-closed; a write to a gone client fails. */
                        if (p->shut) {
                                xb__px_close(c);
                                return;
                        }
                        p->c_eof = true;
                }
        }
        if (events & EPOLLOUT) {
                if (p->len > p->off) {
                        ssize_t w = send(c->cfd, p->out + p->off, p->len - p->off, MSG_NOSIGNAL | MSG_DONTWAIT);

                        if (w < 0 && errno != EAGAIN && errno != EINTR) {
                                xb__px_close(c);
                                return;
                        }
                        if (w > 0) {
                                p->off += (size_t)w;
                                count_in(c, (uint64_t)w);
                                touch(p);
                        }
                }
                if (p->len == p->off && p->file_left) {
                        size_t step = p->file_left < SEND_STEP ? (size_t)p->file_left : SEND_STEP;
                        ssize_t w = sendfile(c->cfd, p->file_fd, &p->file_off, step);

                        if (w < 0 && errno != EAGAIN && errno != EINTR) {
                                xb__px_close(c);
                                return;
                        }
                        if (w > 0) {
                                p->file_left -= (uint64_t)w;
                                count_in(c, (uint64_t)w);
                                if (cache_of(c))
                                        xb_pkgcache_served(cache_of(c), (uint64_t)w);
                                touch(p);
                        }
                        if (!p->file_left) {
                                close(p->file_fd);
                                p->file_fd = -1;
                                p->fetch_done = true;
                        }
                }
                if (p->paused && p->fetch && p->len - p->off < OUT_HIGH / 2) {
                        p->paused = false;
                        xb_fetch_resume(p->fetch);   /* may answer data, and done, at once */
                        if (c->dead)
                                return;
                }
        }
        if (p->fetch_done && p->len == p->off && !p->file_left)
                finish(p);
        if (!c->dead)
                want(p);
}

/* ---- a miss, or a pass-through: the daemon fetches ---- */

static bool
hop(const char *line, size_t len)
{
        static const char *const drop[] = { "connection:", "keep-alive:", "transfer-encoding:", "proxy-", "upgrade:",
                                            NULL };

        for (size_t i = 0; drop[i]; i++)
                if (len >= strlen(drop[i]) && !strncasecmp(line, drop[i], strlen(drop[i])))
                        return true;
        return false;
}

static void
on_head(void *arg, long status, const char *hdrs, size_t len)
{
        struct xb_pkgreq *p = arg;
        const char *line = hdrs, *end = hdrs + len, *eol = memchr(hdrs, '\n', len);
        const char *reason = eol ? memchr(hdrs, ' ', (size_t)(eol - hdrs)) : NULL;
        bool encoded = false;
        char buf[160];
        int n;

        p->head_done = true;
        p->expect = UINT64_MAX;
        if (reason)
                reason = memchr(reason + 1, ' ', (size_t)(eol - reason - 1));
        n = snprintf(buf, sizeof(buf), "HTTP/1.1 %ld %.*s\r\n", status,
                     reason ? (int)(strcspn(reason + 1, "\r\n")) : 0, reason ? reason + 1 : "");
        queue(p, buf, (size_t)n);
        line = eol ? eol + 1 : end;
        while (line < end) {
                const char *nl = memchr(line, '\n', (size_t)(end - line));
                size_t ll = nl ? (size_t)(nl - line) : (size_t)(end - line);

                if (ll && line[ll - 1] == '\r')
                        ll--;
                if (ll && !hop(line, ll)) {
                        if (ll > 15 && !strncasecmp(line, "content-length:", 15))
                                p->expect = strtoull(line + 15, NULL, 10);
                        if (ll > 17 && !strncasecmp(line, "content-encoding:", 17))
                                encoded = true;
                        queue(p, line, ll);
                        queue(p, "\r\n", 2);
                }
                line = nl ? nl + 1 : end;
        }
        p->store = p->fill && status == 200 && !encoded && !p->head_only;
        if (!p->store && p->fill) {
                xb_pkgfill_abort(p->fill);
                p->fill = NULL;
        }
        n = snprintf(buf, sizeof(buf), "Connection: close\r\nX-Execbox-Cache: %s\r\n\r\n",
                     p->cacheable ? "miss" : "pass");
        queue(p, buf, (size_t)n);
        want(p);
}

static int
on_data(void *arg, const char *d, size_t n)
{
        struct xb_pkgreq *p = arg;

        if (p->len - p->off > OUT_HIGH) {
                p->paused = true;
                return 1;
        }
        if (queue(p, d, n) < 0)
                return -1;
        if (p->store && xb_pkgfill_write(p->fill, d, n) < 0) {
                xb_pkgfill_abort(p->fill);   /* the sandbox still gets its bytes */
                p->fill = NULL;
                p->store = false;
        }
        want(p);
        return 0;
}

static void
on_done(void *arg, bool ok, const char *why)
{
        struct xb_pkgreq *p = arg;
        struct xb_conn *c = p->c;

        p->fetch = NULL;
        p->fetch_done = true;
        if (p->fill) {
                if (ok && p->store && cache_of(c))
                        xb_pkgfill_commit(p->fill, p->expect);
                else
                        xb_pkgfill_abort(p->fill);
                p->fill = NULL;
        }
        if (!p->head_done) {
                char body[512];
                char head[256];
                int n = snprintf(body, sizeof(body), "execbox: %s:%u is allowed but the fetch failed: %s\n", c->host,
                                 c->port, why);
                int h = snprintf(head, sizeof(head), "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; "
                                 "charset=utf-8\r\nConnection: close\r\nX-Execbox-Egress: error\r\n"
                                 "Content-Length: %d\r\n\r\n", n);

                queue(p, head, (size_t)h);
                queue(p, body, (size_t)n);
        } else if (!ok) {
                /* Cut short: the client sees the connection end early. */
                xb__px_close(c);
                return;
        }
        want(p);
}

static const struct xb_fetch_ops fetch_ops = { on_head, on_data, on_done };

/* Take the client side from the proxy: from here this file drives it. */
static void
take(struct xb_conn *c)
{
        xb_io_stop(&c->cio);
        c->cwant = 0;
        xb_io_stop(&c->uio);
        c->uwant = 0;
        xb_timer_stop(&c->timer);
        /* c->st stays: the proxy's own handler may still be on the stack,
         * and must not take c for one it relays. */
        c->pkg_owned = true;
}

void
xb__pkg_connected(struct xb_conn *c)
{
        struct xb_pkgreq *p = c->pkg;
        struct xb_fetch_req r = { .url = p->url, .host = c->host, .addr = c->addr, .port = c->port, .fd = c->ufd,
                                  .head_only = p->head_only, .headers = (const char *const *)p->hdrs };

        take(c);
        c->ufd = -1;   /* the fetch owns it now */
        if (p->cacheable && cache_of(c))
                p->fill = xb_pkgfill_begin(cache_of(c), p->url);
        p->fetch = xb_fetch_start(c->net->ns->up, &r, &fetch_ops, p);
        touch(p);
        if (!p->fetch) {
                on_done(p, false, "could not start the fetch");
                return;
        }
        want(p);
}

/* ---- the request ---- */

static void
free_req(void *v)
{
        struct xb_pkgreq *p = v;

        for (size_t i = 0; p->hdrs && p->hdrs[i]; i++)
                free(p->hdrs[i]);
        free(p->hdrs);
        free(p->url);
        free(p->out);
        free(p);
}

void
xb__pkg_release(struct xb_conn *c)
{
        struct xb_pkgreq *p = c->pkg;

        if (!p)
                return;
        c->pkg = NULL;
        c->pkg_owned = false;
        xb_io_stop(&p->cio);
        xb_fetch_cancel(p->fetch);
        p->fetch = NULL;
        xb_pkgfill_abort(p->fill);
        p->fill = NULL;
        if (p->file_fd >= 0)
                close(p->file_fd);
        p->file_fd = -1;
        /* A callback of ours may be on the stack. */
        xb_loop_defer(c->loop, &p->defer, free_req, p);
}

static const struct xb_source *
source_for(struct xb_netsys *ns, const char *host, uint16_t port, const char *path, size_t plen)
{
        for (size_t i = 0; i < ns->nsrc; i++) {
                const struct xb_source *s = &ns->src[i];
                size_t l = strlen(s->path);

                if (strcmp(s->host, host) || !(s->https ? port == 80 : port == s->port))
                        continue;
                if (plen >= l && !memcmp(path, s->path, l) && (plen == l || path[l] == '/' || path[l] == '?'))
                        return s;
        }
        return NULL;
}

static bool
header_is(const char *line, size_t len, const char *name)
{
        size_t l = strlen(name);

        return len > l && !strncasecmp(line, name, l) && line[l] == ':';
}

bool
xb__pkg_request(struct xb_conn *c)
{
        struct xb_netsys *ns = c->net->ns;
        const char *h = c->fwd_head, *end = h + c->fwd_len;
        const char *sp1, *sp2, *eol, *line;
        const struct xb_source *s;
        struct xb_pkgreq *p;
        bool get, head, cacheable;
        size_t nh = 0, plen;
        char port[8] = "";

        if (!ns->up || !h)
                return false;
        eol = memmem(h, c->fwd_len, "\r\n", 2);
        sp1 = eol ? memchr(h, ' ', (size_t)(eol - h)) : NULL;
        sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
        if (!sp2)
                return false;
        get = sp1 - h == 3 && !memcmp(h, "GET", 3);
        head = sp1 - h == 4 && !memcmp(h, "HEAD", 4);
        plen = (size_t)(sp2 - sp1 - 1);
        if ((!get && !head) || !(s = source_for(ns, c->host, c->port, sp1 + 1, plen)))
                return false;
        cacheable = get && ns->pkg && immutable(sp1 + 1, plen);
        for (line = eol + 2; line < end; line = eol + 2) {
                eol = memmem(line, (size_t)(end - line), "\r\n", 2);
                if (!eol || eol == line)
                        break;
                if (header_is(line, (size_t)(eol - line), "range") ||
                    header_is(line, (size_t)(eol - line), "authorization") ||
                    header_is(line, (size_t)(eol - line), "cookie"))
                        cacheable = false;
                nh++;
        }
        if (!s->https && !cacheable)
                return false;   /* the proxy relays it as it does any request */
        p = calloc(1, sizeof(*p));
        if (!p)
                return false;
        p->c = c;
        p->file_fd = -1;
        p->cacheable = cacheable;
        p->head_only = head;
        if (s->port != (s->https ? 443 : 80))
                snprintf(port, sizeof(port), ":%u", s->port);
        if (asprintf(&p->url, "%s://%s%s%.*s", s->https ? "https" : "http", c->host, port, (int)plen, sp1 + 1) < 0) {
                free(p);
                return false;
        }
        /* The sandbox's headers go up (not Host: curl sets it from the URL),
         * but a fill asks for the plain, whole file. */
        p->hdrs = calloc(nh + 1, sizeof(char *));
        for (line = (const char *)memmem(h, c->fwd_len, "\r\n", 2) + 2, nh = 0; p->hdrs && line < end; line = eol + 2) {
                size_t ll;

                eol = memmem(line, (size_t)(end - line), "\r\n", 2);
                if (!eol || eol == line)
                        break;
                ll = (size_t)(eol - line);
                if (header_is(line, ll, "host") || header_is(line, ll, "connection"))
                        continue;
                if (cacheable && !header_is(line, ll, "user-agent") && !header_is(line, ll, "accept"))
                        continue;
                p->hdrs[nh++] = strndup(line, ll);
        }
        c->pkg = p;
        if (cacheable) {
                uint64_t size;
                int fd = xb_pkgcache_lookup(ns->pkg, p->url, &size);

                if (fd >= 0) {
                        char buf[256];
                        int n = snprintf(buf, sizeof(buf),
                                         "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                                         "Content-Length: %llu\r\nConnection: close\r\nX-Execbox-Cache: hit\r\n\r\n",
                                         (unsigned long long)size);

                        c->logoff = xb__netlog_add(c->net, "http", c->host, c->port, NULL, true, "package cache hit");
                        ns->st.allowed++;
                        take(c);
                        queue(p, buf, (size_t)n);
                        p->file_fd = fd;
                        p->file_left = head ? 0 : size;
                        p->fetch_done = true;
                        if (head)
                                close(fd), p->file_fd = -1;
                        touch(p);
                        want(p);
                        return true;
                }
                xb_pkgcache_count_miss(ns->pkg);
        }
        /* The proxy connects (to the source's own port) and hands over. */
        c->port = s->port;
        return false;
}
