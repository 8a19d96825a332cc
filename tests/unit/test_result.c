/* Unit tests for proc/result.h: each verdict on its own, then the
 * precedence between every pair of causes (memory, timeout, cpu, output
 * kill, signal, truncated output, exit code), and the status names. */
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>

#include "base/cleanup.h"
#include "proc/result.h"

static const struct xb_verdict_in exited0 = { .exited = true, .exit_code = 0 };

static struct xb_verdict_in
killed(int sig)
{
        return (struct xb_verdict_in){ .exited = false, .exit_code = -1, .signal = sig };
}

#define VERDICT(want, ...)                                                                      \
        do {                                                                                    \
                struct xb_verdict_in v_ = __VA_ARGS__;                                          \
                enum xb_status got_ = xb_verdict(&v_);                                          \
                cr_assert_eq(got_, want, "%s: got %s, want %s", #__VA_ARGS__, xb_status_name(got_), \
                             xb_status_name(want));                                             \
        } while (0)

Test(verdict, ok_and_exit_codes)
{
        VERDICT(XB_ST_OK, exited0);
        VERDICT(XB_ST_EXIT_NONZERO, { .exited = true, .exit_code = 1 });
        VERDICT(XB_ST_EXIT_NONZERO, { .exited = true, .exit_code = 255 });
        /* A shell's 128+N is still an exit code, not a signal. */
        VERDICT(XB_ST_EXIT_NONZERO, { .exited = true, .exit_code = 137 });
}

Test(verdict, memory)
{
        struct xb_verdict_in v = killed(SIGKILL);

        v.oom = true;
        VERDICT(XB_ST_MEMORY_LIMIT, v);
        /* Killed by another signal after an OOM kill in the tree. */
        v = killed(SIGSEGV);
        v.oom = true;
        VERDICT(XB_ST_MEMORY_LIMIT, v);
        /* An OOM kill elsewhere in the tree is still the run's verdict, even
         * when the command itself survived it and exited on its own. */
        VERDICT(XB_ST_MEMORY_LIMIT, { .exited = true, .exit_code = 0, .oom = true });
        VERDICT(XB_ST_MEMORY_LIMIT, { .exited = true, .exit_code = 1, .oom = true });
}

Test(verdict, timeout)
{
        struct xb_verdict_in v = killed(SIGKILL);

        v.timed_out = true;
        VERDICT(XB_ST_TIMEOUT, v);
        VERDICT(XB_ST_TIMEOUT, { .exited = true, .exit_code = 0, .timed_out = true });
}

Test(verdict, cpu)
{
        struct xb_verdict_in v = killed(SIGKILL);

        v.cpu_exceeded = true;
        VERDICT(XB_ST_CPU_LIMIT, v);
        /* RLIMIT_CPU's soft limit sends SIGXCPU. */
        VERDICT(XB_ST_CPU_LIMIT, killed(SIGXCPU));
        /* An exit code equal to SIGXCPU's number is not a CPU kill. */
        VERDICT(XB_ST_EXIT_NONZERO, { .exited = true, .exit_code = SIGXCPU, .signal = 0 });
}

Test(verdict, output)
{
        struct xb_verdict_in v = killed(SIGKILL);

        v.output_killed = true;
        VERDICT(XB_ST_OUTPUT_LIMIT, v);
        /* Kept running but the capture was cut. */
        VERDICT(XB_ST_OUTPUT_LIMIT, { .exited = true, .exit_code = 0, .truncated = true });
        VERDICT(XB_ST_OUTPUT_LIMIT, { .exited = true, .exit_code = 3, .truncated = true });
}

Test(verdict, killed)
{
        VERDICT(XB_ST_KILLED, killed(SIGKILL));
        VERDICT(XB_ST_KILLED, killed(SIGSEGV));
        VERDICT(XB_ST_KILLED, killed(SIGTERM));
        VERDICT(XB_ST_KILLED, { .exited = true, .exit_code = 0, .killed_by_request = true });
}

Test(verdict, never_running)
{
        /* "running" is for soft timeouts, which the caller sets itself. */
        for (int bits = 0; bits < 1 << 7; bits++) {
                struct xb_verdict_in v = {
                        .exited = bits & 1, .exit_code = (bits & 2) ? 1 : 0, .signal = (bits & 1) ? 0 : SIGKILL,
                        .timed_out = bits & 4, .cpu_exceeded = bits & 8, .oom = bits & 16,
                        .output_killed = bits & 32, .truncated = bits & 64,
                };

                cr_assert_neq(xb_verdict(&v), XB_ST_RUNNING);
        }
}

