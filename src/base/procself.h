/* The calling process's own figures from /proc/self, for the standard
 * process_* metrics. Linux only; nothing is cached. */
#pragma once
#include <stdint.h>

struct xb_procself {
        double cpu_seconds;           /* user + system */
        uint64_t rss_bytes, vsize_bytes;
        uint64_t open_fds, max_fds;
        double start_time_seconds;    /* since the Unix epoch */
};

/* Fill *ret; -errno when /proc cannot be read (*ret is then untouched). */
int xb_procself_read(struct xb_procself *ret);
