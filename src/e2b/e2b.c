/* The E2B adapter's state: its records of sandboxes (access tokens,
 * templates, what Start was given), the sink that runs operations for
 * it, and how a sandbox-front request names its sandbox. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/core.h"
#include "e2b/e2b_int.h"
#include "ops/jsonv.h"
#include "ops/ops.h"

struct xb_loop *
e2b_loop(struct xb_e2b *e)
{
        return e->core->loop;
}

/* ---- records ---- */

struct find_ctx {
        const char *id;
        struct xb_sbx *found;
};

static void
find_one(struct xb_sbx *x, void *data)
{
        struct find_ctx *f = data;

        if (!f->found && !x->sealed && !strcmp(x->id, f->id) && x->state != XB_SBX_DEAD && x->state != XB_SBX_DYING)
                f->found = x;
}

struct xb_sbx *
e2b_engine_sbx(struct xb_e2b *e, const char *id)
{
        struct find_ctx f = { id, NULL };

        if (!id || strlen(id) != XB_SANDBOX_ID_LEN)
                return NULL;
        xb_sbx_foreach(e->core, find_one, &f);
        return f.found;
}

static void
tracked_free(struct e2b_tracked *t)
{
        free(t->tag);
        json_decref(t->config);
        free(t);
}

static void
record_free(struct e2b_sbx *s)
{
        while (s->tracked) {
                struct e2b_tracked *t = s->tracked;

                s->tracked = t->next;
                tracked_free(t);
        }
        json_decref(s->network);
        free(s);
}

void
e2b_sbx_prune(struct xb_e2b *e)
{
        for (struct e2b_sbx **pp = &e->sbxs; *pp;) {
                struct e2b_sbx *s = *pp;

                if (!e2b_engine_sbx(e, s->id)) {
                        *pp = s->next;
                        record_free(s);
                } else
                        pp = &s->next;
        }
}

struct e2b_sbx *
e2b_sbx_find(struct xb_e2b *e, const char *id, int tenant)
{
        for (struct e2b_sbx **pp = &e->sbxs; *pp; pp = &(*pp)->next) {
                struct e2b_sbx *s = *pp;

                if (strcmp(s->id, id))
                        continue;
                if (!e2b_engine_sbx(e, s->id)) {
                        *pp = s->next;
                        record_free(s);
                        return NULL;
                }
                return tenant < 0 || s->tenant == tenant ? s : NULL;
        }
        return NULL;
}

struct adopt_ctx {
        struct xb_e2b *e;
        int tenant;
};

static void
adopt_one(struct xb_sbx *x, void *data)
{
        struct adopt_ctx *a = data;
        struct e2b_sbx *s;

        if (x->tenant != a->tenant || x->pooled || x->sealed || x->state == XB_SBX_DYING || x->state == XB_SBX_DEAD)
                return;
        for (s = a->e->sbxs; s; s = s->next)
                if (!strcmp(s->id, x->id))
                        return;
        s = e2b_sbx_add(a->e, x->id, a->tenant);
        if (s) {
                snprintf(s->template_id, sizeof(s->template_id), "base");
                s->started_unix_ms = x->created_unix_ms;
        }
}

void
e2b_sbx_adopt(struct xb_e2b *e, int tenant)
{
        struct adopt_ctx a = { e, tenant };

        xb_sbx_foreach(e->core, adopt_one, &a);
}

struct e2b_sbx *
e2b_sbx_add(struct xb_e2b *e, const char *id, int tenant)
{
        struct e2b_sbx *s = calloc(1, sizeof(*s));

        if (!s)
                return NULL;
        snprintf(s->id, sizeof(s->id), "%s", id);
        s->tenant = tenant;
        if (e2b_random_hex(s->token, E2B_TOKEN_LEN) < 0) {
                free(s);
                return NULL;
        }
        s->next = e->sbxs;
        e->sbxs = s;
        return s;
}

void
e2b_track_add(struct e2b_sbx *s, int pid, const char *tag, json_t *config, bool pty)
{
        struct e2b_tracked *t;

        /* Bounded like the engine's process table: the oldest goes. */
        if (s->ntracked >= E2B_TRACKED_MAX) {
                struct e2b_tracked **pp = &s->tracked;

                while ((*pp)->next)
                        pp = &(*pp)->next;
                tracked_free(*pp);
                *pp = NULL;
                s->ntracked--;
        }
        t = calloc(1, sizeof(*t));
        if (!t)
                return;
        t->pid = pid;
        t->tag = tag ? strdup(tag) : NULL;
        t->config = json_incref(config);
        t->pty = pty;
        t->next = s->tracked;
        s->tracked = t;
        s->ntracked++;
}

