/* The audit log (audit.h). Each log is a ring of serialized events that
 * grows on demand up to max_events and max_bytes, dropping the oldest.
 * Logs live in one list; a closed one is purged by a timer once its keep
 * time has passed. */
#define _GNU_SOURCE
#include "core/audit.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/utf8.h"
#include "sandbox/sandbox.h"

struct ev {
        char *line;
        size_t len;
};

struct xb_audit {
        struct xb_audits *a;
        struct xb_audit *next, **pprev;
        char id[XB_SANDBOX_ID_LEN + 1];
        int tenant;
        struct ev *ring;
        size_t cap, head, n;            /* ring[head] is the oldest of n */
        size_t bytes;
        uint64_t first, dropped;
        bool closed;
        uint64_t expires_ms;
        struct xb_audit_follower *followers;
};

struct xb_audits {
        struct xb_loop *loop;
        uint64_t keep_ms;
        unsigned max_events;
        size_t max_bytes;
        struct xb_audit *logs;
        struct xb_timer purge;
};

struct xb_audits *
xb_audits_new(struct xb_loop *l, uint64_t keep_ms, unsigned max_events, size_t max_bytes)
{
        struct xb_audits *a = calloc(1, sizeof(*a));

        if (!a)
                return NULL;
        *a = (struct xb_audits){ .loop = l, .keep_ms = keep_ms, .max_events = max_events ? max_events : 1,
                                 .max_bytes = max_bytes };
        return a;
}

static void
ends(struct xb_audit *log)
{
        while (log->followers) {
                struct xb_audit_follower *f = log->followers;

                xb_audit_unfollow(f);
                if (f->end)
                        f->end(f);
        }
}

static void
log_free(struct xb_audit *log, bool tell)
{
        if (tell)
                ends(log);
        while (log->followers)
                xb_audit_unfollow(log->followers);
        *log->pprev = log->next;
        if (log->next)
                log->next->pprev = log->pprev;
        for (size_t i = 0; i < log->n; i++)
                free(log->ring[(log->head + i) % log->cap].line);
        free(log->ring);
        free(log);
}

void
xb_audits_free(struct xb_audits *a)
{
        if (!a)
                return;
        xb_timer_stop(&a->purge);
        while (a->logs)
                log_free(a->logs, false);
        free(a);
}

struct xb_audit *
xb_audit_open(struct xb_audits *a, const char *id, int tenant)
{
        struct xb_audit *log;

        if (!a || !(log = calloc(1, sizeof(*log))))
                return NULL;
        log->a = a;
        log->tenant = tenant;
        snprintf(log->id, sizeof(log->id), "%s", id);
        log->next = a->logs;
        if (a->logs)
                a->logs->pprev = &log->next;
        log->pprev = &a->logs;
        a->logs = log;
        return log;
}

static void
purge(struct xb_timer *t)
{
        struct xb_audits *a = t->data;
        uint64_t now = xb_now_ms(), soonest = 0;

        for (struct xb_audit *log = a->logs, *next; log; log = next) {
                next = log->next;
                if (!log->closed)
                        continue;
                if (log->expires_ms <= now)
                        log_free(log, true);
                else if (!soonest || log->expires_ms < soonest)
                        soonest = log->expires_ms;
        }
        if (soonest)
                xb_timer_start(a->loop, &a->purge, soonest - now, purge, a);
}

void
xb_audit_close(struct xb_audit *log)
{
        struct xb_audits *a;

        if (!log || log->closed)
                return;
        a = log->a;
        log->closed = true;
        log->expires_ms = xb_now_ms() + a->keep_ms;
        ends(log);
        if (!a->keep_ms) {
                log_free(log, false);
                return;
        }
        /* The same keep for every log: the soonest to go is already armed. */
        if (!a->purge.active)
                xb_timer_start(a->loop, &a->purge, a->keep_ms, purge, a);
}

struct xb_audit *
xb_audit_find(struct xb_audits *a, const char *id, int tenant)
{
        for (struct xb_audit *log = a && id ? a->logs : NULL; log; log = log->next)
                if (log->tenant == tenant && !strcmp(log->id, id))
                        return log;
        return NULL;
}

