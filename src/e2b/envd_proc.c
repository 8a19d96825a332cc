/* envd's process.Process service over Connect JSON: Start and Connect
 * stream a process's events (start, data, keepalive, end); List,
 * SendInput, StreamInput, CloseStdin, SendSignal answer at once.
 *
 * A process started here is an execbox background process (op
 * process_start, with a pty when asked): it outlives the stream, as envd's
 * do, and dies with its whole tree at the request's Connect-Timeout-Ms
 * (the engine's hard timeout). Its output is followed by attaching to it
 * (op process_attach: raw bytes as base64, from its first byte for Start,
 * from now for Connect), so several streams may follow one process. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "core/core.h"
#include "e2b/connect.h"
#include "e2b/e2b_int.h"
#include "ops/jsonv.h"

#define INPUT_MAX (16u << 20)

struct pstream {
        struct e2b_stream es;
        struct e2b_sink sink;
        struct e2b_hold hold;
        struct xb_e2b *e;
        struct xb_req *req;          /* until the stream opens */
        char id[XB_SANDBOX_ID_LEN + 1];
        int tenant, pid;
        bool want_stdin;
        char *tag;
        json_t *config;
        bool pty;                    /* its output is a terminal's: "pty" data */
};

static void
ps_free(struct pstream *ps)
{
        e2b_hold_del(&ps->hold);
        if (ps->sink.call)
                xb_call_cancel(ps->sink.call);
        e2b_stream_stop(&ps->es);
        free(ps->tag);
        json_decref(ps->config);
        free(ps);
}

static json_t *
event(json_t *ev)
{
        return json_pack("{s:o}", "event", ev);
}

/* The process ended: its end event from the engine's result, then the
 * stream's end. */
static void
finish(struct pstream *ps, json_t *info)
{
        json_t *code = json_object_get(info, "exit_code"), *sig = json_object_get(info, "signal");
        char status[64];
        json_t *end;

        if (json_is_integer(code)) {
                snprintf(status, sizeof(status), "exit status %d", (int)json_integer_value(code));
                end = json_pack("{s:i,s:b,s:s}", "exitCode", (int)json_integer_value(code), "exited", 1, "status",
                                status);
        } else {
                int s = json_is_integer(sig) ? (int)json_integer_value(sig) : SIGKILL;

                /* Go's ProcessState.String(), as envd reports it. */
                snprintf(status, sizeof(status), "signal: %s", s == SIGKILL ? "killed" : s == SIGTERM ? "terminated"
                                                               : s == SIGINT ? "interrupt" : strsignal(s));
                end = json_pack("{s:i,s:b,s:s}", "exitCode", -1, "exited", 0, "status", status);
        }
        e2b_stream_send(&ps->es, event(json_pack("{s:o}", "end", end)));
        e2b_stream_end(&ps->es, NULL, NULL);
        ps_free(ps);
}

static void ps_expired(struct e2b_stream *es);

/* Output as the engine attaches it: base64 of the raw bytes already. */
static void
attach_event(struct e2b_sink *s, const char *name, json_t *data)
{
        struct pstream *ps = (struct pstream *)((char *)s - offsetof(struct pstream, sink));
        const char *b64 = json_string_value(json_object_get(data, "data"));

        if (!name || !b64 || !*b64 || !ps->es.st)
                return;
        if (strcmp(name, "stdout") && strcmp(name, "stderr"))
                return;
        e2b_stream_send(&ps->es, event(json_pack("{s:{s:s}}", "data", ps->pty ? "pty" : name, b64)));
}

static void
attach_done(struct e2b_sink *s, json_t *res, const struct xb_err *err)
{
        struct pstream *ps = (struct pstream *)((char *)s - offsetof(struct pstream, sink));

        if (err) {
                e2b_stream_end(&ps->es, xb_connect_code_ec(err), err->msg);
                ps_free(ps);
                return;
        }
        /* Killed at the request's deadline (the engine's hard timeout): the
         * call's error, as envd's context deadline ends the stream. */
        if (!strcmp(json_string_value(json_object_get(res, "status")) ?: "", "timeout")) {
                json_decref(res);
                ps_expired(&ps->es);
                return;
        }
        finish(ps, res);
        json_decref(res);
}

