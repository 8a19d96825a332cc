/* MCP over stdio: newline-delimited JSON-RPC on an input fd, answers on an
 * output fd, for `execbox mcp` under a desktop client.
 *
 * Theory of operation. Both fds sit in the server's loop, non-blocking.
 * Input is split into lines (each at most LINE_MAX bytes; a longer one is
 * answered with a parse error and skipped); each line is one message, or
 * a batch in a 2025-03-26 session, handed to the core with the peer's one
 * client context, in the era the message speaks (modern when its _meta
 * names a protocol version). Output is queued and written as the pipe
 * takes it, at most OUT_MAX bytes behind; a peer further behind, or gone,
 * ends the session. A large message is not serialised whole: its JSON is
 * generated (transport/json_stream.c) a piece at a time as the pipe drains,
 * at most TURN_MAX bytes per turn of the loop. At end of input the calls in flight may finish, their
 * answers are flushed, and the loop is stopped; the server then deletes
 * the sandboxes. Logs go to stderr, never to the output fd. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/log.h"
#include "mcp/mcp.h"
#include "transport/json_stream.h"

#define LINE_MAX_BYTES (16u << 20)
#define OUT_MAX ((size_t)64 << 20)
#define BATCH_MAX 64
#define STAGE_BYTES (64u << 10)
#define TURN_MAX ((size_t)1 << 20)    /* generated per turn: the loop stays responsive */

/* A large message queued: its JSON, generated as it is written, then what
 * was queued after it. */
struct opart {
        struct opart *next;
        struct xb_jgen *gen;
        size_t est;                   /* about its JSON's bytes, counted against OUT_MAX */
        struct xb_buf after;
};

struct line;

struct lslot {
        struct line *l;
        struct xb_mcp_call *call;
        json_t *answer;
        bool answered;
};

struct line {
        struct xb_mcp_stdio *s;
        struct line *next;
        unsigned nslots, pending;
        bool batch, setup;
        struct lslot slots[];
};

struct xb_mcp_stdio {
        struct xb_mcp *m;
        struct xb_loop *loop;
        struct xb_mcp_client *c;
        int in_fd, out_fd;
        struct xb_io in_io, out_io;
        struct xb_buf in;
        bool skipping;                /* inside an over-long line */
        struct xb_buf out;            /* bytes to write first, then the parts in order */
        size_t out_off;
        struct opart *parts, *last;
        size_t queued, deferred;      /* bytes in the parts' after, and their JSON's */
        char *stage;                  /* generated and not yet written */
        size_t stage_len, stage_off;
        struct line *lines;           /* in flight */
        bool eof, failed;
};

static void stdio_done(struct xb_mcp_stdio *s);
static void on_writable(struct xb_io *io, uint32_t events);

/* ---- output ---- */

static void
part_free(struct opart *p)
{
        xb_jgen_free(p->gen);
        xb_buf_free(&p->after);
        free(p);
}

/* Write what is queued, generating at most budget bytes of JSON: 0 when
 * all is written, 1 when more waits (the pipe is full or the budget
 * spent), -errno when the peer cannot take it. */
