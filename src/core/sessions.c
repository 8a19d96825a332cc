/* Code sessions. See sessions.h for the theory of operation. */
#define _GNU_SOURCE
#include "core/sessions.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/utf8.h"
#include "proc/env.h"
#include "proc/initc.h"
#include "core/core.h"

#define LINE_MAX_BYTES (32u << 20)
#define STDERR_TAIL 8192
#define CELL_OUTPUTS_MAX 2000
#define CELL_IMAGES_MAX 32
#define INTERRUPT_GRACE_MS 3000
#define ESCALATE_MS 500         /* interrupt → kill what the interpreter forked */
#define QUEUE_MAX 8
#define START_WAIT_MS 60000

extern const char xb_python_driver[], xb_node_driver[];

enum ss_state { SS_STARTING, SS_IDLE, SS_BUSY, SS_DEAD };
static const char *const state_names[] = { "starting", "idle", "busy", "dead" };

struct cell {
        struct cell *next;             /* queue */
        struct xb_session *ss;
        uint64_t id;
        char *code;
        struct xb_req *req;            /* who gets the next reply */
        struct xb_stream *stream;
        json_t *outputs;
        size_t returned;               /* outputs already sent by a soft-timeout reply */
        uint64_t start_ms, end_ms, timeout_ms, yield_ms, output_limit;
        uint64_t stream_bytes, dropped;
        unsigned images;
        bool timed_out, done;
        bool yielded;                  /* answered "running" once: keep the end for a wait */
        bool dangermode;               /* reply in dangermode's shape */
        json_t *exit_code, *cwd;       /* bash sessions */
        char status[16];
        struct xb_timer hard, soft, grace, wait, escalate;
};

struct var_req {
        struct var_req *next;       /* req is NULL once its client left */
        struct xb_session *ss;
        uint64_t id;
        struct xb_req *req;
};

struct xb_session {
        struct xb_session *next;
        struct xb_defer defer;        /* session_free */
        struct xb_sbx *sbx;
        char id[17];
        char language[64];
        char mode[16];                 /* python, jupyter, bash, javascript */
        enum ss_state state;
        bool warm, claimed, preload;
        uint32_t tag;
        pid_t pid;
        int in_fd, out_fd, err_fd;
        struct xb_io in_io, out_io, err_io;
        struct xb_buf inbuf, line, errtail;
        uint64_t next_id;
        int exec_count;
        struct cell *cell, *queue;
        struct cell *finished;         /* ended after a "running" reply, unseen: for the next wait */
        unsigned nqueue;
        struct var_req *vars;
        struct xb_req *start_req;      /* a create that waits for a kernel to start */
        struct xb_timer start_timer;
        char death[240];
        uint64_t started_ms;
};

struct xb_image {
        struct xb_image *next;
        char name[64];
        char mime[24];
        unsigned char *data;
        size_t len;
};

static void on_out(struct xb_io *io, uint32_t events);
static void cell_finish(struct cell *c, const char *status);
static void session_died(struct xb_session *ss, const char *why);

/* ---- images ---- */

static void
image_free(struct xb_image *im)
{
        free(im->data);
        free(im);
}

void
xb_images_free(struct xb_sbx *x)
{
        while (x->images) {
                struct xb_image *im = x->images;

                x->images = im->next;
                image_free(im);
        }
        x->nimages = 0;
        x->image_bytes = 0;
}

/* Decode and keep an image; returns its name or NULL. Oldest go first. */
static const char *
image_store(struct xb_sbx *x, const char *mime, const char *b64, const char *hint_name)
{
        static const unsigned char png_sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
        size_t in = strlen(b64), n;
        void *out;
        struct xb_image *im;

        if (in / 4 * 3 > XB_IMAGE_MAX || xb_base64_decode_alloc(b64, in, XB_IMAGE_MAX, XB_BASE64_NEWLINES, &out, &n) < 0)
                return NULL;
        if (strcmp(mime, "image/png") == 0 && (n < 8 || memcmp(out, png_sig, 8) != 0)) {
                free(out);
                return NULL;
        }
        im = calloc(1, sizeof(*im));
        if (!im) {
                free(out);
                return NULL;
        }
        snprintf(im->name, sizeof(im->name), "%s.%s", hint_name, strcmp(mime, "image/png") ? "jpg" : "png");
        snprintf(im->mime, sizeof(im->mime), "%s", mime);
        im->data = out;
        im->len = n;
        /* Append at the tail; evict from the head past the caps. */
        {
                struct xb_image **pp = &x->images;

                while (*pp)
                        pp = &(*pp)->next;
                *pp = im;
        }
        x->nimages++;
        x->image_bytes += n;
        while (x->images && x->images != im &&
               (x->nimages > XB_IMAGES_PER_SANDBOX || x->image_bytes > XB_IMAGE_BYTES_PER_SANDBOX)) {
                struct xb_image *old = x->images;

                x->images = old->next;
                x->nimages--;
                x->image_bytes -= old->len;
                image_free(old);
        }
        return im->name;
}

const void *xb_image_find(struct xb_sbx *x, const char *name, size_t *len, const char **mime);
const void *
xb_image_find(struct xb_sbx *x, const char *name, size_t *len, const char **mime)
{
        for (struct xb_image *im = x->images; im; im = im->next)
                if (strcmp(im->name, name) == 0) {
                        *len = im->len;
                        *mime = im->mime;
                        return im->data;
                }
        return NULL;
}

/* ---- the driver's pipes ---- */

