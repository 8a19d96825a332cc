/* `execbox mcp --server URL`: a stdio MCP server that forwards every line
 * to a running `execbox serve` over Streamable HTTP, so desktop clients
 * reach a shared server with the same tools and behaviour.
 *
 * Theory of operation. One thread: libcurl's multi interface runs the
 * HTTP transfers, and curl_multi_poll also waits on stdin. Each input
 * line is one POST; its answer (a JSON body, or the messages of an SSE
 * stream as they arrive) is written to stdout one message per line. The
 * bridge remembers the session the server assigned at initialize and the
 * protocol version it agreed, and sends them on every later request; a
 * modern (2026-07-28) message goes without a session, with the
 * MCP-Protocol-Version, Mcp-Method and Mcp-Name headers. When the server
 * fails a request without a JSON-RPC answer, the bridge answers it with an
 * error. At end of input it waits for the transfers, ends the session
 * with DELETE and exits.
 *
 * libcurl is loaded with dlopen(3) so that every other execbox command
 * starts without it (as libmicrohttpd is, see src/transport/mhd.h). */
#define _GNU_SOURCE
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/log.h"
#include "cli/cli.h"

#define CURL_SONAME "libcurl.so.4"
#define LINE_MAX_BYTES (16u << 20)
#define BODY_MAX ((size_t)256 << 20)

#define XB_CURL_FUNCS(X)                                                                        \
        X(global_init) X(easy_init) X(easy_setopt) X(easy_cleanup) X(easy_getinfo) X(easy_perform) \
        X(easy_strerror) X(slist_append) X(slist_free_all) X(multi_init) X(multi_cleanup)       \
        X(multi_add_handle) X(multi_remove_handle) X(multi_perform) X(multi_poll)                \
        X(multi_info_read)

static struct {
#define XB_CURL_FIELD(name) __typeof__(&curl_##name) name;
        XB_CURL_FUNCS(XB_CURL_FIELD)
#undef XB_CURL_FIELD
} cu;

static int
curl_load(void)
{
        void *h = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);

        if (!h) {
                xb_error("cannot load %s (%s); install libcurl4", CURL_SONAME, dlerror());
                return -ENOENT;
        }
#define XB_CURL_LOAD(name)                                                              \
        *(void **)&cu.name = dlsym(h, "curl_" #name);                                   \
        if (!cu.name) {                                                                 \
                xb_error("%s lacks curl_%s; it is too old", CURL_SONAME, #name);        \
                return -ENOENT;                                                         \
        }
        XB_CURL_FUNCS(XB_CURL_LOAD)
#undef XB_CURL_LOAD
        return 0;
}

struct xfer {
        struct bridge *b;
        struct xfer *next;
        CURL *h;
        struct curl_slist *hdrs;
        char *body;
        json_t *id;                   /* the request's id, if it is one */
        bool init, sse;
        struct xb_buf resp;
        char ctype[128];
};

struct bridge {
        CURLM *multi;
        char url[4200];
        char unix_path[4200];
        char auth[600];
        char session[128];
        char version[32];
        struct xfer *xfers;
        struct xb_buf in;
        bool eof, skipping;
        bool initializing;            /* lines wait until the session exists */
        char **queue;
        size_t nqueue;
};

static volatile sig_atomic_t stop_signal;

static void post(struct bridge *b, const char *line, size_t len);

static void
on_signal(int sig)
{
        stop_signal = sig;
}

static void
put_line(const char *s, size_t n)
{
        fwrite(s, 1, n, stdout);
        fputc('\n', stdout);
        fflush(stdout);
}

/* Write a JSON-RPC message from the server as one line (re-encoded, so it
 * is surely one line). */
static void
forward(const char *text, size_t n)
{
        json_t *j = json_loadb(text, n, 0, NULL);
        _cleanup_free_ char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;

        if (s)
                put_line(s, strlen(s));
        json_decref(j);
}

static void
answer_error(json_t *id, const char *msg)
{
        json_t *e = json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", "code",
                              -32603, "message", msg);
        _cleanup_free_ char *s = e ? json_dumps(e, JSON_COMPACT) : NULL;

        if (s)
                put_line(s, strlen(s));
        json_decref(e);
}

