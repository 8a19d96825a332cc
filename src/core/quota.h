/* Operator ceilings and tenant quotas: what one request may ask for, and
 * what one tenant may hold at once, so that no tenant takes the host or
 * locks the others out. The parsers are pure; the checks read the
 * registry. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"

/* Does word start with a quota key and '=' ("sandboxes=4")? */
bool xb_quota_is_word(const char *word);
/* Set the field one "key=value" word names. -EINVAL with err naming it. */
int xb_quota_word(struct xb_quota *q, const char *word, struct xb_err *err);
/* "sandboxes=10,execs=4,rate=30,memory=16G,disk=16G" (any subset) into *q. */
int xb_quota_parse(const char *spec, struct xb_quota *q, struct xb_err *err);
/* Fields of over that are set replace those of *q. */
void xb_quota_merge(struct xb_quota *q, const struct xb_quota *over);

/* Fill the ceilings the operator left at 0 (memory and disk: the host's
 * RAM; pids: 32768; cpus: the online CPUs), at least the defaults; and
 * bring unlimited defaults under a ceiling. Reads /proc/meminfo. */
void xb_quota_ceilings(struct xb_limits *ceiling, struct xb_limits *defaults);
/* Is l (a request) within the ceilings? 400 (XB_E_OVER_CEILING) naming the
 * field and the ceiling, in the message and the hint, when not. */
int xb_quota_check_limits(struct xb_core *s, const struct xb_limits *l, struct xb_err *err);
/* The same against ceiling c, with hint (static, or NULL) for the client. */
int xb_quota_check_ceiling(const struct xb_limits *c, const char *hint, const struct xb_limits *l,
                           struct xb_err *err);
/* May tenant create a sandbox with l now? XB_E_OVER_QUOTA (429, with
 * retry_s) when not. A success takes one of its creations a minute. */
int xb_quota_check_create(struct xb_core *s, int tenant, const struct xb_limits *l, struct xb_err *err);
/* May x's tenant start one more command? XB_E_OVER_QUOTA when not. */
int xb_quota_check_exec(struct xb_sbx *x, struct xb_err *err);
