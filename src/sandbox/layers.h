/* A layered root: the sandbox's /, /usr, /etc and /var/lib/dpkg are
 * overlays of read-only lower layers (its template's, then the host-derived
 * base) and one writable upper layer of its own (a store subvolume, or a
 * tmpfs charged to its memory cgroup).
 *
 * Theory of operation. The daemon makes one id-mapped, detached mount
 * (open_tree + mount_setattr MOUNT_ATTR_IDMAP onto the sandbox's user
 * namespace) per source: the sandbox's own writable layer, the store's
 * read-only layers, the base root skeleton, host /usr, the /etc view and
 * host /var/lib/dpkg (under a fix of its statoverride). Files stored as uid 0..65535 thus appear to the
 * sandbox as its own 0..65535, whatever host range it runs on; a fork's
 * copy is readable by the child on its other range. The seven fds go to the
 * setup child in one XB_SETUP_LAYERS message; it attaches them below its
 * staging tmpfs (XB_LAYER_STAGE), mounts the overlays with the options
 * built here (userxattr: an overlay of a user namespace keeps its
 * metadata in user.* xattrs), and pivots into the root overlay; the
 * staging mounts go with the old root. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "sandbox/mountplan.h"

#define XB_LAYER_STAGE "/tmp/s"
#define XB_LAYER_NFDS 7   /* upper, layers, base root, usr, etc, dpkg, the dpkg fix */
#define XB_LAYERS_MAX 64  /* template layers under one sandbox */

enum xb_upper_kind {
        XB_UPPER_DISK,    /* the store's sbx/<name> */
        XB_UPPER_MEMORY,  /* a tmpfs of the setup child, size = disk */
};

/* What a sandbox's root is made of. */
struct xb_root_spec {
        enum xb_upper_kind kind;
        const char *from;             /* DISK: start as a snapshot of sbx/<from>; NULL: empty */
        bool adopt;                   /* from is a fork's snapshot, ours to take (renamed, not copied) */
        const char *const *lowers;    /* the store's layers/<name>, top first */
        size_t nlowers;
        uint32_t user;                /* its default user inside (0 or 1000): its workspaces' owner */
        bool own_root;                /* the lowers are a whole root (mmdebstrap, OCI): no host lowers */
};

/* Build (or find current) the base root skeleton below runtime_dir:
 * the top-level directories, /home/user (user_uid's), the merged-usr
 * links and the dirs apt and dpkg expect. Returns its path. */
int xb_layers_base_prepare(const char *runtime_dir, const struct xb_host_layout *l, unsigned user_uid,
                           char **ret_path, struct xb_err *err);
/* The layer over host /var/lib/dpkg: its statoverride without the
 * entries that name accounts the sandbox's /etc lacks (dpkg refuses to
 * run on an unknown user or group there). Returns its path. */
int xb_layers_dpkg_prepare(const char *runtime_dir, char **ret_path, struct xb_err *err);
/* The overlay options of part i (xb_layer_parts) of root, as the setup
 * child will see them. Pure; the caller frees *ret. */
int xb_layers_overlay_opts(const struct xb_root_spec *root, size_t part, char **ret, struct xb_err *err);

/* Daemon side: the id-mapped detached mounts for the sandbox whose user
 * namespace is userns_fd. srcs: the writable layer's directory (NULL for
 * a memory upper), the store's layers/, the base skeleton, /usr, the /etc
 * view, /var/lib/dpkg. fds[] get -1 where no source is. */
int xb_layers_idmapped(int userns_fd, const char *const srcs[XB_LAYER_NFDS], int fds[XB_LAYER_NFDS],
                       struct xb_err *err);
/* Setup child: attach fds below XB_LAYER_STAGE (a fresh tmpfs there),
 * make a memory upper if asked (size bytes), mount the root overlay at
 * XB_LAYER_STAGE/r and enter it. */
int xb_layers_enter(const struct xb_root_spec *root, const int fds[XB_LAYER_NFDS], uint64_t size,
                    const char *root_opts, struct xb_err *err);
