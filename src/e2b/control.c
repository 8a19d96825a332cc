/* E2B's control plane (its API's sandbox routes): create, list, get,
 * kill, timeout, refresh, pause, resume and connect. X-API-KEY is an
 * execbox token and names its tenant; a tenant sees only its own
 * sandboxes. Errors are E2B's {"code": <status>, "message"}. What execbox
 * cannot do yet (volumes, MCP gateways, network rules) is refused with a
 * 400 that says so, never accepted and ignored.
 *
 * Timeouts: E2B's timeout is absolute (create, setTimeout and connect set
 * "ends at now + t", and neither use nor a running command moves it), so
 * an E2B sandbox has a fixed deadline in the engine (fixed_deadline), not
 * execbox's idle lease; --max-lifetime still caps it. autoPause
 * (lifecycle.onTimeout "pause") pauses it at that deadline instead, with
 * its memory and processes; only Sandbox.connect() (or resume) wakes it,
 * unless autoResume.enabled, where the next use does.
 *
 * Templates: "base" and "code-interpreter-v1" (also "code-interpreter")
 * are execbox's one host image; the interpreter's kernels start on the
 * first /execute. Any other name is 404, as an unknown template is. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/core.h"
#include "e2b/e2b_int.h"
#include "ops/jsonv.h"

#define LIST_LIMIT_DEFAULT 100
#define LIST_LIMIT_MAX 1000

static void
api_error(struct xb_req *r, unsigned status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
api_error(struct xb_req *r, unsigned status, const char *fmt, ...)
{
        char msg[600];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        xb_reply_json(r, status, json_pack("{s:i,s:s}", "code", (int)status, "message", msg));
}

/* The tenant of the request's key, or -1 after replying 401. */
static int
tenant_of(struct xb_req *r)
{
        int t = xb_req_tenant(r);

        if (t < 0)
                api_error(r, 401, "%s", xb_req_header(r, "X-API-KEY") || xb_req_header(r, "Authorization")
                                                ? "the API key is not one of this server's tokens"
                                                : "send an execbox token as the API key (E2B_API_KEY, X-API-KEY)");
        return t;
}

static json_t *
body_of(struct xb_req *r)
{
        size_t n = 0;
        const char *b = xb_req_body(r, &n);
        json_t *v;

        if (!n)
                return json_object();
        v = json_loadb(b, n, 0, NULL);
        if (!json_is_object(v)) {
                json_decref(v);
                api_error(r, 400, "the request body is not a JSON object");
                return NULL;
        }
        return v;
}

/* The sandbox's own (its record and the engine's), or NULL after 404. */
static struct e2b_sbx *
owned(struct xb_req *r, struct xb_e2b *e, int tenant, struct xb_sbx **ret_x)
{
        const char *id = xb_req_param(r, 0);
        struct e2b_sbx *s;

        s = id ? e2b_sbx_find(e, id, tenant) : NULL;
        if (!s && id && (*ret_x = e2b_engine_sbx(e, id)) && (*ret_x)->tenant == tenant && !(*ret_x)->pooled) {
                /* Made through REST or MCP: the SDK may use it too. */
                s = e2b_sbx_add(e, id, tenant);
                if (s) {
                        snprintf(s->template_id, sizeof(s->template_id), "base");
                        s->started_unix_ms = (*ret_x)->created_unix_ms;
                }
        }

        *ret_x = s ? e2b_engine_sbx(e, s->id) : NULL;
        if (!*ret_x) {
                api_error(r, 404, "sandbox \"%.64s\" not found", id ? id : "");
                return NULL;
        }
        return s;
}

static const char *
template_of(const char *name)
{
        if (!name || !strcmp(name, "base"))
                return "base";
        if (!strcmp(name, "code-interpreter-v1") || !strcmp(name, "code-interpreter") ||
            !strcmp(name, "code-interpreter-beta"))
                return "code-interpreter-v1";
        return NULL;
}

