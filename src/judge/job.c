/* One judge job: a fresh sandbox, the files written, the compile step (if
 * the language has one), the run, and the sandbox deleted again, all as
 * operations of the table (ops/ops.h) chained through one sink. A job
 * lives until its last operation ends, whether or not anyone still waits
 * for its outcome; the run's own timeout bounds it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/err.h"
#include "ops/ops.h"
#include "judge/judge.h"

#define SANDBOX_TTL_S 900
/* The compilers need room whatever the run's limit (cc1plus, javac). */
#define MEMORY_FLOOR ((uint64_t)512 << 20)

struct job {
        struct xb_core *srv;
        int tenant;
        struct xb_judge_spec spec;
        xb_judge_done_fn done;
        void *ctx;
        char *sandbox_id;
        size_t next_file;
        json_t *compile, *run;
        struct xb_err err;
        bool failed, compile_failed;
        void (*step)(struct job *j, json_t *result, const struct xb_err *err);
};

static void
job_free(struct job *j)
{
        json_decref(j->spec.files);
        json_decref(j->spec.args);
        free(j->spec.stdin_data);
        json_decref(j->compile);
        json_decref(j->run);
        free(j->sandbox_id);
        free(j);
}

static void
step_end(struct job *j, json_t *result, const struct xb_err *err)
{
        j->step(j, result, err);
        json_decref(result);
}

static void
sink_done(void *ctx, json_t *result)
{
        step_end(ctx, result, NULL);
}

static void
sink_fail(void *ctx, const struct xb_err *err)
{
        step_end(ctx, NULL, err);
}

static const struct xb_sink_ops job_sink = { .done = sink_done, .fail = sink_fail };

/* Run op name with args (taken) on the job's sandbox; the outcome goes to next. */
static void
job_op(struct job *j, const char *name, json_t *args, void (*next)(struct job *, json_t *, const struct xb_err *))
{
        const struct xb_op *op = xb_op_find(name);
        struct xb_call *call = op && args ? xb_call_new(&job_sink, j, 0) : NULL;

        j->step = next;
        if (!call) {
                struct xb_err err = { .code = ENOMEM, .ecode = XB_E_NOMEM };

                snprintf(err.msg, sizeof(err.msg), "out of memory");
                json_decref(args);
                next(j, NULL, &err);
                return;
        }
        if (j->sandbox_id)
                json_object_set_new(args, "id", json_string(j->sandbox_id));
        xb_op_run(op, j->srv, j->tenant, args, call);
        json_decref(args);
}

static void
report(struct job *j)
{
        struct xb_judge_outcome o = { .compile = j->compile, .run = j->run, .err = j->failed ? &j->err : NULL,
                                      .compile_failed = j->compile_failed };

        if (j->run && j->spec.memory) {
                const char *st = json_string_value(json_object_get(j->run, "status"));
                json_int_t peak = json_integer_value(json_object_get(j->run, "peak_memory"));

                o.mem_exceeded = (st && !strcmp(st, "memory_limit")) || (uint64_t)peak > j->spec.memory;
        }
        j->done(j->ctx, &o);
        job_free(j);
}

static void
deleted(struct job *j, json_t *result, const struct xb_err *err)
{
        (void)result;
        (void)err;   /* gone already, or going: nothing to add */
        report(j);
}

/* Every path ends here: remember the first failure, delete the sandbox. */
static void
finish(struct job *j, const struct xb_err *err)
{
        if (err && !j->failed) {
                j->failed = true;
                j->err = *err;
        }
        if (!j->sandbox_id) {
                report(j);
                return;
        }
        job_op(j, "sandbox_delete", json_object(), deleted);
}

static void
ran(struct job *j, json_t *result, const struct xb_err *err)
{
        if (!err)
                j->run = json_incref(result);
        if (j->run && j->spec.run_cpu_ms) {
                const char *st = json_string_value(json_object_get(j->run, "status")) ?: "";
                uint64_t cpu = (uint64_t)json_integer_value(json_object_get(j->run, "cpu_ms"));

                /* SIGXCPU is cpu_limit already; this is a limit in between
                 * whole seconds, or a program that outlived SIGXCPU. */
                if (cpu > j->spec.run_cpu_ms && strcmp(st, "timeout") && strcmp(st, "memory_limit"))
                        json_object_set_new(j->run, "status", json_string("cpu_limit"));
        }
        finish(j, err);
}

static json_t *
run_argv(struct job *j)
{
        const struct xb_judge_lang *l = j->spec.lang;
        const char *main = json_string_value(json_object_get(json_array_get(j->spec.files, 0), "name"));
        json_t *argv = json_array(), *a;
        size_t i;

        /* The kernel stops the program at its CPU limit, in whole seconds
         * rounded up: SIGXCPU at the soft RLIMIT_CPU (the engine's
         * cpu_limit), SIGKILL a second later if it was caught; uid 1000
         * cannot raise the hard limit. ran() checks the exact limit. */
        if (j->spec.run_cpu_ms) {
                unsigned long long s = (j->spec.run_cpu_ms + 999) / 1000;

                json_array_append_new(argv, json_string("/bin/sh"));
                json_array_append_new(argv, json_string("-c"));
                json_array_append_new(argv, json_sprintf("ulimit -S -t %llu && ulimit -H -t %llu && exec \"$@\"",
                                                         s, s + 1));
                json_array_append_new(argv, json_string("sh"));
        }
        for (i = 0; i < 4 && l->run[i]; i++) {
                if (!strcmp(l->run[i], "%m")) {
                        json_array_append_new(argv, json_string(main));
                } else if (!strcmp(l->run[i], "%c")) {
                        const char *dot = strrchr(main, '.');

                        json_array_append_new(argv, json_stringn(main, dot ? (size_t)(dot - main) : strlen(main)));
                } else
                        json_array_append_new(argv, json_string(l->run[i]));
        }
        json_array_foreach(j->spec.args, i, a)
                json_array_append(argv, a);
        return argv;
}

