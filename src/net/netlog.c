/* A sandbox's egress log: a ring of its last XB_NET_LOG_MAX decisions,
 * grown on demand, each with a stable offset so a reader can page on and
 * a connection can add its byte counts when it ends. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "net/net_int.h"

static uint64_t
unix_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static struct xb_netlog_entry *
entry(const struct xb_net *n, uint64_t off)
{
        if (off < n->log_first || off >= n->log_next || !n->log_cap)
                return NULL;
        return &n->log[off % n->log_cap];
}

static void
clear(struct xb_netlog_entry *e)
{
        free(e->host);
        free(e->rule);
        memset(e, 0, sizeof(*e));
}

uint64_t
xb__netlog_add(struct xb_net *n, const char *kind, const char *host, uint16_t port, const char *addr, bool allowed,
               const char *rule)
{
        struct xb_netlog_entry *e;

        if (allowed)
                n->allowed++;
        else
                n->denied++;
        if (n->log_next - n->log_first == n->log_cap && n->log_cap < XB_NET_LOG_MAX) {
                /* Grow: re-lay the ring so offset % cap still finds each entry. */
                size_t cap = n->log_cap ? n->log_cap * 2 : 16;
                struct xb_netlog_entry *nl;

                if (cap > XB_NET_LOG_MAX)
                        cap = XB_NET_LOG_MAX;
                nl = calloc(cap, sizeof(*nl));
                if (nl) {
                        for (uint64_t o = n->log_first; o < n->log_next; o++)
                                nl[o % cap] = n->log[o % n->log_cap];
                        free(n->log);
                        n->log = nl;
                        n->log_cap = cap;
                }
        }
        if (!n->log_cap)
                return UINT64_MAX;
        if (n->log_next - n->log_first == n->log_cap) {
                clear(&n->log[n->log_first % n->log_cap]);
                n->log_first++;
        }
        e = &n->log[n->log_next % n->log_cap];
        clear(e);
        e->time_ms = unix_ms();
        e->host = strdup(host ? host : "");
        e->rule = strdup(rule ? rule : "");
        e->port = port;
        e->kind = kind;
        e->allowed = allowed;
        if (addr)
                snprintf(e->addr, sizeof(e->addr), "%s", addr);
        return n->log_next++;
}

void
xb__netlog_bytes(struct xb_net *n, uint64_t off, uint64_t out, uint64_t in, const char *addr)
{
        struct xb_netlog_entry *e = entry(n, off);

        if (!e)
                return;
        e->bytes_out = out;
        e->bytes_in = in;
        if (addr && addr[0])
                snprintf(e->addr, sizeof(e->addr), "%s", addr);
}

void
xb__netlog_free(struct xb_net *n)
{
        for (size_t i = 0; i < n->log_cap; i++)
                clear(&n->log[i]);
        free(n->log);
        n->log = NULL;
        n->log_cap = 0;
}

json_t *
xb_net_log_json(const struct xb_net *n, uint64_t offset, unsigned limit)
{
        json_t *a = json_array();
        uint64_t o = offset < n->log_first ? n->log_first : offset;

        for (; a && o < n->log_next && limit; o++, limit--) {
                const struct xb_netlog_entry *e = entry(n, o);

                json_array_append_new(a, json_pack("{s:I,s:I,s:s,s:s,s:i,s:s?,s:b,s:s,s:I,s:I}", "offset", (json_int_t)o,
                                                   "time_ms", (json_int_t)e->time_ms, "kind", e->kind, "host",
                                                   e->host ? e->host : "", "port", e->port, "addr",
                                                   e->addr[0] ? e->addr : NULL, "allowed", e->allowed, "rule",
                                                   e->rule ? e->rule : "", "bytes_out", (json_int_t)e->bytes_out,
                                                   "bytes_in", (json_int_t)e->bytes_in));
        }
        return json_pack("{s:o,s:I,s:I,s:I}", "entries", a, "first_offset", (json_int_t)n->log_first, "next_offset",
                         (json_int_t)o, "dropped", (json_int_t)(offset < n->log_first ? n->log_first - offset : 0));
}
