/* The install cache: apt installs captured once as read-only layers of
 * the store, shared by every tenant, applied to later sandboxes in the
 * same state without running dpkg (ops/op_install.c runs the chain).
 *
 * An entry is the exact change one `apt-get install` made: the upper of a
 * builder sandbox whose lowers are a read-only snapshot of the target's
 * writable layer over the target's own lowers. Its key is the SHA-256 of
 * everything that decides that change: the target's lowers (layer ids; for
 * the host-derived base, the host's dpkg status and apt configuration),
 * a digest of every file of the target's writable layer (paths, types,
 * modes, owners, contents, overlay markers: its own dpkg status and apt
 * lists included), and the sorted package set. The mirror's index is the
 * one input outside: an entry made after a fresh `apt-get update` (the
 * target had no lists) serves for XB_INST_INDEX_TTL_MS, then is made again.
 *
 *   state_dir/install-cache/<key>  {"packages", "bytes", "created_unix_ms"};
 *                                  its mtime is the last use (LRU)
 *   store layers/inst-<key, 40 hex> the layer (read-only btrfs snapshot)
 *   store layers/xi-<random>        a target's snapshot while its install
 *                                  runs (deleted after, and at start-up)
 *
 * Nothing inside a sandbox has a path to either. An entry reaches a
 * sandbox as a read-only view attached in its own mount namespace for the
 * copy (instview.c; the copy reflinks), or as a tar stream on its stdin
 * (xb_inst_export); either way a root process of the sandbox writes the
 * files through its own overlay, in its cgroup, charged to its disk
 * limit. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"

#define XB_INST_KEY_HEX 65
#define XB_INST_LAYER_MAX 48          /* "inst-" + 40 hex */
#define XB_INST_SIZE_DEFAULT ((uint64_t)8 << 30)
#define XB_INST_INDEX_TTL_MS (6ull * 3600 * 1000)
#define XB_INST_REMOVALS_MAX 4096

struct xb_core;
struct xb_sbx;

struct xb_inst_stats {
        uint64_t hits, misses, evictions;
        uint64_t bytes_stored;        /* into cached layers */
        uint64_t bytes_applied;       /* from cached layers into sandboxes */
        uint64_t entries, size, max;  /* now */
};

struct xb_instcache;

/* xb_inst_open (core.h) opens (creating) state_dir/install-cache, bound
 * to max bytes, and drops entries whose layer is missing, layers without
 * an entry, and xi- snapshots a crash left; a no-op without a store or
 * with max 0. xb_inst_close frees it. */
const struct xb_inst_stats *xb_inst_stats(const struct xb_core *s);
/* Whether layers/<name> belongs to the install cache (templates.c's GC
 * leaves those alone). */
bool xb_inst_owns_layer(const char *name);

/* Freeze x for the instant of a read-only snapshot of its writable layer
 * as layers/<snap> (snap: XB_INST_LAYER_MAX bytes). */
int xb_inst_stage(struct xb_sbx *x, char *snap, struct xb_err *err);
void xb_inst_unstage(struct xb_core *s, const char *snap);
/* The key of installing pkgs (sorted, unique) into x, whose writable
 * layer snap holds. *fresh_index: x has no apt lists (the install runs
 * apt-get update). */
int xb_inst_key(struct xb_sbx *x, const char *snap, char *const *pkgs, char key[XB_INST_KEY_HEX], bool *fresh_index,
                struct xb_err *err);
/* A usable entry of key (counted a hit and made the newest), or false
 * (counted a miss). */
bool xb_inst_lookup(struct xb_core *s, const char *key);
/* A builder: a new sandbox of x's tenant, as root, network packages, x's
 * limits, over snap and x's lowers, with an empty writable layer. */
int xb_inst_builder(struct xb_sbx *x, const char *snap, struct xb_sbx **ret, struct xb_err *err);
/* Keep the builder b's writable layer as the entry of key; evicts the
 * least recently used entries past the bound. */
int xb_inst_capture(struct xb_sbx *b, const char *key, char *const *pkgs, bool fresh_index, struct xb_err *err);

/* Apply: a host tar of key's layer writing into *ret_fd (a pipe's read
 * end, for a root process of the sandbox: `tar -x -C /`), its pidfd, the
 * paths to remove first (overlay whiteouts and opaque directories,
 * relative to /; NULL-terminated) and the bytes it carries. */
int xb_inst_export(struct xb_core *s, const char *key, bool tar, int *ret_fd, int *ret_pidfd, char ***ret_removals,
                   uint64_t *ret_bytes, struct xb_err *err);
/* Without tar: only the removals and the bytes (*ret_fd, *ret_pidfd -1),
 * for a copy from xb_inst_view. */
/* The entry as a read-only overlay for x's root copier (instview.c): the
 * fd of a detached mount of it, id-mapped for x. */
int xb_inst_view(struct xb_sbx *x, const char *key, int *ret_fd, struct xb_err *err);
/* The view attached inside x at /tmp/<name> for the copy, and detached. */
#define XB_INST_VIEW_NAME 48
int xb_inst_attach(struct xb_sbx *x, const char *key, char name[XB_INST_VIEW_NAME], struct xb_err *err);
void xb_inst_detach(struct xb_sbx *x, const char *name);
/* Reap the exporter (closes pidfd); 0 when it exited 0. Counts bytes
 * applied when ok too. */
int xb_inst_export_end(struct xb_core *s, const char *key, int pidfd, bool ok, uint64_t bytes);
