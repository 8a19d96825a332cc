/* File API (in progress). */
#include <unistd.h>

#include "server/server.h"

void
xb_fileop_on_reply(struct xb_sbx *x, const struct xb_init_event *ev, int *fds, size_t nfds)
{
        (void)x;
        (void)ev;
        for (size_t i = 0; i < nfds; i++)
                close(fds[i]);
}

void
xb_fileop_sandbox_died(struct xb_sbx *x)
{
        (void)x;
}

const struct xb_route xb_api_routes_files[] = { { "GET", "/v1/files-pending", NULL, 0 } };
const size_t xb_api_nroutes_files = 0;