/* What create and connect answer: where and how to reach envd. */
static json_t *
sandbox_ref(const struct e2b_sbx *s)
{
        return json_pack("{s:s,s:s,s:s,s:s,s:s,s:n,s:n}", "templateID", s->template_id, "sandboxID", s->id, "clientID",
                         "execbox", "envdVersion", E2B_ENVD_VERSION, "envdAccessToken", s->token, "trafficAccessToken",
                         "domain");
}

/* Whether x's egress is open (the engine's policy, not what was asked). */
static bool
internet_of(const struct xb_sbx *x)
{
        _cleanup_(xb_json_decrefp) json_t *n = xb_sbx_network_json(x);
        const char *mode = json_string_value(json_object_get(n, "mode"));

        return mode && !strcmp(mode, "open");
}

static json_t *
sandbox_detail(const struct e2b_sbx *s, const struct xb_sbx *x, bool full)
{
        char started[40], end[40];
        uint64_t now = xb_now_ms(), left = x->expires_ms > now ? x->expires_ms - now : 0;
        struct timespec ts;
        uint64_t unix_now;
        json_t *o;

        clock_gettime(CLOCK_REALTIME, &ts);
        unix_now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
        e2b_time(s->started_unix_ms, started, sizeof(started));
        e2b_time(unix_now + left, end, sizeof(end));
        o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:I,s:I,s:O,s:s}", "templateID", s->template_id, "sandboxID", s->id,
                      "clientID", "execbox", "startedAt", started, "endAt", end, "envdVersion", E2B_ENVD_VERSION,
                      "cpuCount", x->limits.cpus_milli ? (int)((x->limits.cpus_milli + 999) / 1000) : 1, "memoryMB",
                      (json_int_t)(x->limits.memory >> 20), "diskSizeMB", (json_int_t)(x->limits.disk >> 20),
                      "metadata", x->metadata && json_is_object(x->metadata) ? x->metadata : json_object(), "state",
                      x->paused ? "paused" : "running");
        if (!x->metadata || !json_is_object(x->metadata))
                json_decref(json_object_get(o, "metadata"));
        if (full) {
                json_object_set_new(o, "envdAccessToken", json_string(s->token));
                json_object_set_new(o, "allowInternetAccess", json_boolean(internet_of(x)));
                if (s->network)
                        json_object_set(o, "network", s->network);
                json_object_set_new(o, "lifecycle", json_pack("{s:s,s:b}", "onTimeout", x->auto_pause ? "pause" : "kill",
                                                      "autoResume", x->auto_pause && !x->auto_pause_manual));
                json_object_set_new(o, "volumeMounts", json_array());
        }
        return o;
}

/* Refuse what execbox cannot do yet; 0 when body asks for none of it. */
static int
refuse_unsupported(struct xb_req *r, json_t *body)
{
        json_t *net = json_object_get(body, "network");

        json_t *ar = json_object_get(body, "autoResume");

        if (ar && !json_is_null(ar) && !json_is_object(ar))
                return api_error(r, 400, "autoResume must be an object {\"enabled\": bool}"), -1;
        if (json_is_true(json_object_get(ar, "enabled")) && !json_is_true(json_object_get(body, "autoPause")))
                return api_error(r, 400, "autoResume can only be enabled with autoPause"), -1;
        if (json_object_get(net, "rules") || json_object_get(net, "egressProxy") ||
            json_is_true(json_object_get(net, "allowPublicTraffic")) || json_is_true(json_object_get(net, "maskRequestHost")))
                return api_error(r, 400, "network rules, egressProxy, maskRequestHost and allowPublicTraffic are not "
                                 "supported by this server (sandbox ports need a token or a share link)"), -1;
        if (json_array_size(json_object_get(body, "volumeMounts")) || json_object_get(body, "mcp"))
                return api_error(r, 400, "volume mounts and MCP gateways are not supported by this server"), -1;
        return 0;
}

static bool
is_all_traffic(json_t *v)
{
        const char *s = json_string_value(v);

        return s && (!strcmp(s, "0.0.0.0/0") || !strcmp(s, "::/0"));
}

/* E2B's allow_internet_access and network {allowOut, denyOut} as an
 * execbox egress policy (net/policy.h): internet access is the default,
 * false or a denyOut of 0.0.0.0/0 leaves only allowOut, and a denyOut of
 * some ranges is open but for them. *explicit says the client asked for
 * something narrower than the default. NULL after replying 400. */