/* The complete events of an SSE body so far; what is left is kept. */
static void
sse_drain(struct xfer *x)
{
        struct xb_buf *r = &x->resp;
        size_t start = 0;

        for (;;) {
                char *end = r->data ? strstr(r->data + start, "\n\n") : NULL;
                struct xb_buf data = { .max = BODY_MAX };

                if (!end)
                        break;
                *end = '\0';
                for (char *line = r->data + start, *next; line && *line; line = next) {
                        next = strchr(line, '\n');
                        if (next)
                                *next++ = '\0';
                        line[strcspn(line, "\r")] = '\0';
                        if (!strncmp(line, "data:", 5))
                                xb_buf_printf(&data, "%s%s", data.len ? "\n" : "", line + 5 + (line[5] == ' '));
                }
                if (data.len)
                        forward(data.data, data.len);
                xb_buf_free(&data);
                start = (size_t)(end - r->data) + 2;
        }
        if (start) {
                memmove(r->data, r->data + start, r->len - start + 1);
                r->len -= start;
        }
}

static size_t
on_body(char *p, size_t size, size_t n, void *ctx)
{
        struct xfer *x = ctx;

        if (xb_buf_append(&x->resp, p, size * n) < 0)
                return 0;   /* too big: curl fails the transfer */
        if (x->sse) {
                /* Normalize CRLF so events split on a blank line. */
                for (char *c; x->resp.data && (c = strstr(x->resp.data, "\r\n"));) {
                        memmove(c, c + 1, strlen(c));
                        x->resp.len--;
                }
                sse_drain(x);
        }
        return size * n;
}

static size_t
on_header(char *p, size_t size, size_t n, void *ctx)
{
        struct xfer *x = ctx;
        size_t len = size * n;
        char line[512];

        if (len >= sizeof(line))
                return len;
        memcpy(line, p, len);
        line[len] = '\0';
        line[strcspn(line, "\r\n")] = '\0';
        if (!strncasecmp(line, "content-type:", 13)) {
                snprintf(x->ctype, sizeof(x->ctype), "%s", line + 13 + strspn(line + 13, " "));
                x->sse = strcasestr(x->ctype, "text/event-stream") != NULL;
        } else if (!strncasecmp(line, "mcp-session-id:", 15) && x->init) {
                snprintf(x->b->session, sizeof(x->b->session), "%s", line + 15 + strspn(line + 15, " "));
        }
        return len;
}

static void
xfer_free(struct xfer *x)
{
        struct bridge *b = x->b;

        if (x->init && b->initializing) {
                char **q = b->queue;
                size_t n = b->nqueue;

                b->initializing = false;
                b->queue = NULL;
                b->nqueue = 0;
                for (size_t i = 0; i < n; i++) {
                        post(b, q[i], strlen(q[i]));
                        free(q[i]);
                }
                free(q);
        }
        for (struct xfer **p = &b->xfers; *p; p = &(*p)->next)
                if (*p == x) {
                        *p = x->next;
                        break;
                }
        cu.multi_remove_handle(b->multi, x->h);
        cu.easy_cleanup(x->h);
        cu.slist_free_all(x->hdrs);
        json_decref(x->id);
        xb_buf_free(&x->resp);
        free(x->body);
        free(x);
}

static CURL *
easy(struct bridge *b, const char *method)
{
        CURL *h = cu.easy_init();

        if (!h)
                return NULL;
        cu.easy_setopt(h, CURLOPT_URL, b->url);
        if (b->unix_path[0])
                cu.easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, b->unix_path);
        cu.easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        cu.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        cu.easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
        return h;
}

static struct curl_slist *
hdr(struct curl_slist *l, const char *name, const char *value)
{
        char *line = NULL;
        struct curl_slist *n;

        if (asprintf(&line, "%s: %s", name, value) < 0)
                return l;
        n = cu.slist_append(l, line);
        free(line);
        return n ? n : l;
}

/* A header value as the transport wants it: base64 in =?base64?...?= when
 * it is not plain printable ASCII. */
static char *
header_safe(const char *v)
{
        const unsigned char *s = (const unsigned char *)v;
        size_t n = strlen(v), i;
        bool plain = n && s[0] != ' ' && s[n - 1] != ' ' && strncmp(v, "=?base64?", 9);
        _cleanup_free_ char *b64 = NULL;
        char *out;

        for (i = 0; i < n && plain; i++)
                plain = s[i] >= 0x20 && s[i] < 0x7f;
        if (plain)
                return strdup(v);
        if (xb_base64_encode_alloc(v, n, &b64) < 0 || asprintf(&out, "=?base64?%s?=", b64) < 0)
                return NULL;
        return out;
}