static void
run_now(struct job *j)
{
        json_t *args = json_pack("{s:o,s:f}", "argv", run_argv(j), "timeout_s", j->spec.run_timeout_ms / 1000.0);

        if (args && j->spec.stdin_data)
                json_object_set_new(args, "stdin", json_string(j->spec.stdin_data));
        if (args && j->spec.output_limit)
                json_object_set_new(args, "output_limit", json_integer((json_int_t)j->spec.output_limit));
        job_op(j, "run_command", args, ran);
}

static void
compiled(struct job *j, json_t *result, const struct xb_err *err)
{
        if (err) {
                finish(j, err);
                return;
        }
        j->compile = json_incref(result);
        if (json_integer_value(json_object_get(result, "exit_code")) != 0 || json_is_null(json_object_get(result, "exit_code"))) {
                j->compile_failed = true;
                finish(j, NULL);
                return;
        }
        run_now(j);
}

/* " 's'": a space, then s single-quoted for sh, into b. */
static int
shell_word(struct xb_buf *b, const char *s)
{
        int r = xb_buf_puts(b, " '");

        for (; *s && r >= 0; s++)
                r = *s == '\'' ? xb_buf_puts(b, "'\\''") : xb_buf_append(b, s, 1);
        return r < 0 ? r : xb_buf_puts(b, "'");
}

static void
compile_now(struct job *j)
{
        const struct xb_judge_lang *l = j->spec.lang;
        _cleanup_(xb_buf_free) struct xb_buf b = { 0 };
        size_t i, elen = strlen(l->ext);
        json_t *f;
        int r = xb_buf_puts(&b, l->compile);

        json_array_foreach(j->spec.files, i, f) {
                const char *name = json_string_value(json_object_get(f, "name"));
                size_t n = strlen(name);

                /* the main file always; the others when they are sources */
                if (r >= 0 && (i == 0 || (n > elen && !strcmp(name + n - elen, l->ext))))
                        r = shell_word(&b, name);
        }
        if (r >= 0)
                r = xb_buf_puts(&b, l->compile_tail);
        if (r < 0) {
                struct xb_err err = { .code = ENOMEM, .ecode = XB_E_NOMEM };

                snprintf(err.msg, sizeof(err.msg), "out of memory");
                finish(j, &err);
                return;
        }
        job_op(j, "run_command", json_pack("{s:s%,s:f}", "cmd", b.data, b.len, "timeout_s",
                                           j->spec.compile_timeout_ms / 1000.0), compiled);
}

static void
wrote(struct job *j, json_t *result, const struct xb_err *err)
{
        json_t *f;

        (void)result;
        if (err) {
                finish(j, err);
                return;
        }
        if ((f = json_array_get(j->spec.files, j->next_file++))) {
                json_t *args = json_deep_copy(f);

                if (args) {
                        json_object_set(args, "path", json_object_get(args, "name"));
                        json_object_del(args, "name");
                }
                job_op(j, "write_file", args, wrote);
                return;
        }
        if (j->spec.lang->compile)
                compile_now(j);
        else
                run_now(j);
}

static void
created(struct job *j, json_t *result, const struct xb_err *err)
{
        const char *id = json_string_value(json_object_get(result, "id"));

        if (err || !id || !(j->sandbox_id = strdup(id))) {
                struct xb_err e = { .code = ENOMEM, .ecode = XB_E_NOMEM };

                snprintf(e.msg, sizeof(e.msg), "out of memory");
                finish(j, err ? err : &e);
                return;
        }
        wrote(j, NULL, NULL);
}

void
xb_judge_run(struct xb_core *srv, int tenant, struct xb_judge_spec *spec, xb_judge_done_fn done, void *ctx)
{
        struct job *j = calloc(1, sizeof(*j));
        json_t *args;

        if (!j) {
                struct xb_err err = { .code = ENOMEM, .ecode = XB_E_NOMEM };
                struct xb_judge_outcome o = { .err = &err };

                snprintf(err.msg, sizeof(err.msg), "out of memory");
                json_decref(spec->files);
                json_decref(spec->args);
                free(spec->stdin_data);
                done(ctx, &o);
                return;
        }
        *j = (struct job){ .srv = srv, .tenant = tenant, .spec = *spec, .done = done, .ctx = ctx };
        args = json_pack("{s:i}", "timeout_s", SANDBOX_TTL_S);
        /* The sandbox holds the compiler too: a run's limit under the floor
         * is checked against the run's peak (report), one above it is also
         * the sandbox's own. */
        if (args && spec->memory > MEMORY_FLOOR)
                json_object_set_new(args, "limits", json_pack("{s:I}", "memory", (json_int_t)spec->memory));
        job_op(j, "sandbox_create", args, created);
}

json_t *
xb_judge_b64(const char *s, size_t n)
{
        _cleanup_free_ char *e = NULL;

        if (!s)
                return json_null();
        if (xb_base64_encode_alloc(s, n, &e) < 0)
                return json_null();
        return json_string(e);
}
