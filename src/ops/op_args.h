/* What the operations share about their arguments: the sandbox and the
 * process they name, and their body fields apart from the path's. */
#pragma once
#include <stdbool.h>
#include <jansson.h>

#include "core/call.h"

struct xb_core;
struct xb_sbx;
struct xb_proc;

/* The tenant's sandbox named by args "id", to use (xb_sbx_use: an
 * auto-paused one resumes); NULL after failing c with
 * XB_E_SANDBOX_NOT_FOUND or XB_E_SANDBOX_PAUSED. */
struct xb_sbx *xb_op_sandbox(struct xb_core *core, int tenant, json_t *args, struct xb_call *c);
/* The same, as it is: for describing, deleting, pausing and resuming. */
struct xb_sbx *xb_op_sandbox_any(struct xb_core *core, int tenant, json_t *args, struct xb_call *c);
/* The process named by args "pid" (a number, or its decimal string) in
 * the sandbox named by "id"; NULL after failing c (XB_E_SANDBOX_NOT_FOUND
 * or XB_E_PROCESS_NOT_FOUND). */
struct xb_proc *xb_op_process(struct xb_core *core, int tenant, json_t *args, struct xb_call *c);
/* args without the path's keys (NULL-terminated): a new object sharing
 * its values, so field checks see only the body. NULL when out of memory. */
json_t *xb_op_body(json_t *args, const char *const *path);
/* A variable name such as df or results.mean (letters, digits, _ and .). */
bool xb_op_identifier(const char *s);