static int
pump(struct xb_mcp_stdio *s, size_t budget)
{
        for (;;) {
                const char *p;
                size_t len;
                ssize_t n;

                if (s->out_off < s->out.len) {
                        p = s->out.data + s->out_off;
                        len = s->out.len - s->out_off;
                } else if (s->stage_off < s->stage_len) {
                        p = s->stage + s->stage_off;
                        len = s->stage_len - s->stage_off;
                } else if (s->parts && s->parts->gen) {
                        if (!budget)
                                return 1;
                        if (!s->stage && !(s->stage = malloc(STAGE_BYTES)))
                                return -ENOMEM;
                        n = xb_jgen_read(s->parts->gen, s->stage, STAGE_BYTES);
                        if (n < 0)
                                return -ENOMEM;
                        s->stage_off = 0;
                        s->stage_len = (size_t)n;
                        budget = (size_t)n < budget ? budget - (size_t)n : 0;
                        if (!n) {
                                xb_jgen_free(s->parts->gen);
                                s->parts->gen = NULL;
                                s->deferred -= s->parts->est;
                        }
                        continue;
                } else if (s->parts) {
                        /* The part is written: what followed it comes next. */
                        struct opart *d = s->parts;

                        xb_buf_free(&s->out);
                        s->out = d->after;
                        d->after = (struct xb_buf){ 0 };
                        s->out.max = OUT_MAX;
                        s->out_off = 0;
                        s->queued -= s->out.len;
                        s->parts = d->next;
                        if (s->last == d)
                                s->last = NULL;
                        part_free(d);
                        continue;
                } else {
                        xb_buf_reset(&s->out);
                        s->out_off = 0;
                        return 0;
                }
                n = write(s->out_fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return 1;
                if (n <= 0)
                        return n < 0 ? -errno : -EPIPE;
                if (s->out_off < s->out.len)
                        s->out_off += (size_t)n;
                else
                        s->stage_off += (size_t)n;
        }
}

static void
flush(struct xb_mcp_stdio *s)
{
        int r = pump(s, TURN_MAX);

        if (r > 0) {
                /* The rest when the pipe takes more, or on the next turn. */
                if (!s->out_io.active)
                        xb_io_start(s->loop, &s->out_io, s->out_fd, EPOLLOUT, on_writable, s);
                return;
        }
        if (r < 0) {
                xb_warn("mcp: cannot write to the client (%s); ending", strerror(-r));
                s->failed = true;
                xb_buf_reset(&s->out);
                s->out_off = 0;
                stdio_done(s);
                return;
        }
        xb_io_stop(&s->out_io);
        if (s->eof && !s->lines)
                stdio_done(s);
}

static void
on_writable(struct xb_io *io, uint32_t events)
{
        (void)events;
        flush(io->data);
}

/* Queue msg (borrowed) as one line: a small one serialised at once, a
 * large one as a part generated when its turn to be written comes. */
static int
queue_msg(struct xb_mcp_stdio *s, json_t *msg)
{
        struct xb_buf *b = s->last ? &s->last->after : &s->out;
        size_t est = xb_json_string_bytes(msg, OUT_MAX + 1), len0 = b->len;
        struct opart *p;
        int r;

        if (est < XB_JSON_STREAM_MIN) {
                _cleanup_free_ char *j = json_dumps(msg, XB_MCP_JSON_FLAGS);

                if (!j)
                        return -ENOMEM;
                if ((r = xb_buf_puts(b, j)) < 0 || (r = xb_buf_puts(b, "\n")) < 0)
                        return r;
                if (b != &s->out)
                        s->queued += b->len - len0;
                /* As before: bytes already serialised count, a large part's JSON not. */
                return s->queued + s->out.len - s->out_off > OUT_MAX ? -ENOBUFS : 0;
        }
        /* The first large one is always taken: a tool's result is bounded by its limits. */
        if (s->deferred && s->queued + s->deferred + est + s->out.len - s->out_off > OUT_MAX)
                return -ENOBUFS;
        if (!(p = calloc(1, sizeof(*p))))
                return -ENOMEM;
        p->after.max = OUT_MAX;
        if (!(p->gen = xb_jgen_new_flags(json_incref(msg), XB_MCP_JSON_FLAGS)) || xb_buf_puts(&p->after, "\n") < 0) {
                part_free(p);
                return -ENOMEM;
        }
        p->est = est;
        s->deferred += est;
        s->queued += p->after.len;
        if (s->last)
                s->last->next = p;
        else
                s->parts = p;
        s->last = p;
        return 0;
}

static void
send_msg(struct xb_mcp_stdio *s, json_t *msg)
{
        if (s->failed || !msg)
                return;
        if (queue_msg(s, msg) < 0) {
                xb_warn("mcp: the client is not reading its output; ending");
                s->failed = true;
                stdio_done(s);
                return;
        }
        if (!s->out_io.active)
                flush(s);
}

/* ---- requests ---- */

static void
line_free(struct line *l)
{
        for (struct line **p = &l->s->lines; *p; p = &(*p)->next)
                if (*p == l) {
                        *p = l->next;
                        break;
                }
        for (unsigned i = 0; i < l->nslots; i++)
                json_decref(l->slots[i].answer);
        free(l);
}

static void
line_finish(struct line *l)
{
        struct xb_mcp_stdio *s = l->s;

        if (l->batch) {
                json_t *a = json_array();

                for (unsigned i = 0; i < l->nslots; i++)
                        if (l->slots[i].answer)
                                json_array_append(a, l->slots[i].answer);
                if (json_array_size(a))
                        send_msg(s, a);
                json_decref(a);
        }
        line_free(l);
        if (s->eof && !s->lines && !s->out_io.active)
                stdio_done(s);
}

static void
out_notify(void *ctx, json_t *msg)
{
        struct lslot *sl = ctx;

        send_msg(sl->l->s, msg);
}

static void
out_respond(void *ctx, json_t *msg, unsigned status)
{
        struct lslot *sl = ctx;
        struct line *l = sl->l;

        (void)status;
        sl->call = NULL;
        sl->answered = true;
        l->pending--;
        if (msg && l->batch)
                sl->answer = json_incref(msg);
        else if (msg)
                send_msg(l->s, msg);
        if (!l->setup && !l->pending)
                line_finish(l);
}

static const struct xb_mcp_out_ops out_ops = { out_notify, out_respond, NULL };

static bool
modern_message(json_t *msg)
{
        json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");

        return json_object_get(meta, "io.modelcontextprotocol/protocolVersion") != NULL;
}

static void
handle_line(struct xb_mcp_stdio *s, const char *text, size_t len)
{
        json_error_t jerr;
        json_t *msg = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
        size_t n = json_is_array(msg) ? json_array_size(msg) : 1;
        const char *v = s->c ? xb_mcp_client_version(s->c) : NULL;
        struct line *l;
        bool any = false;

        if (!s->c) {
                json_decref(msg);
                return;
        }
        if (!msg || (!json_is_object(msg) && !json_is_array(msg))) {
                char why[300];
                json_t *e;

                snprintf(why, sizeof(why), msg ? "Invalid Request: a JSON-RPC message is an object"
                                               : "Parse error: %s at column %d", jerr.text, jerr.column);
                e = xb_mcp_error(NULL, msg ? -32600 : -32700, why, NULL);
                send_msg(s, e);
                json_decref(e);
                json_decref(msg);
                return;
        }
        if (json_is_array(msg) && (!v || strcmp(v, "2025-03-26") || !n || n > BATCH_MAX)) {
                json_t *e = xb_mcp_error(NULL, -32600, !v || strcmp(v, "2025-03-26")
                                         ? "Invalid Request: JSON-RPC batches are not supported in this protocol version"
                                         : "Invalid Request: a batch holds 1 to 64 messages", NULL);

                send_msg(s, e);
                json_decref(e);
                json_decref(msg);
                return;
        }
        l = calloc(1, sizeof(*l) + n * sizeof(l->slots[0]));
        if (!l) {
                json_decref(msg);
                return;
        }
        l->s = s;
        l->nslots = (unsigned)n;
        l->batch = json_is_array(msg);
        l->setup = true;
        l->next = s->lines;
        s->lines = l;
        for (size_t i = 0; i < n; i++) {
                struct lslot *sl = &l->slots[i];
                json_t *m = l->batch ? json_array_get(msg, i) : msg;

                sl->l = l;
                l->pending++;
                sl->call = xb_mcp_handle(s->c, modern_message(m) ? XB_MCP_MODERN_ERA : XB_MCP_LEGACY, m, &out_ops, sl);
                if (!sl->call && !sl->answered)
                        l->pending--;
                any |= sl->call || sl->answered;
        }
        l->setup = false;
        json_decref(msg);
        (void)any;
        if (!l->pending)
                line_finish(l);
}

/* ---- input ---- */

static void
on_input(struct xb_io *io, uint32_t events)
{
        struct xb_mcp_stdio *s = io->data;
        char buf[65536];
        ssize_t n;

        (void)events;
        n = read(s->in_fd, buf, sizeof(buf));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0) {
                /* End of input: let the calls in flight finish, then stop. */
                xb_io_stop(&s->in_io);
                s->eof = true;
                if (s->in.len && !s->skipping)
                        handle_line(s, s->in.data, s->in.len);
                xb_buf_reset(&s->in);
                if (!s->lines && !s->out_io.active)
                        stdio_done(s);
                return;
        }
        for (ssize_t i = 0, start = 0; i <= n; i++) {
                if (i < n && buf[i] != '\n')
                        continue;
                if (i == n) {
                        /* The rest of a line that continues in the next read. */
                        if (!s->skipping && xb_buf_append(&s->in, buf + start, (size_t)(n - start)) < 0) {
                                json_t *e = xb_mcp_error(NULL, -32700, "Parse error: the message is over 16 MiB",
                                                         NULL);

                                send_msg(s, e);
                                json_decref(e);
                                xb_buf_reset(&s->in);
                                s->skipping = true;
                        }
                        break;
                }
                if (s->skipping) {
                        s->skipping = false;
                } else if (xb_buf_append(&s->in, buf + start, (size_t)(i - start)) < 0) {
                        json_t *e = xb_mcp_error(NULL, -32700, "Parse error: the message is over 16 MiB", NULL);

                        send_msg(s, e);
                        json_decref(e);
                } else {
                        size_t len = s->in.len;

                        while (len && (s->in.data[len - 1] == '\r' || s->in.data[len - 1] == ' '))
                                len--;
                        if (len)
                                handle_line(s, s->in.data, len);
                }
                xb_buf_reset(&s->in);
                start = i + 1;
        }
}

