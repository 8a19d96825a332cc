/* GET /metrics (metrics.c): the Prometheus exposition, scoped to the caller. */
#pragma once
#include "transport/http.h"

void xb_rest_metrics(struct xb_req *r);
