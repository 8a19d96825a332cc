/* Ceilings and tenant quotas (quota.h). The checks count what the
 * registry holds at the moment of the request: there is no second ledger
 * to drift from it. The fair share of --max-sandboxes is a reservation:
 * each tenant may always have max / (2 * tenants) sandboxes, and no tenant
 * may take a slot another tenant's unused reservation still needs. */
#define _GNU_SOURCE
#include "core/quota.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "core/core.h"
#include "core/proc_int.h"

#define PIDS_CEILING_DEFAULT 32768

static const char *const keys[] = { "sandboxes", "execs", "rate", "memory", "disk", NULL };

static uint64_t *
field(struct xb_quota *q, size_t i)
{
        uint64_t *f[] = { &q->sandboxes, &q->execs, &q->rate, &q->memory, &q->disk };

        return f[i];
}

static int
key_index(const char *word)
{
        for (size_t i = 0; keys[i]; i++) {
                size_t n = strlen(keys[i]);

                if (strncmp(word, keys[i], n) == 0 && word[n] == '=')
                        return (int)i;
        }
        return -1;
}

bool
xb_quota_is_word(const char *word)
{
        return key_index(word) >= 0;
}

int
xb_quota_word(struct xb_quota *q, const char *word, struct xb_err *err)
{
        int i = key_index(word);
        const char *v;
        int r;

        if (i < 0)
                return xb_err_msg(err, EINVAL, "`%.64s`: a quota is sandboxes=, execs=, rate=, memory= or disk=", word);
        v = word + strlen(keys[i]) + 1;
        r = i >= 3 ? xb_parse_size(v, field(q, (size_t)i), err) : xb_parse_u64(v, field(q, (size_t)i), err);
        if (r < 0)
                return xb_err_wrap(err, "%s", keys[i]);
        if (i < 3 && *field(q, (size_t)i) > 1000000)
                return xb_err_msg(err, ERANGE, "%s must be at most 1000000", keys[i]);
        return 0;
}

int
xb_quota_parse(const char *spec, struct xb_quota *q, struct xb_err *err)
{
        _cleanup_free_ char *copy = strdup(spec);
        char *save = NULL;

        if (!copy)
                return xb_err_set(err, ENOMEM, "quota");
        for (char *w = strtok_r(copy, ", \t", &save); w; w = strtok_r(NULL, ", \t", &save)) {
                int r = xb_quota_word(q, w, err);

                if (r < 0)
                        return r;
        }
        return 0;
}

void
xb_quota_merge(struct xb_quota *q, const struct xb_quota *over)
{
        for (size_t i = 0; keys[i]; i++)
                if (*field((struct xb_quota *)over, i))
                        *field(q, i) = *field((struct xb_quota *)over, i);
}

static uint64_t
mem_total(void)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/meminfo", "re");
        unsigned long long kb = 0;
        char line[128];

        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
                        break;
        return (uint64_t)kb << 10;
}

static uint64_t
at_least(uint64_t v, uint64_t floor)
{
        return v > floor ? v : floor;
}

void
xb_quota_ceilings(struct xb_limits *c, struct xb_limits *d)
{
        uint64_t ram = mem_total();
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);

        if (!c->memory)
                c->memory = at_least(ram ? ram : XB_MEMORY_MAX, d->memory);
        if (!c->disk)
                c->disk = at_least(ram ? ram : XB_DISK_MAX, d->disk);
        if (!c->pids)
                c->pids = at_least(PIDS_CEILING_DEFAULT, d->pids);
        if (!c->cpus_milli)
                c->cpus_milli = (uint32_t)at_least(cpus > 0 ? (uint64_t)cpus * 1000 : XB_CPUS_MAX_MILLI, d->cpus_milli);
        /* "No limit" would be above any ceiling. cpus stays: without a
         * quota a sandbox can use at most every core, which the ceiling
         * allows. */
        if (!d->memory)
                d->memory = c->memory;
        if (!d->pids)
                d->pids = c->pids;
}

