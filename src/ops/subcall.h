/* Internal calls: an operation (or a started process) run on behalf of a
 * chain in the server, such as a template build or an install, whose
 * outcome goes to a function of the chain rather than to a client. It
 * knows nothing of what the chain does with the output or the result. */
#pragma once
#include <jansson.h>
#include <stddef.h>

#include "base/err.h"
#include "core/call.h"

struct xb_core;

/* The call ended: res (borrowed; NULL on failure) or err (NULL on success). */
typedef void (*xb_subcall_then)(void *owner, json_t *res, const struct xb_err *err);
/* n bytes of the call's stdout or stderr (stream names which), as they come. */
typedef void (*xb_subcall_output)(void *owner, const char *stream, const char *data, size_t n);

/* A call that reports its end to then(owner, ...) once, and its output to
 * output (NULL: the call asks for no events). Hand it to an operation or
 * xb_proc_exec; it must end by done or fail (never xb_call_cancel). NULL
 * when out of memory. */
struct xb_call *xb_subcall_new(void *owner, xb_subcall_then then, xb_subcall_output output);
/* Run the operation named op with args (taken) as such a call. then NULL:
 * the outcome is dropped. Out of memory (args NULL too) or an unknown op:
 * then(owner, NULL, err) at once. */
void xb_subcall_run(struct xb_core *s, int tenant, const char *op, json_t *args, void *owner, xb_subcall_then then,
                    xb_subcall_output output);
