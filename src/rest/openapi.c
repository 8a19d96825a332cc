/* The OpenAPI 3.1 document, generated from the router's tables: every
 * route gets its operation from openapi_ops.c, and the operations that are
 * tools take their parameters, body and reply schemas from the tool
 * catalog, so the document, the MCP tools and the OpenAI schemas agree.
 * Routes with no definition still appear, described generically, and are
 * counted so a unit test can insist there are none. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "ops/catalog.h"
#include "rest/openapi_doc.h"
#include "ops/catalog_schemas.h"
#include "rest/openapi.h"

#include "base/version.h"

#define ERROR_REF "{\"$ref\": \"#/components/responses/Error\"}"

static const struct {
        const char *name, *schema;
} path_params[] = {
        { "id", "{\"type\": \"string\", \"description\": \"The sandbox id.\"}" },
        { "pid", "{\"type\": \"integer\", \"minimum\": 1, \"description\": \"The process id.\"}" },
        { "sid", "{\"type\": \"string\", \"description\": \"The session id.\"}" },
        { "name", "{\"type\": \"string\", \"description\": \"A variable name, e.g. df or results.mean.\"}" },
        { "image", "{\"type\": \"string\", \"description\": \"An image name, the last part of an output's url.\"}" },
};

static json_t *
parse(const char *text, const char *what, const char *op, bool *failed)
{
        json_error_t je;
        json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);

        if (!j) {
                xb_error("openapi: the %s of %s is not JSON: %s (column %d)", what, op, je.text, je.column);
                *failed = true;
        }
        return j;
}

char *
xb_openapi_route_pattern(const char *path)
{
        char *out = malloc(strlen(path) + 1), *o = out;

        if (!out)
                return NULL;
        for (const char *p = path; *p; p++) {
                *o++ = *p;
                if (*p == '{') {
                        while (*p && *p != '}')
                                p++;
                        if (!*p)
                                break;
                        *o++ = '}';
                }
        }
        *o = '\0';
        return out;
}

/* A copy of a tool argument's schema for a parameter: no null, no description. */
static json_t *
param_schema(json_t *s)
{
        json_t *c = json_deep_copy(s), *t = json_object_get(c, "type"), *en = json_object_get(c, "enum");
        size_t i;

        json_object_del(c, "description");
        if (json_is_array(t)) {
                for (i = json_array_size(t); i-- > 0;)
                        if (!strcmp(json_string_value(json_array_get(t, i)) ?: "", "null"))
                                json_array_remove(t, i);
                if (json_array_size(t) == 1)
                        json_object_set(c, "type", json_array_get(t, 0));
        }
        for (i = json_array_size(en); i-- > 0;)
                if (json_is_null(json_array_get(en, i)))
                        json_array_remove(en, i);
        return c;
}

/* A tool argument's description for a query parameter: its "null: X."
 * becomes "Default: X." (or goes, for a required one). */
static char *
param_description(const char *d, bool required)
{
        const char *n = d ? strstr(d, " null: ") : NULL;
        char *out = NULL;

        if (!d)
                return NULL;
        if (!n)
                return strdup(d);
        if (required)
                return strndup(d, (size_t)(n - d));
        if (asprintf(&out, "%.*s Default: %s", (int)(n - d), d, n + 7) < 0)
                return NULL;
        return out;
}

static bool
nullable(json_t *s)
{
        json_t *t = json_object_get(s, "type"), *v;
        size_t i;

        if (json_object_get(s, "anyOf"))
                return true;
        json_array_foreach(t, i, v)
                if (!strcmp(json_string_value(v) ?: "", "null"))
                        return true;
        return false;
}

static const struct xb_tool_arg *
tool_arg(const struct xb_tool *t, const char *name)
{
        for (const struct xb_tool_arg *a = t->rest.args; a < t->rest.args + XB_TOOL_ARGS_MAX && (a->name || a->rest); a++)
                if (a->name && !strcmp(a->name, name))
                        return a;
        return NULL;
}

/* The {name} parameters of a path, in order. */
static void
add_path_params(json_t *params, const char *path)
{
        for (const char *p = strchr(path, '{'); p; p = strchr(p + 1, '{')) {
                const char *end = strchr(p, '}');
                char name[32];
                json_t *schema = NULL;

                if (!end || (size_t)(end - p - 1) >= sizeof(name))
                        break;
                memcpy(name, p + 1, (size_t)(end - p - 1));
                name[end - p - 1] = '\0';
                for (size_t i = 0; i < sizeof(path_params) / sizeof(path_params[0]) && !schema; i++)
                        if (!strcmp(path_params[i].name, name))
                                schema = json_loads(path_params[i].schema, 0, NULL);
                if (!schema)
                        schema = json_pack("{s:s}", "type", "string");
                json_array_append_new(params, json_pack("{s:s,s:s,s:b,s:s,s:O}", "name", name, "in", "path", "required",
                                                        1, "description",
                                                        json_string_value(json_object_get(schema, "description")) ?: name,
                                                        "schema", schema));
                json_object_del(schema, "description");
                json_decref(schema);
        }
}

