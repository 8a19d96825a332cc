/* The sandbox's /etc, prepared once and bound read-only into every
 * sandbox as one mount: the generated files (passwd, group, hosts,
 * hostname, resolv.conf, nsswitch.conf) plus copies of the allowlisted
 * host entries (xb_etc_allowlist). One bind instead of forty keeps a
 * sandbox start fast (each mount(2) costs about 20 us).
 *
 * The view lives under the runtime directory and is rebuilt when the host
 * entries change (their top-level status differs from the stamp) or when it
 * is older than XB_ETCVIEW_MAX_AGE_S; a view found current less than
 * XB_ETCVIEW_RECHECK_S ago is used without checking again. Rebuilds are atomic (build aside,
 * then exchange), so concurrent processes never see half a view. */
#pragma once
#include "base/err.h"

#define XB_ETCVIEW_RECHECK_S 2
#define XB_ETCVIEW_KEEP_S (8 * 24 * 3600)
#define XB_ETCVIEW_MAX_BYTES (64u << 20)

/* The current view, built if needed: *ret_path (malloc'd) is dir/etc-<hash>. */
int xb_etcview_prepare(const char *dir, unsigned user_uid, char **ret_path, struct xb_err *err);
