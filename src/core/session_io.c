/* A session driver's pipes and its line protocol (src/drivers/README.md):
 * requests queued down stdin, events read from stdout, a stderr tail for
 * the death message, and the spawn through init. Each event line is
 * checked here before it reaches a cell, a variable request or the
 * session's lifecycle. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "proc/env.h"
#include "proc/initc.h"
#include "core/core.h"
#include "core/sessions.h"
#include "core/session_int.h"

#define CELL_IMAGES_MAX 32
#define BIG_LINE (256u << 10)

extern const char xb_python_driver[], xb_node_driver[];

static void
close_io(struct xb_io *io, int *fd)
{
        xb_io_stop(io);
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

void
xb__session_close_pipes(struct xb_session *ss)
{
        close_io(&ss->in_io, &ss->in_fd);
        close_io(&ss->out_io, &ss->out_fd);
        close_io(&ss->err_io, &ss->err_fd);
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

int
xb__session_send(struct xb_session *ss, json_t *req)
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
                /* Keep the last XB__STDERR_TAIL bytes for the death message. */
                if (ss->errtail.len + (size_t)n > XB__STDERR_TAIL) {
                        size_t drop = ss->errtail.len + (size_t)n - XB__STDERR_TAIL;

                        if (drop > ss->errtail.len)
                                drop = ss->errtail.len;
                        memmove(ss->errtail.data, ss->errtail.data + drop, ss->errtail.len - drop);
                        ss->errtail.len -= drop;
                }
                xb_buf_append(&ss->errtail, buf, (size_t)n > XB__STDERR_TAIL ? XB__STDERR_TAIL : (size_t)n);
        }
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                close_io(&ss->err_io, &ss->err_fd);
}

/* ---- events ---- */

bool
xb__valid_text(json_t *v, size_t max)
{
        return json_is_string(v) && json_string_length(v) <= max;
}

/* Check a MIME bundle: string values (or JSON for application/json),
 * images stored; *image is the first one's name. Returns a cleaned copy
 * or NULL. */
static json_t *
clean_bundle(struct xb__cell *c, json_t *data, json_t **image)
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
                size_t ml = strlen(mime);

                /* JSON types (application/json, and Jupyter's *+json) carry JSON. */
                if (strcmp(mime, "application/json") == 0 || (ml > 5 && strcmp(mime + ml - 5, "+json") == 0)) {
                        json_object_set(out, mime, v);
                        continue;
                }
                if (!xb__valid_text(v, XB__LINE_MAX_BYTES))
                        continue;
                if ((strcmp(mime, "image/png") == 0 || strcmp(mime, "image/jpeg") == 0)) {
                        char hint[64];
                        const char *name;

                        if (c->images >= CELL_IMAGES_MAX)
                                continue;
                        snprintf(hint, sizeof(hint), "%s-%llu-%u", c->ss->id, (unsigned long long)c->id, c->images);
                        name = xb__image_store(c->ss->sbx, mime, json_string_value(v), hint);
                        if (!name)
                                continue;   /* not a valid image: leave it out */
                        c->images++;
                        if (!*image)
                                *image = json_string(name);
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
                if (i < 500 && xb__valid_text(v, 64 << 10))
                        json_array_append(out, v);
        return out;
}

/* The bytes of a bundle's values, what the daemon would keep of it. */
static uint64_t
bundle_bytes(json_t *data)
{
        const char *mime;
        json_t *v;
        uint64_t n = 0;

        json_object_foreach(data, mime, v)
                n += strlen(mime) + (json_is_string(v) ? json_string_length(v) : json_dumpb(v, NULL, 0, JSON_COMPACT));
        return n;
}

static uint64_t
error_bytes(json_t *ev)
{
        json_t *tb = json_object_get(ev, "traceback"), *v;
        uint64_t n = json_string_length(json_object_get(ev, "evalue"));
        size_t i;

        json_array_foreach(tb, i, v)
                n += json_string_length(v);
        return n;
}