/* Follow the process: from its first byte (Start) or from now (Connect). */
static void
attach(struct pstream *ps, bool from_start)
{
        _cleanup_(xb_json_decrefp) json_t *args =
                json_pack("{s:s,s:i,s:s,s:s}", "id", ps->id, "pid", ps->pid, "from", from_start ? "start" : "now",
                          "encoding", "base64");

        ps->sink.done = attach_done;
        ps->sink.event = attach_event;
        if (!e2b_run(ps->e, ps->tenant, "process_attach", args, XB_CALL_EVENTS, &ps->sink)) {
                e2b_stream_end(&ps->es, "resource_exhausted", "out of memory");
                ps_free(ps);
        }
}

static void
ps_gone(struct e2b_stream *es)
{
        ps_free((struct pstream *)es);
}

static void
ps_expired(struct e2b_stream *es)
{
        struct pstream *ps = (struct pstream *)es;

        e2b_stream_end(&ps->es, "deadline_exceeded", "the request's Connect-Timeout-Ms passed");
        ps_free(ps);
}

/* Open the stream and send the start event; false after freeing ps. */
static bool
open_stream(struct pstream *ps, struct xb_req *r)
{
        ps->es.ping = "{\"event\":{\"keepalive\":{}}}";
        ps->es.gone = ps_gone;
        ps->es.expired = ps_expired;
        if (!e2b_stream_open(&ps->es, r, e2b_loop(ps->e))) {
                ps_free(ps);
                return false;
        }
        e2b_stream_send(&ps->es, event(json_pack("{s:{s:i}}", "start", "pid", ps->pid)));
        return true;
}

static void
start_done(struct e2b_sink *s, json_t *res, const struct xb_err *err)
{
        struct pstream *ps = (struct pstream *)((char *)s - offsetof(struct pstream, sink));
        struct xb_req *r = ps->req;
        struct e2b_sbx *rec;

        ps->req = NULL;
        if (err) {
                e2b_rpc_error(r, xb_connect_code_ec(err), "%s", err->msg);
                ps_free(ps);
                return;
        }
        ps->pid = (int)json_integer_value(json_object_get(res, "pid"));
        json_decref(res);
        rec = e2b_sbx_find(ps->e, ps->id, ps->tenant);
        if (rec)
                e2b_track_add(rec, ps->pid, ps->tag, ps->config, ps->pty);
        if (!ps->want_stdin) {
                _cleanup_(xb_json_decrefp) json_t *a = json_pack("{s:s,s:i,s:s,s:b}", "id", ps->id, "pid", ps->pid,
                                                                 "data", "", "eof", 1);
                struct xb_err e2 = { 0 };

                e2b_run_sync(ps->e, ps->tenant, "process_input", a, NULL, &e2);
        }
        if (open_stream(ps, r))
                attach(ps, true);
}

static void
pre_gone(struct xb_req *r, void *owner)
{
        struct pstream *ps = owner;

        (void)r;
        ps->req = NULL;
        ps_free(ps);
}

/* The sandbox is being paused: the stream ends as a frozen envd's would. */
static void
ps_drop(struct e2b_hold *h)
{
        struct pstream *ps = (struct pstream *)((char *)h - offsetof(struct pstream, hold));

        if (ps->req) {
                /* Still starting: the suspended request gets the error. */
                xb_reply_json(ps->req, 503, json_pack("{s:s,s:s}", "code", "unavailable", "message",
                                                      "the sandbox was paused"));
                ps->req = NULL;
        } else if (ps->es.st) {
                e2b_stream_end(&ps->es, "unavailable", "the sandbox was paused");
        }
        ps_free(ps);
}

static struct pstream *
ps_new(struct xb_e2b *e, const struct e2b_sbx *s)
{
        struct pstream *ps = calloc(1, sizeof(*ps));

        if (!ps)
                return NULL;
        ps->e = e;
        snprintf(ps->id, sizeof(ps->id), "%s", s->id);
        snprintf(ps->hold.id, sizeof(ps->hold.id), "%s", s->id);
        ps->hold.drop = ps_drop;
        e2b_hold_add(e, &ps->hold);
        ps->tenant = s->tenant;
        return ps;
}

