/* Operations on a tenant's secrets: create (or replace), list (and which
 * a sandbox holds), delete, and request: a sandbox's owner, the model,
 * asks a human for one. No reply ever holds a value (net/secret.h), and
 * nothing here decides an approval: that is op_approvals.c's, for humans. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/loop.h"
#include "core/core.h"
#include "ops/jsonv.h"
#include "ops/op_args.h"
#include "ops/ops.h"

/* How long a request waits for the human by default, then answers
 * pending: under the 60 s many MCP clients give a tool call. */
#define WAIT_DEFAULT_MS (30u * 1000)
#define WAIT_MAX_S 600
#define REASON_MAX 500
#define HOSTS_TEXT_MAX 1024

static void
op_create(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        struct xb_err err = { 0 };
        struct xb_secret *sec;
        json_t *j;

        if (!s->net) {
                xb_call_failf(c, XB_E_NETWORK_UNAVAILABLE, NULL,
                              "this server gives sandboxes no network, so no secrets");
                return;
        }
        if (xb_secret_parse(args, tenant, &sec, &err) < 0) {
                err.ecode = err.code == ENOMEM ? XB_E_NOMEM : XB_E_INVALID_SECRET;
                xb_call_fail(c, &err);
                return;
        }
        j = xb_secret_json(sec);
        if (xb_core_secret_put(s, sec, &err) < 0) {
                json_decref(j);
                xb_call_fail(c, &err);
                return;
        }
        xb_call_done(c, j);
}

/* With "sandbox_id": each secret says whether that sandbox holds it. */
static void
op_list(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        const char *id = json_string_value(json_object_get(args, "sandbox_id"));
        json_t *j = xb_core_secrets_json(s, tenant), *v;
        struct xb_sbx *x = NULL;
        size_t i;

        if (id && !(x = xb_sbx_find(s, id, tenant))) {
                json_decref(j);
                xb_op_no_sandbox(s, tenant, id, c);
                return;
        }
        json_array_foreach(json_object_get(j, "secrets"), i, v) {
                struct xb_secret *sec = xb_core_secret_find(s, tenant, json_string_value(json_object_get(v, "name")));

                if (x)
                        json_object_set_new(v, "attached", json_boolean(sec && x->net &&
                                                                        xb_net_holds_secret(x->net, sec, NULL)));
        }
        xb_call_done(c, j);
}

static void
op_delete(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        const char *name = json_string_value(json_object_get(args, "name"));
        struct xb_err err = { 0 };

        if (xb_core_secret_delete(s, tenant, name ? name : "", &err) < 0) {
                xb_call_fail(c, &err);
                return;
        }
        xb_call_done(c, NULL);
}

/* ---- request: ask a human for a secret ---- */

/* One request: the approval it waits on (core/approvals.c: the same one
 * code inside makes with $EXECBOX_API/secrets/NAME) and the call waiting
 * for it, if any. A call whose wait ends first answers pending and leaves
 * the approval to its own timeout, so the human keeps their whole time;
 * the next request for that name in that sandbox waits on it again. Freed
 * by the answer, which comes exactly once, or with its call's cancel. */
struct ask {
        struct xb_core *core;
        struct xb_call *call;   /* NULL: none waits now */
        struct xb_timer wait;
        struct xb_approval_ref ref;
        char name[XB_SECRET_NAME_MAX + 1];
};

static json_t *
granted_json(const char *name, const char *ph, const char *approval)
{
        json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s}", "status", "granted", "name", name, "env", name, "placeholder",
                              ph, "note", "New processes have it in $NAME. Use $NAME (or the placeholder) where the "
                              "secret goes; the proxy puts the value in only on the way to the secret's hosts. You "
                              "never see the value.");

        if (approval)
                json_object_set_new(j, "approval_id", json_string(approval));
        return j;
}

static json_t *
pending_json(const struct ask *a)
{
        uint64_t now, left = 0;
        struct timespec ts;
        char note[512];

        clock_gettime(CLOCK_REALTIME, &ts);
        now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
        if (a->ref.expires_ms > now)
                left = a->ref.expires_ms - now;
        snprintf(note, sizeof(note), "No human has answered yet. Tell the user that you asked for the secret %s "
                 "and why, and that they allow it with `execbox approvals allow %s` (the value on stdin) or POST "
                 "/v1/approvals/%s before it expires (expires_in_s). Then call request_secret with the same name "
                 "again: it waits on this request, or answers at once once it is granted.", a->name, a->ref.id,
                 a->ref.id);
        return json_pack("{s:s,s:s,s:s,s:f,s:s}", "status", "pending", "name", a->name, "approval_id", a->ref.id,
                         "expires_in_s", (double)left / 1000.0, "note", note);
}

static void
ask_answer(void *arg, bool allow, const char *why, const char *placeholder)
{
        struct ask *a = arg;
        struct xb_call *c = a->call;

        xb_timer_stop(&a->wait);
        if (c && allow)
                xb_call_done(c, granted_json(a->name, placeholder ? placeholder : "", a->ref.id));
        else if (c)
                xb_call_failf(c, XB_E_NOT_APPROVED, NULL, "the secret %s was not granted (%s)", a->name,
                              why ? why : "denied");
        free(a);
}

/* The waiting call answers pending; the approval waits on without it. */
static void
ask_detach(struct ask *a)
{
        struct xb_call *c = a->call;

        xb_timer_stop(&a->wait);
        a->call = NULL;
        xb_call_on_cancel(c, NULL, NULL);
        xb_call_done(c, pending_json(a));
}

