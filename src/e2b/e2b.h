/* E2B compatibility: the unmodified E2B SDKs (e2b, @e2b/code-interpreter)
 * against execbox. A peer of REST and MCP over the operation table.
 *
 * Theory of operation. Three fronts share the daemon's one listener:
 * - the control plane (E2B's API: POST /v2/sandboxes, list, get, kill,
 *   timeout, pause, connect), authenticated by X-API-KEY, which is an
 *   execbox token and names its tenant (control.c);
 * - envd, E2B's in-sandbox daemon, over Connect-RPC with the JSON codec
 *   (process.Process in envd_proc.c, filesystem.Filesystem, GET /files,
 *   /health and /metrics in envd_fs.c, POST /files streamed in
 *   envd_upload.c), on sandbox port 49983;
 * - the code interpreter's /execute and /contexts on port 49999
 *   (interp.c).
 * The sandbox fronts are chosen by the E2b-Sandbox-Id and E2b-Sandbox-Port
 * headers (E2B_SANDBOX_URL pointing here) or by a Host of the form
 * "{port}-{id}.{domain}" (E2B_DOMAIN behind a TLS proxy), through the HTTP
 * front's host routes, which put /e2b/{id}/envd or /e2b/{id}/interp
 * before the path. Each sandbox made here gets an envd access token,
 * which its envd routes require (X-Access-Token). Every call goes through
 * ops/ with the owning tenant; no HTTP request is made to another adapter. */
#pragma once
#include <stddef.h>

#include "transport/http.h"

struct xb_core;
struct xb_e2b;

/* NULL when out of memory. domain: --sandbox-domain, the DOMAIN of
 * "{port}-{id}.DOMAIN" Hosts (borrowed), or NULL: any domain. */
struct xb_e2b *xb_e2b_new(struct xb_core *core, const char *domain);
void xb_e2b_free(struct xb_e2b *e);
/* Every route, each with e as its data (owned by e): the control plane,
 * and the sandbox fronts under /e2b/{id}/envd and /e2b/{id}/interp. */
const struct xb_route *xb_e2b_routes(struct xb_e2b *e, size_t *ret_n);
/* The host route (transport/http.h) that sends a request for port 49983
 * or 49999 of a sandbox, named by the E2b-Sandbox-* headers or the Host,
 * to those prefixes. */
struct xb_host_route xb_e2b_host_route(struct xb_e2b *e);
