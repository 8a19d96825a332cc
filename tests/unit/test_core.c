/* The engine driven directly, with no HTTP and no protocol: a core on its
 * own loop, operations run through a test sink. It creates a sandbox, runs
 * a command (with its events), writes and reads a file, runs a Python cell,
 * cancels a command whose caller left, and deletes the sandbox. Needs root
 * (cgroups and id-mapped user namespaces), as the integration suites do. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/loop.h"
#include "core/core.h"
#include "ops/catalog.h"
#include "ops/ops.h"

struct rec {
        bool ended, failed;
        json_t *result;
        struct xb_err err;
        unsigned nevents;
        char events[256];
        struct xb_call *call;
};

static struct xb_loop *loop;
static struct xb_core *core;

static void
on_event(void *ctx, const char *name, json_t *data)
{
        struct rec *r = ctx;

        (void)data;
        r->nevents++;
        if (strlen(r->events) + strlen(name) + 2 < sizeof(r->events)) {
                strcat(r->events, name);
                strcat(r->events, " ");
        }
}

static void
on_done(void *ctx, json_t *result)
{
        struct rec *r = ctx;

        r->ended = true;
        r->call = NULL;
        r->result = result;
        xb_loop_stop(loop);
}

static void
on_fail(void *ctx, const struct xb_err *err)
{
        struct rec *r = ctx;

        r->ended = r->failed = true;
        r->call = NULL;
        r->err = *err;
        xb_loop_stop(loop);
}

static const struct xb_sink_ops sink = { on_event, on_done, on_fail };

static void
on_timeout(struct xb_timer *t)
{
        (void)t;
        xb_loop_stop(loop);
}

/* Let the loop run for ms, or until a call ends. */
static void
spin(uint64_t ms)
{
        struct xb_timer t = { 0 };

        xb_timer_start(loop, &t, ms, on_timeout, NULL);
        xb_loop_run(loop);
        xb_timer_stop(&t);
}

/* Start op with args (JSON text); the call may still run afterwards. */
static void
start(struct rec *r, const char *name, const char *args, unsigned flags)
{
        const struct xb_op *op = xb_op_find(name);
        json_t *a = json_loads(args, 0, NULL);

        cr_assert(op, "no operation %s", name);
        cr_assert(a, "bad JSON: %s", args);
        memset(r, 0, sizeof(*r));
        r->call = xb_call_new(&sink, r, flags);
        cr_assert(r->call);
        xb_op_run(op, core, 0, a, r->call);
        json_decref(a);
}

/* Run op to its end (30 s at most); returns its result. */
static json_t *
run(struct rec *r, const char *name, const char *args, unsigned flags)
{
        uint64_t until = xb_now_ms() + 30000;

        start(r, name, args, flags);
        while (!r->ended && xb_now_ms() < until)
                spin(until - xb_now_ms());
        cr_assert(r->ended, "%s did not end", name);
        return r->result;
}

static json_t *
ok(struct rec *r, const char *name, const char *args)
{
        json_t *res = run(r, name, args, 0);

        cr_assert(!r->failed, "%s failed: %s (%s)", name, r->err.msg, xb_ecode_name(r->err.ecode));
        return res;
}

static void
setup(void)
{
        struct xb_core_opts o = { .max_sandboxes = 8, .upload_max = 1 << 20 };
        struct xb_err err = { 0 };

        cr_assert_eq(getuid(), 0, "the engine tests need root");
        cr_assert_eq(xb_catalog_init(&err), 0, "%s", err.msg);
        xb_limits_default(&o.defaults);
        loop = xb_loop_new();
        cr_assert(loop);
        cr_assert_eq(xb_core_open(&o, loop, &core, &err), 0, "%s", err.msg);
}

static void
teardown(void)
{
        xb_core_close(core);
        xb_loop_free(loop);
}

static char *
create_sandbox(void)
{
        struct rec r;
        json_t *res = ok(&r, "sandbox_create", "{}");
        char *id = strdup(json_string_value(json_object_get(res, "id")));

        cr_assert(id);
        json_decref(res);
        return id;
}

/* The arguments of an operation, as JSON text (malloc'd). */
#define ARGS(...) ({ char *_s; cr_assert(asprintf(&_s, __VA_ARGS__) > 0); _s; })

TestSuite(core, .init = setup, .fini = teardown, .timeout = 120);

