/* The REST adapter's context, which the daemon fills and the HTTP front
 * hands every REST and plugin route (xb_req_app), and what their route
 * files share. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "core/core.h"
#include "transport/http.h"

struct xb_edit_hist;

struct xb_rest {
        struct xb_core *core;
        struct xb_http *http;       /* for absolute URLs; NULL until it listens */
        bool no_auth;
        bool require_guide;         /* Pandora: exec needs guideFollowed */
        size_t ntenants;            /* tenant ids are 0..ntenants-1 */
        char **default_sbx;         /* per tenant: the plugin routes' sandbox id, or NULL */
        struct xb_edit_hist *edits; /* per tenant: the tool bridge's edit_file undo history */
        const char *sandbox_domain; /* --sandbox-domain: ports also at {port}-{id}.DOMAIN; or NULL */
        const struct xb_route *routes;   /* every route the front serves, for /openapi.json */
        size_t nroutes;
        uint64_t template_upload_max;   /* --template-upload-max, for its 413's message */
};

/* The context of a REST or plugin request. */
static inline struct xb_rest *
xb_rest_of(const struct xb_req *r)
{
        return xb_req_app(r);
}

/* Free what the context owns (the default sandboxes' ids, the edit histories). */
void xb_rest_clear(struct xb_rest *rs);

/* 400 with the validation message and a hint. */
void xb_api_bad_request(struct xb_req *r, const struct xb_err *err, const char *hint);
/* The sandbox named by path parameter 0, or a 404 reply and NULL. */
struct xb_sbx *xb_api_sandbox(struct xb_req *r);
/* The plugin routes' sandbox: one per tenant, made on first use; or a reply and NULL. */
struct xb_sbx *xb_default_sandbox(struct xb_req *r);

/* POST /v1/templates (api_tupload.c): an image archive's upload, or
 * template_build's JSON (the route's data is its xb_rest_op_route). */
void xb_api_templates_post(struct xb_req *r);

/* The route tables, in match order within each. */
extern const struct xb_route xb_api_routes_sandboxes[], xb_api_routes_meta[], xb_api_routes_files[],
        xb_api_routes_docs[], xb_api_routes_sessions[], xb_api_routes_plugin[], xb_api_routes_tools[],
        xb_api_routes_events[], xb_api_routes_ports[];
extern const size_t xb_api_nroutes_sandboxes, xb_api_nroutes_meta, xb_api_nroutes_files, xb_api_nroutes_docs,
        xb_api_nroutes_sessions, xb_api_nroutes_plugin, xb_api_nroutes_tools,
        xb_api_nroutes_events, xb_api_nroutes_ports;

/* The published ports' host route (struct xb_host_route in transport/http.h):
 * data is the --sandbox-domain; a Host of {port}-{id}.DOMAIN goes to
 * /v1/sandboxes/{id}/ports/{port}. */
bool xb_api_ports_host(const struct xb_req *r, void *data, char *prefix, size_t cap);