/* One of the running cell's events. Returns false on a protocol violation. */
static bool
cell_event(struct xb__cell *c, const char *type, json_t *ev)
{
        struct xb_session *ss = c->ss;

        /* Every event is the sandbox's to send, and bounded: beyond the count,
         * or past the rich budget, it is dropped (and said so at the end). */
        if (strcmp(type, "done") && ++c->events > XB__CELL_EVENTS_MAX) {
                c->events_dropped++;
                return true;
        }
        if ((!strcmp(type, "display") || !strcmp(type, "result")) && json_is_object(json_object_get(ev, "data")) &&
            !xb__cell_charge_rich(c, bundle_bytes(json_object_get(ev, "data"))))
                return true;
        if (!strcmp(type, "error") && !xb__cell_charge_rich(c, error_bytes(ev)))
                return true;
        if (strcmp(type, "stream") == 0) {
                json_t *name = json_object_get(ev, "name"), *text = json_object_get(ev, "text");

                if (!xb__valid_text(name, 16) || !xb__valid_text(text, XB__LINE_MAX_BYTES) ||
                    (strcmp(json_string_value(name), "stdout") && strcmp(json_string_value(name), "stderr")))
                        return false;
                xb__cell_add_output(c, json_pack("{s:s,s:O,s:O}", "type", "stream", "name", name, "text", text));
        } else if (strcmp(type, "display") == 0 || strcmp(type, "result") == 0) {
                json_t *image = NULL, *data = clean_bundle(c, json_object_get(ev, "data"), &image), *o;

                if (!data)
                        return false;
                o = json_pack("{s:s,s:o}", "type", type, "data", data);
                if (image)
                        json_object_set_new(o, "image", image);
                if (strcmp(type, "result") == 0 && json_is_integer(json_object_get(ev, "execution_count")))
                        json_object_set(o, "execution_count", json_object_get(ev, "execution_count"));
                xb__cell_add_output(c, o);
        } else if (strcmp(type, "error") == 0) {
                json_t *en = json_object_get(ev, "ename"), *evl = json_object_get(ev, "evalue");
                /* Owned references ("o"): a stand-in made here must not keep a second one. */
                json_t *name = xb__valid_text(en, 1000) ? json_incref(en) : json_string("Error");
                json_t *value = xb__valid_text(evl, 1 << 16) ? json_incref(evl) : json_string("");

                xb__cell_add_output(c, json_pack("{s:s,s:o,s:o,s:o}", "type", "error", "name", name, "value", value,
                                                 "traceback", clean_traceback(json_object_get(ev, "traceback"))));
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
                        if (xb__valid_text(json_object_get(ev, "cwd"), 4096))
                                c->cwd = json_incref(json_object_get(ev, "cwd"));
                }
                xb__cell_finish(c, c->timed_out ? "timeout" : status);
        } else
                return false;
        return true;
}

/* One event line from the driver. Returns false on a protocol violation. */
static bool
handle_event(struct xb_session *ss, json_t *ev)
{
        const char *type = json_string_value(json_object_get(ev, "type"));
        json_t *idv = json_object_get(ev, "id");
        uint64_t id = json_is_integer(idv) ? (uint64_t)json_integer_value(idv) : 0;
        struct xb__cell *c = ss->cell && ss->cell->id == id ? ss->cell : NULL;

        if (!type)
                return false;
        if (strcmp(type, "ready") == 0) {
                xb__session_ready(ss);
                return true;
        }
        if (strcmp(type, "fatal") == 0) {
                json_t *m = json_object_get(ev, "message");

                xb__session_died(ss, xb__valid_text(m, 1000) ? json_string_value(m) : "the interpreter failed to start");
                return true;
        }
        if (strcmp(type, "variable") == 0) {
                xb__session_variable_event(ss, id, ev);
                return true;
        }
        if (!c)
                return true;   /* late output of a cell already answered: drop it */
        return cell_event(c, type, ev);
}

static void
on_out(struct xb_io *io, uint32_t events)
{
        struct xb_session *ss = io->data;
        char buf[65536];

        (void)events;
        for (int i = 0; i < 16 && ss->out_fd >= 0; i++) {
                ssize_t n = read(ss->out_fd, buf, sizeof(buf));
                size_t seen = ss->line.len;   /* no newline before this: scan only what is new */
                char *start, *nl, *scan, *from;

                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return;
                if (n <= 0) {
                        close_io(&ss->out_io, &ss->out_fd);
                        return;   /* the exit report ends the session */
                }
                from = buf;
                if (ss->skip_line) {
                        char *end = memchr(buf, '\n', (size_t)n);

                        ss->skipped += end ? (size_t)(end - buf) : (size_t)n;
                        if (!end)
                                continue;
                        if (ss->cell)
                                xb__cell_drop(ss->cell, ss->skipped);
                        ss->skip_line = false;
                        ss->skipped = 0;
                        from = end + 1;
                }
                if (xb_buf_append(&ss->line, from, (size_t)(buf + n - from)) < 0) {
                        xb__session_died(ss, "the interpreter sent a line over 32 MiB");
                        return;
                }
                start = ss->line.data;
                scan = ss->line.data + seen;
                while ((nl = memchr(scan, '\n', ss->line.len - (size_t)(scan - ss->line.data)))) {
                        json_error_t je;
                        json_t *ev;
                        bool ok;

                        /* A big line for a cell with no room left is dropped unparsed:
                         * parsing megabytes only to drop them would hold the loop. */
                        if ((size_t)(nl - start) > BIG_LINE && ss->cell && xb__cell_full(ss->cell, start, (size_t)(nl - start))) {
                                xb__cell_drop(ss->cell, (uint64_t)(nl - start));
                                start = scan = nl + 1;
                                continue;
                        }
                        ev = json_loadb(start, (size_t)(nl - start), 0, &je);
                        ok = ev && json_is_object(ev) && handle_event(ss, ev);

                        json_decref(ev);
                        if (!ok) {
                                xb__session_died(ss, "the interpreter broke the session protocol");
                                return;
                        }
                        if (ss->state == SS_DEAD)
                                return;
                        start = scan = nl + 1;
                }
                memmove(ss->line.data, start, ss->line.len - (size_t)(start - ss->line.data));
                ss->line.len -= (size_t)(start - ss->line.data);
                /* An unfinished big line the cell has no room for is dropped as it
                 * comes, not gathered: a flood costs the daemon a read and a scan. */
                if (ss->line.len > BIG_LINE && ss->cell && xb__cell_full(ss->cell, ss->line.data, ss->line.len)) {
                        ss->skip_line = true;
                        ss->skipped = ss->line.len;
                        ss->line.len = 0;
                }
                /* A huge line's buffer is not kept once it is handled. */
                if (ss->line.cap > (1u << 20) && ss->line.len < (64u << 10)) {
                        struct xb_buf small = { .max = ss->line.max };

                        if (xb_buf_append(&small, ss->line.data, ss->line.len) == 0) {
                                xb_buf_free(&ss->line);
                                ss->line = small;
                        }
                }
        }
}