static json_t *
network_policy(struct xb_req *r, json_t *body, bool *narrowed)
{
        json_t *net = json_object_get(body, "network"), *allow = json_object_get(net, "allowOut");
        json_t *deny_in = json_object_get(net, "denyOut"), *deny = json_array(), *v;
        bool internet = !json_is_false(json_object_get(body, "allow_internet_access")), deny_all = !internet;
        size_t i;

        if ((allow && !json_is_array(allow)) || (deny_in && !json_is_array(deny_in))) {
                json_decref(deny);
                api_error(r, 400, "network.allowOut and network.denyOut must be arrays of CIDRs, IPs or domains");
                return NULL;
        }
        json_array_foreach(deny_in, i, v) {
                if (is_all_traffic(v))
                        deny_all = true;
                else
                        json_array_append(deny, v);
        }
        *narrowed = deny_all || json_array_size(deny);
        if (deny_all && json_array_size(allow))
                return json_pack("{s:s,s:O,s:o}", "mode", "allowlist", "allow", allow, "deny", deny);
        if (deny_all) {
                json_decref(deny);
                return json_pack("{s:s}", "mode", "none");
        }
        if (json_array_size(allow) && json_array_size(deny)) {
                json_decref(deny);
                api_error(r, 400, "network.allowOut exceptions inside denyOut ranges are not supported: deny "
                          "0.0.0.0/0 and list what to allow in allowOut");
                return NULL;
        }
        return json_pack("{s:s,s:o}", "mode", "open", "deny", deny);
}

static unsigned
create_status(const struct xb_err *err)
{
        switch (err->ecode) {
        case XB_E_TOO_MANY_SANDBOXES: case XB_E_OVER_QUOTA: return 429;
        case XB_E_OVER_CEILING: return 400;
        case XB_E_NOMEM: case XB_E_SHUTTING_DOWN: case XB_E_SANDBOX_UNAVAILABLE: return 503;
        case XB_E_NETWORK_FORBIDDEN: return 403;
        case XB_E_INVALID: case XB_E_INVALID_METADATA: case XB_E_METADATA_TOO_LARGE: case XB_E_INVALID_NETWORK:
                return 400;
        default: return 500;
        }
}

/* A create answers once the sandbox is up (a cold start waits for init):
 * aux holds the request's body, the op's args and whether the network was
 * narrowed on purpose. */
static void
created(struct xb_req *r, struct e2b_async *a, json_t *res, const struct xb_err *err)
{
        json_t *body = json_object_get(a->aux, "body"), *args = json_object_get(a->aux, "args"), *v;
        const char *name = json_string_value(json_object_get(body, "templateID")), *id;
        struct e2b_sbx *s;
        struct xb_sbx *x;

        /* Internet access is E2B's default (the Python SDK always asks for
         * it): where the operator allows less, the sandbox gets the
         * server's default, and getInfo says what it has. */
        if (err && a->step == 0 && !json_is_true(json_object_get(a->aux, "narrowed")) &&
            (err->ecode == XB_E_NETWORK_FORBIDDEN || err->ecode == XB_E_NETWORK_UNAVAILABLE)) {
                json_object_del(args, "network");
                a->step = 1;
                e2b_async_run(a, "sandbox_create", args, 0);
                return;
        }
        if (err) {
                /* The operator's ceilings and the tenant's quotas, as REST answers them. */
                if (err->ecode == XB_E_OVER_QUOTA && err->retry_s) {
                        char secs[16];

                        snprintf(secs, sizeof(secs), "%u", err->retry_s);
                        xb_req_add_reply_header(r, "Retry-After", secs);
                }
                if (err->hint)
                        api_error(r, create_status(err), "%s (%s)", err->msg, err->hint);
                else
                        api_error(r, create_status(err), "%s", err->msg);
                e2b_async_free(a);
                return;
        }
        id = json_string_value(json_object_get(res, "id"));
        s = id ? e2b_sbx_add(a->e, id, a->tenant) : NULL;
        if (!s) {
                json_decref(res);
                api_error(r, 503, "out of memory");
                e2b_async_free(a);
                return;
        }
        snprintf(s->template_id, sizeof(s->template_id), "%s", name ? name : "base");
        s->started_unix_ms = (uint64_t)json_integer_value(json_object_get(res, "created_at_ms"));
        if (json_is_object(v = json_object_get(body, "network")))
                s->network = json_incref(v);
        if ((x = e2b_engine_sbx(a->e, id))) {
                /* E2B's timeout is a deadline, not an idle lease (see the top). */
                x->fixed_deadline = true;
                x->auto_pause_manual = !json_is_true(json_object_get(json_object_get(body, "autoResume"), "enabled"));
                xb_sbx_arm(x);
        }
        json_decref(res);
        xb_reply_json(r, 201, sandbox_ref(s));
        e2b_async_free(a);
}

