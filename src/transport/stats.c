/* The front's own counters: replies by route template and status, and
 * authentication failures; and who may see the server's global figures.
 * Counting is by route, never by raw path, so the set stays as small as
 * the route table however clients spell their URLs. */
#include "transport/http_int.h"

void
http_count_reply(struct xb_req *r, unsigned status)
{
        struct xb_http *h = r->http;
        struct http_count *c = h->counts[r->route ? (size_t)(r->route - h->routes) : h->nroutes];

        /* A route answers with a handful of statuses; past that, the rest
         * share the last slot, reported as status 0 ("other"). */
        for (size_t i = 0; i < COUNT_SLOTS - 1; i++)
                if (c[i].status == status || c[i].n == 0) {
                        c[i].status = status;
                        c[i].n++;
                        return;
                }
        c[COUNT_SLOTS - 1].n++;
}

void
xb_http_foreach_count(const struct xb_http *h, xb_http_count_fn fn, void *data)
{
        for (size_t rt = 0; rt <= h->nroutes; rt++)
                for (size_t i = 0; i < COUNT_SLOTS; i++)
                        if (h->counts[rt][i].n)
                                fn(data, rt < h->nroutes ? h->routes[rt].method : "other",
                                   rt < h->nroutes ? h->routes[rt].pattern : "unmatched",
                                   h->counts[rt][i].status, h->counts[rt][i].n);
}

void
xb_http_auth_failures(const struct xb_http *h, uint64_t *missing, uint64_t *invalid)
{
        *missing = h->auth_missing;
        *invalid = h->auth_invalid;
}

bool
xb_req_admin(const struct xb_req *r)
{
        const struct xb_http *h = r->http;

        if (!h->o.ntokens)
                return true;
        return r->tenant >= 0 && (size_t)r->tenant < h->o.ntokens && h->o.admin && h->o.admin[r->tenant];
}