/* StartRequest {process: {cmd, args, envs, cwd}, pty, tag, stdin}. */
static void
proc_start(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL, *args = NULL;
        json_t *proc, *argv, *v, *pty;
        const char *user, *cmd, *tag;
        struct xb_sbx *x;
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &x);
        struct pstream *ps;
        uint64_t deadline;
        size_t i;

        if (!s || !(msg = e2b_rpc_stream_body(r)) || !(user = e2b_rpc_user(r)))
                return;
        proc = json_object_get(msg, "process");
        cmd = json_string_value(json_object_get(proc, "cmd"));
        if (!cmd || !*cmd) {
                e2b_rpc_error(r, "invalid_argument", "%s", "`process.cmd` is required");
                return;
        }
        argv = json_pack("[s]", cmd);
        json_array_foreach(json_object_get(proc, "args"), i, v)
                if (json_is_string(v))
                        json_array_append(argv, v);
        deadline = e2b_timeout_ms(r);
        args = json_pack("{s:s,s:o,s:s}", "id", s->id, "argv", argv, "user", user);
        if (json_is_object(json_object_get(proc, "envs")) && json_object_size(json_object_get(proc, "envs")))
                json_object_set(args, "env", json_object_get(proc, "envs"));
        if (json_is_string(json_object_get(proc, "cwd")) && json_string_length(json_object_get(proc, "cwd")))
                json_object_set(args, "cwd", json_object_get(proc, "cwd"));
        if (deadline)
                json_object_set_new(args, "timeout_s", json_real((double)deadline / 1000.0));
        pty = json_object_get(json_object_get(msg, "pty"), "size");
        if (json_is_object(json_object_get(msg, "pty"))) {
                json_int_t cols = json_integer_value(json_object_get(pty, "cols")), rows = json_integer_value(json_object_get(pty, "rows"));

                json_object_set_new(args, "pty", json_pack("{s:I,s:I}", "cols", cols > 0 ? cols : 80, "rows",
                                                           rows > 0 ? rows : 24));
        }
        ps = ps_new(e, s);
        if (!ps) {
                e2b_rpc_error(r, "resource_exhausted", "%s", "out of memory");
                return;
        }
        tag = json_string_value(json_object_get(msg, "tag"));
        ps->tag = tag && *tag ? strdup(tag) : NULL;
        if (ps->tag)
                json_object_set_new(args, "tag", json_string(ps->tag));
        ps->pty = json_is_object(json_object_get(msg, "pty"));
        /* A terminal always takes input (envd: stdin is the pty's). */
        ps->want_stdin = ps->pty || json_is_true(json_object_get(msg, "stdin"));
        ps->config = json_pack("{s:s,s:O,s:O}", "cmd", cmd, "args",
                               json_is_array(json_object_get(proc, "args")) ? json_object_get(proc, "args") : json_array(),
                               "envs", json_is_object(json_object_get(proc, "envs")) ? json_object_get(proc, "envs")
                                                                                   : json_object());
        if (json_is_string(json_object_get(proc, "cwd")))
                json_object_set(ps->config, "cwd", json_object_get(proc, "cwd"));
        ps->req = r;
        ps->sink.done = start_done;
        xb_req_suspend(r, pre_gone, ps);
        if (!e2b_run(e, s->tenant, "process_start", args, 0, &ps->sink)) {
                ps->req = NULL;
                xb_reply_json(r, 503, json_pack("{s:s,s:s}", "code", "resource_exhausted", "message", "out of memory"));
                ps_free(ps);
        }
}

/* ConnectRequest {process: selector}: the start event, then output from now on. */
static void
proc_connect(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL, *args = NULL, *info = NULL;
        struct xb_err err = { 0 };
        struct xb_sbx *x;
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &x);
        struct pstream *ps;
        int pid;

        if (!s || !(msg = e2b_rpc_stream_body(r)))
                return;
        pid = e2b_rpc_pid(r, s, msg, "process");
        if (pid < 0)
                return;
        args = json_pack("{s:s,s:i}", "id", s->id, "pid", pid);
        if (e2b_run_sync(e, s->tenant, "get_process", args, &info, &err) < 0) {
                e2b_rpc_error(r, xb_connect_code_ec(&err), "%s", err.msg);
                return;
        }
        if (!json_is_true(json_object_get(info, "running"))) {
                e2b_rpc_error(r, "not_found", "%s", "process with pid has already finished");
                return;
        }
        ps = ps_new(e, s);
        if (!ps) {
                e2b_rpc_error(r, "resource_exhausted", "%s", "out of memory");
                return;
        }
        ps->pid = pid;
        {
                struct e2b_tracked *t = e2b_track_find(s, pid, NULL);

                ps->pty = t && t->pty;
        }
        if (open_stream(ps, r))
                attach(ps, false);
}

