/* Unit tests for ops/subcall.h: a sub-call hands only stdout and stderr
 * to its output function, reports its end once with the result borrowed,
 * asks for events only when it has an output function, and a run that
 * cannot start still reports its end. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/call.h"
#include "ops/subcall.h"

struct seen {
        int ends;
        json_t *res;          /* a reference of our own, to check it is freed after */
        enum xb_ecode ecode;
        char out[256];
        char streams[64];
};

static void
then(void *owner, json_t *res, const struct xb_err *err)
{
        struct seen *s = owner;

        s->ends++;
        s->res = res ? json_incref(res) : NULL;
        s->ecode = err ? err->ecode : 0;
}

static void
output(void *owner, const char *stream, const char *d, size_t n)
{
        struct seen *s = owner;

        strncat(s->out, d, n);
        strcat(s->streams, stream[3] == 'o' ? "o" : "e");
}

Test(subcall, output_is_only_stdout_and_stderr_and_the_result_is_borrowed)
{
        struct seen s = { 0 };
        struct xb_call *c = xb_subcall_new(&s, then, output);
        json_t *ev;

        cr_assert(c);
        cr_assert(xb_call_wants_events(c));
        ev = json_pack("{s:s}", "data", "ab");
        xb_call_event(c, "stdout", ev);
        xb_call_event(c, "exit", ev);        /* not output */
        xb_call_event(c, NULL, ev);          /* begin */
        json_decref(ev);
        ev = json_pack("{s:i}", "data", 3);  /* not text */
        xb_call_event(c, "stderr", ev);
        json_decref(ev);
        ev = json_pack("{s:s%}", "data", "c\0d", (size_t)3);
        xb_call_event(c, "stderr", ev);
        json_decref(ev);
        cr_assert_str_eq(s.out, "abc");
        cr_assert_str_eq(s.streams, "oe");
        xb_call_done(c, json_pack("{s:i}", "exit_code", 0));
        cr_assert_eq(s.ends, 1);
        cr_assert_eq(s.ecode, 0);
        cr_assert_eq(json_integer_value(json_object_get(s.res, "exit_code")), 0);
        cr_assert_eq(s.res->refcount, 1, "the sub-call kept its result: %zu", s.res->refcount);
        json_decref(s.res);
}

Test(subcall, no_output_asks_for_no_events_and_a_failure_ends_it)
{
        struct seen s = { 0 };
        struct xb_call *c = xb_subcall_new(&s, then, NULL);
        struct xb_err err = { .ecode = XB_E_SANDBOX_GONE };

        cr_assert(c);
        cr_assert(!xb_call_wants_events(c));
        xb_call_fail(c, &err);
        cr_assert_eq(s.ends, 1);
        cr_assert_null(s.res);
        cr_assert_eq(s.ecode, XB_E_SANDBOX_GONE);
}

Test(subcall, a_run_that_cannot_start_still_ends)
{
        struct seen s = { 0 };
        json_t *args = json_object();

        json_incref(args);
        xb_subcall_run(NULL, 0, "no_such_operation", args, &s, then, output);
        cr_assert_eq(s.ends, 1);
        cr_assert_eq(s.ecode, XB_E_INTERNAL);
        cr_assert_eq(args->refcount, 1, "args were not taken");
        json_decref(args);
        xb_subcall_run(NULL, 0, "install", NULL, &s, then, output);
        cr_assert_eq(s.ends, 2);
        cr_assert_eq(s.ecode, XB_E_NOMEM);
        /* No then: nothing to tell, and nothing leaks (ASan builds). */
        xb_subcall_run(NULL, 0, "no_such_operation", json_object(), NULL, NULL, NULL);
}

Test(subcall, a_run_reaches_the_operation)
{
        struct seen s = { 0 };

        /* install checks its fields before it touches the core. */
        xb_subcall_run(NULL, 0, "install", json_pack("{s:s}", "bogus", "x"), &s, then, NULL);
        cr_assert_eq(s.ends, 1);
        cr_assert_eq(s.ecode, XB_E_INVALID);
        cr_assert_null(s.res);
}
