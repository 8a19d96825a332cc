/* Published ports: the host names routed to a sandbox's port, port
 * numbers, and share tokens (signed, bound to sandbox and port, expiring). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "core/ports.h"
#include "transport/http.h"

Test(ports, host_names)
{
        char id[32];
        unsigned port = 0;

        cr_assert(xb_host_sandbox("8080-abc123.sbx.test", "sbx.test", id, sizeof(id), &port));
        cr_assert_str_eq(id, "abc123");
        cr_assert_eq(port, 8080);
        cr_assert(xb_host_sandbox("1-ABC.SBX.Test:8000", "sbx.test", id, sizeof(id), &port));
        cr_assert_str_eq(id, "abc");
        cr_assert_eq(port, 1);
        cr_assert(xb_host_sandbox("65535-x.a.b.c", "a.b.c", id, sizeof(id), &port));
        static const char *const bad[] = {
                "sbx.test",
                "8080.sbx.test",
                "8080-.sbx.test",
                "0-abc.sbx.test",
                "65536-abc.sbx.test",
                "08080-abc.sbx.test",
                "-abc.sbx.test",
                "8080-abc.xsbx.test",
                "8080-abc.sbx.test.evil",
                "8080-a_b.sbx.test",
                "8080-a.b.sbx.test",
                "8080-abc.sbx.test:80x",
                "8080abc.sbx.test",
                "123456-abc.sbx.test",
                "",
                NULL,
        };
        for (size_t i = 0; bad[i]; i++)
                cr_assert(!xb_host_sandbox(bad[i], "sbx.test", id, sizeof(id), &port), "%s", bad[i]);
        cr_assert(!xb_host_sandbox(NULL, "sbx.test", id, sizeof(id), &port));
        cr_assert(!xb_host_sandbox("8080-abc.sbx.test", NULL, id, sizeof(id), &port));
        cr_assert(!xb_host_sandbox("8080-abcdefgh.sbx.test", "sbx.test", id, 4, &port));
}

Test(ports, port_numbers)
{
        unsigned p = 0;

        cr_assert_eq(xb_ports_parse("8080", &p, NULL), 0);
        cr_assert_eq(p, 8080);
        cr_assert_eq(xb_ports_parse("65535", &p, NULL), 0);
        static const char *const bad[] = { "0", "65536", "", "-1", "+1", "8080a", " 80", "123456", "1e3", NULL };
        for (size_t i = 0; bad[i]; i++) {
                struct xb_err err = { 0 };

                cr_assert_lt(xb_ports_parse(bad[i], &p, &err), 0, "%s", bad[i]);
                cr_assert_eq(err.ecode, XB_E_INVALID_PORT);
        }
}

/* A stand-in HMAC: the tests need a keyed, message-bound signature only. */
static int
fake_sign(const char *msg, size_t len, char out[65])
{
        unsigned long h = 5381;

        for (size_t i = 0; i < len; i++)
                h = h * 33 + (unsigned char)msg[i];
        snprintf(out, 65, "%064lx", h);
        return 0;
}

Test(ports, share_tokens)
{
        struct xb_core c = { .o = { .sign = fake_sign } };
        char token[XB_SHARE_TOKEN_MAX], other[XB_SHARE_TOKEN_MAX];
        struct xb_err err = { 0 };
        uint64_t exp = 0;

        cr_assert_eq(xb_ports_share(&c, "abc", 8080, 60, token, &exp, &err), 0);
        cr_assert_geq(exp, (uint64_t)time(NULL) + 59);
        cr_assert_eq(xb_ports_share_check(&c, "abc", 8080, token, &err), 0);
        err.ecode = 0;
        cr_assert_lt(xb_ports_share_check(&c, "abc", 8081, token, &err), 0);
        cr_assert_eq(err.ecode, XB_E_BAD_SHARE);
        cr_assert_lt(xb_ports_share_check(&c, "abd", 8080, token, &err), 0);
        cr_assert_lt(xb_ports_share_check(&c, "abc", 8080, NULL, &err), 0);
        cr_assert_lt(xb_ports_share_check(&c, "abc", 8080, "", &err), 0);
        /* a later expiry with the old signature */
        snprintf(other, sizeof(other), "%llu%s", (unsigned long long)exp + 1, strchr(token, '.'));
        cr_assert_lt(xb_ports_share_check(&c, "abc", 8080, other, &err), 0);
        cr_assert_eq(err.ecode, XB_E_BAD_SHARE);
        /* signed, but past */
        {
                char msg[128], sig[65];
                unsigned long long past = (unsigned long long)time(NULL) - 10;
                int n = snprintf(msg, sizeof(msg), "port\n%s\n%u\n%llu", "abc", 8080u, past);

                fake_sign(msg, (size_t)n, sig);
                snprintf(other, sizeof(other), "%llu.%s", past, sig);
        }
        err.ecode = 0;
        cr_assert_lt(xb_ports_share_check(&c, "abc", 8080, other, &err), 0);
        cr_assert_eq(err.ecode, XB_E_SHARE_EXPIRED);
        /* no signer: no links */
        c.o.sign = NULL;
        cr_assert_lt(xb_ports_share(&c, "abc", 8080, 60, token, &exp, &err), 0);
}
