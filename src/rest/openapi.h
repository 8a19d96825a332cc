/* The operations of /openapi.json, as data (openapi_ops.c) for the
 * generator (openapi.c). An operation that corresponds to a tool names it
 * and takes its method, path, parameters, body and reply from the catalog;
 * the others carry their own JSON. Private to those two files. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

struct xb_op_def {
        const char *tool;          /* a tool of the catalog, or NULL */
        const char *method, *path; /* NULL for a tool: its REST mapping's */
        const char *id;            /* operationId; a tool's name when NULL */
        const char *tag;
        const char *summary;       /* one line; a tool's title when NULL */
        const char *description;   /* a tool's description when NULL */
        unsigned status;           /* the success status; a tool's, or 200, when 0 */
        const char *params;        /* JSON array of Parameter objects beside the path's own */
        const char *body;          /* tool: JSON object of REST-only body properties; else a RequestBody object */
        const char *raw_types;     /* tool: media types (space-separated) its body may also be, as raw bytes */
        const char *reply;         /* JSON Response object for the success status (a tool's: its output schema) */
        const char *replies;       /* JSON object of more responses by status, e.g. {"206": {...}} */
        const char *errors;        /* more error statuses than the usual ones, e.g. "409 429" */
        bool sse;                  /* with Accept: text/event-stream it streams server-sent events */
        const char *sse_events;    /* their names, in the order they come */
        bool rest_optional;        /* tool: no body field is required on its own (exec: cmd or argv) */
};

extern const struct xb_op_def xb_op_defs[];
extern const size_t xb_op_ndefs;

/* Tags, in order: "name", "description" pairs, then NULL. */
extern const char *const xb_op_tags[];