static void
close_io(struct xb_io *io, int *fd)
{
        xb_io_stop(io);
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

static void
pump_in(struct xb_session *ss)
{
        while (ss->inbuf.len && ss->in_fd >= 0) {
                ssize_t w = write(ss->in_fd, ss->inbuf.data, ss->inbuf.len);

                if (w < 0) {
                        if (errno == EAGAIN)
                                break;
                        xb_buf_reset(&ss->inbuf);
                        return;
                }
                memmove(ss->inbuf.data, ss->inbuf.data + w, ss->inbuf.len - (size_t)w);
                ss->inbuf.len -= (size_t)w;
        }
        if (ss->in_fd >= 0)
                xb_io_modify(&ss->in_io, ss->inbuf.len ? EPOLLOUT : 0);
}

static void
on_in(struct xb_io *io, uint32_t events)
{
        (void)events;
        pump_in(io->data);
}

static int
send_request(struct xb_session *ss, json_t *req)
{
        char *s = json_dumps(req, JSON_COMPACT);
        int r;

        json_decref(req);
        if (!s)
                return -ENOMEM;
        r = xb_buf_append(&ss->inbuf, s, strlen(s));
        if (r == 0)
                r = xb_buf_append(&ss->inbuf, "\n", 1);
        free(s);
        if (r == 0)
                pump_in(ss);
        return r;
}

static void
on_err(struct xb_io *io, uint32_t events)
{
        struct xb_session *ss = io->data;
        char buf[4096];
        ssize_t n;

        (void)events;
        while ((n = read(ss->err_fd, buf, sizeof(buf))) > 0) {
                /* Keep the last STDERR_TAIL bytes for the death message. */
                if (ss->errtail.len + (size_t)n > STDERR_TAIL) {
                        size_t drop = ss->errtail.len + (size_t)n - STDERR_TAIL;

                        if (drop > ss->errtail.len)
                                drop = ss->errtail.len;
                        memmove(ss->errtail.data, ss->errtail.data + drop, ss->errtail.len - drop);
                        ss->errtail.len -= drop;
                }
                xb_buf_append(&ss->errtail, buf, (size_t)n > STDERR_TAIL ? STDERR_TAIL : (size_t)n);
        }
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                close_io(&ss->err_io, &ss->err_fd);
}

/* ---- cells ---- */

static void
cell_free(struct cell *c)
{
        xb_timer_stop(&c->hard);
        xb_timer_stop(&c->soft);
        xb_timer_stop(&c->grace);
        xb_timer_stop(&c->escalate);
        xb_timer_stop(&c->wait);
        json_decref(c->outputs);
        json_decref(c->exit_code);
        json_decref(c->cwd);
        free(c->code);
        free(c);
}

static json_t *
cell_json(struct cell *c, const char *status, bool only_new)
{
        json_t *outs = json_array(), *o;
        size_t i;

        json_array_foreach(c->outputs, i, o)
                if (!only_new || i >= c->returned)
                        json_array_append(outs, o);
        c->returned = json_array_size(c->outputs);
        o = json_pack("{s:s,s:i,s:I,s:o,s:s}", "status", status, "execution_count", c->ss->exec_count, "duration_ms",
                      (json_int_t)((c->end_ms ? c->end_ms : xb_now_ms()) - c->start_ms), "outputs", outs,
                      "session_id", c->ss->id);
        if (c->dropped)
                json_object_set_new(o, "output_dropped_bytes", json_integer((json_int_t)c->dropped));
        if (c->exit_code)
                json_object_set(o, "exit_code", c->exit_code);
        if (c->cwd)
                json_object_set(o, "cwd", c->cwd);
        if (strcmp(status, "running") == 0)
                json_object_set_new(o, "hint", json_string("the cell is still running; POST .../sessions/{sid}/wait "
                                                           "for more output, or .../interrupt to stop it"));
        else if (strcmp(status, "dead") == 0)
                json_object_set_new(o, "hint", json_string("the interpreter died (out of memory, a crash, or "
                                                            "killed); POST .../sessions/{sid}/restart starts a fresh one"));
        else if (strcmp(status, "timeout") == 0)
                json_object_set_new(o, "hint", json_string("the cell ran past timeout_s and was interrupted; "
                                                            "the session's state is kept"));
        return o;
}

static void
cell_gone(struct xb_req *r, void *owner)
{
        struct cell *c = owner;

        (void)r;
        c->req = NULL;
        c->stream = NULL;
}

/* Reply to whoever waits on the cell, with what it has not seen. */
static void
cell_reply(struct cell *c, const char *status)
{
        if ((c->stream || c->req) && !strcmp(status, "running"))
                c->yielded = true;
        if (c->stream) {
                json_t *o = cell_json(c, status, true);

                json_object_del(o, "outputs");
                xb_stream_event(c->stream, "result", o);
                xb_stream_end(c->stream);
                c->stream = NULL;
                c->req = NULL;
        } else if (c->req) {
                struct xb_req *req = c->req;
                json_t *o = cell_json(c, status, true);

                c->req = NULL;
                if (c->dangermode) {
                        json_t *d = xb_session_dangermode_json(o);

                        json_decref(o);
                        o = d;
                }
                xb_reply_json(req, 200, o);
        }
}

static void
start_next(struct xb_session *ss);

static void
cell_finish(struct cell *c, const char *status)
{
        struct xb_session *ss = c->ss;
        bool waited;

        if (c->done)
                return;
        c->done = true;
        if (c->dropped) {
                char note[200];

                snprintf(note, sizeof(note), "\n[execbox: %llu bytes of this cell's output were dropped over the "
                         "%llu-byte limit]\n", (unsigned long long)c->dropped, (unsigned long long)c->output_limit);
                json_array_append_new(c->outputs, json_pack("{s:s,s:s,s:s}", "type", "stream", "name", "stderr", "text", note));
        }
        c->end_ms = xb_now_ms();
        waited = c->req || c->stream;
        cell_reply(c, status);
        if (ss->cell == c)
                ss->cell = NULL;
        if (c->yielded && !waited) {
                /* Someone saw "running" and will POST .../wait for the end:
                 * keep what they have not seen, and the status. */
                xb_timer_stop(&c->hard);
                xb_timer_stop(&c->soft);
                xb_timer_stop(&c->grace);
                xb_timer_stop(&c->wait);
                snprintf(c->status, sizeof(c->status), "%s", status);
                if (ss->finished)
                        cell_free(ss->finished);
                ss->finished = c;
        } else
                cell_free(c);
        if (ss->state == SS_BUSY)
                ss->state = SS_IDLE;
        start_next(ss);
}

static void
on_soft(struct xb_timer *t)
{
        struct cell *c = t->data;

        if (c->req || c->stream)
                cell_reply(c, "running");
}

static void
on_grace(struct xb_timer *t)
{
        struct cell *c = t->data;

        /* The interrupt did not stop it: the interpreter is stuck. */
        session_died(c->ss, "the cell did not stop after an interrupt and the interpreter was killed");
}

static void
on_hard(struct xb_timer *t)
{
        struct cell *c = t->data;

        c->timed_out = true;
        xb_session_interrupt(c->ss);
        xb_timer_start(c->ss->sbx->srv->loop, &c->grace, INTERRUPT_GRACE_MS, on_grace, c);
}

static void
begin(struct xb_session *ss, struct cell *c)
{
        struct xb_loop *l = ss->sbx->srv->loop;

        ss->cell = c;
        ss->state = SS_BUSY;
        c->start_ms = xb_now_ms();
        if (send_request(ss, json_pack("{s:s,s:I,s:s}", "op", "run", "id", (json_int_t)c->id, "code", c->code)) < 0) {
                session_died(ss, "could not send the cell to the interpreter");
                return;
        }
        if (c->timeout_ms)
                xb_timer_start(l, &c->hard, c->timeout_ms, on_hard, c);
        if (c->yield_ms)
                xb_timer_start(l, &c->soft, c->yield_ms, on_soft, c);
}

static void
start_next(struct xb_session *ss)
{
        struct cell *c = ss->queue;

        if (!c || ss->state != SS_IDLE)
                return;
        ss->queue = c->next;
        ss->nqueue--;
        c->next = NULL;
        begin(ss, c);
}

/* Append one output to the cell, within the caps. */
static void
add_output(struct cell *c, json_t *o)
{
        const char *type = json_string_value(json_object_get(o, "type"));

        if (json_array_size(c->outputs) >= CELL_OUTPUTS_MAX) {
                json_decref(o);
                return;
        }
        if (type && strcmp(type, "stream") == 0) {
                size_t n = json_string_length(json_object_get(o, "text")), last = json_array_size(c->outputs);
                json_t *prev = last ? json_array_get(c->outputs, last - 1) : NULL;

                if (c->stream_bytes + n > c->output_limit) {
                        /* Keep the head up to the limit (whole UTF-8 characters), drop the rest. */
                        const char *t = json_string_value(json_object_get(o, "text"));
                        size_t room = c->output_limit > c->stream_bytes ? c->output_limit - c->stream_bytes : 0;

                        while (room && ((unsigned char)t[room] & 0xC0) == 0x80)
                                room--;
                        c->dropped += n - room;
                        if (!room) {
                                json_decref(o);
                                return;
                        }
                        json_object_set_new(o, "text", json_stringn(t, room));
                        n = room;
                }
                c->stream_bytes += n;
                if (c->stream)
                        xb_stream_event(c->stream, "stream", json_incref(o));
                /* Consecutive text on one stream is one output, as in a notebook. */
                if (prev && last > c->returned && json_equal(json_object_get(prev, "type"), json_object_get(o, "type")) &&
                    json_equal(json_object_get(prev, "name"), json_object_get(o, "name"))) {
                        struct xb_buf b = { .max = LINE_MAX_BYTES };

                        xb_buf_puts(&b, json_string_value(json_object_get(prev, "text")));
                        xb_buf_puts(&b, json_string_value(json_object_get(o, "text")));
                        json_object_set_new(prev, "text", json_stringn(b.data ? b.data : "", b.len));
                        xb_buf_free(&b);
                        json_decref(o);
                        return;
                }
        } else if (c->stream)
                /* The stream's last event is named result: a cell's value is execute_result, as in Jupyter. */
                xb_stream_event(c->stream, !type ? "output" : !strcmp(type, "result") ? "execute_result" : type,
                                json_incref(o));
        json_array_append_new(c->outputs, o);
        if (c->yield_ms && !c->done)
                xb_timer_start(c->ss->sbx->srv->loop, &c->soft, c->yield_ms, on_soft, c);
}

static bool
valid_text(json_t *v, size_t max)
{
        return json_is_string(v) && json_string_length(v) <= max;
}

/* Check a MIME bundle: string values (or JSON for application/json),
 * images stored and linked. Returns a cleaned copy or NULL. */
static json_t *
clean_bundle(struct cell *c, json_t *data, json_t **url)
{
        json_t *out = json_object(), *v;
        const char *mime;
        unsigned n = 0;

        if (!json_is_object(data)) {
                json_decref(out);
                return NULL;
        }
        json_object_foreach(data, mime, v) {
                if (++n > 16 || strlen(mime) > 100)
                        break;
                if (strcmp(mime, "application/json") == 0) {
                        json_object_set(out, mime, v);
                        continue;
                }
                if (!valid_text(v, LINE_MAX_BYTES))
                        continue;
                if ((strcmp(mime, "image/png") == 0 || strcmp(mime, "image/jpeg") == 0)) {
                        char hint[64];
                        const char *name;

                        if (c->images >= CELL_IMAGES_MAX)
                                continue;
                        snprintf(hint, sizeof(hint), "%s-%llu-%u", c->ss->id, (unsigned long long)c->id, c->images);
                        name = image_store(c->ss->sbx, mime, json_string_value(v), hint);
                        if (!name)
                                continue;   /* not a valid image: leave it out */
                        c->images++;
                        if (!*url) {
                                char u[200];

                                snprintf(u, sizeof(u), "/v1/sandboxes/%s/images/%s", c->ss->sbx->id, name);
                                *url = json_string(u);
                        }
                }
                json_object_set(out, mime, v);
        }
        return out;
}

static json_t *
clean_traceback(json_t *tb)
{
        json_t *out = json_array(), *v;
        size_t i;

        if (!json_is_array(tb))
                return out;
        json_array_foreach(tb, i, v)
                if (i < 500 && valid_text(v, 64 << 10))
                        json_array_append(out, v);
        return out;
}

/* Answer a create that waited for the interpreter: the session once it is
 * ready (or still starting after START_WAIT_MS), or why it could not start. */
static void
start_reply(struct xb_session *ss)
{
        struct xb_req *r = ss->start_req;

        if (!r)
                return;
        ss->start_req = NULL;
        xb_timer_stop(&ss->start_timer);
        if (ss->state != SS_DEAD)
                xb_reply_json(r, 201, xb_session_json(ss));
        else if (!strncmp(ss->death, "no such kernel", 14))
                xb_reply_error(r, 400, "unknown_language",
                               "use \"python\", \"bash\", \"javascript\", or one of the installed Jupyter kernels "
                               "named here (`jupyter kernelspec list` in the sandbox)", "%s", ss->death);
        else
                xb_reply_error(r, 503, "session_failed", "retry, or use another language",
                               "the interpreter did not start: %s", ss->death);
}

static void
start_gone(struct xb_req *r, void *owner)
{
        struct xb_session *ss = owner;

        (void)r;
        ss->start_req = NULL;
        xb_timer_stop(&ss->start_timer);
}

static void
start_timeout(struct xb_timer *t)
{
        start_reply(t->data);
}

void
xb_session_reply_started(struct xb_session *ss, struct xb_req *req)
{
        /* The built-in drivers always start; a Jupyter kernel's name is
         * checked by its driver, so wait for it to answer. */
        if (ss->state != SS_STARTING || strcmp(ss->mode, "jupyter") || ss->start_req) {
                xb_reply_json(req, 201, xb_session_json(ss));
                return;
        }
        ss->start_req = req;
        xb_req_suspend(req, start_gone, ss);
        xb_timer_start(ss->sbx->srv->loop, &ss->start_timer, START_WAIT_MS, start_timeout, ss);
}

static struct var_req *
find_var(struct xb_session *ss, uint64_t id)
{
        for (struct var_req *v = ss->vars; v; v = v->next)
                if (v->id == id)
                        return v;
        return NULL;
}

static void
var_gone(struct xb_req *r, void *owner)
{
        struct var_req *vr = owner;

        (void)r;
        vr->req = NULL;
}

static void
var_drop(struct var_req *vr)
{
        struct xb_session *ss = vr->ss;

        for (struct var_req **pp = &ss->vars; *pp; pp = &(*pp)->next)
                if (*pp == vr) {
                        *pp = vr->next;
                        break;
                }
        free(vr);
}

/* One event line from the driver. Returns false on a protocol violation. */
static bool
handle_event(struct xb_session *ss, json_t *ev)
{
        const char *type = json_string_value(json_object_get(ev, "type"));
        json_t *idv = json_object_get(ev, "id");
        uint64_t id = json_is_integer(idv) ? (uint64_t)json_integer_value(idv) : 0;
        struct cell *c = ss->cell && ss->cell->id == id ? ss->cell : NULL;

        if (!type)
                return false;
        if (strcmp(type, "ready") == 0) {
                if (ss->state == SS_STARTING) {
                        ss->state = SS_IDLE;
                        start_reply(ss);
                        start_next(ss);
                }
                return true;
        }
        if (strcmp(type, "fatal") == 0) {
                json_t *m = json_object_get(ev, "message");

                session_died(ss, valid_text(m, 1000) ? json_string_value(m) : "the interpreter failed to start");
                return true;
        }
        if (strcmp(type, "variable") == 0) {
                struct var_req *vr = find_var(ss, id);
                json_t *o;

                if (!vr)
                        return true;
                if (!vr->req) {
                        var_drop(vr);
                        return true;
                }
                if (json_is_true(json_object_get(ev, "unsupported"))) {
                        xb_reply_error(vr->req, 400, "variables_unsupported",
                                       "print the value in a cell instead: only Python sessions can be inspected",
                                       "the %s kernel cannot be inspected", ss->language);
                } else if (!json_is_true(json_object_get(ev, "found"))) {
                        xb_reply_error(vr->req, 404, "variable_not_found",
                                       "define it in a cell first; names are case-sensitive", "no variable `%.100s` in "
                                       "this session", json_string_value(json_object_get(ev, "name")) ?: "?");
                } else {
                        json_t *repr = json_object_get(ev, "repr"), *t = json_object_get(ev, "value_type");

                        o = json_pack("{s:O,s:O,s:O,s:O}", "name", json_object_get(ev, "name") ?: json_null(), "type",
                                      valid_text(t, 200) ? t : json_null(), "repr",
                                      valid_text(repr, 1 << 20) ? repr : json_string(""), "json",
                                      json_object_get(ev, "json") ?: json_null());
                        xb_reply_json(vr->req, 200, o);
                }
                var_drop(vr);
                return true;
        }
        if (!c)
                return true;   /* late output of a cell already answered: drop it */
        if (strcmp(type, "stream") == 0) {
                json_t *name = json_object_get(ev, "name"), *text = json_object_get(ev, "text");

                if (!valid_text(name, 16) || !valid_text(text, LINE_MAX_BYTES) ||
                    (strcmp(json_string_value(name), "stdout") && strcmp(json_string_value(name), "stderr")))
                        return false;
                add_output(c, json_pack("{s:s,s:O,s:O}", "type", "stream", "name", name, "text", text));
        } else if (strcmp(type, "display") == 0 || strcmp(type, "result") == 0) {
                json_t *url = NULL, *data = clean_bundle(c, json_object_get(ev, "data"), &url), *o;

                if (!data)
                        return false;
                o = json_pack("{s:s,s:o}", "type", type, "data", data);
                if (url)
                        json_object_set_new(o, "url", url);
                if (strcmp(type, "result") == 0 && json_is_integer(json_object_get(ev, "execution_count")))
                        json_object_set(o, "execution_count", json_object_get(ev, "execution_count"));
                add_output(c, o);
        } else if (strcmp(type, "error") == 0) {
                json_t *en = json_object_get(ev, "ename"), *evl = json_object_get(ev, "evalue");

                add_output(c, json_pack("{s:s,s:O,s:O,s:o}", "type", "error", "name",
                                        valid_text(en, 1000) ? en : json_string("Error"), "value",
                                        valid_text(evl, 1 << 16) ? evl : json_string(""), "traceback",
                                        clean_traceback(json_object_get(ev, "traceback"))));
        } else if (strcmp(type, "done") == 0) {
                json_t *st = json_object_get(ev, "status"), *ec = json_object_get(ev, "execution_count");
                const char *status = json_string_value(st);

                if (json_is_integer(ec) && json_integer_value(ec) >= 0 && json_integer_value(ec) < (1 << 30))
                        ss->exec_count = (int)json_integer_value(ec);
                if (!status || (strcmp(status, "ok") && strcmp(status, "error") && strcmp(status, "interrupted")))
                        return false;
                /* bash: the command's exit code and where it left the shell. */
                if (json_is_integer(json_object_get(ev, "exit_code"))) {
                        c->exit_code = json_incref(json_object_get(ev, "exit_code"));
                        if (valid_text(json_object_get(ev, "cwd"), 4096))
                                c->cwd = json_incref(json_object_get(ev, "cwd"));
                }
                cell_finish(c, c->timed_out ? "timeout" : status);
        } else
                return false;
        return true;
}

static void
on_out(struct xb_io *io, uint32_t events)
{
        struct xb_session *ss = io->data;
        char buf[65536];

        (void)events;
        for (int i = 0; i < 16 && ss->out_fd >= 0; i++) {
                ssize_t n = read(ss->out_fd, buf, sizeof(buf));
                char *start, *nl;

                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return;
                if (n <= 0) {
                        close_io(&ss->out_io, &ss->out_fd);
                        return;   /* the exit report ends the session */
                }
                if (xb_buf_append(&ss->line, buf, (size_t)n) < 0) {
                        session_died(ss, "the interpreter sent a line over 32 MiB");
                        return;
                }
                start = ss->line.data;
                while ((nl = memchr(start, '\n', ss->line.len - (size_t)(start - ss->line.data)))) {
                        json_error_t je;
                        json_t *ev = json_loadb(start, (size_t)(nl - start), 0, &je);
                        bool ok = ev && json_is_object(ev) && handle_event(ss, ev);

                        json_decref(ev);
                        if (!ok) {
                                session_died(ss, "the interpreter broke the session protocol");
                                return;
                        }
                        if (ss->state == SS_DEAD)
                                return;
                        start = nl + 1;
                }
                memmove(ss->line.data, start, ss->line.len - (size_t)(start - ss->line.data));
                ss->line.len -= (size_t)(start - ss->line.data);
        }
}

/* ---- lifecycle ---- */

static void
fail_waiters(struct xb_session *ss, const char *status)
{
        if (ss->cell)
                cell_finish(ss->cell, status);
        while (ss->queue) {
                struct cell *c = ss->queue;

                ss->queue = c->next;
                ss->nqueue--;
                c->done = true;
                cell_reply(c, status);
                cell_free(c);
        }
        while (ss->vars) {
                if (ss->vars->req)
                        xb_reply_error(ss->vars->req, 409, "session_dead", "restart the session and define the variable again",
                               "the session is not running");
                var_drop(ss->vars);
        }
}

static void
session_died(struct xb_session *ss, const char *why)
{
        if (ss->state == SS_DEAD)
                return;
        ss->state = SS_DEAD;
        snprintf(ss->death, sizeof(ss->death), "%s", why);
        if (ss->pid > 0 && ss->sbx->sb && ss->sbx->state < XB_SBX_DYING)
                xb_initc_signal(ss->sbx->sb->sock, ss->tag, SIGKILL, XB_SIG_GROUP);
        close_io(&ss->in_io, &ss->in_fd);
        close_io(&ss->out_io, &ss->out_fd);
        close_io(&ss->err_io, &ss->err_fd);
        fail_waiters(ss, "dead");
        if (ss->start_req) {
                /* Its create is still waiting: the session never was. */
                start_reply(ss);
                xb_session_delete(ss);
        }
}

static const char *
driver_mode(const char *language)
{
        if (!strcmp(language, "python") || !strcmp(language, "python3-ipython"))
                return "python";
        if (!strcmp(language, "bash") || !strcmp(language, "shell"))
                return "bash";
        if (!strcmp(language, "javascript") || !strcmp(language, "js") || !strcmp(language, "node"))
                return "javascript";
        return "jupyter";
}

static int
spawn_driver(struct xb_session *ss, struct xb_err *err)
{
        struct xb_sbx *x = ss->sbx;
        int in[2] = { -1, -1 }, out[2] = { -1, -1 }, er[2] = { -1, -1 };
        char *argv[8];
        char **env = NULL;
        const char *const extra[] = { "PYTHONUNBUFFERED=1", "MPLBACKEND=module://matplotlib_inline.backend_inline",
                                      "PYDEVD_DISABLE_FILE_VALIDATION=1" };
        struct xb_exec_spec q;
        int r, n = 0;

        if (!strcmp(ss->mode, "javascript")) {
                argv[n++] = (char *)"/usr/bin/node";
                argv[n++] = (char *)"-e";
                argv[n++] = (char *)xb_node_driver;
        } else {
                argv[n++] = (char *)"/usr/bin/python3";
                argv[n++] = (char *)"-I";   /* isolated: no user site, no PYTHON* env; see src/drivers/README.md */
                argv[n++] = (char *)"-c";
                argv[n++] = (char *)xb_python_driver;
                argv[n++] = ss->mode;
                if (!strcmp(ss->mode, "jupyter"))
                        argv[n++] = ss->language;
        }
        argv[n] = NULL;
        {
                size_t nx = 0;
                const char **all;

                for (char **e = x->env; e && *e; e++)
                        nx++;
                all = calloc(nx + 4, sizeof(*all));
                if (!all)
                        return xb_err_set(err, ENOMEM, "session");
                for (size_t i = 0; i < nx; i++)
                        all[i] = x->env[i];
                for (size_t i = 0; i < 3; i++)
                        all[nx + i] = extra[i];
                r = xb_env_build("/home/user", XB_USER_UID, all, nx + 3, &env, err);
                free(all);
                if (r < 0)
                        return r;
        }
        if ((r = xb_sandbox_pipe(in)) < 0 || (r = xb_sandbox_pipe(out)) < 0 || (r = xb_sandbox_pipe(er)) < 0) {
                r = xb_err_set(err, -r, "pipe");
                goto out;
        }
        ss->tag = xb_sbx_tag(x);
        q = (struct xb_exec_spec){ .argv = argv, .env = env, .cwd = "/home/user", .uid = XB_USER_UID,
                                   .gid = XB_USER_UID, .std = { in[0], out[1], er[1] } };
        r = xb_initc_spawn(x->sb->sock, ss->tag, &q, err);
        if (r < 0)
                goto out;
        ss->in_fd = in[1];
        ss->out_fd = out[0];
        ss->err_fd = er[0];
        in[1] = out[0] = er[0] = -1;
        xb_set_nonblock(ss->in_fd, true);
        xb_set_nonblock(ss->out_fd, true);
        xb_set_nonblock(ss->err_fd, true);
        xb_io_start(x->srv->loop, &ss->in_io, ss->in_fd, 0, on_in, ss);
        xb_io_start(x->srv->loop, &ss->out_io, ss->out_fd, EPOLLIN, on_out, ss);
        xb_io_start(x->srv->loop, &ss->err_io, ss->err_fd, EPOLLIN, on_err, ss);
        ss->state = SS_STARTING;
        ss->pid = 0;
        ss->started_ms = xb_now_ms();
        ss->death[0] = '\0';
        xb_buf_reset(&ss->line);
        xb_buf_reset(&ss->errtail);
        if (ss->preload && !strcmp(ss->mode, "python"))
                send_request(ss, json_pack("{s:s,s:i,s:[sss]}", "op", "preload", "id", 0, "modules", "numpy", "pandas",
                                           "matplotlib.pyplot"));
out:
        for (int i = 0; i < 2; i++) {
                if (in[i] >= 0)
                        close(in[i]);
                if (out[i] >= 0)
                        close(out[i]);
                if (er[i] >= 0)
                        close(er[i]);
        }
        xb_strv_free(env);
        return r;
}

struct xb_session *
xb_session_start(struct xb_sbx *x, const char *language, bool preload, struct xb_err *err)
{
        struct xb_session *ss;

        if (x->nsessions >= XB_SESSIONS_PER_SANDBOX) {
                xb_err_msg(err, ENOSPC, "a sandbox has at most %d sessions; delete one first", XB_SESSIONS_PER_SANDBOX);
                return NULL;
        }
        if (!language || !*language || strlen(language) > 60 || strspn(language, "abcdefghijklmnopqrstuvwxyz"
                                                                                   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                                                                            strlen(language)) {
                xb_err_msg(err, EINVAL, "`language` must be python, bash, javascript, or an installed Jupyter kernel name");
                return NULL;
        }
        ss = calloc(1, sizeof(*ss));
        if (!ss) {
                xb_err_set(err, ENOMEM, "session");
                return NULL;
        }
        ss->sbx = x;
        ss->in_fd = ss->out_fd = ss->err_fd = -1;
        ss->inbuf.max = 64u << 20;
        ss->line.max = LINE_MAX_BYTES + 65536;
        ss->errtail.max = STDERR_TAIL + 1;
        ss->preload = preload;
        xb_random_id(ss->id, sizeof(ss->id));
        snprintf(ss->language, sizeof(ss->language), "%s", language);
        snprintf(ss->mode, sizeof(ss->mode), "%s", driver_mode(language));
        if (spawn_driver(ss, err) < 0) {
                free(ss);
                return NULL;
        }
        xb_sbx_ref(x);
        ss->next = x->sessions;
        x->sessions = ss;
        x->nsessions++;
        return ss;
}

void
xb_session_mark_warm(struct xb_session *ss)
{
        ss->warm = true;
}

struct xb_session *
xb_session_find(struct xb_sbx *x, const char *sid)
{
        for (struct xb_session *ss = x->sessions; ss; ss = ss->next)
                if (sid && strcmp(ss->id, sid) == 0 && (!ss->warm || ss->claimed))
                        return ss;
        return NULL;
}

struct xb_session *
xb_session_claim_warm(struct xb_sbx *x, const char *language)
{
        for (struct xb_session *ss = x->sessions; ss; ss = ss->next)
                if (ss->warm && !ss->claimed && ss->state != SS_DEAD && !strcmp(ss->language, language)) {
                        if (x->env && x->env[0]) {
                                /* Started in the pool, before the sandbox got its
                                 * environment: it would not see it. */
                                xb_session_delete(ss);
                                return NULL;
                        }
                        ss->claimed = true;
                        return ss;
                }
        return NULL;
}

bool
xb_session_has_warm(const struct xb_sbx *x)
{
        for (const struct xb_session *ss = x->sessions; ss; ss = ss->next)
                if (ss->warm && !ss->claimed && ss->state != SS_DEAD)
                        return true;
        return false;
}

json_t *
xb_session_json(const struct xb_session *ss)
{
        json_t *o = json_pack("{s:s,s:s,s:s,s:i,s:i}", "id", ss->id, "language", ss->language, "state",
                              state_names[ss->state], "execution_count", ss->exec_count, "pid", (int)ss->pid);

        if (ss->state == SS_DEAD) {
                json_object_set_new(o, "error", json_string(ss->death));
                if (ss->errtail.len) {
                        size_t clen;
                        _cleanup_free_ char *c = xb_utf8_sanitize(ss->errtail.data, ss->errtail.len, &clen);

                        if (c)
                                json_object_set_new(o, "stderr", json_stringn(c, clen));
                }
                json_object_set_new(o, "hint", json_string("POST .../sessions/{sid}/restart starts a fresh interpreter"));
        }
        return o;
}

json_t *
xb_session_list_json(struct xb_sbx *x)
{
        json_t *a = json_array();

        for (struct xb_session *ss = x->sessions; ss; ss = ss->next)
                if (!ss->warm || ss->claimed)
                        json_array_append_new(a, xb_session_json(ss));
        return a;
}

void
xb_session_run(struct xb_session *ss, struct xb_req *req, const char *code, uint64_t timeout_ms, uint64_t yield_ms,
               uint64_t output_limit, enum xb_cell_reply shape)
{
        bool stream = shape == XB_CELL_SSE;
        struct cell *c;

        if (ss->state == SS_DEAD) {
                xb_reply_error(req, 409, "session_dead", "POST .../sessions/{sid}/restart, then run the cell again",
                               "the session is dead: %s", ss->death);
                return;
        }
        if (ss->nqueue >= QUEUE_MAX || (ss->state == SS_BUSY && !strcmp(ss->mode, "bash"))) {
                xb_reply_error(req, 409, "session_busy",
                               "wait for the running cell (POST .../wait), send it input, or interrupt it",
                               "a cell is still running in this session");
                return;
        }
        c = calloc(1, sizeof(*c));
        if (!c || !(c->code = strdup(code)) || !(c->outputs = json_array())) {
                if (c)
                        cell_free(c);
                xb_reply_error(req, 503, "out_of_memory", "retry", "out of memory");
                return;
        }
        c->ss = ss;
        c->id = ++ss->next_id;
        c->timeout_ms = timeout_ms;
        c->yield_ms = yield_ms;
        c->output_limit = output_limit ? output_limit : XB_CELL_OUTPUT_DEFAULT;
        c->req = req;
        c->dangermode = shape == XB_CELL_DANGERMODE;
        if (stream) {
                c->stream = xb_reply_stream(req, 200, "text/event-stream", cell_gone, c);
                if (!c->stream) {
                        cell_free(c);
                        xb_reply_error(req, 503, "out_of_memory", "retry", "out of memory");
                        return;
                }
        } else
                xb_req_suspend(req, cell_gone, c);
        xb_sbx_touch(ss->sbx, 0);
        if (ss->finished) {   /* a new cell: the end of the last one is no longer waited for */
                cell_free(ss->finished);
                ss->finished = NULL;
        }
        if (ss->state == SS_IDLE && !ss->cell)
                begin(ss, c);
        else {
                struct cell **pp = &ss->queue;

                while (*pp)
                        pp = &(*pp)->next;
                *pp = c;
                ss->nqueue++;
                c->start_ms = xb_now_ms();
        }
}

static void
wait_timeout(struct xb_timer *t)
{
        struct cell *c = t->data;

        if (c->req)
                cell_reply(c, "running");
}

void
xb_session_wait(struct xb_session *ss, struct xb_req *req, uint64_t timeout_ms)
{
        struct cell *c = ss->cell;

        if (!c && ss->finished) {
                /* The cell ended after its "running" reply: its end, once. */
                struct cell *f = ss->finished;

                ss->finished = NULL;
                xb_reply_json(req, 200, cell_json(f, f->status, true));
                cell_free(f);
                return;
        }
        if (!c) {
                xb_reply_json(req, 200, json_pack("{s:s,s:i,s:[],s:s}", "status", "idle", "execution_count",
                                                  ss->exec_count, "outputs", "session_id", ss->id));
                return;
        }
        if (c->req) {
                xb_reply_error(req, 409, "already_waiting", "only one request can wait on a cell", "someone is already "
                               "waiting for this cell");
                return;
        }
        c->req = req;
        xb_req_suspend(req, cell_gone, c);
        xb_timer_start(ss->sbx->srv->loop, &c->wait, timeout_ms ? timeout_ms : 30000, wait_timeout, c);
}

/* An interrupted Python cell still running after ESCALATE_MS: kill every
 * other process of the interpreter's group. A fork bomb's copies are born
 * faster than a SIGINT reaches them, and starve the interpreter of the CPU
 * it needs to unwind; the interpreter and its state survive. */
static void
on_escalate(struct xb_timer *t)
{
        struct cell *c = t->data;
        struct xb_session *ss = c->ss;

        if (ss->state != SS_DEAD && ss->pid && ss->sbx->sb && ss->cell == c)
                xb_initc_signal(ss->sbx->sb->sock, ss->tag, SIGKILL, XB_SIG_OTHERS);
}

void
xb_session_interrupt(struct xb_session *ss)
{
        if (ss->state == SS_DEAD || !ss->pid || !ss->sbx->sb)
                return;
        if (!strcmp(ss->mode, "bash"))
                send_request(ss, json_pack("{s:s,s:I}", "op", "interrupt", "id", (json_int_t)++ss->next_id));
        else {
                /* The driver's process group (it leads its own session): the cell
                 * raises KeyboardInterrupt and the state survives, and a child
                 * such as os.system("sleep 100") stops too. */
                xb_initc_signal(ss->sbx->sb->sock, ss->tag, SIGINT, XB_SIG_GROUP);
                if (!strcmp(ss->mode, "python") && ss->cell && !ss->cell->escalate.active)
                        xb_timer_start(ss->sbx->srv->loop, &ss->cell->escalate, ESCALATE_MS, on_escalate, ss->cell);
        }
}

int
xb_session_input(struct xb_session *ss, const char *data, struct xb_err *err)
{
        if (ss->state == SS_DEAD)
                return xb_err_msg(err, EPIPE, "the session is dead: %s", ss->death);
        if (strcmp(ss->mode, "bash"))
                return xb_err_msg(err, EINVAL, "only bash sessions take input; write files for other languages");
        return send_request(ss, json_pack("{s:s,s:I,s:s}", "op", "input", "id", (json_int_t)++ss->next_id, "data", data));
}

void
xb_session_variable(struct xb_session *ss, struct xb_req *req, const char *name)
{
        struct var_req *vr;

        if (ss->state == SS_DEAD) {
                xb_reply_error(req, 409, "session_dead", "restart the session", "the session is dead: %s", ss->death);
                return;
        }
        if (ss->state == SS_BUSY) {
                xb_reply_error(req, 409, "session_busy", "read variables while no cell runs", "a cell is running");
                return;
        }
        vr = calloc(1, sizeof(*vr));
        if (!vr) {
                xb_reply_error(req, 503, "out_of_memory", "retry", "out of memory");
                return;
        }
        *vr = (struct var_req){ .next = ss->vars, .ss = ss, .id = ++ss->next_id, .req = req };
        ss->vars = vr;
        xb_req_suspend(req, var_gone, vr);
        send_request(ss, json_pack("{s:s,s:I,s:s}", "op", "variable", "id", (json_int_t)vr->id, "name", name));
}

static void
session_free(void *data)
{
        struct xb_session *ss = data;

        if (ss->finished)
                cell_free(ss->finished);
        xb_buf_free(&ss->inbuf);
        xb_buf_free(&ss->line);
        xb_buf_free(&ss->errtail);
        xb_sbx_unref(ss->sbx);
        free(ss);
}

void
xb_session_delete(struct xb_session *ss)
{
        struct xb_sbx *x = ss->sbx;

        if (ss->start_req) {
                struct xb_req *r = ss->start_req;

                ss->start_req = NULL;
                xb_timer_stop(&ss->start_timer);
                xb_reply_error(r, 410, "session_deleted", "create the session again",
                               "the session was deleted before its interpreter started");
        }
        session_died(ss, "the session was deleted");
        for (struct xb_session **pp = &x->sessions; *pp; pp = &(*pp)->next)
                if (*pp == ss) {
                        *pp = ss->next;
                        x->nsessions--;
                        break;
                }
        xb_loop_defer(x->srv->loop, &ss->defer, session_free, ss);
}

void
xb_session_restart(struct xb_session *ss)
{
        struct xb_err err = { 0 };
        struct xb_req *waiting = ss->start_req;

        ss->start_req = NULL;   /* it waits for the new interpreter instead */
        session_died(ss, "the session was restarted");
        ss->start_req = waiting;
        if (ss->finished) {
                cell_free(ss->finished);
                ss->finished = NULL;
        }
        ss->exec_count = 0;
        ss->next_id = 0;
        if (spawn_driver(ss, &err) < 0)
                session_died(ss, err.msg);
}

void
xb_sessions_sandbox_died(struct xb_sbx *x)
{
        while (x->sessions)
                xb_session_delete(x->sessions);
        xb_images_free(x);
}

static struct xb_session *
by_tag(struct xb_sbx *x, uint32_t tag)
{
        for (struct xb_session *ss = x->sessions; ss; ss = ss->next)
                if (ss->tag == tag)
                        return ss;
        return NULL;
}

bool
xb_session_on_spawned(struct xb_sbx *x, uint32_t tag, pid_t pid)
{
        struct xb_session *ss = by_tag(x, tag);

        if (!ss)
                return false;
        ss->pid = pid;
        return true;
}

bool
xb_session_on_exited(struct xb_sbx *x, uint32_t tag, int status)
{
        struct xb_session *ss = by_tag(x, tag);
        char why[160];

        if (!ss)
                return false;
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
                snprintf(why, sizeof(why), "the interpreter was killed (SIGKILL), most likely for using more memory "
                         "than the sandbox's limit");
        else if (WIFSIGNALED(status))
                snprintf(why, sizeof(why), "the interpreter died of signal %d", WTERMSIG(status));
        else
                snprintf(why, sizeof(why), "the interpreter exited with status %d", WEXITSTATUS(status));
        session_died(ss, why);
        return true;
}

bool
xb_session_on_error(struct xb_sbx *x, uint32_t tag, int errnum, const char *stage)
{
        struct xb_session *ss = by_tag(x, tag);
        char why[200];

        if (!ss)
                return false;
        snprintf(why, sizeof(why), "could not start the interpreter (%s: %s); is it installed?", stage, strerror(errnum));
        session_died(ss, why);
        return true;
}

/* "/v1/sandboxes/ID/images/NAME" becomes dangermode's "/images/NAME". */
static json_t *
dm_url(json_t *url)
{
        const char *u = json_string_value(url), *slash = u ? strrchr(u, '/') : NULL;
        char out[160];

        snprintf(out, sizeof(out), "/images/%s", slash ? slash + 1 : "");
        return json_string(out);
}

json_t *
xb_session_dangermode_json(json_t *res)
{
        json_t *outs = json_object_get(res, "outputs"), *o, *displays = json_array(), *result = json_null(), *error =
                                                                                                                   json_null();
        struct xb_buf out = { .max = 64u << 20 }, err = { .max = 64u << 20 };
        size_t i;

        json_array_foreach(outs, i, o) {
                const char *t = json_string_value(json_object_get(o, "type"));

                if (!t)
                        continue;
                if (!strcmp(t, "stream")) {
                        const char *name = json_string_value(json_object_get(o, "name"));

                        xb_buf_puts(name && !strcmp(name, "stderr") ? &err : &out,
                                    json_string_value(json_object_get(o, "text")) ?: "");
                } else if (!strcmp(t, "display")) {
                        json_t *d = json_deep_copy(json_object_get(o, "data"));

                        /* dangermode gives images as URLs, not base64 */
                        if (json_object_get(o, "url") && json_object_get(d, "image/png"))
                                json_object_set_new(d, "image/png", dm_url(json_object_get(o, "url")));
                        json_array_append_new(displays, d);
                } else if (!strcmp(t, "result")) {
                        json_decref(result);
                        result = json_deep_copy(json_object_get(o, "data"));
                        if (json_object_get(o, "url") && json_object_get(result, "image/png"))
                                json_object_set_new(result, "image/png", dm_url(json_object_get(o, "url")));
                } else if (!strcmp(t, "error")) {
                        json_decref(error);
                        error = json_pack("{s:O,s:O,s:O}", "ename", json_object_get(o, "name"), "evalue",
                                          json_object_get(o, "value"), "traceback", json_object_get(o, "traceback"));
                }
        }
        if (json_is_null(error) && strcmp(json_string_value(json_object_get(res, "status")) ?: "", "ok")) {
                /* Not ok without a Python exception: timeout, or a dead interpreter. */
                json_decref(error);
                error = json_pack("{s:s,s:s,s:[]}", "ename", json_string_value(json_object_get(res, "status")) ?: "error",
                                  "evalue", json_string_value(json_object_get(res, "hint")) ?: "", "traceback");
        }
        o = json_pack("{s:b,s:o,s:o,s:s%,s:s%,s:o}", "success",
                      !strcmp(json_string_value(json_object_get(res, "status")) ?: "", "ok"), "execute_result", result,
                      "displays", displays, "stdout", out.data ? out.data : "", out.len, "stderr",
                      err.data ? err.data : "", err.len, "error", error);
        xb_buf_free(&out);
        xb_buf_free(&err);
        return o;
}

bool
xb_sessions_any_waited(const struct xb_sbx *x)
{
        for (const struct xb_session *ss = x->sessions; ss; ss = ss->next)
                if (ss->cell && (ss->cell->req || ss->cell->stream))
                        return true;
        return false;
}