static void
post(struct bridge *b, const char *line, size_t len)
{
        struct xfer *x;
        json_t *msg;

        /* Until initialize is answered there is no session to send with. */
        if (b->initializing) {
                char **q = realloc(b->queue, (b->nqueue + 1) * sizeof(*q));

                if (!q || !(q[b->nqueue] = strndup(line, len))) {
                        if (q)
                                b->queue = q;
                        answer_error(NULL, "out of memory in the bridge");
                        return;
                }
                b->queue = q;
                b->nqueue++;
                return;
        }
        x = calloc(1, sizeof(*x));
        msg = json_loadb(line, len, 0, NULL);
        json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
        const char *mv = json_string_value(json_object_get(meta, "io.modelcontextprotocol/protocolVersion"));
        const char *method = json_string_value(json_object_get(msg, "method"));

        if (!x || !(x->h = easy(b, "POST")) || !(x->body = strndup(line, len))) {
                if (x)
                        free(x->body);
                if (x && x->h)
                        cu.easy_cleanup(x->h);
                free(x);
                json_decref(msg);
                answer_error(NULL, "out of memory in the bridge");
                return;
        }
        x->b = b;
        x->resp.max = BODY_MAX;
        if (json_is_object(msg) && method && json_object_get(msg, "id"))
                x->id = json_incref(json_object_get(msg, "id"));
        x->init = method && !strcmp(method, "initialize") && !mv;
        b->initializing |= x->init;
        x->hdrs = hdr(NULL, "Content-Type", "application/json");
        x->hdrs = hdr(x->hdrs, "Accept", "application/json, text/event-stream");
        if (b->auth[0])
                x->hdrs = hdr(x->hdrs, "Authorization", b->auth);
        if (mv) {
                const char *name = NULL;
                json_t *params = json_object_get(msg, "params");

                x->hdrs = hdr(x->hdrs, "MCP-Protocol-Version", mv);
                if (method)
                        x->hdrs = hdr(x->hdrs, "Mcp-Method", method);
                if (method && (!strcmp(method, "tools/call") || !strcmp(method, "prompts/get")))
                        name = json_string_value(json_object_get(params, "name"));
                else if (method && !strcmp(method, "resources/read"))
                        name = json_string_value(json_object_get(params, "uri"));
                if (name) {
                        _cleanup_free_ char *safe = header_safe(name);

                        if (safe)
                                x->hdrs = hdr(x->hdrs, "Mcp-Name", safe);
                }
        } else {
                if (b->session[0] && !x->init)
                        x->hdrs = hdr(x->hdrs, "Mcp-Session-Id", b->session);
                if (b->version[0] && !x->init)
                        x->hdrs = hdr(x->hdrs, "MCP-Protocol-Version", b->version);
        }
        json_decref(msg);
        cu.easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdrs);
        cu.easy_setopt(x->h, CURLOPT_POSTFIELDS, x->body);
        cu.easy_setopt(x->h, CURLOPT_POSTFIELDSIZE, (long)len);
        cu.easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_body);
        cu.easy_setopt(x->h, CURLOPT_WRITEDATA, x);
        cu.easy_setopt(x->h, CURLOPT_HEADERFUNCTION, on_header);
        cu.easy_setopt(x->h, CURLOPT_HEADERDATA, x);
        cu.easy_setopt(x->h, CURLOPT_PRIVATE, x);
        x->next = b->xfers;
        b->xfers = x;
        cu.multi_add_handle(b->multi, x->h);
}

static void
done(struct xfer *x, CURLcode rc)
{
        long status = 0;
        char msg[300];

        cu.easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
        if (rc != CURLE_OK) {
                snprintf(msg, sizeof(msg), "the bridge could not reach the execbox server: %s", cu.easy_strerror(rc));
                if (x->id)
                        answer_error(x->id, msg);
                else
                        xb_warn("%s", msg);
                return;
        }
        if (x->sse) {
                xb_buf_puts(&x->resp, "\n\n");
                sse_drain(x);
                return;
        }
        if (x->resp.len) {
                json_t *j = json_loadb(x->resp.data, x->resp.len, 0, NULL);
                bool rpc = json_is_array(j) || json_object_get(j, "jsonrpc");

                if (rpc) {
                        json_t *res = json_object_get(j, "result");
                        const char *v = json_string_value(json_object_get(res, "protocolVersion"));

                        if (x->init && v)
                                snprintf(x->b->version, sizeof(x->b->version), "%s", v);
                        forward(x->resp.data, x->resp.len);
                } else if (x->id) {
                        /* A REST-shaped error (401, 403): say it as JSON-RPC. */
                        const char *m = json_string_value(json_object_get(json_object_get(j, "error"), "message"));

                        snprintf(msg, sizeof(msg), "the execbox server answered HTTP %ld: %.200s", status,
                                 m ? m : "an unexpected reply");
                        answer_error(x->id, msg);
                }
                json_decref(j);
        } else if (x->id && status != 202) {
                snprintf(msg, sizeof(msg), "the execbox server answered HTTP %ld with no body", status);
                answer_error(x->id, msg);
        }
}

