/* Unit tests for core/sbx.c's pending tags and waiter count, on a sandbox
 * record with no sandbox behind it: tags are unique, never 0, found in
 * order, and survive a wrap of the counter; deleting an unknown tag is
 * harmless; the error a sandbox's end leaves. Dispatch and death need
 * init: the integration tests run them. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>

#include "core/core.h"

static const struct xb_pending_ops no_ops;

Test(pending, add_del_unique)
{
        struct xb_sbx x = { 0 };
        uint32_t tags[100];
        int ctx[100];

        for (int i = 0; i < 100; i++) {
                tags[i] = xb_sbx_pending_add(&x, &no_ops, &ctx[i]);
                cr_assert_neq(tags[i], 0);
                for (int j = 0; j < i; j++)
                        cr_assert_neq(tags[i], tags[j]);
        }
        cr_assert_eq(x.npending, 100);
        /* Every other one goes; the rest stay, and a second delete is a no-op. */
        for (int i = 0; i < 100; i += 2)
                xb_sbx_pending_del(&x, tags[i]);
        for (int i = 0; i < 100; i += 2)
                xb_sbx_pending_del(&x, tags[i]);
        xb_sbx_pending_del(&x, 0);
        xb_sbx_pending_del(&x, 0xdeadbeef);
        cr_assert_eq(x.npending, 50);
        free(x.pending);
}

Test(pending, wraps_past_zero_and_tags_in_use)
{
        struct xb_sbx x = { .next_tag = UINT32_MAX - 2 };
        uint32_t a = xb_sbx_pending_add(&x, &no_ops, NULL);
        uint32_t b = xb_sbx_pending_add(&x, &no_ops, NULL);
        uint32_t c;

        cr_assert_eq(a, UINT32_MAX - 1);
        cr_assert_eq(b, UINT32_MAX);
        /* Past 2^32: 0 is init's own, and 1 and 2 are still taken. */
        x.next_tag = 0;
        cr_assert_eq(xb_sbx_pending_add(&x, &no_ops, NULL), 1);
        cr_assert_eq(xb_sbx_pending_add(&x, &no_ops, NULL), 2);
        x.next_tag = 0;
        c = xb_sbx_pending_add(&x, &no_ops, NULL);
        cr_assert_eq(c, 3);
        x.next_tag = UINT32_MAX - 2;
        cr_assert_eq(xb_sbx_pending_add(&x, &no_ops, NULL), 4, "UINT32_MAX - 1, UINT32_MAX, 1, 2, 3 are taken");
        cr_assert_eq(x.npending, 6);
        free(x.pending);
}

Test(pending, waiters)
{
        struct xb_sbx x = { 0 };

        cr_assert(!xb_sbx_busy(&x));
        xb_sbx_wait_begin(&x);
        xb_sbx_wait_begin(&x);
        cr_assert(xb_sbx_busy(&x));
        xb_sbx_wait_end(&x);
        cr_assert(xb_sbx_busy(&x));
        xb_sbx_wait_end(&x);
        cr_assert(!xb_sbx_busy(&x));
        xb_sbx_wait_end(&x);   /* unbalanced: stays at 0 */
        cr_assert_eq(x.nwaiting, 0);
}

/* What work a sandbox's end cut short fails with: only an expiry, with its
 * reason, has a code of its own; without a reason the caller's words. */
Test(pending, gone)
{
        struct xb_sbx x = { .end = XB_SBX_EXPIRED };
        struct xb_err err = { 0 };

        cr_assert_eq(xb_sbx_gone(&x, "the sandbox expired", "the sandbox is gone", &err), -ESRCH);
        cr_assert_eq(err.ecode, XB_E_SANDBOX_EXPIRED);
        cr_assert_str_eq(err.msg, "the sandbox expired");
        xb_sbx_gone(&x, NULL, "the sandbox is gone", &err);
        cr_assert_eq(err.ecode, XB_E_SANDBOX_GONE);
        cr_assert_str_eq(err.msg, "the sandbox is gone");
        x.end = XB_SBX_DELETED;
        xb_sbx_gone(&x, "the sandbox was deleted", "the sandbox is gone", &err);
        cr_assert_eq(err.ecode, XB_E_SANDBOX_GONE);
        cr_assert_str_eq(err.msg, "the sandbox was deleted");
        cr_assert_str_eq(xb_ecode_name(XB_E_SANDBOX_EXPIRED), "sandbox_gone");
}