void
xb__session_watch(struct xb_session *ss)
{
        struct xb_loop *l = ss->sbx->core->loop;

        xb_set_nonblock(ss->in_fd, true);
        xb_set_nonblock(ss->out_fd, true);
        xb_set_nonblock(ss->err_fd, true);
        xb_io_start(l, &ss->in_io, ss->in_fd, 0, on_in, ss);
        xb_io_start(l, &ss->out_io, ss->out_fd, EPOLLIN, on_out, ss);
        xb_io_start(l, &ss->err_io, ss->err_fd, EPOLLIN, on_err, ss);
}

/* ---- the spawn ---- */

const char *
xb__driver_mode(const char *language)
{
        if (!strcmp(language, "python") || !strcmp(language, "python3-ipython"))
                return "python";
        if (!strcmp(language, "bash") || !strcmp(language, "shell"))
                return "bash";
        if (!strcmp(language, "javascript") || !strcmp(language, "js") || !strcmp(language, "node"))
                return "javascript";
        return "jupyter";
}

int
xb__session_spawn(struct xb_session *ss, struct xb_err *err)
{
        struct xb_sbx *x = ss->sbx;
        int in[2] = { -1, -1 }, out[2] = { -1, -1 }, er[2] = { -1, -1 };
        char *argv[8];
        char **env = NULL;
        const char *const extra[] = { "PYTHONUNBUFFERED=1", "MPLBACKEND=module://matplotlib_inline.backend_inline",
                                      "PYDEVD_DISABLE_FILE_VALIDATION=1" };
        struct xb_exec_spec q;
        uint32_t tag;
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
                const char *const *net = xb_sbx_net_env(x);
                size_t nx = 0, nn = 0;
                const char **all;

                for (; net && net[nn]; nn++)
                        ;
                for (char **e = x->env; e && *e; e++)
                        nx++;
                all = calloc(nn + nx + 4, sizeof(*all));
                if (!all)
                        return xb_err_set(err, ENOMEM, "session");
                for (size_t i = 0; i < nn; i++)
                        all[i] = net[i];
                for (size_t i = 0; i < nx; i++)
                        all[nn + i] = x->env[i];
                for (size_t i = 0; i < 3; i++)
                        all[nn + nx + i] = extra[i];
                r = xb_env_build("/home/user", x->uid, all, nn + nx + 3, &env, err);
                free(all);
                if (r < 0)
                        return r;
        }
        if ((r = xb_sandbox_pipe(in)) < 0 || (r = xb_sandbox_pipe(out)) < 0 || (r = xb_sandbox_pipe(er)) < 0) {
                r = xb_err_set(err, -r, "pipe");
                goto out;
        }
        tag = xb_sbx_pending_add(x, &xb__session_pending, ss);
        if (!tag) {
                r = xb_err_set(err, ENOMEM, "session");
                goto out;
        }
        q = (struct xb_exec_spec){ .argv = argv, .env = env, .cwd = "/home/user", .uid = x->uid,
                                   .gid = x->uid, .std = { in[0], out[1], er[1] } };
        r = xb_initc_spawn(x->sb->sock, tag, &q, err);
        if (r < 0) {
                xb_sbx_pending_del(x, tag);
                goto out;
        }
        /* The old driver's events (a restart's) reach nobody now. */
        xb_sbx_pending_del(x, ss->tag);
        ss->tag = tag;
        ss->in_fd = in[1];
        ss->out_fd = out[0];
        ss->err_fd = er[0];
        in[1] = out[0] = er[0] = -1;
        xb_set_nonblock(ss->in_fd, true);
        xb_set_nonblock(ss->out_fd, true);
        xb_set_nonblock(ss->err_fd, true);
        xb__session_watch(ss);
        ss->state = SS_STARTING;
        ss->pid = 0;
        ss->started_ms = xb_now_ms();
        ss->death[0] = '\0';
        xb_buf_reset(&ss->line);
        ss->skip_line = false;
        ss->skipped = 0;
        xb_buf_reset(&ss->errtail);
        if (ss->preload && !strcmp(ss->mode, "python"))
                xb__session_send(ss, json_pack("{s:s,s:i,s:[sss]}", "op", "preload", "id", 0, "modules", "numpy",
                                               "pandas", "matplotlib.pyplot"));
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
