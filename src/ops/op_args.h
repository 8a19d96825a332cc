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
/* Fail c (or fill err) for a sandbox id the registry does not have: 410
 * with why when it ended lately (a tombstone), else 404. */
void xb_op_no_sandbox(struct xb_core *core, int tenant, const char *id, struct xb_call *c);
int xb_op_no_sandbox_err(struct xb_core *core, int tenant, const char *id, struct xb_err *err);
/* The same, as it is: for describing, deleting, pausing and resuming. */
struct xb_sbx *xb_op_sandbox_any(struct xb_core *core, int tenant, json_t *args, struct xb_call *c);
/* The process named by args "pid" (a number, or its decimal string) in
 * the sandbox named by "id"; NULL after failing c (XB_E_SANDBOX_NOT_FOUND
 * or XB_E_PROCESS_NOT_FOUND). */
struct xb_proc *xb_op_process(struct xb_core *core, int tenant, json_t *args, struct xb_call *c);
/* args without the path's keys (NULL-terminated): a new object sharing
 * its values, so field checks see only the body. NULL when out of memory. */
json_t *xb_op_body(json_t *args, const char *const *path);
struct xb_netpol;
/* A `network` value (net/policy.h's grammar); err's ecode XB_E_INVALID_NETWORK. */
int xb_op_network_parse(json_t *v, struct xb_netpol **ret, struct xb_err *err);
/* An apt package name, with an optional =version or :arch (Debian's
 * grammar, lower case; nothing apt-get would read as an option). */
bool xb_op_apt_name_ok(const char *p);
/* A variable name such as df or results.mean (letters, digits, _ and .). */
bool xb_op_identifier(const char *s);
struct xb_limits;
/* body's `limits` over defaults, each in its range; err names the field. */
int xb_op_limits_parse(json_t *body, const struct xb_limits *defaults, struct xb_limits *l, struct xb_err *err);
/* `metadata`: absent, null, or an object of at most 64 keys and 16 KiB
 * (XB_E_INVALID_METADATA, XB_E_METADATA_TOO_LARGE). */
int xb_op_metadata_check(json_t *meta, struct xb_err *err);
