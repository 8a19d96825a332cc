/* The proxied reply (proxy_int.h): the upstream's head parsed into a
 * libmicrohttpd response, its body handed over by the response's reader
 * (chunks decoded, since libmicrohttpd chunks again itself), and the
 * connection parked while there is nothing to hand over. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/proxy_int.h"

/* ---- the reply ---- */

/* Body bytes from in into buf, decoding chunks; -1 on a malformed chunk.
 * *done once the body is complete. */
static ssize_t
take_body(struct xb_proxy *p, char *buf, size_t max, bool *done)
{
        char *s = p->in + p->in_off;
        size_t avail = p->in_len - p->in_off, n;
        ssize_t r;

        *done = false;
        switch (p->framing) {
        case BODY_NONE:
                *done = true;
                return 0;
        case BODY_CHUNKED:
                r = xb_dechunk(&p->dechunk, s, avail, &n, buf, max, done);
                p->in_off += n;
                return r;
        case BODY_LENGTH:
        case BODY_EOF:
                break;
        }
        n = avail < max ? avail : max;
        if (p->framing == BODY_LENGTH && n > p->remaining)
                n = (size_t)p->remaining;
        memcpy(buf, s, n);
        p->in_off += n;
        if (p->framing == BODY_LENGTH) {
                p->remaining -= n;
                *done = !p->remaining;
        } else
                *done = p->up_eof && p->in_off == p->in_len;
        return (ssize_t)n;
}

static ssize_t
reader(void *cls, uint64_t pos, char *buf, size_t max)
{
        struct xb_proxy *p = cls;
        bool done;
        ssize_t n;

        (void)pos;
        if (!p->failed) {
                n = take_body(p, buf, max, &done);
                if (n > 0) {
                        if (p->req)
                                p->req->bytes += (uint64_t)n;
                        proxy_update_io(p);
                        return n;
                }
                if (n == 0 && done)
                        return MHD_CONTENT_READER_END_OF_STREAM;
                if (n == 0 && !p->up_eof) {
                        p->parked_down = true;
                        proxy_park(p);
                        proxy_update_io(p);
                        return 0;
                }
        }
        /* As in fd_reader (reply.c): an error return alone leaves the client waiting. */
        proxy_close_upstream(p);
        if (p->req) {
                int fd = proxy_client_fd(p->req);

                if (fd >= 0)
                        shutdown(fd, SHUT_RDWR);
                http_mark_run(p->req->http);
        }
        return MHD_CONTENT_READER_END_WITH_ERROR;
}

static void
resp_free(void *cls)
{
        proxy_unref(cls);
}

static void
on_upgrade(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra_in, size_t extra_in_size,
           MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
        (void)conn;
        (void)con_cls;
        proxy_tunnel_start(cls, extra_in, extra_in_size, sock, urh);
}

bool
proxy_hop_by_hop(const char *name, bool upgrade)
{
        static const char *const names[] = { "Connection",        "Keep-Alive",         "Proxy-Connection",
                                             "Transfer-Encoding", "Content-Length",     "TE",
                                             "Trailer",           "Proxy-Authenticate", NULL };

        for (size_t i = 0; names[i]; i++)
                if (!strcasecmp(name, names[i]))
                        return true;
        return !upgrade && !strcasecmp(name, "Upgrade");
}

/* Parse the reply's head in in, if it is all there; 1 when parsed, 0 when
 * more is needed, -1 after failing p. Informational replies (100, 103)
 * are dropped: libmicrohttpd answers Expect itself. */
int
proxy_parse_head(struct xb_proxy *p)
{
        for (;;) {
                char *s = p->in + p->in_off, *end, *line, *next;
                size_t avail = p->in_len - p->in_off;
                long long clen = -1;
                bool chunked = false, upgrade;
                unsigned status;
                char *e;

                end = memmem(s, avail, "\r\n\r\n", 4);
                if (!end) {
                        if (avail >= HEAD_MAX)
                                proxy_fail(p, "the server in the sandbox sent a reply head over 48 KiB");
                        else if (p->up_eof)
                                proxy_fail(p, "the server in the sandbox closed the connection without a reply");
                        return avail >= HEAD_MAX || p->up_eof ? -1 : 0;
                }
                *end = '\0';
                if (strncmp(s, "HTTP/1.", 7) || !(s[7] == '0' || s[7] == '1') || s[8] != ' ' ||
                    (status = (unsigned)strtoul(s + 9, &e, 10)) < 100 || status > 599 ||
                    (*e && *e != ' ' && *e != '\r')) {
                        proxy_fail(p, "the server in the sandbox did not answer with HTTP/1.x");
                        return -1;
                }
                p->in_off += (size_t)(end - s) + 4;
                if (status < 200 && status != 101)
                        continue;
                upgrade = status == 101;
                if (upgrade && !p->upgrade) {
                        proxy_fail(p, "the server in the sandbox switched protocols unasked");
                        return -1;
                }
                /* the framing first: the response's size depends on it */
                for (line = strstr(s, "\r\n"); line; line = next) {
                        char *colon;

                        line += 2;
                        next = strstr(line, "\r\n");
                        if (next)
                                *next = '\0';
                        colon = strchr(line, ':');
                        if (colon && !strncasecmp(line, "Content-Length:", 15))
                                clen = strtoll(colon + 1, NULL, 10);
                        if (colon && !strncasecmp(line, "Transfer-Encoding:", 18) && strcasestr(colon, "chunked"))
                                chunked = true;
                        if (next)
                                *next = '\r';
                }
                if (upgrade)
                        p->resp = MHD(create_response_for_upgrade)(on_upgrade, p);
                else {
                        uint64_t size = MHD_SIZE_UNKNOWN;

                        if (p->is_head || status == 204 || status == 304) {
                                p->framing = BODY_NONE;
                                size = 0;
                        } else if (chunked) {
                                p->framing = BODY_CHUNKED;
                        } else if (clen >= 0) {
                                p->framing = BODY_LENGTH;
                                p->remaining = (uint64_t)clen;
                                size = (uint64_t)clen;
                        } else
                                p->framing = BODY_EOF;
                        p->resp = MHD(create_response_from_callback)(size, 32u << 10, reader, p, resp_free);
                        if (p->resp)
                                p->refs++;
                }
                if (!p->resp) {
                        proxy_fail(p, "out of memory");
                        return -1;
                }
                for (line = strstr(s, "\r\n"); line; line = next) {
                        char *colon, *v;

                        line += 2;
                        next = strstr(line, "\r\n");
                        if (next)
                                *next = '\0';
                        colon = strchr(line, ':');
                        if (colon && colon != line) {
                                *colon = '\0';
                                for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
                                        ;
                                if (!proxy_hop_by_hop(line, upgrade))
                                        MHD(add_response_header)(p->resp, line, v);
                        }
                }
                if (p->set_cookie)
                        MHD(add_response_header)(p->resp, "Set-Cookie", p->set_cookie);
                p->status = status;
                p->head_done = true;
                return 1;
        }
}

/* Queue the reply once both its head and the whole request are in. */
void
proxy_try_reply(struct xb_proxy *p)
{
        struct xb_req *r = p->req;
        struct MHD_Response *resp = p->resp;

        if (!r || p->queued || !p->head_done || !p->body_done || p->failed || !resp)
                return;
        p->resp = NULL;
        p->queued = true;
        p->waiting_head = false;
        /* It resumes a parked connection; a later park names us again. */
        http_queue(r, p->status, resp);
}
