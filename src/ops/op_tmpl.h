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
/* The same from an archive's fd (owned, read from where it stands). */
void xb_op_oci_import_fd(struct xb_core *s, int tenant, json_t *spec, int archive_fd, struct xb_call *c);

/* An uploaded image archive (op_tbuild.c): args are the template_build
 * fields an import takes (name; env, workdir, user optional). check says
 * whether they would be taken, before the body comes: 0, or -1 with err.
 * run checks again (another request may have taken the name meanwhile)
 * and imports from fd (owned, at the archive's start). */
int xb_op_template_upload_check(struct xb_core *s, int tenant, json_t *args, struct xb_err *err);
void xb_op_template_upload(struct xb_core *s, int tenant, json_t *args, int fd, struct xb_call *c);
