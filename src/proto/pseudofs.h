/* The one list of filesystems whose files are never served: their sizes
 * lie, a read may block or act (proc, sysfs, debugfs, tracefs, securityfs,
 * cgroup v1 and v2; in a sandbox /proc/self is init itself), or another
 * process answers every call (FUSE). Init checks it before it hands out an
 * fd and the daemon again on each fd it gets. Pure code, linked into both. */
#pragma once
#include <stdbool.h>

/* Whether statfs(2)'s f_type names one of those filesystems. */
bool xb_pseudo_fs_magic(unsigned long f_type);
/* Whether fd lives on one of them; true as well when fstatfs(2) fails. */
bool xb_pseudo_fs(int fd);
