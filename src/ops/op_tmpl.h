/* What the template operations share with sandbox_create and the
 * template routes: builds in flight (op_tbuild.c) and a template's start
 * command (op_tstart.c). */
#pragma once
#include <jansson.h>
#include <stdbool.h>

#include "base/err.h"
#include "core/call.h"

struct xb_core;
struct xb_template;

/* The build of name (building, or failed), as GET shows it; NULL: none. */
json_t *xb_op_build_json(struct xb_core *s, const char *name, int tenant);
/* Append every build of tenant to list. */
void xb_op_builds_list(struct xb_core *s, int tenant, json_t *list);
/* Forget a failed build of name: true if there was one (err set when it
 * is still building, and it stays). */
bool xb_op_build_forget(struct xb_core *s, const char *name, int tenant, struct xb_err *err);

/* sandbox_create of a template with a start command: a call to answer
 * the creation to, which then starts t's command in the new sandbox, waits
 * for its readiness (bounded) and answers c; a sandbox that does not get
 * ready is deleted and c fails with XB_E_TEMPLATE_NOT_READY. NULL when out
 * of memory (c is failed). */
struct xb_call *xb_op_tstart_call(struct xb_core *s, int tenant, const struct xb_template *t, struct xb_call *c);

/* template_build with "oci" (op_toci.c): spec is the checked request. */
void xb_op_oci_import(struct xb_core *s, int tenant, json_t *spec, struct xb_call *c);
