/* What waits for a human: a connection to a name the policy marks `ask`,
 * and a secret asked for from inside (net/egress.h's hooks, net/ask.c).
 * Each approval is bounded (a timer denies it), counted per sandbox and in
 * all, listed per tenant, and decided once: allow (for a secret, with its
 * value, which becomes the tenant's secret and is attached to the asking
 * sandbox) or deny. The requester's connection going away cancels it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "core/core.h"

#define APPROVALS_PER_SANDBOX 8
#define APPROVALS_TOTAL 1024
#define APPROVAL_TIMEOUT_DEFAULT_MS (120u * 1000)

struct xb_approval {
        struct xb_approval *next;
        struct xb_core *core;
        char id[XB_SANDBOX_ID_LEN + 1];
        uint64_t handle;
        int tenant;
        char sbx[XB_SANDBOX_ID_LEN + 1];
        enum xb_ask_kind kind;
        char name[256];
        uint16_t port;
        char *hosts, *header, *reason;
        uint64_t created_ms, expires_ms;   /* Unix time */
        struct xb_timer timer;
        xb_net_answer_fn *answer;
        void *arg;
};

struct xb_approvals {
        struct xb_approval *list;
        unsigned n;
        uint64_t next_handle;
        uint64_t asked, allowed, denied, timed_out;
};

static uint64_t
unix_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct xb_approvals *
approvals(struct xb_core *s)
{
        if (!s->approvals)
                s->approvals = calloc(1, sizeof(*s->approvals));
        return s->approvals;
}

static void
unlink_free(struct xb_core *s, struct xb_approval *a)
{
        struct xb_approvals *as = s->approvals;

        for (struct xb_approval **p = &as->list; *p; p = &(*p)->next)
                if (*p == a) {
                        *p = a->next;
                        as->n--;
                        break;
                }
        xb_timer_stop(&a->timer);
        free(a->hosts);
        free(a->header);
        free(a->reason);
        free(a);
}

/* Answer and forget a: the answer may close the requester, which then
 * finds nothing to cancel. */
static void
finish(struct xb_approval *a, bool allow, const char *why, const char *placeholder)
{
        xb_net_answer_fn *fn = a->answer;
        void *arg = a->arg;
        struct xb_core *s = a->core;

        unlink_free(s, a);
        fn(arg, allow, why, placeholder);
}

static void
on_timeout(struct xb_timer *t)
{
        struct xb_approval *a = t->data;
        char why[96];

        a->core->approvals->timed_out++;
        snprintf(why, sizeof(why), "no human approved it within %llu s",
                 (unsigned long long)((a->expires_ms - a->created_ms + 999) / 1000));
        finish(a, false, why, NULL);
}

int
xb_core_approval_ask(struct xb_core *s, const char *sandbox_id, const struct xb_net_ask *q, xb_net_answer_fn *answer,
                     void *arg, struct xb_approval_ref *ref, char *why, size_t whylen)
{
        struct xb_approvals *as = approvals(s);
        struct xb_approval *a;
        struct xb_sbx *x = NULL;
        uint64_t tmo = s->o.approval_timeout_ms ? s->o.approval_timeout_ms : APPROVAL_TIMEOUT_DEFAULT_MS;
        unsigned mine = 0;

        if (!as) {
                snprintf(why, whylen, "out of memory");
                return -ENOMEM;
        }
        x = xb_sbx_find(s, sandbox_id, XB_TENANT_ANY);
        if (!x) {
                snprintf(why, whylen, "the sandbox is going");
                return -ENOENT;
        }
        for (a = as->list; a; a = a->next)
                mine += !strcmp(a->sbx, sandbox_id);
        if (mine >= APPROVALS_PER_SANDBOX || as->n >= APPROVALS_TOTAL) {
                snprintf(why, whylen, "too many requests already wait for a human (at most %d per sandbox)",
                         APPROVALS_PER_SANDBOX);
                return -EBUSY;
        }
        /* A sandbox may ask for less time than the server's, not more. */
        if (q->timeout_ms && q->timeout_ms < tmo)
                tmo = q->timeout_ms < 1000 ? 1000 : q->timeout_ms;
        a = calloc(1, sizeof(*a));
        if (!a || xb_random_id(a->id, sizeof(a->id)) < 0) {
                free(a);
                snprintf(why, whylen, "out of memory");
                return -ENOMEM;
        }
        a->core = s;
        a->handle = ++as->next_handle;
        a->tenant = x->tenant;
        snprintf(a->sbx, sizeof(a->sbx), "%s", x->id);
        a->kind = q->kind;
        snprintf(a->name, sizeof(a->name), "%s", q->name);
        a->port = q->port;
        a->hosts = q->hosts ? strdup(q->hosts) : NULL;
        a->header = q->header ? strdup(q->header) : NULL;
        a->reason = q->reason ? strdup(q->reason) : NULL;
        a->created_ms = unix_ms();
        a->expires_ms = a->created_ms + tmo;
        a->answer = answer;
        a->arg = arg;
        a->next = as->list;
        as->list = a;
        as->n++;
        as->asked++;
        xb_timer_start(s->loop, &a->timer, tmo, on_timeout, a);
        xb_info("sandbox %s waits for a human: %s %s", a->sbx, a->kind == XB_ASK_SECRET ? "secret" : "egress to",
                a->name);
        ref->handle = a->handle;
        snprintf(ref->id, sizeof(ref->id), "%s", a->id);
        ref->expires_ms = a->expires_ms;
        return 0;
}

