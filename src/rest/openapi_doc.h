/* The OpenAPI document of the REST adapter, generated from the router's
 * tables and the tool catalog. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "transport/http.h"

/* Build the OpenAPI 3.1 document of the given routes. base_url goes in
 * servers[] ("" for a relative server); auth_optional says the server runs
 * without tokens. Routes with no definition are described generically and
 * counted in *ret_undocumented (a test keeps that at 0). New reference. */
json_t *xb_openapi_build(const struct xb_route *routes, size_t nroutes, const char *base_url, bool auth_optional,
                         size_t *ret_undocumented);
/* "/v1/sandboxes/{id}/exec" -> "/v1/sandboxes/{}/exec", the router's form (malloc'd). */
char *xb_openapi_route_pattern(const char *path);

