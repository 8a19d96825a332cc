/* Resource limits of a sandbox or a command, their defaults and bounds, and
 * the parsers for the sizes and durations a user types ("512M", "1.5s").
 * Pure code: no syscalls, unit-tested. */
#pragma once
#include <stdint.h>

#include "base/err.h"

struct xb_limits {
        uint64_t wall_ms;     /* wall-clock timeout; 0 = none */
        uint64_t cpu_ms;      /* CPU time of the whole tree; 0 = none */
        uint64_t memory;      /* bytes, no swap; 0 = none */
        uint64_t pids;        /* tasks in the sandbox; 0 = none */
        uint32_t cpus_milli;  /* CPU bandwidth, 1000 = one core; 0 = none */
        uint64_t output;      /* bytes kept per stream (head + tail) */
        uint64_t fsize;       /* largest file a process may write; 0 = none */
        uint64_t disk;        /* size of each writable tmpfs (/tmp, /home/user) */
};

/* Hard bounds: anything outside is refused before it is used. */
#define XB_MEMORY_MIN ((uint64_t)8 << 20)
#define XB_MEMORY_MAX ((uint64_t)1 << 40)
#define XB_PIDS_MAX 1000000ULL
#define XB_WALL_MAX_MS (7ULL * 24 * 3600 * 1000)
#define XB_CPUS_MAX_MILLI 1024000U
#define XB_OUTPUT_MIN 64ULL
#define XB_OUTPUT_MAX ((uint64_t)1 << 30)
#define XB_DISK_MIN ((uint64_t)1 << 20)
#define XB_DISK_MAX ((uint64_t)1 << 40)

/* Defaults for a one-shot run. */
void xb_limits_default(struct xb_limits *l);

/* Check every field against its bounds; the message names the field and the range. */
int xb_limits_validate(const struct xb_limits *l, struct xb_err *err);

/* "4096", "64k", "512M", "1.5G", "2GiB", "1 TB" (binary units) to bytes. */
int xb_parse_size(const char *s, uint64_t *ret, struct xb_err *err);
/* "10" (seconds), "1.5s", "250ms", "2m", "1h" to milliseconds. */
int xb_parse_duration_ms(const char *s, uint64_t *ret, struct xb_err *err);
/* "1", "0.5", "2.25" cores to thousandths of a core. */
int xb_parse_cpus(const char *s, uint32_t *ret, struct xb_err *err);
/* A plain non-negative integer. */
int xb_parse_u64(const char *s, uint64_t *ret, struct xb_err *err);
