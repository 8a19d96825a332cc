/* The sandbox's /etc, prepared once and bound read-only into every
 * sandbox as one mount: the generated files (passwd, group, hosts,
 * hostname, resolv.conf, nsswitch.conf) plus copies of the allowlisted
 * host entries (xb_etc_allowlist). One bind instead of forty keeps a
 * sandbox start fast (each mount(2) costs about 20 us).
 *
 * Views live under the runtime directory, each named by a hash of what it
 * depends on (the allowlisted host entries' identity and times, and the
 * user's uid), and "etc" is a symlink to the current one. A change on the
 * host makes a new view; one found current less than XB_ETCVIEW_RECHECK_S
 * ago is used without checking again. A view is built aside and renamed
 * into place, and the symlink replaced by rename, so concurrent processes
 * never see half a view. Views no longer current are removed once retired
 * for XB_ETCVIEW_KEEP_S, longer than any sandbox that binds one lives. */
#pragma once
#include "base/err.h"

#define XB_ETCVIEW_RECHECK_S 2
#define XB_ETCVIEW_KEEP_S (8 * 24 * 3600)
#define XB_ETCVIEW_MAX_BYTES (64u << 20)

/* The current view, built if needed: *ret_path (malloc'd) is dir/etc-<hash>. */
int xb_etcview_prepare(const char *dir, unsigned user_uid, char **ret_path, struct xb_err *err);
/* The same with extra_ca (PEM) appended to ssl/certs/ca-certificates.crt
 * and kept as ssl/certs/execbox-egress-ca.pem: the egress CA of secrets
 * (net/tls.h). dir should be the CA's own (a view per CA). */
int xb_etcview_prepare_ca(const char *dir, unsigned user_uid, const char *extra_ca, char **ret_path,
                          struct xb_err *err);
/* Remove the views of extra_ca under the directory dir_fd, once no sandbox
 * binds them (the server stopped after every sandbox ended). */
void xb_etcview_remove_ca(int dir_fd, const char *extra_ca);
