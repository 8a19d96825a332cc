/* OpenAPI, guide and plugin manifest (in progress). */
#include "server/server.h"

const struct xb_route xb_api_routes_docs[] = { { "GET", "/v1/docs-pending", NULL, 0 } };
const size_t xb_api_nroutes_docs = 0;
