/* Immediate replies: bytes, JSON, the error envelope, empty, and a file
 * range sent from its fd. Each is a request's one reply; for a suspended
 * request it also resumes it. Streamed replies are in sse.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/utf8.h"
#include "transport/http_int.h"

void
xb_req_add_reply_header(struct xb_req *r, const char *name, const char *value)
{
        if (r->nhdr == MAX_REPLY_HEADERS)
                return;
        r->hdr_name[r->nhdr] = strdup(name);
        r->hdr_value[r->nhdr] = strdup(value);
        r->nhdr++;
}

void
http_queue(struct xb_req *r, unsigned status, struct MHD_Response *resp)
{
        if (r->replied || !resp) {
                if (resp)
                        MHD(destroy_response)(resp);
                return;
        }
        r->replied = true;
        r->on_gone = NULL;
        http_count_reply(r, status);
        r->status = status;
        MHD(add_response_header)(resp, "X-Request-Id", r->id);
        for (int i = 0; i < r->nhdr; i++)
                MHD(add_response_header)(resp, r->hdr_name[i], r->hdr_value[i]);
        /* Before the body is in (libmicrohttpd 0.9.75 would then stop reading
         * and close on unread bytes): hold it until the body is drained. */
        if (r->may_hold && !r->dispatched) {
                r->held = resp;
                r->held_status = status;
                http_hold(r);
                return;
        }
        MHD(queue_response)(r->conn, status, resp);
        MHD(destroy_response)(resp);
        xb_req_resume(r);
}

void
http_queue_held(struct xb_req *r)
{
        struct MHD_Response *resp = r->held;

        r->held = NULL;
        MHD(queue_response)(r->conn, r->held_status, resp);
        MHD(destroy_response)(resp);
}

void
xb_reply_unauthorized(struct xb_req *r)
{
        const char *auth = xb_req_header(r, "Authorization");

        xb_req_add_reply_header(r, "WWW-Authenticate", "Bearer");
        xb_reply_error(r, 401, "unauthorized",
                       "send the header `Authorization: Bearer <token>`; the token was printed when the server started",
                       auth ? "the bearer token is not valid" : "this endpoint needs a bearer token");
}

void
xb_reply_bytes(struct xb_req *r, unsigned status, const char *ctype, const void *p, size_t n)
{
        struct MHD_Response *resp;

        resp = MHD(create_response_from_buffer)(n, (void *)p, MHD_RESPMEM_MUST_COPY);
        if (resp && !r->replied)
                r->bytes = n;
        if (resp && ctype)
                MHD(add_response_header)(resp, "Content-Type", ctype);
        http_queue(r, status, resp);
}

void
xb_reply_json(struct xb_req *r, unsigned status, json_t *body)
{
        static const char oom[] = "{\"error\":{\"code\":\"out_of_memory\",\"message\":\"out of memory\","
                                  "\"hint\":\"retry in a moment\"}}";
        size_t size = 0;
        /* Generated as it is sent when large (json_stream.c). */
        struct MHD_Response *resp = body ? http_json_response(body, &size) : NULL;

        if (!resp) {
                xb_reply_bytes(r, 503, "application/json", oom, sizeof(oom) - 1);
                return;
        }
        if (!r->replied)
                r->bytes = size;
        MHD(add_response_header)(resp, "Content-Type", "application/json");
        http_queue(r, status, resp);
}

void
xb_reply_error(struct xb_req *r, unsigned status, const char *code, const char *hint, const char *fmt, ...)
{
        char msg[600];
        size_t clean_len;
        char *clean;
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        /* Messages quote what the client sent, which need not be UTF-8. */
        clean = xb_utf8_sanitize(msg, strlen(msg), &clean_len);
        xb_reply_json(r, status, json_pack("{s:{s:s,s:s%,s:s}}", "error", "code", code, "message",
                                           clean ? clean : "?", clean ? clean_len : 1, "hint", hint ? hint : ""));
        free(clean);
}

void
xb_reply_empty(struct xb_req *r, unsigned status)
{
        xb_reply_bytes(r, status, NULL, "", 0);
}

/* A file body read with pread(2). When the file shrinks under the reply
 * (a process in the sandbox truncates it), the reply must end early, and
 * the only way to say so after the headers is to close the connection.
 * libmicrohttpd 0.9.75 in external epoll mode marks the connection closed
 * but only cleans it up on the socket's next event, which never comes
 * while the client waits for the rest: so the socket is shut down here,
 * which both tells the client and wakes libmicrohttpd. (sendfile(2) stalls
 * the same way: it returns 0 and MHD waits for writability.) */
struct fd_body {
        struct xb_http *http;
        int fd;
        int sock;                     /* the client's connection, -1 if unknown */
        uint64_t off;
};

static ssize_t
fd_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
        struct fd_body *b = cls;
        ssize_t n;

        do
                n = pread(b->fd, buf, max, (off_t)(b->off + pos));
        while (n < 0 && errno == EINTR);
        if (n > 0)
                return n;
        if (b->sock >= 0)
                shutdown(b->sock, SHUT_RDWR);
        http_mark_run(b->http);
        return MHD_CONTENT_READER_END_WITH_ERROR;
}

static void
fd_free(void *cls)
{
        struct fd_body *b = cls;

        close(b->fd);
        free(b);
}

void
xb_reply_fd(struct xb_req *r, unsigned status, const char *ctype, int fd, uint64_t off, uint64_t len,
            const char *content_range)
{
        struct MHD_Response *resp;
        struct fd_body *body;
        const union MHD_ConnectionInfo *ci;

        body = malloc(sizeof(*body));
        resp = body ? MHD(create_response_from_callback)(len, 256u << 10, fd_reader, body, fd_free) : NULL;
        if (!resp) {
                free(body);
                close(fd);
                xb_reply_error(r, 500, "internal", "retry", "could not send the file");
                return;
        }
        ci = MHD(get_connection_info)(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *body = (struct fd_body){ .http = r->http, .fd = fd, .sock = ci ? ci->connect_fd : -1, .off = off };
        if (ctype)
                MHD(add_response_header)(resp, "Content-Type", ctype);
        if (content_range)
                MHD(add_response_header)(resp, "Content-Range", content_range);
        MHD(add_response_header)(resp, "Accept-Ranges", "bytes");
        if (!r->replied)
                r->bytes = len;
        http_queue(r, status, resp);
}