static void
create(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *body = NULL, *args = NULL;
        const char *name, *tmpl;
        struct e2b_async *a;
        json_t *t, *v, *pol;
        bool narrowed = false;
        int tenant = tenant_of(r);

        if (tenant < 0 || !(body = body_of(r)) || refuse_unsupported(r, body) < 0)
                return;
        name = json_string_value(json_object_get(body, "templateID"));
        tmpl = template_of(name);
        if (!tmpl) {
                api_error(r, 404, "template '%.64s' not found: this server offers base and code-interpreter-v1", name);
                return;
        }
        args = json_pack("{s:s}", "template", tmpl);
        t = json_object_get(body, "timeout");
        if (json_is_integer(t))
                json_object_set_new(args, "timeout_s", json_integer(json_integer_value(t) < 1 ? 1 : json_integer_value(t)));
        if (json_is_object(v = json_object_get(body, "metadata")) && json_object_size(v))
                json_object_set(args, "metadata", v);
        if (json_is_object(v = json_object_get(body, "envVars")) && json_object_size(v))
                json_object_set(args, "env", v);
        /* autoPauseMemory false asks for a disk-only snapshot: keeping the
         * memory too is more than that, and resumes the same way. */
        if (json_is_true(json_object_get(body, "autoPause")))
                json_object_set_new(args, "auto_pause", json_true());
        if (!(pol = network_policy(r, body, &narrowed)))
                return;
        json_object_set_new(args, "network", pol);
        if (!(a = e2b_async_new(r, e, tenant, "", created)))
                return;
        a->aux = json_pack("{s:O,s:O,s:b}", "body", body, "args", args, "narrowed", narrowed);
        if (!a->aux) {
                api_error(r, 503, "out of memory");
                e2b_async_free(a);
                return;
        }
        e2b_async_run(a, "sandbox_create", json_object_get(a->aux, "args"), 0);
}

/* "k=v&k2=v2", each side percent-encoded: whether metadata has them all. */
static bool
metadata_match(const json_t *meta, const char *q)
{
        _cleanup_free_ char *copy = strdup(q);
        char *save = NULL;

        if (!copy)
                return false;
        for (char *pair = strtok_r(copy, "&", &save); pair; pair = strtok_r(NULL, "&", &save)) {
                char *eq = strchr(pair, '='), *val;
                const char *have;

                if (!eq)
                        return false;
                *eq = '\0';
                val = eq + 1;
                for (char *p = pair; p; p = p == pair ? val : NULL) {
                        char *w = p;

                        for (char *c = p; *c; c++) {
                                unsigned hi, lo;

                                if (*c == '%' && sscanf(c + 1, "%1x%1x", &hi, &lo) == 2) {
                                        *w++ = (char)(hi * 16 + lo);
                                        c += 2;
                                } else
                                        *w++ = *c == '+' ? ' ' : *c;
                        }
                        *w = '\0';
                }
                have = json_string_value(json_object_get(meta, pair));
                if (!have || strcmp(have, val))
                        return false;
        }
        return true;
}

