/* Between sandbox.c and its parts: the daemon side of a layered root
 * (rootfs.c) and the child's network (netsock.c).
 * Not for other modules. */
#pragma once
#include "sandbox/sandbox.h"

/* Free the overlay options (XB_LAYER_PARTS of them). */
void xb__free_opts(char **opts);
/* Before the clone: the sandbox's writable layer (new, a snapshot, or a
 * fork's to adopt) and the overlay options; opts[0] is the root's, the
 * others go into lo. */
int xb__layered_prepare(struct xb_sandbox *sb, const struct xb_sandbox_config *cfg, char **opts,
                        struct xb_layered_opts *lo, struct xb_err *err);
/* After the id maps: the id-mapped layer mounts (XB_SETUP_LAYERS). */
int xb__send_layers(struct xb_sandbox *sb, const struct xb_sandbox_config *cfg, struct xb_err *err);
/* Then the caller's (resolved) binds as id-mapped mounts, as the owner of
 * each directory (or the engine's mount_uid:mount_gid), in XB_SETUP_BINDS
 * messages of up to XB_MSG_MAXFDS. */
int xb__send_binds(struct xb_sandbox *sb, const struct xb_sandbox_config *cfg, const struct xb_bind *binds,
                   struct xb_err *err);
/* netsock.c, in the setup child: bring lo up; bind the egress sockets
 * (proxy, DNS) and send them over sock, which it closes. */
int xb__loopback_up(void);
int xb__send_net_sockets(int sock);
