/* The file API in two halves: files.c runs operations, each one round trip
 * to the sandbox's init, and renders their results; api_files.c parses
 * and validates the requests. Internal to those two files. */
#pragma once
#include <stdbool.h>

#include "proc/filec.h"
#include "core/core.h"

/* True if x can take file operations; else a 410 reply and false. */
bool xb_fileop_sandbox_ok(struct xb_req *r, struct xb_sbx *x);
/* Send q to init and suspend r until init answers, which replies to r.
 * Takes path and path2 (malloc'd, absolute, as shown to the client);
 * range is a READ's Range header or NULL. False after replying with the
 * error (429 when too many operations wait on the sandbox). */
bool xb_fileop_start(struct xb_req *r, struct xb_sbx *x, struct xb_file_req *q, char *path, char *path2,
                     const char *range);
/* PUT at phase BEGIN: ask init to open the file (q is a WRITE); once it
 * has, the body streams into it. Takes path. */
void xb_fileop_upload_begin(struct xb_req *r, struct xb_sbx *x, struct xb_file_req *q, char *path);
/* PUT at phase END: answer {path, size, written}, or the write's error
 * (507 on a full disk, 413 over --upload-max); a failed upload is cut
 * back to the length the file had when opened. */
void xb_fileop_upload_end(struct xb_req *r);
