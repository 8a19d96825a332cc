/* The layer store: one btrfs filesystem that holds every sandbox's writable
 * layer (a subvolume each, disk-limited by a qgroup) and the read-only
 * layers of templates (read-only snapshots). Snapshots and forks are
 * subvolume snapshots: O(1) in the data written.
 *
 * The filesystem is a sparse image under the state directory, loop-mounted
 * (LO_FLAGS_AUTOCLEAR: the loop device goes with the last unmount) at a
 * root-only directory of the runtime dir, in a mount namespace of the
 * daemon's own (the host never sees the mount; it ends with the daemon);
 * or the state directory itself when it is on btrfs already. Inside it:
 *   sbx/<id>     a sandbox's writable layer (subvolume; see layer_dirs)
 *   layers/<id>  a template's read-only layer (read-only snapshot)
 *   base/root    the base template's root skeleton (plain directories)
 * Every file in it is stored with the sandbox's ids as seen inside
 * (0..65535); each sandbox sees the store through an id-mapped mount onto
 * its own host range (sandbox.c). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

/* A writable layer holds one upper and one work directory per overlay. */
#define XB_LAYER_PARTS 4
#define XB_STORE_SIZE_DEFAULT ((uint64_t)32 << 30)   /* sparse: only what is written is used */
extern const char *const xb_layer_parts[XB_LAYER_PARTS];   /* "root", "usr", "etc", "dpkg" */

struct xb_store {
        int fd;                       /* the store's root directory */
        char *path;                   /* where it is mounted (or the btrfs dir) */
        bool mounted;                 /* we mounted an image there: unmount at close */
};

/* Open (creating when missing) the store of state_dir: its image of
 * size bytes (sparse), mounted below runtime_dir. */
int xb_store_open(const char *state_dir, const char *runtime_dir, uint64_t size, struct xb_store **ret,
                  struct xb_err *err);
/* Unmount (the loop device is released with it) and free. Safe on NULL. */
void xb_store_close(struct xb_store *s);

/* A new writable layer sbx/<name>, empty upper and work directories, with
 * a disk limit of limit bytes (0: none). */
int xb_store_layer_create(struct xb_store *s, const char *name, uint64_t limit, struct xb_err *err);
/* Snapshot sbx/<src> as dir/<dst> ("sbx" or "layers"), read-only for
 * layers. The limit is carried over; limit != 0 sets a new one. */
int xb_store_snapshot(struct xb_store *s, const char *src, const char *dir, const char *dst, bool readonly,
                      uint64_t limit, struct xb_err *err);
#define XB_STORE_NO_LIMIT UINT64_MAX   /* for xb_store_limit: none (btrfs's "clear") */
/* Set the disk limit of sbx/<name>; -errno. */
int xb_store_limit(struct xb_store *s, const char *name, uint64_t limit);
#define XB_STORE_SLACK ((uint64_t)16 << 20)   /* room for metadata, e.g. to truncate at the limit */
/* Rename sbx/<from> (a snapshot made for a fork) to sbx/<name> and set
 * its limit. */
int xb_store_adopt(struct xb_store *s, const char *from, const char *name, uint64_t limit, struct xb_err *err);
/* Delete dir/<name> (a subvolume) and its qgroup. Idempotent. */
int xb_store_delete(struct xb_store *s, const char *dir, const char *name, struct xb_err *err);
/* Rename layers/<from> to layers/<to> (a content name found after an
 * import); EEXIST when to is there already. */
int xb_store_rename_layer(struct xb_store *s, const char *from, const char *to, struct xb_err *err);
/* Call fn for every entry of dir (to delete leftovers of a crash). */
int xb_store_list(struct xb_store *s, const char *dir, void (*fn)(const char *name, void *data), void *data);
/* Whether dir/<name> is there. */
bool xb_store_has(struct xb_store *s, const char *dir, const char *name);
