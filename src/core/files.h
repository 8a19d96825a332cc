/* File operations inside a sandbox: read, write, stat, list, mkdir, move
 * and delete, each one round trip to the sandbox's init. Each reports
 * through a call (core/call.h). The ops (ops/op_files.c) validate the
 * arguments and use the JSON results; REST's fast paths (GET and PUT
 * .../files) take the fd init opened and stream it themselves. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/call.h"
#include "core/core.h"
#include "proc/filec.h"

#define XB_FILE_READ_DEFAULT (10u << 20)   /* read_file's bytes when max_bytes is absent */
#define XB_FILE_READ_MAX (32u << 20)       /* ... and the most it may ask for */

/* 0 if x can take file operations; else -ESRCH with err (XB_E_SANDBOX_GONE). */
int xb_fileop_sandbox_ok(const struct xb_sbx *x, struct xb_err *err);

/* Each of these takes path and path2 (malloc'd, absolute, as shown to the
 * client; q->path and q->path2 point at them) and ends call, now or when
 * init answers: with the file's error (XB_E_FILE_NOT_FOUND, ...), or
 * XB_E_TOO_MANY_FILE_REQUESTS when too many operations wait on x. */

/* STAT, LIST, MKDIR, MOVE or DELETE: done with the result's JSON. */
void xb_fileop_run(struct xb_sbx *x, struct xb_file_req *q, char *path, char *path2, struct xb_call *call);
/* READ: done with {path, size, content, encoding, truncated}: the first
 * max bytes as text ("utf-8") when they are valid UTF-8 without NUL (a
 * character cut by max is left out), else as "base64". The file is read,
 * checked and encoded a slice per turn of the loop, on later turns. */
void xb_fileop_read(struct xb_sbx *x, struct xb_file_req *q, char *path, size_t max, struct xb_call *call);
/* WRITE: the file's content becomes len bytes of data (taken, malloc'd);
 * done with {path, size, written}, or the errors of xb_upload_end. */
void xb_fileop_write(struct xb_sbx *x, struct xb_file_req *q, char *path, char *data, size_t len,
                     struct xb_call *call);

/* ---- REST's fast paths: the fd itself ---- */

/* A byte range in the terms of HTTP's Range header (REST parses it). */
struct xb_file_range {
        enum { XB_RANGE_NONE, XB_RANGE_FROM_TO, XB_RANGE_FROM, XB_RANGE_SUFFIX } kind;
        uint64_t a, b;                /* bytes=a-b, bytes=a-, bytes=-b */
};

/* What to send of an open file. */
struct xb_file_span {
        int fd;                       /* the caller's once call is done */
        uint64_t off, len, size;
        bool partial;                 /* a range applies: 206 */
};

/* READ: once init opened the file, *ret holds it and the part rg asks for,
 * and call is done ({}). A range wholly outside the file fails
 * XB_E_RANGE_NOT_SATISFIABLE, with ret->size set. ret is not touched
 * after a cancel. */
void xb_fileop_open_read(struct xb_sbx *x, struct xb_file_req *q, char *path, const struct xb_file_range *rg,
                         struct xb_file_span *ret, struct xb_call *call);

/* An upload in progress: a file init opened for writing. */
struct xb_upload;

#define XB_UPLOAD_GZIP 0x1u          /* the body is gzip: the sandbox's writer decodes it */

/* WRITE: once init opened the file, *ret is the upload (the caller's) and
 * call is done ({}); the body then goes to xb_upload_fd, and
 * xb_upload_end or xb_upload_abort ends it. flags: XB_UPLOAD_*. */
void xb_fileop_open_upload(struct xb_sbx *x, struct xb_file_req *q, char *path, unsigned flags,
                           struct xb_upload **ret, struct xb_call *call);
int xb_upload_fd(const struct xb_upload *up);
/* The body is in: written bytes of it reached the fd, and errnum is the
 * error that stopped the rest (0: none; EFBIG: over the upload limit).
 * Returns {path, size, written}, or NULL with err (XB_E_DISK_FULL,
 * XB_E_UPLOAD_TOO_LARGE, XB_E_WRITE_FAILED, XB_E_SANDBOX_GONE, and for
 * gzip XB_E_INVALID_ENCODING); written is the bytes that went into the
 * file (decoded, for gzip; the body's are "received" then). A failed
 * upload is cut back to the length the file had when opened. Frees up. */
json_t *xb_upload_end(struct xb_upload *up, uint64_t written, int errnum, struct xb_err *err);
/* The client left mid-body: cut the file back and free up. */
void xb_upload_abort(struct xb_upload *up);