/* ListRequest {}: the running processes with what Start gave them. */
static void
proc_list(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL, *args = NULL, *res = NULL;
        struct xb_err err = { 0 };
        struct xb_sbx *x;
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &x);
        json_t *out, *p;
        size_t i;

        if (!s || !(msg = e2b_rpc_body(r)))
                return;
        args = json_pack("{s:s}", "id", s->id);
        if (e2b_run_sync(e, s->tenant, "list_processes", args, &res, &err) < 0) {
                e2b_rpc_fail(r, &err);
                return;
        }
        out = json_array();
        json_array_foreach(json_object_get(res, "processes"), i, p) {
                int pid = (int)json_integer_value(json_object_get(p, "pid"));
                struct e2b_tracked *t = e2b_track_find(s, pid, NULL);
                json_t *info;

                if (!json_is_true(json_object_get(p, "running")))
                        continue;
                info = json_pack("{s:i,s:O}", "pid", pid, "config",
                                 t ? t->config : json_pack("{s:O,s:[],s:{}}", "cmd", json_object_get(p, "cmd")));
                if (!t)
                        json_decref(json_object_get(info, "config"));
                if (t && t->tag)
                        json_object_set_new(info, "tag", json_string(t->tag));
                json_array_append_new(out, info);
        }
        e2b_rpc_reply(r, json_pack("{s:o}", "processes", out));
}

/* Write input (base64 bytes, as envd's messages carry them) to a process;
 * eof closes its stdin (a terminal gets ^D). */
static int
write_input(struct xb_e2b *e, struct e2b_sbx *s, int pid, json_t *input, bool eof, struct xb_err *err)
{
        const char *b64 = json_string_value(json_object_get(input, "stdin"));
        _cleanup_(xb_json_decrefp) json_t *args = NULL;

        if (!b64)
                b64 = json_string_value(json_object_get(input, "pty"));
        if (b64 && strlen(b64) > INPUT_MAX)
                return xb_err_code(err, XB_E_INVALID_STDIN, E2BIG, NULL, "the input is over 16 MiB");
        args = json_pack("{s:s,s:i,s:s,s:s,s:b}", "id", s->id, "pid", pid, "data", b64 ? b64 : "", "encoding", "base64",
                         "eof", eof);
        return e2b_run_sync(e, s->tenant, "process_input", args, NULL, err);
}

static void
input_fail(struct xb_req *r, struct xb_err *err)
{
        if (err->ecode == XB_E_PROCESS_FINISHED)
                e2b_rpc_error(r, "not_found", "%s", err->msg);
        else
                e2b_rpc_fail(r, err);
}

/* SendInputRequest {process, input: {stdin | pty}}. */
static void
proc_send_input(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL;
        struct xb_err err = { 0 };
        struct xb_sbx *x;
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &x);
        int pid;

        if (!s || !(msg = e2b_rpc_body(r)) || (pid = e2b_rpc_pid(r, s, msg, "process")) < 0)
                return;
        if (write_input(e, s, pid, json_object_get(msg, "input"), false, &err) < 0) {
                input_fail(r, &err);
                return;
        }
        e2b_rpc_reply(r, NULL);
}

/* CloseStdinRequest {process}. */
static void
proc_close_stdin(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL;
        struct xb_err err = { 0 };
        struct xb_sbx *x;
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &x);
        int pid;

        if (!s || !(msg = e2b_rpc_body(r)) || (pid = e2b_rpc_pid(r, s, msg, "process")) < 0)
                return;
        if (write_input(e, s, pid, NULL, true, &err) < 0 && err.ecode != XB_E_STDIN_CLOSED) {
                input_fail(r, &err);
                return;
        }
        e2b_rpc_reply(r, NULL);
}

/* StreamInputRequest envelopes: start {process}, then data {input}s. The
 * whole request body is read first (HTTP/1.1 clients send it at once). */
