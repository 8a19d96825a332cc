/* The file operations' argument checks, shared with REST's fast paths
 * (GET and PUT .../files stream by fd, so they call core themselves).
 *
 * Arguments are as ops.h says. Query-style ones (path, append, mode,
 * depth, recursive) may come as REST's query strings or as JSON values:
 * "true", "1", "yes", "" or true; "3" or 3. A string holding a NUL is
 * refused the way a query value with one always was. */
#pragma once
#include <jansson.h>

#include "base/err.h"
#include "proc/filec.h"

struct xb_core;
struct xb_sbx;

/* The advice for a make_directory or move_file body that is not right. */
#define XB_OPFILE_HINT_MKDIR "send {\"path\": \"/home/user/dir\", \"parents\": true}"
#define XB_OPFILE_HINT_MOVE "send {\"from\": \"/home/user/a\", \"to\": \"/home/user/b\"}"

/* The sandbox args["id"] names, if it can take file operations; else NULL
 * with err (XB_E_SANDBOX_NOT_FOUND, XB_E_SANDBOX_GONE). */
struct xb_sbx *xb_opfile_sandbox(struct xb_core *core, int tenant, json_t *args, struct xb_err *err);
/* A READ of args["path"]: fills q and *ret_path (malloc'd, absolute; q->path
 * points at it). -EINVAL with err. */
int xb_opfile_read_args(json_t *args, struct xb_file_req *q, char **ret_path, struct xb_err *err);
/* A WRITE (parents made) of args["path"], with "append" and "mode". */
int xb_opfile_write_args(json_t *args, struct xb_file_req *q, char **ret_path, struct xb_err *err);