static void
list(struct xb_req *r, bool v2)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        const char *meta = xb_req_query(r, "metadata", NULL), *state = xb_req_query(r, "state", NULL);
        const char *lim = xb_req_query(r, "limit", NULL), *next = xb_req_query(r, "nextToken", NULL);
        unsigned long limit = lim ? strtoul(lim, NULL, 10) : LIST_LIMIT_DEFAULT;
        unsigned long skip = next ? strtoul(next, NULL, 10) : 0, seen = 0;
        bool want_running = !state || strstr(state, "running"), want_paused = v2 && (!state || strstr(state, "paused"));
        json_t *out;
        int tenant = tenant_of(r);
        bool more = false;

        if (tenant < 0)
                return;
        if (!limit || limit > LIST_LIMIT_MAX)
                limit = limit ? LIST_LIMIT_MAX : LIST_LIMIT_DEFAULT;
        e2b_sbx_prune(e);
        e2b_sbx_adopt(e, tenant);
        out = json_array();
        for (struct e2b_sbx *s = e->sbxs; s; s = s->next) {
                struct xb_sbx *x = s->tenant == tenant ? e2b_engine_sbx(e, s->id) : NULL;

                if (!x || (x->paused ? !want_paused : !want_running))
                        continue;
                if (meta && *meta && !metadata_match(x->metadata, meta))
                        continue;
                if (seen++ < skip)
                        continue;
                if (json_array_size(out) == limit) {
                        more = true;
                        break;
                }
                json_array_append_new(out, sandbox_detail(s, x, false));
        }
        if (more) {
                char tok[24];

                snprintf(tok, sizeof(tok), "%lu", skip + limit);
                xb_req_add_reply_header(r, "X-Next-Token", tok);
        }
        xb_reply_json(r, 200, out);
}

static void
list_v1(struct xb_req *r)
{
        list(r, false);
}

static void
list_v2(struct xb_req *r)
{
        list(r, true);
}

static void
get(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        struct xb_sbx *x;
        struct e2b_sbx *s;
        int tenant = tenant_of(r);

        if (tenant >= 0 && (s = owned(r, e, tenant, &x)))
                xb_reply_json(r, 200, sandbox_detail(s, x, true));
}

static void
kill(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *args = NULL;
        struct xb_err err = { 0 };
        struct xb_sbx *x;
        struct e2b_sbx *s;
        int tenant = tenant_of(r);

        if (tenant < 0 || !(s = owned(r, e, tenant, &x)))
                return;
        args = json_pack("{s:s}", "id", s->id);
        if (e2b_run_sync(e, tenant, "sandbox_delete", args, NULL, &err) < 0) {
                api_error(r, 500, "%s", err.msg);
                return;
        }
        e2b_sbx_prune(e);
        xb_reply_empty(r, 204);
}

/* {"timeout": s} (timeout) or {"duration": s} (refreshes): from now. */
static void
set_timeout(struct xb_req *r, const char *field)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_sbx *x;
        json_t *t;
        int tenant = tenant_of(r);

        if (tenant < 0 || !owned(r, e, tenant, &x) || !(body = body_of(r)))
                return;
        t = json_object_get(body, field);
        if (t && (!json_is_integer(t) || json_integer_value(t) < 0 ||
                  (uint64_t)json_integer_value(t) > XB_TTL_MAX_MS / 1000)) {
                api_error(r, 400, "`%s` must be a whole number of seconds up to %llu", field,
                          (unsigned long long)(XB_TTL_MAX_MS / 1000));
                return;
        }
        /* A refresh without a duration keeps the sandbox's own timeout. */
        xb_sbx_touch(x, t ? (uint64_t)(json_integer_value(t) ? json_integer_value(t) : 1) * 1000 : 0);
        xb_reply_empty(r, 204);
}

static void
timeout(struct xb_req *r)
{
        set_timeout(r, "timeout");
}

static void
refreshes(struct xb_req *r)
{
        set_timeout(r, "duration");
}

/* A pause that meets only file operations with init (a background
 * command's output files still opening just after its start, an upload)
 * waits for them, PAUSE_WAIT_MS at most: E2B pauses a sandbox with work
 * in flight, and the SDK's pause right after commands.run(background)
 * met those opens now and then (500 "busy"). */