static void
proc_stream_input(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        struct xb_err err = { 0 };
        struct xb_sbx *x;
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &x);
        size_t n = 0, off = 0, plen;
        const char *b = xb_req_body(r, &n);
        const uint8_t *payload;
        uint8_t flags;
        int pid = -1;

        if (!s)
                return;
        while (off < n) {
                _cleanup_(xb_json_decrefp) json_t *m = NULL;
                ssize_t k = xb_connect_parse(b + off, n - off, INPUT_MAX, &flags, &payload, &plen);

                if (k < 0 || !(m = json_loadb((const char *)payload, plen, 0, NULL))) {
                        e2b_rpc_error(r, "invalid_argument", "%s", "the request is not a sequence of Connect envelopes");
                        return;
                }
                off += (size_t)k;
                if (json_object_get(m, "start")) {
                        json_t *sel = json_object_get(json_object_get(m, "start"), "process");

                        pid = json_is_integer(json_object_get(sel, "pid")) ? (int)json_integer_value(json_object_get(sel, "pid")) : -1;
                } else if (json_object_get(m, "data")) {
                        if (pid < 0) {
                                e2b_rpc_error(r, "invalid_argument", "%s", "the first message must be `start` with the process");
                                return;
                        }
                        if (write_input(e, s, pid, json_object_get(json_object_get(m, "data"), "input"), false, &err) < 0) {
                                e2b_rpc_error(r, xb_connect_code_ec(&err), "%s", err.msg);
                                return;
                        }
                }
        }
        {
                struct e2b_stream es = { 0 };

                if (e2b_stream_open(&es, r, NULL)) {
                        e2b_stream_send(&es, json_object());
                        e2b_stream_end(&es, NULL, NULL);
                }
        }
}

/* SendSignalRequest {process, signal: SIGNAL_SIGKILL | SIGNAL_SIGTERM | 9 | 15}. */
static void
proc_send_signal(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL, *args = NULL;
        struct xb_err err = { 0 };
        struct xb_sbx *x;
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &x);
        json_t *sv;
        int pid, sig = 0;

        if (!s || !(msg = e2b_rpc_body(r)) || (pid = e2b_rpc_pid(r, s, msg, "process")) < 0)
                return;
        sv = json_object_get(msg, "signal");
        if (json_is_integer(sv))
                sig = (int)json_integer_value(sv);
        else if (json_is_string(sv))
                sig = !strcmp(json_string_value(sv), "SIGNAL_SIGKILL") ? SIGKILL
                      : !strcmp(json_string_value(sv), "SIGNAL_SIGTERM") ? SIGTERM : 0;
        if (sig != SIGKILL && sig != SIGTERM) {
                e2b_rpc_error(r, "invalid_argument", "`signal` must be SIGNAL_SIGKILL or SIGNAL_SIGTERM");
                return;
        }
        args = json_pack("{s:s,s:i,s:i}", "id", s->id, "pid", pid, "signal", sig);
        if (e2b_run_sync(e, s->tenant, "process_kill", args, NULL, &err) < 0) {
                input_fail(r, &err);
                return;
        }
        e2b_rpc_reply(r, NULL);
}

/* UpdateRequest {process, pty: {size: {cols, rows}}}: a PTY's size. */
static void
proc_update(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *msg = NULL, *args = NULL;
        struct xb_err err = { 0 };
        struct xb_sbx *x;
        struct e2b_sbx *s = e2b_front_sbx(r, e, true, &x);
        json_t *size;
        int pid;

        if (!s || !(msg = e2b_rpc_body(r)) || (pid = e2b_rpc_pid(r, s, msg, "process")) < 0)
                return;
        size = json_object_get(json_object_get(msg, "pty"), "size");
        if (!json_is_integer(json_object_get(size, "cols")) || !json_is_integer(json_object_get(size, "rows"))) {
                e2b_rpc_error(r, "invalid_argument", "`pty.size` must give `cols` and `rows`");
                return;
        }
        args = json_pack("{s:s,s:i,s:O,s:O}", "id", s->id, "pid", pid, "cols", json_object_get(size, "cols"), "rows",
                         json_object_get(size, "rows"));
        if (e2b_run_sync(e, s->tenant, "process_resize", args, NULL, &err) < 0) {
                input_fail(r, &err);
                return;
        }
        e2b_rpc_reply(r, NULL);
}

#define RPC(m, fn) { "POST", E2B_ENVD_PREFIX "/process.Process/" m, fn, XB_ROUTE_PUBLIC | XB_ROUTE_HIDDEN, NULL }
const struct xb_route e2b_envd_proc_routes[] = {
        RPC("Start", proc_start),           RPC("Connect", proc_connect),     RPC("List", proc_list),
        RPC("SendInput", proc_send_input),  RPC("StreamInput", proc_stream_input),
        RPC("CloseStdin", proc_close_stdin), RPC("SendSignal", proc_send_signal), RPC("Update", proc_update),
};
const size_t e2b_envd_proc_nroutes = sizeof(e2b_envd_proc_routes) / sizeof(e2b_envd_proc_routes[0]);