static void
drop_oldest(struct xb_audit *log)
{
        struct ev *e = &log->ring[log->head];

        log->bytes -= e->len;
        free(e->line);
        log->head = (log->head + 1) % log->cap;
        log->n--;
        log->first++;
        log->dropped++;
}

/* Room for one more; false when out of memory. */
static bool
make_room(struct xb_audit *log, size_t len)
{
        struct xb_audits *a = log->a;
        struct ev *ring;
        size_t cap;

        while (log->n && (log->n >= a->max_events || log->bytes + len > a->max_bytes))
                drop_oldest(log);
        if (log->n < log->cap)
                return true;
        cap = log->cap ? log->cap * 2 : 16;
        if (cap > a->max_events)
                cap = a->max_events;
        ring = malloc(cap * sizeof(*ring));
        if (!ring)
                return false;
        for (size_t i = 0; i < log->n; i++)
                ring[i] = log->ring[(log->head + i) % log->cap];
        free(log->ring);
        log->ring = ring;
        log->cap = cap;
        log->head = 0;
        return true;
}

void
xb_audit_add(struct xb_audit *log, const char *type, json_t *fields)
{
        struct timespec ts;
        json_t *o;
        char *line;
        size_t len;
        uint64_t off;

        if (!log || log->closed) {
                json_decref(fields);
                return;
        }
        off = log->first + log->n;
        clock_gettime(CLOCK_REALTIME, &ts);
        o = json_pack("{s:I,s:I,s:s}", "offset", (json_int_t)off, "time_ms",
                      (json_int_t)((uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000), "type", type);
        if (o && fields)
                json_object_update_missing(o, fields);
        json_decref(fields);
        line = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        len = line ? strlen(line) : 0;
        /* Out of memory, or bigger than the whole budget: counted, not kept. */
        if (!line || len > log->a->max_bytes || !make_room(log, len)) {
                free(line);
                log->dropped++;
                return;
        }
        log->ring[(log->head + log->n) % log->cap] = (struct ev){ line, len };
        log->n++;
        log->bytes += len;
        for (struct xb_audit_follower *f = log->followers, *next; f; f = next) {
                next = f->next;
                f->event(f, line, len);
        }
}

void
xb_audit_info(const struct xb_audit *log, struct xb_audit_info *ret)
{
        *ret = (struct xb_audit_info){ .first = log->first, .next = log->first + log->n, .dropped = log->dropped,
                                       .closed = log->closed };
}

const char *
xb_audit_get(const struct xb_audit *log, uint64_t offset, size_t *len)
{
        const struct ev *e;

        if (offset < log->first || offset >= log->first + log->n)
                return NULL;
        e = &log->ring[(log->head + (offset - log->first)) % log->cap];
        if (len)
                *len = e->len;
        return e->line;
}

void
xb_audit_follow(struct xb_audit *log, struct xb_audit_follower *f)
{
        f->log = log;
        f->next = log->followers;
        if (f->next)
                f->next->pprev = &f->next;
        f->pprev = &log->followers;
        log->followers = f;
}

void
xb_audit_unfollow(struct xb_audit_follower *f)
{
        if (!f->pprev)
                return;
        *f->pprev = f->next;
        if (f->next)
                f->next->pprev = f->pprev;
        f->next = NULL;
        f->pprev = NULL;
        f->log = NULL;
}

static json_t *
cut_str(const char *s, size_t max)
{
        size_t n = strnlen(s, max), clean_len;
        char *clean = xb_utf8_sanitize(s, n, &clean_len);
        json_t *j = clean ? json_stringn(clean, clean_len) : json_string("?");

        free(clean);
        return j;
}

json_t *
xb_audit_str(const char *s)
{
        return s ? cut_str(s, 1024) : json_null();
}

json_t *
xb_audit_strv(char *const *v, size_t max)
{
        json_t *a = json_array();
        size_t i;

        for (i = 0; a && v && v[i] && i < max; i++)
                json_array_append_new(a, cut_str(v[i], 256));
        if (a && v && v[i])
                json_array_append_new(a, json_string("..."));
        return a;
}

json_t *
xb_audit_env_names(char *const *env)
{
        json_t *a = json_array();

        for (size_t i = 0; a && env && env[i] && i < 256; i++)
                json_array_append_new(a, cut_str(env[i], strcspn(env[i], "=")));
        return a;
}
