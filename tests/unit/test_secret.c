/* Unit tests for net/secret.h: what a secret may be (names, values that
 * could split a header, header templates, hosts), and the swap in a
 * request head: only for the secret's hosts, the client's header of the
 * same name replaced, placeholders anywhere in the head, revocation; and
 * the policy's ask list. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_int.h"
#include "net/secret.h"

static struct xb_secret *
make(const char *json)
{
        json_t *j = json_loads(json, 0, NULL);
        struct xb_secret *s = NULL;
        struct xb_err err = { 0 };
        int r;

        cr_assert(j, "%s", json);
        r = xb_secret_parse(j, 3, &s, &err);
        json_decref(j);
        return r < 0 ? NULL : s;
}

Test(secret, parse_refuses_what_could_break_a_head)
{
        static const char *const bad[] = {
                "{\"name\": \"1X\", \"value\": \"v\", \"hosts\": [\"a.test\"]}",
                "{\"name\": \"A-B\", \"value\": \"v\", \"hosts\": [\"a.test\"]}",
                "{\"name\": \"EXECBOX_X\", \"value\": \"v\", \"hosts\": [\"a.test\"]}",
                "{\"name\": \"X\", \"value\": \"v\\r\\nEvil: 1\", \"hosts\": [\"a.test\"]}",
                "{\"name\": \"X\", \"value\": \"\", \"hosts\": [\"a.test\"]}",
                "{\"name\": \"X\", \"value\": \"v\", \"hosts\": []}",
                "{\"name\": \"X\", \"value\": \"v\", \"hosts\": [\"10.0.0.0/8\"]}",
                "{\"name\": \"X\", \"value\": \"v\", \"hosts\": [\"bad host\"]}",
                "{\"name\": \"X\", \"value\": \"v\", \"hosts\": [\"a.test\"], \"header\": \"Authorization: x\"}",
                "{\"name\": \"X\", \"value\": \"v\", \"hosts\": [\"a.test\"], \"header\": \"A: {value}{value}\"}",
                "{\"name\": \"X\", \"value\": \"v\", \"hosts\": [\"a.test\"], \"header\": \"A B: {value}\"}",
                "{\"name\": \"X\", \"value\": \"v\", \"hosts\": [\"a.test\"], \"header\": \"A: {value}\\nB: c\"}",
                "{\"name\": \"X\", \"value\": \"v\", \"hosts\": [\"a.test\"], \"other\": 1}",
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_expect_null(make(bad[i]), "accepted %s", bad[i]);
}

Test(secret, json_never_holds_the_value)
{
        struct xb_secret *s = make("{\"name\": \"TOK\", \"value\": \"s3cr3t-value\", \"hosts\": [\"a.test\", "
                                   "\"*.b.test\"], \"header\": \"Authorization: Bearer {value}\"}");
        json_t *j;
        char *txt;

        cr_assert(s);
        j = xb_secret_json(s);
        txt = json_dumps(j, 0);
        cr_expect_null(strstr(txt, "s3cr3t-value"), "%s", txt);
        cr_expect(strstr(txt, "*.b.test"));
        free(txt);
        json_decref(j);
        cr_expect(xb_secret_for_host(s, "a.test"));
        cr_expect(xb_secret_for_host(s, "x.b.test"));
        cr_expect(!xb_secret_for_host(s, "b.test"));
        cr_expect(!xb_secret_for_host(s, "a.test.evil"));
        xb_secret_unref(s);
}

static char *
inject(struct xb_net *n, const char *host, const char *head)
{
        char *out = NULL;
        size_t len = 0;
        int r = xb_net_inject_head(n, host, head, strlen(head), &out, &len);

        cr_assert(r >= 0);
        if (!out)
                return NULL;
        out = realloc(out, len + 1);
        out[len] = '\0';
        return out;
}

Test(secret, head_swap_for_its_hosts_only)
{
        struct xb_net *n = calloc(1, sizeof(*n));
        struct xb_secret *s = make("{\"name\": \"TOK\", \"value\": \"VALUE42\", \"hosts\": [\"a.test\"], "
                                   "\"header\": \"Authorization: Bearer {value}\"}");
        char ph[XB_SECRET_PLACEHOLDER_LEN + 1], head[512], *o;

        cr_assert(n && s);
        cr_assert_eq(xb_net_add_secret(n, s, ph), 0);
        cr_expect_eq(strlen(ph), XB_SECRET_PLACEHOLDER_LEN);
        cr_expect_eq(strncmp(ph, "execbox-secret-", 15), 0);
        snprintf(head, sizeof(head), "GET /x?k=%s HTTP/1.1\r\nHost: a.test\r\nauthorization: token %s\r\n"
                 "X-K: %s%s\r\n\r\n", ph, ph, ph, ph);
        o = inject(n, "a.test", head);
        cr_assert(o);
        cr_expect(strstr(o, "GET /x?k=VALUE42 HTTP/1.1\r\n"), "%s", o);
        cr_expect(strstr(o, "X-K: VALUE42VALUE42\r\n"), "%s", o);
        cr_expect(strstr(o, "Authorization: Bearer VALUE42\r\n\r\n"), "%s", o);
        cr_expect_null(strstr(o, "token"), "%s", o);
        cr_expect_null(strstr(o, "execbox-secret-"), "%s", o);
        free(o);
        /* Another host: nothing applies, the head is kept as it is. */
        cr_expect_null(inject(n, "b.test", head));
        /* Revoked (deleted): nothing applies. */
        s->revoked = true;
        cr_expect_null(inject(n, "a.test", head));
        xb_secret_unref(s);
        xb__net_secrets_free(n);
        free(n);
}