#define PAUSE_WAIT_MS 1000
#define PAUSE_POLL_MS 5

struct pause_wait {
        struct xb_req *r;
        struct xb_e2b *e;
        char id[XB_SANDBOX_ID_LEN + 1];
        int tenant;
        uint64_t until_ms;
        struct xb_timer t;
};

static void
pause_now(struct xb_req *r, struct xb_e2b *e, struct xb_sbx *x)
{
        struct xb_err err = { 0 };

        e2b_holds_drop(e, x->id);
        if (xb_sbx_pause(x, false, &err) < 0) {
                api_error(r, 500, "cannot pause sandbox %s now: %s (a client is waiting on its work)", x->id, err.msg);
                return;
        }
        xb_reply_empty(r, 204);
}

static bool
only_files_in_flight(const struct xb_sbx *x)
{
        return x->state == XB_SBX_READY && !x->paused && !xb_sbx_busy(x) && x->nfileops;
}

static void
pause_wait_gone(struct xb_req *r, void *owner)
{
        struct pause_wait *w = owner;

        (void)r;
        xb_timer_stop(&w->t);
        free(w);
}

static void
pause_wait_tick(struct xb_timer *t)
{
        struct pause_wait *w = t->data;
        struct xb_sbx *x = e2b_engine_sbx(w->e, w->id);

        if (x && x->tenant == w->tenant && only_files_in_flight(x) && xb_now_ms() < w->until_ms) {
                xb_timer_start(e2b_loop(w->e), &w->t, PAUSE_POLL_MS, pause_wait_tick, w);
                return;
        }
        if (!x || x->tenant != w->tenant)
                api_error(w->r, 404, "sandbox \"%.64s\" not found", w->id);
        else if (x->paused)
                xb_reply_empty(w->r, 204);   /* paused meanwhile, as asked */
        else
                pause_now(w->r, w->e, x);
        free(w);
}

static void
pause_route(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        struct pause_wait *w;
        struct xb_sbx *x;
        int tenant = tenant_of(r);

        if (tenant < 0 || !owned(r, e, tenant, &x))
                return;
        if (x->paused) {
                api_error(r, 409, "sandbox %s is already paused", x->id);
                return;
        }
        if (!only_files_in_flight(x) || !(w = calloc(1, sizeof(*w)))) {
                pause_now(r, e, x);
                return;
        }
        *w = (struct pause_wait){ .r = r, .e = e, .tenant = tenant, .until_ms = xb_now_ms() + PAUSE_WAIT_MS };
        snprintf(w->id, sizeof(w->id), "%s", x->id);
        xb_req_suspend(r, pause_wait_gone, w);
        xb_timer_start(e2b_loop(e), &w->t, PAUSE_POLL_MS, pause_wait_tick, w);
}

/* Resume (a paused one) and extend by {"timeout"}; resume: 409 when running. */
static void
wake(struct xb_req *r, bool strict)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_sbx *x;
        struct e2b_sbx *s;
        bool was_paused;
        json_t *t;
        int tenant = tenant_of(r);

        if (tenant < 0 || !(s = owned(r, e, tenant, &x)) || !(body = body_of(r)))
                return;
        if (strict && !x->paused) {
                api_error(r, 409, "sandbox %s is already running", x->id);
                return;
        }
        /* The old resume body's autoPause sets what its timeout does. */
        if (json_is_boolean(json_object_get(body, "autoPause")))
                x->auto_pause = json_is_true(json_object_get(body, "autoPause"));
        was_paused = x->paused;
        xb_sbx_resume(x);
        t = json_object_get(body, "timeout");
        if (json_is_integer(t) && json_integer_value(t) > 0) {
                uint64_t now = xb_now_ms(), want = (uint64_t)json_integer_value(t) * 1000;

                /* Connect keeps the sandbox at least this long; it never shortens it. */
                if (x->expires_ms < now + want)
                        xb_sbx_touch(x, want);
        }
        xb_reply_json(r, was_paused ? 201 : 200, sandbox_ref(s));
}

static void
resume(struct xb_req *r)
{
        wake(r, true);
}