static void
size_text(char *buf, size_t cap, uint64_t v)
{
        if (v >= (1ULL << 30) && v % (1ULL << 30) == 0)
                snprintf(buf, cap, "%lluG (%llu bytes)", (unsigned long long)(v >> 30), (unsigned long long)v);
        else if (v >= (1ULL << 20) && v % (1ULL << 20) == 0)
                snprintf(buf, cap, "%lluM (%llu bytes)", (unsigned long long)(v >> 20), (unsigned long long)v);
        else
                snprintf(buf, cap, "%llu bytes", (unsigned long long)v);
}

int
xb_quota_check_limits(struct xb_core *s, const struct xb_limits *l, struct xb_err *err)
{
        const struct xb_limits *c = &s->o.ceiling;

        if (!s->ceiling_hint[0]) {
                char m[48], d[48];

                size_text(m, sizeof(m), c->memory);
                size_text(d, sizeof(d), c->disk);
                snprintf(s->ceiling_hint, sizeof(s->ceiling_hint),
                         "this server's ceilings: memory %s, pids %llu, cpus %.3g, disk %s; ask for at most these, "
                         "or leave limits out for the defaults",
                         m, (unsigned long long)c->pids, c->cpus_milli / 1000.0, d);
        }
        return xb_quota_check_ceiling(c, s->ceiling_hint, l, err);
}

int
xb_quota_check_ceiling(const struct xb_limits *c, const char *hint, const struct xb_limits *l, struct xb_err *err)
{
        char got[48], max[48];
        if (c->memory && (l->memory > c->memory || !l->memory)) {
                size_text(got, sizeof(got), l->memory);
                size_text(max, sizeof(max), c->memory);
                return xb_err_code(err, XB_E_OVER_CEILING, ERANGE, hint,
                                   "limits.memory %s is above this server's ceiling of %s", got, max);
        }
        if (c->disk && l->disk > c->disk) {
                size_text(got, sizeof(got), l->disk);
                size_text(max, sizeof(max), c->disk);
                return xb_err_code(err, XB_E_OVER_CEILING, ERANGE, hint,
                                   "limits.disk %s is above this server's ceiling of %s", got, max);
        }
        if (c->pids && (l->pids > c->pids || !l->pids))
                return xb_err_code(err, XB_E_OVER_CEILING, ERANGE, hint,
                                   "limits.pids %llu is above this server's ceiling of %llu",
                                   (unsigned long long)l->pids, (unsigned long long)c->pids);
        if (c->cpus_milli && l->cpus_milli > c->cpus_milli)
                return xb_err_code(err, XB_E_OVER_CEILING, ERANGE, hint,
                                   "limits.cpus %.3g is above this server's ceiling of %.3g", l->cpus_milli / 1000.0,
                                   c->cpus_milli / 1000.0);
        return 0;
}

static const struct xb_quota *
quota_of(const struct xb_core *s, int tenant)
{
        if (tenant >= 0 && (size_t)tenant < s->o.nquota)
                return &s->o.quota[tenant];
        return &s->o.quota_default;
}

struct tally {
        int tenant;
        uint64_t *per_tenant;         /* sandboxes of each tenant (nquota) */
        size_t ntenants;
        uint64_t sandboxes, memory, disk, execs;
};

static void
count(struct xb_sbx *x, void *data)
{
        struct tally *t = data;

        if (x->state >= XB_SBX_DYING)
                return;
        if (t->per_tenant && x->tenant >= 0 && (size_t)x->tenant < t->ntenants)
                t->per_tenant[x->tenant]++;
        if (x->tenant != t->tenant)
                return;
        t->sandboxes++;
        t->memory += x->limits.memory;
        t->disk += x->limits.disk;
        for (struct xb_proc *p = x->procs; p; p = p->next)
                t->execs += !p->finished;
}