/* A binding is by name: rotated in place, waiting (no secret) sends the
 * placeholder as it is, restored from a record with its own placeholder. */
Test(secret, bindings_rotate_wait_and_restore)
{
        struct xb_net *n = calloc(1, sizeof(*n)), *m = calloc(1, sizeof(*m));
        struct xb_secret *v1 = make("{\"name\": \"TOK\", \"value\": \"ONE111\", \"hosts\": [\"a.test\"]}");
        struct xb_secret *v2 = make("{\"name\": \"TOK\", \"value\": \"TWO222\", \"hosts\": [\"a.test\"]}");
        char ph[XB_SECRET_PLACEHOLDER_LEN + 1], again[XB_SECRET_PLACEHOLDER_LEN + 1], head[256], *o;
        const char *name, *bph;
        bool waited = false, waiting = false;

        cr_assert(n && m && v1 && v2);
        cr_assert_eq(xb_net_add_secret(n, v1, ph), 0);
        snprintf(head, sizeof(head), "GET /?k=%s HTTP/1.1\r\nHost: a.test\r\n\r\n", ph);
        o = inject(n, "a.test", head);
        cr_expect(o && strstr(o, "k=ONE111"), "%s", o);
        free(o);
        /* Rotation: the same binding, the new value. */
        cr_expect_eq(xb_net_rebind_secret(n, "TOK", v2, &waited), 1);
        cr_expect(!waited);
        o = inject(n, "a.test", head);
        cr_expect(o && strstr(o, "k=TWO222"), "%s", o);
        free(o);
        /* Added again (a grant): the placeholder it had. */
        cr_assert_eq(xb_net_add_secret(n, v2, again), 0);
        cr_expect_str_eq(again, ph);
        cr_expect_null(xb_net_secret_binding(n, 1, NULL, NULL));
        /* Deleted: waiting, nothing swapped, and listed as waiting. */
        cr_expect_eq(xb_net_rebind_secret(n, "TOK", NULL, NULL), 1);
        cr_expect_null(inject(n, "a.test", head));
        name = xb_net_secret_binding(n, 0, &bph, &waiting);
        cr_expect(name && !strcmp(name, "TOK") && waiting && !strcmp(bph, ph));
        cr_expect(!xb_net_secret_host(n, "a.test"));
        /* Another name is not touched. */
        cr_expect_eq(xb_net_rebind_secret(n, "OTHER", v1, NULL), 0);
        /* Restored (a restarted daemon): waiting, then bound with the same placeholder. */
        cr_expect_eq(xb_net_restore_secret(m, "TOK", "not-a-placeholder"), -EINVAL);
        cr_expect_eq(xb_net_restore_secret(m, "1BAD", ph), -EINVAL);
        cr_assert_eq(xb_net_restore_secret(m, "TOK", ph), 0);
        cr_expect_eq(xb_net_restore_secret(m, "TOK", ph), -EEXIST);
        cr_expect_null(inject(m, "a.test", head));
        cr_expect_eq(xb_net_rebind_secret(m, "TOK", v1, &waited), 1);
        cr_expect(waited);
        o = inject(m, "a.test", head);
        cr_expect(o && strstr(o, "k=ONE111"), "%s", o);
        free(o);
        xb_secret_unref(v1);
        xb_secret_unref(v2);
        xb__net_secrets_free(n);
        xb__net_secrets_free(m);
        free(n);
        free(m);
}

Test(secret, policy_ask_list)
{
        json_t *j = json_loads("{\"mode\": \"allowlist\", \"allow\": [\"a.test\"], \"ask\": [\"*.b.test\"]}", 0,
                               NULL);
        struct xb_netpol *p = NULL;
        struct xb_err err = { 0 };
        json_t *out;

        cr_assert_eq(xb_netpol_parse(j, &p, &err), 0, "%s", err.msg);
        cr_expect_eq(p->nask, 1);
        out = xb_netpol_json(p);
        cr_expect_str_eq(json_string_value(json_array_get(json_object_get(out, "ask"), 0)), "*.b.test");
        json_decref(out);
        xb_netpol_unref(p);
        json_decref(j);
        j = json_loads("{\"mode\": \"open\", \"ask\": [\"b.test\"]}", 0, NULL);
        cr_expect_lt(xb_netpol_parse(j, &p, &err), 0);
        json_decref(j);
        j = json_loads("{\"mode\": \"allowlist\", \"ask\": [\"10.0.0.0/8\"]}", 0, NULL);
        cr_expect_lt(xb_netpol_parse(j, &p, &err), 0);
        json_decref(j);
}