static void
read_input(struct bridge *b)
{
        char buf[65536];
        ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0) {
                b->eof = true;
                if (b->in.len && !b->skipping)
                        post(b, b->in.data, b->in.len);
                xb_buf_reset(&b->in);
                return;
        }
        for (ssize_t i = 0, start = 0; i <= n; i++) {
                if (i < n && buf[i] != '\n')
                        continue;
                if (i == n) {
                        /* A line that continues in the next read. */
                        if (!b->skipping && xb_buf_append(&b->in, buf + start, (size_t)(n - start)) < 0) {
                                answer_error(NULL, "Parse error: the message is over 16 MiB");
                                xb_buf_reset(&b->in);
                                b->skipping = true;
                        }
                        break;
                }
                if (!b->skipping && xb_buf_append(&b->in, buf + start, (size_t)(i - start)) == 0) {
                        size_t len = b->in.len;

                        while (len && (b->in.data[len - 1] == '\r' || b->in.data[len - 1] == ' '))
                                len--;
                        if (len)
                                post(b, b->in.data, len);
                }
                b->skipping = false;
                xb_buf_reset(&b->in);
                start = i + 1;
        }
}

/* End the session the server made for us (its default sandbox goes). */
static void
end_session(struct bridge *b)
{
        struct curl_slist *h = NULL;
        CURL *e;

        if (!b->session[0] || !(e = easy(b, "DELETE")))
                return;
        h = hdr(h, "Mcp-Session-Id", b->session);
        if (b->auth[0])
                h = hdr(h, "Authorization", b->auth);
        if (b->version[0])
                h = hdr(h, "MCP-Protocol-Version", b->version);
        cu.easy_setopt(e, CURLOPT_HTTPHEADER, h);
        cu.easy_setopt(e, CURLOPT_TIMEOUT, 10L);
        cu.easy_perform(e);
        cu.easy_cleanup(e);
        cu.slist_free_all(h);
}

int
xb_mcp_bridge(const char *url, const char *token)
{
        struct bridge b = { .in = { .max = LINE_MAX_BYTES } };
        struct sigaction sa = { .sa_handler = on_signal };

        if (curl_load() < 0)
                return XB_EXIT_OWN_ERROR;
        if (!strncmp(url, "unix:", 5)) {
                snprintf(b.unix_path, sizeof(b.unix_path), "%s", url + 5);
                snprintf(b.url, sizeof(b.url), "http://localhost/mcp");
        } else if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
                xb_error("--server takes http://HOST:PORT, https://..., or unix:/PATH, not `%s`", url);
                return XB_EXIT_OWN_ERROR;
        } else {
                size_t n = strlen(url);

                while (n && url[n - 1] == '/')
                        n--;
                snprintf(b.url, sizeof(b.url), "%.*s%s", (int)n, url,
                         n >= 4 && !strncmp(url + n - 4, "/mcp", 4) ? "" : "/mcp");
        }
        if (token && *token)
                snprintf(b.auth, sizeof(b.auth), "Bearer %s", token);
        if (cu.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !(b.multi = cu.multi_init())) {
                xb_error("libcurl would not start");
                return XB_EXIT_OWN_ERROR;
        }
        signal(SIGPIPE, SIG_IGN);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        xb_set_nonblock(STDIN_FILENO, true);
        while (!stop_signal && (!b.eof || b.xfers || b.nqueue)) {
                struct curl_waitfd w = { .fd = STDIN_FILENO, .events = CURL_WAIT_POLLIN };
                int running = 0, left, nfds = 0;
                CURLMsg *m;

                cu.multi_poll(b.multi, b.eof ? NULL : &w, b.eof ? 0 : 1, 1000, &nfds);
                if (!b.eof && w.revents)
                        read_input(&b);
                cu.multi_perform(b.multi, &running);
                while ((m = cu.multi_info_read(b.multi, &left))) {
                        struct xfer *x = NULL;

                        if (m->msg != CURLMSG_DONE)
                                continue;
                        cu.easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
                        done(x, m->data.result);
                        xfer_free(x);
                }
        }
        b.initializing = false;
        while (b.xfers)
                xfer_free(b.xfers);
        for (size_t i = 0; i < b.nqueue; i++)
                free(b.queue[i]);
        free(b.queue);
        end_session(&b);
        cu.multi_cleanup(b.multi);
        xb_buf_free(&b.in);
        return stop_signal ? 128 + stop_signal : 0;
}