static int over(struct xb_err *err, unsigned retry_s, const char *hint, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static int
over(struct xb_err *err, unsigned retry_s, const char *hint, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        xb_err_clear(err);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        err->code = EAGAIN;
        err->ecode = XB_E_OVER_QUOTA;
        err->hint = hint;
        err->retry_s = retry_s;
        return -EAGAIN;
}

/* Tenant's unused reservations of the other tenants, in sandboxes. */
static uint64_t
reserved_for_others(const struct xb_core *s, const struct tally *t)
{
        uint64_t share, need = 0;

        if (s->o.nquota < 2 || !t->per_tenant)
                return 0;
        share = s->o.max_sandboxes / (2 * s->o.nquota);
        if (!share)
                share = s->o.max_sandboxes >= s->o.nquota ? 1 : 0;
        for (size_t i = 0; i < s->o.nquota; i++)
                if ((int)i != t->tenant && t->per_tenant[i] < share)
                        need += share - t->per_tenant[i];
        return need;
}

int
xb_quota_check_create(struct xb_core *s, int tenant, const struct xb_limits *l, struct xb_err *err)
{
        const struct xb_quota *q = quota_of(s, tenant);
        _cleanup_free_ uint64_t *per = s->o.nquota ? calloc(s->o.nquota, sizeof(uint64_t)) : NULL;
        struct tally t = { .tenant = tenant, .per_tenant = per, .ntenants = per ? s->o.nquota : 0 };
        struct xb_quota_use *u;
        uint64_t now = xb_now_ms(), others;

        if (!s->quota_use && !(s->quota_use = calloc(s->o.nquota + 1, sizeof(*s->quota_use))))
                return xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
        u = &s->quota_use[tenant >= 0 && (size_t)tenant < s->o.nquota ? (size_t)tenant : s->o.nquota];
        xb_sbx_foreach(s, count, &t);
        if (q->sandboxes && t.sandboxes >= q->sandboxes)
                return over(err, 10, "delete sandboxes you no longer need",
                            "your tenant has %llu sandboxes, its quota of %llu", (unsigned long long)t.sandboxes, (unsigned long long)q->sandboxes);
        if (q->memory && t.memory + l->memory > q->memory)
                return over(err, 10, "delete sandboxes you no longer need, or ask for less memory",
                            "your sandboxes' memory limits would total more than your quota: %llu bytes held, "
                            "%llu the quota", (unsigned long long)t.memory, (unsigned long long)q->memory);
        if (q->disk && t.disk + l->disk > q->disk)
                return over(err, 10, "delete sandboxes you no longer need, or ask for less disk",
                            "your sandboxes' disk limits would total more than your quota: %llu bytes held, "
                            "%llu the quota", (unsigned long long)t.disk, (unsigned long long)q->disk);
        others = reserved_for_others(s, &t);
        if (others && s->nsandboxes + 1 + others > s->o.max_sandboxes)
                return over(err, 10, "delete sandboxes you no longer need: the rest are kept for other tenants",
                            "your tenant has %llu sandboxes; the server keeps its last %llu for other tenants",
                            (unsigned long long)t.sandboxes, (unsigned long long)others);
        if (q->rate) {
                double per_ms = (double)q->rate / 60000.0;

                if (!u->at_ms)
                        u->tokens = (double)q->rate;
                else
                        u->tokens += (double)(now - u->at_ms) * per_ms;
                if (u->tokens > (double)q->rate)
                        u->tokens = (double)q->rate;
                u->at_ms = now;
                if (u->tokens < 1.0)
                        return over(err, (unsigned)((1.0 - u->tokens) / per_ms / 1000.0) + 1,
                                    "wait for the time in Retry-After, or reuse a sandbox you have",
                                    "your tenant created %llu sandboxes in the last minute, its quota of %llu",
                                    (unsigned long long)q->rate, (unsigned long long)q->rate);
                u->tokens -= 1.0;
        }
        return 0;
}

int
xb_quota_check_exec(struct xb_sbx *x, struct xb_err *err)
{
        const struct xb_quota *q = quota_of(x->core, x->tenant);
        struct tally t = { .tenant = x->tenant };

        if (!q->execs)
                return 0;
        xb_sbx_foreach(x->core, count, &t);
        if (t.execs >= q->execs)
                return over(err, 1, "wait for your running commands to end, or kill some",
                            "your tenant runs %llu commands, its quota of %llu at once",
                            (unsigned long long)t.execs, (unsigned long long)q->execs);
        return 0;
}