struct e2b_tracked *
e2b_track_find(struct e2b_sbx *s, int pid, const char *tag)
{
        for (struct e2b_tracked *t = s->tracked; t; t = t->next)
                if ((tag && t->tag && !strcmp(t->tag, tag)) || (!tag && t->pid == pid))
                        return t;
        return NULL;
}

/* ---- streams held on a sandbox ---- */

void
e2b_hold_add(struct xb_e2b *e, struct e2b_hold *h)
{
        h->next = e->holds;
        if (h->next)
                h->next->pprev = &h->next;
        h->pprev = &e->holds;
        e->holds = h;
}

void
e2b_hold_del(struct e2b_hold *h)
{
        if (!h->pprev)
                return;
        *h->pprev = h->next;
        if (h->next)
                h->next->pprev = h->pprev;
        h->next = NULL;
        h->pprev = NULL;
}

void
e2b_holds_drop(struct xb_e2b *e, const char *id)
{
again:
        for (struct e2b_hold *h = e->holds; h; h = h->next)
                if (!strcmp(h->id, id)) {
                        /* drop frees h: walk again from the head. */
                        e2b_hold_del(h);
                        h->drop(h);
                        goto again;
                }
}

/* ---- running operations ---- */

static void
sink_event(void *ctx, const char *name, json_t *data)
{
        struct e2b_sink *s = ctx;

        if (s->event)
                s->event(s, name, data);
}

static void
sink_done(void *ctx, json_t *result)
{
        struct e2b_sink *s = ctx;

        s->call = NULL;
        s->done(s, result, NULL);
}

static void
sink_fail(void *ctx, const struct xb_err *err)
{
        struct e2b_sink *s = ctx;

        s->call = NULL;
        s->done(s, NULL, err);
}

static const struct xb_sink_ops sink_ops = { sink_event, sink_done, sink_fail };

struct xb_call *
e2b_call_new(struct e2b_sink *s, unsigned flags)
{
        s->call = xb_call_new(&sink_ops, s, flags);
        return s->call;
}

bool
e2b_run(struct xb_e2b *e, int tenant, const char *op, json_t *args, unsigned flags, struct e2b_sink *s)
{
        const struct xb_op *o = xb_op_find(op);

        if (!o) {
                xb_error("e2b: no operation %s", op);
                return false;
        }
        s->call = xb_call_new(&sink_ops, s, flags);
        if (!s->call)
                return false;
        xb_op_run(o, e->core, tenant, args, s->call);
        return true;
}

/* ---- sandbox fronts ---- */

static bool
id_ok(const char *s, size_t n)
{
        if (n != XB_SANDBOX_ID_LEN)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
                        return false;
        return true;
}

bool
e2b_target(const struct xb_req *r, const char *domain, char id[XB_SANDBOX_ID_LEN + 1], unsigned *port)
{
        const char *hid = xb_req_header(r, "E2b-Sandbox-Id"), *hport = xb_req_header(r, "E2b-Sandbox-Port");
        const char *host = xb_req_header(r, "Host");
        char *end;
        unsigned long p;

        if (hid) {
                if (!id_ok(hid, strlen(hid)))
                        return false;
                memcpy(id, hid, XB_SANDBOX_ID_LEN + 1);
                p = hport ? strtoul(hport, &end, 10) : E2B_ENVD_PORT;
                if (hport && (*end || end == hport || p > 65535))
                        return false;
                *port = (unsigned)p;
                return true;
        }
        /* "49983-<id>.<domain>[:port]" */
        if (!host)
                return false;
        if (domain) {
                char buf[XB_SANDBOX_ID_LEN + 8];

                if (!xb_host_sandbox(host, domain, buf, sizeof(buf), port) || !id_ok(buf, strlen(buf)))
                        return false;
                memcpy(id, buf, XB_SANDBOX_ID_LEN + 1);
                return true;
        }
        p = strtoul(host, &end, 10);
        if (end == host || *end != '-' || p > 65535 || !id_ok(end + 1, strcspn(end + 1, ".")) ||
            end[1 + XB_SANDBOX_ID_LEN] != '.')
                return false;
        memcpy(id, end + 1, XB_SANDBOX_ID_LEN);
        id[XB_SANDBOX_ID_LEN] = '\0';
        *port = (unsigned)p;
        return true;
}