static json_t *
raw_body(const char *description)
{
        return json_pack("{s:s,s:b,s:{s:{s:{s:s,s:s}}}}", "description", description ? description : "The bytes.",
                         "required", 1, "content", "application/octet-stream", "schema", "type", "string", "format",
                         "binary");
}

/* The raw media types a body may also be (an upload beside the JSON). */
static void
add_raw_types(json_t *op, const char *types)
{
        json_t *content = json_object_get(json_object_get(op, "requestBody"), "content");

        for (const char *p = types; content && *p;) {
                size_t n = strcspn(p, " ");

                if (n)
                        json_object_setn_new(content, p, n,
                                             json_pack("{s:{s:s,s:s}}", "schema", "type", "string", "format",
                                                       "binary"));
                p += n + strspn(p + n, " ");
        }
}

/* Query parameters and the request body of a tool's operation. */
static void
tool_request(json_t *op, json_t *params, const struct xb_tool *t, const struct xb_op_def *d, bool *failed)
{
        json_t *props = json_object_get(t->input, "properties"), *s, *bprops = json_object(), *req = json_array();
        const char *key;
        bool body_needed = false;

        json_object_foreach(props, key, s) {
                const struct xb_tool_arg *a = tool_arg(t, key);
                const char *rest = a && a->rest ? a->rest : key;

                switch (a ? a->in : XB_ARG_BODY) {
                case XB_ARG_QUERY: {
                        /* An argument with a fallback is always sent: the operation needs it. */
                        bool required = !nullable(s) || a->fallback;
                        _cleanup_free_ char *desc = param_description(json_string_value(json_object_get(s,
                                                                                                   "description")),
                                                                      required);

                        json_array_append_new(params, json_pack("{s:s,s:s,s:b,s:s,s:o}", "name", rest, "in", "query",
                                                                "required", required, "description", desc ? desc : rest,
                                                                "schema", param_schema(s)));
                        break;
                }
                case XB_ARG_RAW:
                        json_object_set_new(op, "requestBody",
                                            raw_body(json_string_value(json_object_get(s, "description"))));
                        break;
                case XB_ARG_BODY:
                        if (a && (a->flags & XB_ARGF_ENV_PAIRS))
                                json_object_set_new(bprops, rest, parse(strcmp(rest, "env") ? J_REST_MAP : J_REST_ENV,
                                                                        rest, t->name, failed));
                        else
                                json_object_set(bprops, rest, s);
                        if (!nullable(s))
                                body_needed = true;
                        if (!nullable(s) && !d->rest_optional)
                                json_array_append_new(req, json_string(rest));
                        break;
                case XB_ARG_PATH:
                case XB_ARG_LOCAL:
                        break;
                }
        }
        if (d->body) {
                json_t *extra = parse(d->body, "body", t->name, failed);

                json_object_update(bprops, extra);
                json_decref(extra);
        }
        if (json_object_size(bprops))
                json_object_set_new(op, "requestBody",
                                    json_pack("{s:b,s:{s:{s:{s:s,s:o,s:o,s:b}}}}", "required", body_needed,
                                              "content", "application/json", "schema", "type", "object",
                                              "properties", bprops, "required", req, "additionalProperties", 0));
        else {
                json_decref(bprops);
                json_decref(req);
        }
}

static json_t *
success_reply(const struct xb_op_def *d, const struct xb_tool *t, const char *id, unsigned status, bool *failed)
{
        json_t *r;

        if (d->reply)
                r = parse(d->reply, "reply", id, failed);
        else if (t && t->rest.reply == XB_REPLY_JSON)
                r = json_pack("{s:s,s:{s:{s:O}}}", "description", "The result.", "content", "application/json",
                              "schema", t->output);
        else if (t && t->rest.reply == XB_REPLY_TEXT)
                r = json_pack("{s:s,s:{s:{s:{s:s}},s:{s:O}}}", "description",
                              "Markdown; with `Accept: application/json` (and not text/markdown), the tool's JSON.",
                              "content", "text/markdown", "schema", "type", "string", "application/json", "schema",
                              t->output);
        else if (t && t->rest.reply == XB_REPLY_BYTES)
                r = json_pack("{s:s,s:{s:{s:{s:s,s:s}}}}", "description", "The bytes.", "content",
                              "application/octet-stream", "schema", "type", "string", "format", "binary");
        else
                r = json_pack("{s:s}", "description", status == 204 ? "Done; no content." : "Success.");
        if (r && d->sse) {
                char desc[512];

                snprintf(desc, sizeof(desc), "%s With `Accept: text/event-stream` the reply streams as server-sent "
                         "events instead%s%s, the last one named result.",
                         json_string_value(json_object_get(r, "description")) ?: "",
                         d->sse_events ? ": " : "", d->sse_events ? d->sse_events : "");
                json_object_set_new(r, "description", json_string(desc));
                json_object_set_new(json_object_get(r, "content"), "text/event-stream",
                                    json_pack("{s:{s:s}}", "schema", "type", "string"));
        }
        return r;
}

