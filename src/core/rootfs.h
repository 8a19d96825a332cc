/* Whole roots as layers (templates "from": "debian:SUITE" and OCI
 * imports): argv, a host program, fills the directory named by
 * $XB_ROOTFS (a fresh writable layer's root part) with its output in
 * stdout and stderr (stdin: in_fd, or /dev/null when -1); when it exits 0 the daemon splits /usr, /etc and
 * /var/lib/dpkg into the layer's parts, makes the mount targets plain
 * directories (and /home/user the sandbox user's), removes device nodes,
 * fifos and sockets, clears setuid and setgid bits, and snapshots it
 * read-only as layers/<layer>. done(data, layer or NULL, err) reports.
 * The program's output goes to out(data, text, n) as it comes (when out is
 * not NULL): valid UTF-8, in pieces of up to 16 KiB; the end of it is in
 * a failure's message. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct xb_core;

typedef void (*xb_rootfs_done)(void *data, const char *layer, const struct xb_err *err);
typedef void (*xb_rootfs_output)(void *data, const char *text, size_t n);

int xb_rootfs_import(struct xb_core *s, const char *layer, char *const argv[], int in_fd, xb_rootfs_done done,
                     xb_rootfs_output out, void *data, struct xb_err *err);
/* Whether the store has layers/<layer> (an earlier import: a cache). */
bool xb_rootfs_layer_exists(struct xb_core *s, const char *layer);
/* The host's Debian mirror (the first apt source of the archive, not
 * its security one), read from /etc/apt; false when there is none. */
bool xb_host_debian_mirror(char *buf, size_t n);
/* Stop (on) or allow again every import's writes to its layer: the state
 * directory's filesystem is nearly full (diskguard.c). */
void xb_rootfs_clamp(struct xb_core *s, bool on);
