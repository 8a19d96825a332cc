/* The tool catalog: every tool a model can call, defined once (name,
 * description, input and output JSON Schemas, annotations, the operation
 * of ops/ops.h it runs, and where its arguments go in the REST request of
 * that operation). MCP tools/list, OpenAI and Anthropic tool schemas and
 * the tool operations of /openapi.json are all generated from it, so they
 * cannot drift apart. A tool call becomes its operation's arguments with
 * xb_catalog_op_args; the REST placement serves the OpenAPI document.
 *
 * Input schemas stay inside OpenAI's strict-mode subset: every object has
 * "additionalProperties": false and lists every property in "required";
 * an optional argument is typed ["T", "null"] and null means "absent".
 * Output schemas describe the JSON the REST endpoint answers; they list
 * what is always present in "required" and stay open to new fields. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct xb_limits;

#define XB_TOOL_ARGS_MAX 8

/* Where a tool argument goes in the REST request. Every kind but LOCAL
 * is also an argument of the operation, under its REST name. */
enum xb_arg_in {
        XB_ARG_BODY,    /* a field of the JSON body: the default for unlisted arguments */
        XB_ARG_PATH,    /* fills the {name} segment of the path */
        XB_ARG_QUERY,   /* a query parameter */
        XB_ARG_RAW,     /* the whole request body, as bytes (application/octet-stream) */
        XB_ARG_LOCAL,   /* used by the tool layer itself, not sent */
};

#define XB_ARGF_ENV_PAIRS 0x1u   /* [{"name": "K", "value": "V"}] is sent as {"K": "V"} */

struct xb_tool_arg {
        const char *name;        /* the tool's argument */
        enum xb_arg_in in;
        const char *rest;        /* its name in the request and the operation; NULL: the same */
        const char *fallback;    /* when null: another argument's value, "$sandbox" or "$session" (the
                                  * caller's defaults), or "=text" (that text) */
        unsigned flags;
};

/* What the REST operation answers. */
enum xb_reply_kind {
        XB_REPLY_JSON,    /* the tool's output schema, as application/json */
        XB_REPLY_EMPTY,   /* 204: the tool layer reports success itself */
        XB_REPLY_BYTES,   /* raw bytes: the tool layer builds the output */
        XB_REPLY_TEXT,    /* text (markdown): the tool layer wraps it */
};

struct xb_tool_rest {
        const char *method;      /* NULL: no single operation; the tool layer implements it over others */
        const char *path;        /* OpenAPI template, e.g. "/v1/sandboxes/{id}/exec" */
        enum xb_reply_kind reply;
        unsigned status;         /* success status: 200 when 0 */
        struct xb_tool_arg args[XB_TOOL_ARGS_MAX];   /* arguments not sent as plain body fields */
};

struct xb_tool {
        const char *name;        /* ^[a-zA-Z0-9_-]{1,64}$ */
        const char *op;          /* the operation it runs (ops/ops.h); NULL: the tool layer implements it */
        const char *title;
        const char *description; /* written for a model */
        const char *input_json;
        const char *output_json;
        bool read_only, destructive, idempotent, open_world;
        struct xb_tool_rest rest;
        json_t *input, *output;  /* parsed by xb_catalog_init */
};

enum xb_tool_format { XB_TOOLS_MCP, XB_TOOLS_OPENAI, XB_TOOLS_ANTHROPIC, XB_TOOLS_OPENAI_RESPONSES };

/* Parse and check every schema once; later calls return 0 at once. An
 * error names the tool and the problem: the server must not start then. */
int xb_catalog_init(struct xb_err *err);
/* The tools, in catalog order; xb_catalog_init must have succeeded. */
size_t xb_catalog_count(void);
const struct xb_tool *xb_catalog_tool(size_t i);
const struct xb_tool *xb_catalog_find(const char *name);

/* One tool in the given format (new reference). */
json_t *xb_catalog_tool_json(const struct xb_tool *t, enum xb_tool_format f);
/* Every tool in the given format: an array (new reference). */
json_t *xb_catalog_list_json(enum xb_tool_format f);
/* "mcp", "openai", "openai-responses", "anthropic" to a format; -1 for anything else. */
int xb_catalog_format(const char *name);

/* Check a schema against OpenAI's strict-mode subset, recursively. On
 * failure returns -EINVAL with the JSON pointer of the offending node. */
int xb_schema_check_strict(json_t *schema, struct xb_err *err);

/* What fills an argument that is null and has a "$sandbox" or "$session"
 * fallback: the caller's default sandbox, and the session it picked for the
 * call (run_code: one per language). NULL: none, the argument is required. */
struct xb_tool_defaults {
        const char *sandbox;
        const char *session;
};

/* Map a call's arguments (an object, or NULL for none) to the flat
 * arguments of its operation, as REST would pass them: each under its
 * REST name ("sandbox_id" is "id"), path parameters as strings, nulls left
 * out or filled by their fallback, env pairs made an object, LOCAL
 * arguments dropped. -EINVAL with a message for the model on
 * an unknown, missing or mistyped argument; -ENOTSUP for a tool with no
 * operation of its own. On success *ret_args is a new object. */
int xb_catalog_op_args(const struct xb_tool *t, json_t *args, const struct xb_tool_defaults *defaults,
                       json_t **ret_args, struct xb_err *err);

/* ---- the guide (guide.c) ---- */

/* The usage guide for a model, in markdown, with this server's limits (malloc'd). */
char *xb_guide_render(const struct xb_limits *defaults);