void
xb_core_approval_cancel(struct xb_core *s, uint64_t handle)
{
        if (!s->approvals)
                return;
        for (struct xb_approval *a = s->approvals->list; a; a = a->next)
                if (a->handle == handle) {
                        unlink_free(s, a);
                        return;
                }
}

void *
xb_core_approval_arg(struct xb_core *s, const char *sandbox_id, const char *name, xb_net_answer_fn *answer)
{
        for (struct xb_approval *a = s->approvals ? s->approvals->list : NULL; a; a = a->next)
                if (a->kind == XB_ASK_SECRET && a->answer == answer && !strcmp(a->sbx, sandbox_id) &&
                    !strcmp(a->name, name))
                        return a->arg;
        return NULL;
}

/* net/'s hooks: code inside asks through its proxy. */
static int
hook_ask(void *ctx, const char *sandbox_id, const struct xb_net_ask *q, xb_net_answer_fn *answer, void *arg,
         uint64_t *id, char *why, size_t whylen)
{
        struct xb_approval_ref ref;
        int r = xb_core_approval_ask(ctx, sandbox_id, q, answer, arg, &ref, why, whylen);

        if (r == 0)
                *id = ref.handle;
        return r;
}

static void
hook_cancel(void *ctx, uint64_t id)
{
        xb_core_approval_cancel(ctx, id);
}

void
xb_core_approvals_open(struct xb_core *s)
{
        struct xb_net_hooks h = { .ctx = s, .ask = hook_ask, .cancel = hook_cancel };

        if (s->net)
                xb_netsys_set_hooks(s->net, &h);
}

void
xb_core_approvals_free(struct xb_core *s)
{
        if (!s->approvals)
                return;
        while (s->approvals->list)
                finish(s->approvals->list, false, "the server is stopping", NULL);
        free(s->approvals);
        s->approvals = NULL;
}

static json_t *
approval_json(const struct xb_approval *a)
{
        uint64_t now = unix_ms();
        json_t *j = json_pack("{s:s,s:s,s:s,s:I,s:I,s:f}", "id", a->id, "kind",
                              a->kind == XB_ASK_SECRET ? "secret" : "egress", "sandbox_id", a->sbx, "created_ms",
                              (json_int_t)a->created_ms, "expires_ms", (json_int_t)a->expires_ms, "expires_in_s",
                              a->expires_ms > now ? (double)(a->expires_ms - now) / 1000.0 : 0.0);
        char reason[512];

        if (a->kind == XB_ASK_SECRET) {
                json_object_set_new(j, "name", json_string(a->name));
                if (a->hosts)
                        json_object_set_new(j, "hosts", json_string(a->hosts));
                if (a->header)
                        json_object_set_new(j, "header", json_string(a->header));
                snprintf(reason, sizeof(reason), "the sandbox asks for the secret %s%s%s", a->name,
                         a->reason ? ": " : "", a->reason ? a->reason : "");
                json_object_set_new(j, "context", json_pack("{s:b}", "exists",
                                                            xb_core_secret_find(a->core, a->tenant, a->name) != NULL));
        } else {
                json_object_set_new(j, "host", json_string(a->name));
                json_object_set_new(j, "port", json_integer(a->port));
                snprintf(reason, sizeof(reason), "the sandbox connects to %s:%u, which its network policy marks ask",
                         a->name, a->port);
        }
        json_object_set_new(j, "reason", json_string(reason));
        return j;
}

json_t *
xb_core_approvals_json(struct xb_core *s, int tenant)
{
        json_t *l = json_array();

        for (struct xb_approval *a = s->approvals ? s->approvals->list : NULL; a; a = a->next)
                if (tenant == XB_TENANT_ANY || a->tenant == tenant)
                        json_array_append_new(l, approval_json(a));
        return json_pack("{s:o}", "approvals", l);
}

void
xb_core_approvals_counts(const struct xb_core *s, uint64_t c[5])
{
        const struct xb_approvals *as = s->approvals;

        c[0] = as ? as->n : 0;
        c[1] = as ? as->asked : 0;
        c[2] = as ? as->allowed : 0;
        c[3] = as ? as->denied : 0;
        c[4] = as ? as->timed_out : 0;
}

