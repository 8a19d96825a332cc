/* The shared package cache's store: immutable artefacts (.deb, npm
 * tarballs, wheels) fetched by the daemon itself from a package source,
 * keyed by their upstream URL and stored by the SHA-256 of their bytes.
 *
 *   DIR/objects/<sha256>   the bytes, named by their hash
 *   DIR/index/<sha256(url)> "xbpkg1 <object sha256> <size>\n<url>\n"; its
 *                          mtime is the entry's last use (LRU)
 *   DIR/tmp/               fills in progress, removed at open
 *
 * Every file is written to tmp/ and renamed into place once complete and
 * flushed, so a partial download is never served, and two fills of one URL
 * at once each write their own temporary file (the later rename wins, with
 * the same bytes). DIR is in the daemon's state directory: no sandbox has
 * a path to it, and bytes reach a sandbox only through the proxy. The
 * total is bounded: the least recently used entries go first. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct xb_pkgcache;
struct xb_pkgfill;

struct xb_pkgcache_stats {
        uint64_t hits, misses;        /* cacheable requests served from the store, or fetched */
        uint64_t bytes_served;        /* from the store to sandboxes */
        uint64_t bytes_stored;        /* into the store */
        uint64_t evictions;
        uint64_t size, entries;       /* now */
        uint64_t max;
};

/* max: the bound in bytes (> 0). */
int xb_pkgcache_open(const char *dir, uint64_t max, struct xb_pkgcache **ret, struct xb_err *err);
void xb_pkgcache_close(struct xb_pkgcache *pc);
const struct xb_pkgcache_stats *xb_pkgcache_stats(const struct xb_pkgcache *pc);

/* An fd open on url's bytes and their size (the entry becomes the most
 * recently used, and counts a hit), or -ENOENT (counts nothing). */
int xb_pkgcache_lookup(struct xb_pkgcache *pc, const char *url, uint64_t *size);
void xb_pkgcache_count_miss(struct xb_pkgcache *pc);
void xb_pkgcache_served(struct xb_pkgcache *pc, uint64_t bytes);

/* A fill of url; NULL when a temporary file cannot be made. */
struct xb_pkgfill *xb_pkgfill_begin(struct xb_pkgcache *pc, const char *url);
/* -ENOSPC (and the fill is bad) when its filesystem would have less than
 * XB_PKGCACHE_FREE_MIN free: the state directory's reserve and guard
 * (core/core.h), which a sandbox's downloads must not eat either. */
#define XB_PKGCACHE_FREE_MIN (((uint64_t)256 + 32) << 20)
int xb_pkgfill_write(struct xb_pkgfill *f, const void *p, size_t n);
/* Store what was written, if it is `expect` bytes (UINT64_MAX: any), and
 * free f; -errno when it was not stored. */
int xb_pkgfill_commit(struct xb_pkgfill *f, uint64_t expect);
void xb_pkgfill_abort(struct xb_pkgfill *f);