/* The host route: ports 49983 and 49999 are E2B's; others are not ours. */
static bool
host_claim(const struct xb_req *r, void *data, char *prefix, size_t cap)
{
        struct xb_e2b *e = data;
        char id[XB_SANDBOX_ID_LEN + 1];
        unsigned port;

        if (!e2b_target(r, e->domain, id, &port) || (port != E2B_ENVD_PORT && port != E2B_INTERP_PORT))
                return false;
        return snprintf(prefix, cap, "/e2b/%s/%s", id, port == E2B_ENVD_PORT ? "envd" : "interp") < (int)cap;
}

struct xb_host_route
xb_e2b_host_route(struct xb_e2b *e)
{
        return (struct xb_host_route){ host_claim, e };
}

bool
e2b_token_ok(const struct e2b_sbx *s, const char *token)
{
        unsigned char diff;
        size_t n;

        if (!token)
                return false;
        n = strlen(token);
        diff = (unsigned char)(n != E2B_TOKEN_LEN);
        for (size_t i = 0; i < E2B_TOKEN_LEN; i++)
                diff |= (unsigned char)(s->token[i] ^ (i < n ? token[i] : 0));
        return !diff;
}

int
e2b_random_hex(char *out, size_t n)
{
        unsigned char raw[64];

        if (n / 2 + 1 > sizeof(raw) || getrandom(raw, n / 2 + 1, 0) != (ssize_t)(n / 2 + 1))
                return -EIO;
        for (size_t i = 0; i < n; i++)
                out[i] = "0123456789abcdef"[(raw[i / 2] >> (i % 2 ? 0 : 4)) & 15];
        out[n] = '\0';
        return 0;
}

void
e2b_time(uint64_t unix_ms, char *buf, size_t cap)
{
        time_t t = (time_t)(unix_ms / 1000);
        struct tm tm;
        char s[32] = "1970-01-01T00:00:00";

        if (gmtime_r(&t, &tm))
                strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf, cap, "%s.%03uZ", s, (unsigned)(unix_ms % 1000));
}

void
e2b_metrics(struct e2b_sbx *s, struct xb_sbx *x, struct e2b_metrics *m)
{
        struct xb_cgroup_stats st = { 0 };
        struct timespec ts;
        uint64_t now = xb_now_ms(), since_ms, since_ns;

        clock_gettime(CLOCK_REALTIME, &ts);
        xb_sandbox_stats(x->sb, &st);
        m->cpu_count = x->limits.cpus_milli ? (x->limits.cpus_milli + 999) / 1000 : 1;
        m->mem_used = st.memory_current;
        m->mem_total = x->limits.memory;
        m->unix_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
        /* CPU use over the time since the last sample (or since creation). */
        since_ms = s->cpu_at_ms ? now - s->cpu_at_ms : now - x->created_ms;
        since_ns = st.cpu_ns > s->cpu_ns ? st.cpu_ns - s->cpu_ns : 0;
        m->cpu_pct = since_ms ? 100.0 * (double)since_ns / ((double)since_ms * 1e6 * m->cpu_count) : 0;
        if (m->cpu_pct > 100)
                m->cpu_pct = 100;
        s->cpu_ns = st.cpu_ns;
        s->cpu_at_ms = now;
}

/* What E2B's proxy answers for a sandbox it cannot reach. */
static void
not_running(struct xb_req *r, const char *id, const char *why)
{
        xb_reply_json(r, 502, json_pack("{s:s,s:s,s:i}", "sandboxId", id, "message", why, "code", 502));
}