/* The asking sandbox's policy plus allow host: `remember`. */
static void
remember_host(struct xb_sbx *x, const char *host)
{
        json_t *j = xb_netpol_json(xb_net_policy(x->net)), *allow = json_object_get(j, "allow");
        struct xb_netpol *p = NULL;
        struct xb_err err = { 0 };

        json_array_append_new(allow, json_string(host));
        if (xb_netpol_parse(j, &p, &err) == 0)
                xb_sbx_set_network(x, p, &err);
        else
                xb_warn("sandbox %s: cannot remember %s: %s", x->id, host, err.msg);
        xb_netpol_unref(p);
        json_decref(j);
}

/* A secret granted: made from the decision (or the request's proposal)
 * when it carries a value, else the tenant's existing one. */
static int
grant_secret(struct xb_core *s, struct xb_approval *a, struct xb_sbx *x, json_t *body, char *ph, size_t phlen,
             struct xb_err *err)
{
        json_t *value = json_object_get(body, "value");
        struct xb_secret *sec;

        if (value && !json_is_null(value)) {
                json_t *spec = json_pack("{s:s,s:O}", "name", a->name, "value", value), *hosts, *header;

                hosts = json_object_get(body, "hosts");
                if (hosts && !json_is_null(hosts))
                        json_object_set(spec, "hosts", hosts);
                else if (a->hosts) {
                        json_t *arr = json_array();
                        char *dup = strdup(a->hosts), *save = NULL;

                        for (char *t = dup ? strtok_r(dup, ", ", &save) : NULL; t; t = strtok_r(NULL, ", ", &save))
                                json_array_append_new(arr, json_string(t));
                        free(dup);
                        json_object_set_new(spec, "hosts", arr);
                }
                header = json_object_get(body, "header");
                if (header && !json_is_null(header))
                        json_object_set(spec, "header", header);
                else if (a->header)
                        json_object_set_new(spec, "header", json_string(a->header));
                if (xb_secret_parse(spec, a->tenant, &sec, err) < 0) {
                        json_decref(spec);
                        err->ecode = XB_E_INVALID_SECRET;
                        return -1;
                }
                json_decref(spec);
                if (xb_core_secret_put(s, sec, err) < 0)
                        return -1;
        }
        sec = xb_core_secret_find(s, a->tenant, a->name);
        if (!sec)
                return xb_err_code(err, XB_E_INVALID_SECRET, EINVAL, NULL,
                                   "there is no secret %s yet: allow it with its `value` (and `hosts`)", a->name);
        return xb_sbx_add_secret(x, sec, ph, phlen, err);
}

int
xb_core_approval_decide(struct xb_core *s, int tenant, const char *id, json_t *body, json_t **ret, struct xb_err *err)
{
        struct xb_approval *a = s->approvals ? s->approvals->list : NULL;
        const char *decision = json_string_value(json_object_get(body, "decision"));
        json_t *rem = json_object_get(body, "remember");
        char ph[XB_SECRET_PLACEHOLDER_LEN + 1] = "";
        struct xb_sbx *x;
        bool allow;

        for (; a; a = a->next)
                if (!strcmp(a->id, id ? id : "") && (tenant == XB_TENANT_ANY || a->tenant == tenant))
                        break;
        if (!a)
                return xb_err_code(err, XB_E_APPROVAL_NOT_FOUND, ENOENT, NULL, "no approval `%.32s` waits",
                                   id ? id : "");
        if (!decision || (strcmp(decision, "allow") && strcmp(decision, "deny")))
                return xb_err_code(err, XB_E_INVALID, EINVAL, NULL, "`decision` must be \"allow\" or \"deny\"");
        if (rem && !json_is_null(rem) && !json_is_boolean(rem))
                return xb_err_code(err, XB_E_INVALID, EINVAL, NULL, "`remember` must be true or false");
        allow = !strcmp(decision, "allow");
        x = xb_sbx_find(s, a->sbx, a->tenant);
        if (allow && (!x || !x->net)) {
                finish(a, false, "the sandbox is gone", NULL);
                return xb_err_code(err, XB_E_SANDBOX_NOT_FOUND, ENOENT, NULL, "the sandbox is gone");
        }
        if (allow && a->kind == XB_ASK_SECRET && grant_secret(s, a, x, body, ph, sizeof(ph), err) < 0)
                return -1;
        if (allow && a->kind == XB_ASK_EGRESS && json_is_true(rem))
                remember_host(x, a->name);
        *ret = json_pack("{s:s,s:s,s:s,s:s,s:b}", "id", a->id, "decision", decision, "kind",
                         a->kind == XB_ASK_SECRET ? "secret" : "egress", "name", a->name, "remembered",
                         allow && a->kind == XB_ASK_EGRESS && json_is_true(rem));
        if (allow)
                s->approvals->allowed++;
        else
                s->approvals->denied++;
        finish(a, allow, allow ? "a human allowed it" : "a human denied it", ph[0] ? ph : NULL);
        return 0;
}
