/* The root filesystem of a sandbox as a list of steps, after bubblewrap's
 * setup ops. Building the plan is pure (unit-tested): it decides what the
 * "host" image contains. Opening sources and executing happen in the
 * sandbox's setup child, relative to the new root (the cwd), before
 * pivot_root.
 *
 * The host image: host /usr read-only with the merged-usr links, /etc as
 * one read-only bind of the prepared view (etcview.h: generated files plus
 * the allowlisted host entries), a fresh /proc with Docker's masked and
 * read-only paths, a minimal /dev, writable size-capped /tmp and
 * /home/user, then the caller's binds. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"

enum xb_mop {
        XB_MOP_TMPFS,       /* tmpfs at dest: size, mode, data = extra options */
        XB_MOP_BIND,        /* bind src at dest (dir or file, as src is) */
        XB_MOP_PROC,        /* a fresh procfs for the new pid namespace */
        XB_MOP_DEVPTS,      /* a new devpts instance */
        XB_MOP_DIR,         /* mkdir -p dest */
        XB_MOP_SYMLINK,     /* dest -> data */
        XB_MOP_FILE,        /* write data into a new file dest */
        XB_MOP_MASK,        /* hide dest if present: the host's /dev/null over files, empty ro tmpfs over dirs */
        XB_MOP_RO,          /* make dest (if present) a read-only mount */
        XB_MOP_REMOUNT_RO,  /* make the mount at dest read-only (after filling it) */
        XB_MOP_OVERLAY,     /* overlayfs at dest: data = its options (lowerdir=...) */
};

#define XB_MOPF_RO 0x1u        /* read-only */
#define XB_MOPF_OPTIONAL 0x2u  /* skip quietly if the source is missing */
#define XB_MOPF_DEV 0x4u       /* a device node: the one place nodev is not set */
#define XB_MOPF_NOEXEC 0x8u
#define XB_MOPF_USER 0x10u     /* from the caller's binds: errors name it */
#define XB_MOPF_LAYER 0x20u    /* dest is in the sandbox's own layered root: no symlinks on the way */
#define XB_MOPF_IDMAPPED 0x40u /* src_fd is a detached id-mapped mount, its flags set: moved, not bound */

struct xb_mop_step {
        enum xb_mop op;
        unsigned flags;
        char *dest;        /* relative to the new root, no leading '/' */
        char *src;         /* host path (BIND) */
        char *data;        /* symlink target, file content or tmpfs options */
        uint64_t size;     /* tmpfs size in bytes */
        mode_t mode;
        int src_fd;        /* O_PATH fd of src once opened; -1 otherwise */
        bool skip;         /* optional source was missing */
};

struct xb_mount_plan {
        struct xb_mop_step *steps;
        size_t n, cap;
};

/* A caller's bind: host path, where it appears, and whether writable. */
struct xb_bind {
        char *host;
        char *dest;
        bool rw;
};

/* What the host's top level looks like: merged /usr or real dirs. */
struct xb_host_layout {
        bool merged_usr;       /* /bin, /lib, ... are symlinks into /usr */
        bool has_lib32, has_libx32, has_lib64;
};

/* A layered root (layers.h): the overlays that replace the host image's
 * read-only binds. Paths are the setup child's, before pivot_root. */
struct xb_layered_opts {
        const char *overlay_opts[4];   /* for /usr, /etc, /var/lib/dpkg (root: by the caller) */
};

struct xb_image_opts {
        uint64_t disk;         /* size of /tmp and of /home/user */
        const struct xb_layered_opts *layered;   /* NULL: the tmpfs image */
        uint32_t user_uid, user_gid;   /* the workspace owner, inside ids */
        const char *etc_dir;   /* the prepared /etc view (etcview.h) */
        const struct xb_bind *binds;
        size_t nbinds;
        struct xb_host_layout layout;
};

/* The allowlist of host /etc entries bound read-only (NULL-terminated). */
extern const char *const xb_etc_allowlist[];

/* Build the host image plan. On failure the plan is empty. */
int xb_mountplan_host(struct xb_mount_plan *plan, const struct xb_image_opts *o, struct xb_err *err);
/* Append one step (copies the strings). */
int xb_mountplan_add(struct xb_mount_plan *plan, enum xb_mop op, unsigned flags, const char *dest,
                     const char *src, const char *data, uint64_t size, mode_t mode);
/* Open every source as an O_PATH fd; missing optional sources are skipped.
 * Runs in the setup child: bind sources must be mounts of its namespace. */
int xb_mountplan_open_sources(struct xb_mount_plan *plan, struct xb_err *err);
/* Close the source fds (the daemon does this after the clone). */
void xb_mountplan_close_sources(struct xb_mount_plan *plan);
/* Run every step relative to the cwd (the new root). Setup child only. */
int xb_mountplan_execute(const struct xb_mount_plan *plan, struct xb_err *err);
void xb_mountplan_free(struct xb_mount_plan *plan);

/* Detect the host's top-level layout. */
void xb_host_layout_detect(struct xb_host_layout *l);

/* Parse "HOST:PATH[:ro|:rw]" (read-only by default). */
int xb_bind_parse(const char *spec, struct xb_bind *ret, struct xb_err *err);
/* A sandbox path a bind may use: absolute, normalised, outside the system dirs. */
int xb_bind_dest_validate(const char *dest, struct xb_err *err);
/* True when real (a resolved host path) is one of allow[] or below one. */
bool xb_bind_allowed(const char *real, const char *const *allow, size_t nallow);
/* Resolve bind->host, check it against the allowlist, and replace it with the
 * resolved path; rejects /proc, /sys and /dev sources and nested dests. */
int xb_bind_resolve(struct xb_bind *b, const char *const *allow, size_t nallow, struct xb_err *err);
/* Every dest valid, none equal to or inside another. */
int xb_binds_validate(const struct xb_bind *b, size_t n, struct xb_err *err);
void xb_bind_free(struct xb_bind *b);
