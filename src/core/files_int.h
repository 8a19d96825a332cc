/* Between the two halves of the file operations: files.c runs every
 * operation (start, init's replies, errors, the results of the metadata
 * operations); files_data.c builds the reads and writes on it, which use
 * the fd init opens. Not for other modules: they use core/files.h. */
#pragma once
#include <jansson.h>
#include <stddef.h>
#include <sys/stat.h>

#include "core/call.h"
#include "core/core.h"
#include "proc/filec.h"

/* What a READ or WRITE does with the fd init opened. */
struct xb_fileop_fd_ops {
        /* Takes fd (checked: a regular file, open for q's purpose; st is
         * its stat) and ends c. May take *path (set it NULL). */
        void (*opened)(void *ctx, struct xb_sbx *x, char **path, struct xb_call *c, int fd, const struct stat *st);
        void (*free)(void *ctx);      /* always called, last */
        /* No client waits on it (a process's spill file): a pause need not
         * wait for init's answer, which comes after the resume. */
        bool background;
};

/* Start q, a READ or WRITE, as xb_fileop_run does (it takes path), with
 * its fd for ops->opened. Takes ctx, which ops->free frees. */
void xb_fileop_start_fd(struct xb_sbx *x, struct xb_file_req *q, char *path, const struct xb_fileop_fd_ops *ops,
                        void *ctx, struct xb_call *call);

/* A path for a message: valid UTF-8 (messages are JSON strings) and short
 * enough that the message is never cut inside a character. */
#define XB_SHOWN_MAX 128
#define XB_SHOWN_CAP (XB_SHOWN_MAX * 3 + 8)
const char *xb_fileop_shown(const char *path, char *buf, size_t cap);
/* A JSON string of n bytes of s, made valid UTF-8. */
json_t *xb_fileop_str_json(const char *s, size_t n);