static json_t *
build_op(const struct xb_op_def *d, const struct xb_tool *t, const char *path, unsigned route_flags, bool *failed)
{
        json_t *op = json_object(), *params = json_array(), *resp = json_object();
        const char *id = d->id ? d->id : t ? t->name : "unnamed";
        unsigned status = d->status ? d->status : t && t->rest.status ? t->rest.status : 200;
        bool public = route_flags & XB_ROUTE_PUBLIC;
        char code[12];
        size_t npath;

        json_object_set_new(op, "operationId", json_string(id));
        json_object_set_new(op, "summary", json_string(d->summary ? d->summary : t ? t->title : id));
        if (d->description || t)
                json_object_set_new(op, "description", json_string(d->description ? d->description : t->description));
        json_object_set_new(op, "tags", json_pack("[s]", d->tag));
        if (public)
                json_object_set_new(op, "security", json_array());
        add_path_params(params, path);
        npath = json_array_size(params);
        if (t)
                tool_request(op, params, t, d, failed);
        else if (d->body)
                json_object_set_new(op, "requestBody", parse(d->body, "body", id, failed));
        if (d->raw_types)
                add_raw_types(op, d->raw_types);
        if (d->params) {
                json_t *extra = parse(d->params, "params", id, failed);

                json_array_extend(params, extra);
                json_decref(extra);
        }
        if (json_array_size(params))
                json_object_set(op, "parameters", params);
        snprintf(code, sizeof(code), "%u", status);
        json_object_set_new(resp, code, success_reply(d, t, id, status, failed));
        if (d->replies) {
                json_t *extra = parse(d->replies, "replies", id, failed);

                json_object_update(resp, extra);
                json_decref(extra);
        }
        if (json_object_get(op, "requestBody") || json_array_size(params) > npath)
                json_object_set_new(resp, "400", json_loads(ERROR_REF, 0, NULL));
        if (!public)
                json_object_set_new(resp, "401", json_loads(ERROR_REF, 0, NULL));
        if (strchr(path, '{'))
                json_object_set_new(resp, "404", json_loads(ERROR_REF, 0, NULL));
        for (const char *e = d->errors; e && *e;) {
                size_t n = strcspn(e, " ");

                if (n && n < sizeof(code)) {
                        memcpy(code, e, n);
                        code[n] = '\0';
                        json_object_set_new(resp, code, json_loads(ERROR_REF, 0, NULL));
                }
                e += n + strspn(e + n, " ");
        }
        json_object_set_new(resp, "default", json_loads(ERROR_REF, 0, NULL));
        json_object_set_new(op, "responses", resp);
        if (t)
                json_object_set_new(op, "x-execbox-tool", json_string(t->name));
        json_decref(params);
        return op;
}

/* The method and OpenAPI path of a definition; false if its tool is unknown. */
static bool
def_where(const struct xb_op_def *d, const struct xb_tool **t, const char **method, const char **path)
{
        *t = d->tool ? xb_catalog_find(d->tool) : NULL;
        if (d->tool && (!*t || !(*t)->rest.method))
                return false;
        *method = *t ? (*t)->rest.method : d->method;
        *path = *t ? (*t)->rest.path : d->path;
        return *method && *path;
}

static void
add_op(json_t *paths, const char *path, const char *method, json_t *op)
{
        json_t *item = json_object_get(paths, path);
        char lower[16];
        size_t i;

        for (i = 0; method[i] && i < sizeof(lower) - 1; i++)
                lower[i] = (char)tolower((unsigned char)method[i]);
        lower[i] = '\0';
        if (!item) {
                item = json_object();
                json_object_set_new(paths, path, item);
        }
        if (json_object_get(item, lower))
                json_decref(op);   /* the same route twice: the first one wins */
        else
                json_object_set_new(item, lower, op);
}