static void
connect_route(struct xb_req *r)
{
        wake(r, false);
}

/* PUT .../network {allowOut, denyOut, allow_internet_access}: the whole
 * egress policy, replaced; what is omitted is cleared, as E2B does. */
static void
network_put(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        _cleanup_(xb_json_decrefp) json_t *body = NULL, *wrapped = NULL, *args = NULL;
        struct xb_err err = { 0 };
        struct xb_sbx *x;
        struct e2b_sbx *s;
        json_t *pol;
        bool narrowed;
        int tenant = tenant_of(r);

        if (tenant < 0 || !(s = owned(r, e, tenant, &x)) || !(body = body_of(r)))
                return;
        if (json_object_get(body, "rules") || json_object_get(body, "egressProxy")) {
                api_error(r, 400, "network rules and egressProxy are not supported by this server");
                return;
        }
        wrapped = json_pack("{s:O,s:{s:O,s:O}}", "allow_internet_access",
                            json_object_get(body, "allow_internet_access") ?: json_true(), "network", "allowOut",
                            json_object_get(body, "allowOut") ?: json_array(), "denyOut",
                            json_object_get(body, "denyOut") ?: json_array());
        if (!(pol = network_policy(r, wrapped, &narrowed)))
                return;
        args = json_pack("{s:s}", "id", s->id);
        json_object_update(args, pol);
        json_decref(pol);
        if (e2b_run_sync(e, tenant, "sandbox_network", args, NULL, &err) < 0) {
                api_error(r, create_status(&err), "%s", err.msg);
                return;
        }
        json_decref(s->network);
        s->network = json_pack("{s:O,s:O}", "allowOut", json_object_get(json_object_get(wrapped, "network"), "allowOut"),
                               "denyOut", json_object_get(json_object_get(wrapped, "network"), "denyOut"));
        xb_reply_empty(r, 204);
}

static void
metrics(struct xb_req *r)
{
        struct xb_e2b *e = (struct xb_e2b *)xb_req_route_data(r);
        struct xb_sbx *x;
        struct e2b_sbx *s;
        struct e2b_metrics m;
        char when[40];
        int tenant = tenant_of(r);

        if (tenant < 0 || !(s = owned(r, e, tenant, &x)))
                return;
        /* One sample, now: execbox keeps no history of them. */
        e2b_metrics(s, x, &m);
        e2b_time(m.unix_ms, when, sizeof(when));
        xb_reply_json(r, 200, json_pack("[{s:s,s:f,s:i,s:I,s:I}]", "timestamp", when, "cpuUsedPct", m.cpu_pct,
                                        "cpuCount", (int)m.cpu_count, "memUsed", (json_int_t)m.mem_used, "memTotal",
                                        (json_int_t)m.mem_total));
}

#define API XB_ROUTE_PUBLIC | XB_ROUTE_XAPIKEY | XB_ROUTE_HIDDEN
const struct xb_route e2b_control_routes[] = {
        { "POST", "/sandboxes", create, API, NULL },
        { "POST", "/v2/sandboxes", create, API, NULL },
        { "GET", "/sandboxes", list_v1, API, NULL },
        { "GET", "/v2/sandboxes", list_v2, API, NULL },
        { "GET", "/sandboxes/{}", get, API, NULL },
        { "DELETE", "/sandboxes/{}", kill, API, NULL },
        { "POST", "/sandboxes/{}/timeout", timeout, API, NULL },
        { "POST", "/sandboxes/{}/refreshes", refreshes, API, NULL },
        { "POST", "/sandboxes/{}/pause", pause_route, API, NULL },
        { "POST", "/sandboxes/{}/resume", resume, API, NULL },
        { "POST", "/sandboxes/{}/connect", connect_route, API, NULL },
        { "POST", "/v2/sandboxes/{}/connect", connect_route, API, NULL },
        { "GET", "/sandboxes/{}/metrics", metrics, API, NULL },
        { "PUT", "/sandboxes/{}/network", network_put, API, NULL },
};
const size_t e2b_control_nroutes = sizeof(e2b_control_routes) / sizeof(e2b_control_routes[0]);