/* Every earlier cause beats every later one. */
Test(verdict, precedence)
{
        enum { OOM, TIMEOUT, CPU, OUTKILL, SIGNAL, TRUNC, EXIT1, N };
        static const enum xb_status status[N] = {
                XB_ST_MEMORY_LIMIT, XB_ST_TIMEOUT, XB_ST_CPU_LIMIT, XB_ST_OUTPUT_LIMIT,
                XB_ST_KILLED, XB_ST_OUTPUT_LIMIT, XB_ST_EXIT_NONZERO,
        };

        for (int mask = 1; mask < 1 << N; mask++) {
                struct xb_verdict_in v = { .exited = true };
                int first = 0;

                while (!(mask & (1 << first)))
                        first++;
                v.oom = mask & (1 << OOM);
                v.timed_out = mask & (1 << TIMEOUT);
                v.cpu_exceeded = mask & (1 << CPU);
                v.output_killed = mask & (1 << OUTKILL);
                if (mask & (1 << SIGNAL)) {
                        v.exited = false;
                        v.exit_code = -1;
                        v.signal = SIGKILL;
                }
                v.truncated = mask & (1 << TRUNC);
                if (mask & (1 << EXIT1))
                        v.exit_code = v.exited ? 1 : -1;
                cr_assert_eq(xb_verdict(&v), status[first], "causes %#x: got %s, want %s", mask,
                             xb_status_name(xb_verdict(&v)), xb_status_name(status[first]));
        }
}

Test(verdict, status_names)
{
        static const struct { enum xb_status s; const char *name; } names[] = {
                { XB_ST_OK, "ok" }, { XB_ST_EXIT_NONZERO, "exit_nonzero" }, { XB_ST_TIMEOUT, "timeout" },
                { XB_ST_CPU_LIMIT, "cpu_limit" }, { XB_ST_MEMORY_LIMIT, "memory_limit" },
                { XB_ST_OUTPUT_LIMIT, "output_limit" }, { XB_ST_KILLED, "killed" }, { XB_ST_RUNNING, "running" },
        };

        for (size_t i = 0; i < ARRAY_SIZE(names); i++)
                cr_assert_str_eq(xb_status_name(names[i].s), names[i].name);
        cr_assert_str_eq(xb_status_name((enum xb_status)(XB_ST_RUNNING + 1)), "unknown");
        cr_assert_str_eq(xb_status_name((enum xb_status)-1), "unknown");
        cr_assert_str_eq(xb_status_name((enum xb_status)1000000), "unknown");
}

/* xb_result_json: the one result assembly, shared by exec and wait. */
Test(result_json, fields)
{
        struct xb_result r = { .status = XB_ST_OK, .wall_ms = 12, .cpu_ms = 3, .peak_memory = 4096 };
        json_t *o;

        xb_outbuf_init(&r.out, 1 << 20);
        xb_outbuf_init(&r.err, 1 << 20);
        cr_assert_eq(xb_outbuf_write(&r.out, "hi\xff\n", 4), 0);
        xb_result_set_status(&r, true, 3 << 8);   /* exit(3) */
        r.status = XB_ST_EXIT_NONZERO;
        o = xb_result_json(&r, 42);
        cr_assert_str_eq(json_string_value(json_object_get(o, "status")), "exit_nonzero");
        cr_assert_eq(json_integer_value(json_object_get(o, "exit_code")), 3);
        cr_assert(json_is_null(json_object_get(o, "signal")));
        /* Invalid UTF-8 is replaced, so the count is of bytes received. */
        cr_assert_str_eq(json_string_value(json_object_get(o, "stdout")), "hi\xef\xbf\xbd\n");
        cr_assert_eq(json_integer_value(json_object_get(o, "stdout_bytes")), 4);
        cr_assert_str_eq(json_string_value(json_object_get(o, "stderr")), "");
        cr_assert(json_is_false(json_object_get(o, "stdout_truncated")));
        cr_assert_eq(json_integer_value(json_object_get(o, "duration_ms")), 12);
        cr_assert_eq(json_integer_value(json_object_get(o, "cpu_ms")), 3);
        cr_assert_eq(json_integer_value(json_object_get(o, "peak_memory")), 4096);
        cr_assert_eq(json_integer_value(json_object_get(o, "pid")), 42);
        cr_assert_eq(json_object_size(o), 13);
        json_decref(o);

        /* Killed: a signal and no exit code; no pid when there is none. */
        xb_result_set_status(&r, false, 0);
        r.status = XB_ST_KILLED;
        o = xb_result_json(&r, 0);
        cr_assert(json_is_null(json_object_get(o, "exit_code")));
        cr_assert_eq(json_integer_value(json_object_get(o, "signal")), SIGKILL);
        cr_assert_null(json_object_get(o, "pid"));
        json_decref(o);
        xb_outbuf_free(&r.out);
        xb_outbuf_free(&r.err);
}