/* A route nobody described: its path with {p1}, {p2}... and a bare operation. */
static void
add_undocumented(json_t *paths, const struct xb_route *rt, size_t n)
{
        struct xb_op_def d = { .tag = "undocumented", .summary = "Undocumented route." };
        char path[512], id[48];
        size_t o = 0;
        unsigned k = 0;
        bool failed = false;

        for (const char *p = rt->pattern; *p && o < sizeof(path) - 8; p++) {
                if (p[0] == '{' && p[1] == '}') {
                        o += (size_t)snprintf(path + o, sizeof(path) - o, "{p%u}", ++k);
                        p++;
                } else
                        path[o++] = *p;
        }
        path[o] = '\0';
        snprintf(id, sizeof(id), "undocumented_%zu", n);
        d.id = id;
        add_op(paths, path, strcmp(rt->method, "*") ? rt->method : "GET", build_op(&d, NULL, path, rt->flags, &failed));
}

static json_t *
tags_json(void)
{
        json_t *a = json_array();

        for (const char *const *t = xb_op_tags; t[0] && t[1]; t += 2)
                json_array_append_new(a, json_pack("{s:s,s:s}", "name", t[0], "description", t[1]));
        json_array_append_new(a, json_pack("{s:s,s:s}", "name", "undocumented", "description",
                                           "Routes without a description yet."));
        return a;
}

json_t *
xb_openapi_build(const struct xb_route *routes, size_t nroutes, const char *base_url, bool auth_optional,
                 size_t *ret_undocumented)
{
        json_t *doc, *paths = json_object(), *security;
        size_t undocumented = 0;
        bool failed = false;

        if (xb_catalog_init(NULL) < 0) {
                json_decref(paths);
                return NULL;
        }
        for (size_t j = 0; j < xb_op_ndefs; j++) {
                const struct xb_op_def *d = &xb_op_defs[j];
                const struct xb_tool *t;
                const char *method, *path;

                if (!def_where(d, &t, &method, &path) || !d->tag || (!d->tool && (!d->id || !d->summary))) {
                        xb_error("openapi: operation %zu (%s) needs a tool with a REST operation, or a method, "
                                 "path, id and summary; and a tag", j, d->id ? d->id : d->tool ? d->tool : "?");
                        failed = true;
                }
        }
        for (size_t i = 0; i < nroutes; i++) {
                const struct xb_route *rt = &routes[i];
                bool found = false;

                if (rt->flags & XB_ROUTE_HIDDEN)
                        continue;
                for (size_t j = 0; j < xb_op_ndefs; j++) {
                        const struct xb_op_def *d = &xb_op_defs[j];
                        const struct xb_tool *t;
                        const char *method, *path;
                        _cleanup_free_ char *pattern = NULL;

                        if (!def_where(d, &t, &method, &path))
                                continue;
                        if (strcmp(rt->method, "*") && strcmp(rt->method, method))
                                continue;
                        pattern = xb_openapi_route_pattern(path);
                        if (!pattern || strcmp(pattern, rt->pattern))
                                continue;
                        add_op(paths, path, method, build_op(d, t, path, rt->flags, &failed));
                        found = true;
                }
                if (!found)
                        add_undocumented(paths, rt, ++undocumented);
        }
        security = auth_optional ? json_pack("[{s:[]},{}]", "bearerAuth") : json_pack("[{s:[]}]", "bearerAuth");
        doc = json_pack(
                "{s:s,s:{s:s,s:s,s:s,s:s},s:[{s:s,s:s}],s:o,s:o,s:o,s:{s:{s:o},s:{s:{s:s,s:{s:{s:{s:s}}}}},"
                "s:{s:{s:s,s:s,s:s}}}}",
                "openapi", "3.1.0",
                "info", "title", "execbox", "version", XB_VERSION, "summary",
                "Disposable Linux sandboxes for AI agents: commands, files, processes and code sessions.",
                "description",
                "execbox runs commands and code in isolated, disposable Linux sandboxes. Read GET /v1/guide "
                "first: it says what is installed, the limits, and how to use the API well. Errors are "
                "{\"error\": {\"code\", \"message\", \"hint\"}}; the hint says what to do next. The same "
                "operations are offered as tools at GET /v1/tools (MCP, OpenAI and Anthropic formats).",
                "servers", "url", base_url && *base_url ? base_url : "/", "description", "This server.",
                "security", security, "tags", tags_json(), "paths", paths,
                "components", "schemas", "Error", parse(J_ERROR, "schema", "Error", &failed),
                "responses", "Error", "description", "An error. `hint` says what to do next.", "content",
                "application/json", "schema", "$ref", "#/components/schemas/Error",
                "securitySchemes", "bearerAuth", "type", "http", "scheme", "bearer", "description",
                "The token execbox printed at start-up (or --token-file, or EXECBOX_TOKEN): "
                "`Authorization: Bearer <token>`.");
        if (ret_undocumented)
                *ret_undocumented = undocumented;
        if (failed || !doc) {
                json_decref(doc);
                return NULL;
        }
        return doc;
}
