/* Between the registry (sbx.c) and creation with its warm pool (pool.c,
 * pool_warm.c).
 * Not for other modules: they use core.h. */
#pragma once
#include "core/core.h"

/* A cold start: a new sandbox the loop watches, in no registry and no
 * pool; NULL with err (err->code says why). */
struct xb_sbx *xb__sbx_start(struct xb_core *s, const struct xb_limits *l, const struct xb_bind *binds,
                             size_t nbinds, const struct xb_root_spec *root, struct xb_err *err);
/* Enter x in the registry by id; -ENOMEM. */
int xb__sbx_register(struct xb_sbx *x);
/* The start latency, once x is both created and ready (metrics). */
void xb__sbx_start_timed(struct xb_sbx *x);
/* Init is ready in x, a pooled sandbox: start its warm-up (pool_warm.c).
 * True when it runs: x stays starting until it ends, then xb__sbx_ready. */
bool xb__pool_warm_run(struct xb_sbx *x);
/* x is set up: ready, and every owner waiting for that hears it (sbx.c). */
void xb__sbx_ready(struct xb_sbx *x);
/* A re-adopted sandbox (adopt.c): its socket non-blocking and watched,
 * and its pidfd; registered already. */
void xb__sbx_adopt_watch(struct xb_sbx *x);
/* Out of the registry, with no tombstone and its record kept (adopt.c:
 * it is left for the next daemon). */
void xb__sbx_unlist(struct xb_sbx *x);