/* ---- the context ---- */

static void
client_notify(void *ctx, json_t *msg)
{
        send_msg(ctx, msg);
}

static void
client_closed(void *ctx)
{
        struct xb_mcp_stdio *s = ctx;

        s->c = NULL;
}

static const struct xb_mcp_client_ops client_ops = { client_notify, client_closed };

/* Stop taking input and end the loop; the server's close does the rest. */
static void
stdio_done(struct xb_mcp_stdio *s)
{
        xb_io_stop(&s->in_io);
        xb_loop_stop(s->loop);
}

int
xb_mcp_stdio_start(struct xb_mcp *m, struct xb_loop *l, int in_fd, int out_fd, struct xb_mcp_stdio **ret,
                   struct xb_err *err)
{
        struct xb_mcp_stdio *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return xb_err_set(err, ENOMEM, "stdio");
        s->m = m;
        s->loop = l;
        s->in_fd = in_fd;
        s->out_fd = out_fd;
        s->in.max = LINE_MAX_BYTES;
        s->out.max = OUT_MAX;
        s->c = xb_mcp_client_new(m, 0, 0, &client_ops, s);
        if (!s->c) {
                free(s);
                return xb_err_msg(err, EAGAIN, "no MCP context");
        }
        xb_set_nonblock(in_fd, true);
        xb_set_nonblock(out_fd, true);
        s->out_io.data = s;
        r = xb_io_start(l, &s->in_io, in_fd, EPOLLIN, on_input, s);
        if (r < 0) {
                xb_mcp_client_close(s->c);
                free(s);
                return xb_err_set(err, -r, "watch the input (it must be a pipe, a socket or a terminal)");
        }
        /* The output watch is armed only while writes wait. */
        s->out_io.fd = out_fd;
        *ret = s;
        return 0;
}

void
xb_mcp_stdio_stop(struct xb_mcp_stdio *s)
{
        if (!s)
                return;
        xb_io_stop(&s->in_io);
        xb_io_stop(&s->out_io);
        /* What is still queued goes out, blocking: the peer waits for it. */
        if (!s->failed && (s->out_off < s->out.len || s->parts)) {
                xb_set_nonblock(s->out_fd, false);
                pump(s, SIZE_MAX);
        }
        while (s->parts) {
                struct opart *p = s->parts;

                s->parts = p->next;
                part_free(p);
        }
        free(s->stage);
        while (s->lines) {
                struct line *l = s->lines;

                for (unsigned i = 0; i < l->nslots; i++)
                        xb_mcp_call_abandon(l->slots[i].call);
                line_free(l);
        }
        if (s->c)
                xb_mcp_client_close(s->c);
        xb_buf_free(&s->in);
        xb_buf_free(&s->out);
        free(s);
}