static void
ask_waited(struct xb_timer *t)
{
        ask_detach(t->data);
}

/* The client left: so did the request. */
static void
ask_cancelled(void *owner)
{
        struct ask *a = owner;

        xb_timer_stop(&a->wait);
        xb_core_approval_cancel(a->core, a->ref.handle);
        free(a);
}

static void
ask_wait(struct ask *a, struct xb_call *c, uint64_t wait_ms)
{
        a->call = c;
        xb_call_on_cancel(c, ask_cancelled, a);
        xb_timer_start(a->core->loop, &a->wait, wait_ms, ask_waited, a);
}

/* hosts as the approval shows them ("a.test,b.test"); false when too long. */
static bool
hosts_text(const char *const *hosts, size_t n, char *out, size_t cap)
{
        size_t o = 0;

        out[0] = '\0';
        for (size_t i = 0; i < n; i++) {
                int w = snprintf(out + o, cap - o, "%s%s", i ? "," : "", hosts[i]);

                if (w < 0 || (size_t)w >= cap - o)
                        return false;
                o += (size_t)w;
        }
        return true;
}

static int
request_args(json_t *args, const char **name, char *hosts, size_t hcap, const char **header, const char **reason,
             uint64_t *wait_ms, struct xb_err *err)
{
        static const char *const path[] = { "id", "name", NULL };
        static const char *const fields[] = { "hosts", "header", "reason", "wait_s", NULL };
        _cleanup_(xb_json_decrefp) json_t *body = xb_op_body(args, path);
        _cleanup_free_ const char **hv = NULL;
        size_t nh = 0;

        *name = json_string_value(json_object_get(args, "name"));
        if (!*name || !xb_secret_name_ok(*name))
                return xb_err_code(err, XB_E_INVALID, EINVAL, NULL, "`name` must be an environment variable name "
                                   "such as GITHUB_TOKEN (letters, digits and _, at most %d)", XB_SECRET_NAME_MAX);
        if (!body)
                return xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
        if (xb_jsonv_fields(body, fields, err) < 0 ||
            xb_jsonv_strv(body, "hosts", XB_SECRET_HOSTS_MAX, 253, &hv, &nh, err) < 0 ||
            xb_jsonv_str(body, "header", XB_SECRET_HEADER_MAX, header, err) < 0 ||
            xb_jsonv_str(body, "reason", REASON_MAX, reason, err) < 0 ||
            xb_jsonv_seconds(body, "wait_s", 0, WAIT_MAX_S, wait_ms, err) < 0) {
                err->ecode = XB_E_INVALID;
                return -EINVAL;
        }
        if (!hosts_text(hv, nh, hosts, hcap))
                return xb_err_code(err, XB_E_INVALID, EINVAL, NULL, "`hosts` is too long");
        return 0;
}

/* Already held: granted at once, nobody asked again. */
static bool
held(struct xb_core *s, struct xb_sbx *x, const char *name, struct xb_call *c)
{
        struct xb_secret *sec = xb_core_secret_find(s, x->tenant, name);
        char ph[XB_SECRET_PLACEHOLDER_LEN + 1];

        if (!sec || !x->net || !xb_net_holds_secret(x->net, sec, ph))
                return false;
        xb_call_done(c, granted_json(name, ph, NULL));
        return true;
}

static void
op_request(struct xb_core *s, int tenant, json_t *args, struct xb_call *c)
{
        const char *name = NULL, *header = NULL, *reason = NULL;
        char hosts[HOSTS_TEXT_MAX], why[160] = "";
        uint64_t wait_ms = WAIT_DEFAULT_MS;
        struct xb_err err = { 0 };
        struct xb_net_ask q = { .kind = XB_ASK_SECRET };
        struct xb_sbx *x;
        struct ask *a;

        if (request_args(args, &name, hosts, sizeof(hosts), &header, &reason, &wait_ms, &err) < 0) {
                xb_call_fail(c, &err);
                return;
        }
        if (!s->net) {
                xb_call_failf(c, XB_E_NETWORK_UNAVAILABLE, NULL,
                              "this server gives sandboxes no network, so no secrets");
                return;
        }
        x = xb_op_sandbox(s, tenant, args, c);
        if (!x || held(s, x, name, c))
                return;
        a = xb_core_approval_arg(s, x->id, name, ask_answer);
        if (a) {
                /* Asked again while it waits: the newer call waits on it. */
                if (a->call)
                        ask_detach(a);
                ask_wait(a, c, wait_ms);
                return;
        }
        a = calloc(1, sizeof(*a));
        if (!a) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        a->core = s;
        snprintf(a->name, sizeof(a->name), "%s", name);
        q.name = a->name;
        q.hosts = hosts[0] ? hosts : NULL;
        q.header = header;
        q.reason = reason;
        if (xb_core_approval_ask(s, x->id, &q, ask_answer, a, &a->ref, why, sizeof(why)) < 0) {
                free(a);
                xb_call_failf(c, XB_E_NOT_APPROVED, NULL, "the secret %s cannot be asked for: %s", name, why);
                return;
        }
        ask_wait(a, c, wait_ms);
}

const struct xb_op xb_ops_secrets[] = {
        { "secret_create", op_create },
        { "list_secrets", op_list },
        { "secret_delete", op_delete },
        { "request_secret", op_request },
        { NULL, NULL },
};