struct e2b_sbx *
e2b_front_sbx(struct xb_req *r, struct xb_e2b *e, bool need_token, struct xb_sbx **ret_x)
{
        const char *id = xb_req_param(r, 0), *tok = xb_req_header(r, "X-Access-Token");
        struct e2b_sbx *s;
        struct xb_sbx *x;

        if (!id || !id_ok(id, strlen(id))) {
                not_running(r, id && strlen(id) < 64 ? id : "", "The sandbox was not found");
                return NULL;
        }
        s = e2b_sbx_find(e, id, -1);
        x = s ? e2b_engine_sbx(e, id) : NULL;
        if (!s || !x) {
                not_running(r, id, "The sandbox was not found");
                return NULL;
        }
        if ((need_token || tok) && !e2b_token_ok(s, tok)) {
                xb_reply_json(r, 401, json_pack("{s:s,s:i}", "message",
                                                tok ? "the X-Access-Token header is not this sandbox's envd access token"
                                                    : "this sandbox needs its envd access token in X-Access-Token",
                                                "code", 401));
                return NULL;
        }
        if (x->paused && !s->auto_resume) {
                not_running(r, id, "The sandbox is paused; resume it with Sandbox.connect()");
                return NULL;
        }
        /* A starting sandbox takes work: init runs it once it is up. */
        if (x->state != XB_SBX_READY && x->state != XB_SBX_STARTING) {
                not_running(r, id, "The sandbox is not running");
                return NULL;
        }
        *ret_x = x;
        return s;
}

/* ---- the adapter ---- */

static struct xb_route *
copy_routes(struct xb_e2b *e, const struct xb_route *const *tables, const size_t *ns, size_t ntables, size_t *ret_n)
{
        size_t n = 0, k = 0;
        struct xb_route *out;

        for (size_t t = 0; t < ntables; t++)
                n += ns[t];
        out = calloc(n ? n : 1, sizeof(*out));
        if (!out)
                return NULL;
        for (size_t t = 0; t < ntables; t++)
                for (size_t i = 0; i < ns[t]; i++) {
                        out[k] = tables[t][i];
                        out[k++].data = e;
                }
        *ret_n = n;
        return out;
}

struct xb_e2b *
xb_e2b_new(struct xb_core *core, const char *domain)
{
        struct xb_e2b *e = calloc(1, sizeof(*e));
        const struct xb_route *tables[] = { e2b_control_routes, e2b_envd_proc_routes, e2b_envd_fs_routes,
                                            e2b_envd_watch_routes, e2b_interp_routes };
        const size_t ns[] = { e2b_control_nroutes, e2b_envd_proc_nroutes, e2b_envd_fs_nroutes, e2b_envd_watch_nroutes,
                              e2b_interp_nroutes };

        if (!e)
                return NULL;
        e->core = core;
        e->domain = domain;
        e->routes = copy_routes(e, tables, ns, 5, &e->nroutes);
        if (!e->routes) {
                free(e);
                return NULL;
        }
        return e;
}

void
xb_e2b_free(struct xb_e2b *e)
{
        if (!e)
                return;
        while (e->sbxs) {
                struct e2b_sbx *s = e->sbxs;

                e->sbxs = s->next;
                record_free(s);
        }
        free(e->routes);
        free(e);
}

const struct xb_route *
xb_e2b_routes(struct xb_e2b *e, size_t *ret_n)
{
        *ret_n = e->nroutes;
        return e->routes;
}

/* ---- operations that end at once ---- */

struct sync_sink {
        struct e2b_sink sink;
        json_t *result;
        struct xb_err err;
        bool ended, failed;
};

static void
sync_done(struct e2b_sink *s, json_t *result, const struct xb_err *err)
{
        struct sync_sink *ss = (struct sync_sink *)s;

        ss->ended = true;
        ss->result = result;
        if (err) {
                ss->failed = true;
                ss->err = *err;
        }
}

int
e2b_run_sync(struct xb_e2b *e, int tenant, const char *op, json_t *args, json_t **ret, struct xb_err *err)
{
        struct sync_sink ss = { .sink = { .done = sync_done } };

        if (!e2b_run(e, tenant, op, args, 0, &ss.sink))
                return xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
        if (!ss.ended) {
                /* Only operations the engine answers at once come here. */
                xb_call_cancel(ss.sink.call);
                return xb_err_code(err, XB_E_INTERNAL, EINPROGRESS, NULL, "%s did not end at once", op);
        }
        if (ss.failed) {
                *err = ss.err;
                return -(ss.err.code ? ss.err.code : EIO);
        }
        if (ret)
                *ret = ss.result;
        else
                json_decref(ss.result);
        return 0;
}