Test(core, sandbox_command_file_cell_delete)
{
        _cleanup_free_ char *id = create_sandbox();
        struct rec r;
        json_t *res;
        char *a;

        /* A command, with its events. */
        a = ARGS("{\"id\": \"%s\", \"cmd\": \"%s\"}", id, "echo hi; echo oops >&2; exit 3");
        res = run(&r, "run_command", a, XB_CALL_EVENTS);
        free(a);
        cr_assert(!r.failed, "%s", r.err.msg);
        cr_assert_str_eq(json_string_value(json_object_get(res, "stdout")), "hi\n");
        cr_assert_str_eq(json_string_value(json_object_get(res, "stderr")), "oops\n");
        cr_assert_eq(json_integer_value(json_object_get(res, "exit_code")), 3);
        cr_assert_str_eq(json_string_value(json_object_get(res, "status")), "exit_nonzero");
        cr_assert(strstr(r.events, "start ") && strstr(r.events, "stdout "), "events: %s", r.events);
        json_decref(res);

        /* A file written, then read back. */
        a = ARGS("{\"id\": \"%s\", \"path\": \"/home/user/note.txt\", \"content\": \"%s\"}", id, "hello core");
        json_decref(ok(&r, "write_file", a));
        free(a);
        a = ARGS("{\"id\": \"%s\", \"path\": \"%s\"}", id, "/home/user/note.txt");
        res = ok(&r, "read_file", a);
        free(a);
        cr_assert_str_eq(json_string_value(json_object_get(res, "content")), "hello core");
        json_decref(res);

        /* A Python cell in a session. */
        a = ARGS("{\"id\": \"%s\", \"language\": \"%s\"}", id, "python");
        res = ok(&r, "create_session", a);
        free(a);
        {
                const char *sid = json_string_value(json_object_get(res, "id"));
                char *b;
                json_t *cell, *o;
                size_t i;
                bool seen = false;

                cr_assert(sid);
                cr_assert(asprintf(&b, "{\"id\": \"%s\", \"sid\": \"%s\", \"code\": \"x = 6 * 7\\nx\"}", id, sid) > 0);
                cell = ok(&r, "run_code", b);
                free(b);
                json_array_foreach(json_object_get(cell, "outputs"), i, o) {
                        const char *t = json_string_value(json_object_get(json_object_get(o, "data"), "text/plain"));

                        seen |= t && !strcmp(t, "42");
                }
                cr_assert(seen, "no result 42 in %s", json_dumps(cell, 0));
                json_decref(cell);
        }
        json_decref(res);

        /* Delete: the sandbox is gone for later calls, and its tombstone says so. */
        a = ARGS("{\"id\": \"%s\"%s}", id, "");
        json_decref(ok(&r, "sandbox_delete", a));
        run(&r, "get_sandbox", a, 0);
        free(a);
        cr_assert(r.failed);
        cr_assert_eq(r.err.ecode, XB_E_SANDBOX_ENDED, "%s", xb_ecode_name(r.err.ecode));
        cr_assert(strstr(r.err.msg, "deleted"), "%s", r.err.msg);
}

Test(core, a_departed_caller_kills_its_command)
{
        _cleanup_free_ char *id = create_sandbox();
        struct rec r, probe;
        json_t *res;
        char *a;

        a = ARGS("{\"id\": \"%s\", \"cmd\": \"%s\"}", id, "sleep 300");
        start(&r, "run_command", a, 0);
        free(a);
        /* The positive control: the command really runs. */
        a = ARGS("{\"id\": \"%s\", \"cmd\": \"%s\"}", id,
                      "for i in $(seq 100); do pgrep -x sleep >/dev/null && { echo running; exit 0; }; sleep 0.05; done; echo never");
        res = ok(&probe, "run_command", a);
        free(a);
        cr_assert_str_eq(json_string_value(json_object_get(res, "stdout")), "running\n");
        json_decref(res);
        cr_assert(!r.ended);

        xb_call_cancel(r.call);   /* the caller left */
        cr_assert(!r.ended, "a cancelled call must not reach its sink");
        a = ARGS("{\"id\": \"%s\", \"cmd\": \"%s\"}", id,
                      "for i in $(seq 100); do pgrep -x sleep >/dev/null || { echo gone; exit 0; }; sleep 0.05; done; echo still");
        res = ok(&probe, "run_command", a);
        free(a);
        cr_assert_str_eq(json_string_value(json_object_get(res, "stdout")), "gone\n");
        cr_assert(!r.ended);
        json_decref(res);
}

Test(core, a_departed_waiter_leaves_the_command_running)
{
        _cleanup_free_ char *id = create_sandbox();
        struct rec r, w;
        json_t *res;
        char *a;
        char pid[32];

        a = ARGS("{\"id\": \"%s\", \"cmd\": \"%s\"}", id, "sleep 300");
        res = ok(&r, "process_start", a);
        free(a);
        snprintf(pid, sizeof(pid), "%lld", (long long)json_integer_value(json_object_get(res, "pid")));
        json_decref(res);

        {
                char *b;

                cr_assert(asprintf(&b, "{\"id\": \"%s\", \"pid\": \"%s\", \"timeout_s\": 60}", id, pid) > 0);
                start(&w, "wait_process", b, 0);
                free(b);
        }
        spin(200);
        cr_assert(!w.ended);
        xb_call_cancel(w.call);
        spin(200);
        {
                char *b;

                cr_assert(asprintf(&b, "{\"id\": \"%s\", \"pid\": \"%s\"}", id, pid) > 0);
                res = ok(&r, "get_process", b);
                free(b);
        }
        cr_assert_str_eq(json_string_value(json_object_get(res, "status")), "running", "%s", json_dumps(res, 0));
        json_decref(res);
}
