/* The access log: one line per HTTP request, on stderr when the request
 * is complete (its reply sent, or the client gone). It names the route's
 * template, never the raw path (which holds ids and file names), and the
 * tenant by its token's index, never the token. The format is in
 * README.md ("Logs"); keep the two in step. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/random.h>
#include <time.h>

#include "base/log.h"
#include "transport/http_int.h"

static uint64_t
now_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void
http_access_begin(struct xb_req *r)
{
        struct xb_http *h = r->http;

        /* A tag per start keeps ids apart across restarts. */
        if (!h->boot_tag && getrandom(&h->boot_tag, sizeof(h->boot_tag), GRND_NONBLOCK) != sizeof(h->boot_tag))
                h->boot_tag = (uint32_t)now_us();
        h->boot_tag |= 1;
        snprintf(r->id, sizeof(r->id), "%08x%08llx", h->boot_tag, (unsigned long long)++h->nrequests);
        r->start_us = now_us();
}

const char *
xb_req_id(const struct xb_req *r)
{
        return r->id;
}

void
http_access_end(struct xb_req *r, int toe)
{
        /* libmicrohttpd's enum MHD_RequestTerminationCode, in order. */
        static const char *const ends[] = { "", " end=error", " end=timeout", " end=shutdown", " end=read_error",
                                            " end=client_abort" };
        uint64_t us = now_us() - r->start_us;
        char tenant[16] = "-", status[8] = "-";

        if (!r->http->o.access_log)
                return;
        if (r->tenant >= 0)
                snprintf(tenant, sizeof(tenant), "%d", r->tenant);
        if (r->status)
                snprintf(status, sizeof(status), "%u", r->status);
        xb_log_record(XB_LOG_INFO, "access", "id=%s tenant=%s method=%s route=%s status=%s bytes=%llu duration_ms=%llu.%03llu%s",
                      r->id, tenant, r->method, r->route ? r->route->pattern : "-", status,
                      (unsigned long long)r->bytes, (unsigned long long)(us / 1000), (unsigned long long)(us % 1000),
                      toe >= 0 && toe < (int)(sizeof(ends) / sizeof(ends[0])) ? ends[toe] : " end=other");
}
