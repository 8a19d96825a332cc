/* Unit tests for daemon/tokens.h and core/metrics.h: the token file's
 * old and new forms, its errors, the lone-token admin rule, and the
 * histogram's bucket edges. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/metrics.h"
#include "daemon/tokens.h"

#define T1 "aaaaaaaaaaaaaaaa1"
#define T2 "bbbbbbbbbbbbbbbb2"
#define T3 "cccccccccccccccc3"

Test(tokens, old_format_means_what_it_did)
{
        struct xb_tokens t = { 0 };
        struct xb_err err = { 0 };

        cr_assert_eq(xb_tokens_parse(T1 "\n" T2 " " T3 "\r\n\n", &t, &err), 0, "%s", err.msg);
        cr_assert_eq(t.n, 3);
        cr_assert_str_eq(t.token[1], T2);
        cr_assert_str_eq(t.token[2], T3);
        cr_assert_null(t.token[3]);
        for (size_t i = 0; i < 3; i++)
                cr_assert(!t.admin[i] && !t.name[i]);
        xb_tokens_free(&t);
}

Test(tokens, a_lone_token_is_the_admin)
{
        struct xb_tokens t = { 0 };
        struct xb_err err = { 0 };

        cr_assert_eq(xb_tokens_parse("# the only one\n" T1 "\n", &t, &err), 0);
        cr_assert_eq(t.n, 1);
        cr_assert(t.admin[0]);
        xb_tokens_free(&t);
}

Test(tokens, words_after_a_token)
{
        struct xb_tokens t = { 0 };
        struct xb_err err = { 0 };

        cr_assert_eq(xb_tokens_parse(T1 " name=ci\n" T2 "\tadmin name=ops # comment admin\n" T3 " #admin\n", &t,
                                     &err), 0, "%s", err.msg);
        cr_assert_eq(t.n, 3);
        cr_assert(!t.admin[0] && t.admin[1] && !t.admin[2]);
        cr_assert_str_eq(t.name[0], "ci");
        cr_assert_str_eq(t.name[1], "ops");
        cr_assert_null(t.name[2]);
        xb_tokens_free(&t);
}

Test(tokens, errors_name_the_line)
{
        static const struct {
                const char *text, *want;
        } bad[] = {
                { T1 "\nadmin " T2 "\n", "line 2: `admin` must follow a token" },
                { T1 " name=1x\n", "a name is a letter" },
                { T1 " name=a/b\n", "a name is a letter" },
                { T1 " name=x\n" T2 " name=x\n", "line 2: the name x is taken" },
                { T1 " short\n", "at least 16 characters" },
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct xb_tokens t = { 0 };
                struct xb_err err = { 0 };

                cr_assert_lt(xb_tokens_parse(bad[i].text, &t, &err), 0, "%s", bad[i].text);
                cr_assert(strstr(err.msg, bad[i].want), "%s: %s", bad[i].text, err.msg);
                xb_tokens_free(&t);
        }
}

Test(metrics, histogram_edges)
{
        struct xb_hist h = { 0 };

        xb_hist_observe(&h, 1000);          /* on the edge: in le=0.001 */
        xb_hist_observe(&h, 1001);
        xb_hist_observe(&h, 300000000);     /* 300 s: the last finite bucket */
        xb_hist_observe(&h, 300000001);
        cr_assert_eq(h.bucket[0], 1);
        cr_assert_eq(h.bucket[1], 1);
        cr_assert_eq(h.bucket[XB_HIST_NB - 1], 1);
        cr_assert_eq(h.bucket[XB_HIST_NB], 1);
        cr_assert_eq(h.count, 4);
        cr_assert_str_eq(xb_hist_bound_le[XB_HIST_NB - 1], "300");
}

Test(tokens, quota_words)
{
        struct xb_tokens t = { 0 };
        struct xb_err err = { 0 };
        struct xb_quota dflt = { .sandboxes = 9, .rate = 7 };

        cr_assert_eq(xb_tokens_parse(T1 " sandboxes=4 execs=8 memory=8G disk=1G name=a\n" T2 " admin\n", &t, &err),
                     0, "%s", err.msg);
        cr_assert_eq(t.n, 2);
        cr_assert_eq(t.quota[0].sandboxes, 4);
        cr_assert_eq(t.quota[0].execs, 8);
        cr_assert_eq(t.quota[0].memory, 8ULL << 30);
        cr_assert_eq(t.quota[0].disk, 1ULL << 30);
        cr_assert_eq(t.quota[1].sandboxes, 0);
        cr_assert_str_eq(t.name[0], "a");
        xb_quota_merge(&dflt, &t.quota[0]);
        cr_assert_eq(dflt.sandboxes, 4);    /* the token's own wins */
        cr_assert_eq(dflt.rate, 7);         /* the default fills the rest */
        xb_tokens_free(&t);
        cr_assert_lt(xb_tokens_parse(T1 " rate=fast\n", &t, &err), 0);
        cr_assert(strstr(err.msg, "line 1") && strstr(err.msg, "rate"), "%s", err.msg);
        xb_tokens_free(&t);
        cr_assert_lt(xb_quota_parse("sandboxes=2,bogus=1", &dflt, &err), 0);
}
