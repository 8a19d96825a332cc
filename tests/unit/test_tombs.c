/* Unit tests for core/tombs.c: a tombstone is found by its id and tenant
 * only, says why, and the ring stays bounded (the oldest is overwritten). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

static void
bury(struct xb_core *s, unsigned n, int tenant, const char *why)
{
        struct xb_sbx x = { .tenant = tenant, .end = XB_SBX_DELETED };

        snprintf(x.id, sizeof(x.id), "%026u", n);
        snprintf(x.error, sizeof(x.error), "%s", why);
        xb_tomb_add(s, &x);
}

Test(tombs, found_by_id_and_tenant_with_why)
{
        struct xb_core *s = calloc(1, sizeof(*s));
        struct xb_err err = { 0 };
        char id[32];

        bury(s, 7, 1, "the sandbox was deleted");
        snprintf(id, sizeof(id), "%026u", 7);
        cr_assert_not_null(xb_tomb_find(s, id, 1));
        cr_assert_null(xb_tomb_find(s, id, 2), "another tenant learns of it");
        cr_assert_null(xb_tomb_find(s, "nope", 1));
        cr_assert_null(xb_tomb_find(s, NULL, 1));
        xb_tomb_err(xb_tomb_find(s, id, 1), &err);
        cr_assert_eq(err.ecode, XB_E_SANDBOX_ENDED);
        cr_assert(strstr(err.msg, "the sandbox was deleted"), "%s", err.msg);
        cr_assert(strstr(err.msg, id), "%s", err.msg);
        free(s);
}

Test(tombs, bounded_ring_drops_the_oldest)
{
        struct xb_core *s = calloc(1, sizeof(*s));
        char id[32];

        for (unsigned i = 0; i < XB_TOMBS_MAX + 10; i++)
                bury(s, i, 0, "gone");
        snprintf(id, sizeof(id), "%026u", 5);
        cr_assert_null(xb_tomb_find(s, id, 0), "the ring kept more than XB_TOMBS_MAX");
        snprintf(id, sizeof(id), "%026u", 10);
        cr_assert_not_null(xb_tomb_find(s, id, 0));
        snprintf(id, sizeof(id), "%026u", XB_TOMBS_MAX + 9);
        cr_assert_not_null(xb_tomb_find(s, id, 0));
        free(s);
}
