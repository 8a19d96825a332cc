/* The tool catalog's machinery: parse and check the tools of
 * catalog_tools.c once, render them for MCP, OpenAI and Anthropic, check a
 * schema against OpenAI's strict-mode subset, and turn a tool call into its
 * operation's arguments. It holds no per-request state. */
#define _GNU_SOURCE
#include "ops/catalog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "ops/jsonv.h"

extern struct xb_tool xb_catalog_tools[];
extern const size_t xb_catalog_ntools;

static bool catalog_ready;

/* OpenAI's limits for strict schemas (Structured Outputs, "Supported schemas"). */
#define STRICT_DEPTH_MAX 5
#define STRICT_PROPS_MAX 100

/* ---- strict-mode checks ---- */

static const char *const strict_keywords[] = {
        "type", "description", "properties", "required", "additionalProperties", "items", "enum", "anyOf",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
        "pattern", NULL,
};

static const char *const json_types[] = { "string", "number", "integer", "boolean", "object", "array", "null", NULL };

static bool
in_list(const char *const *list, const char *s)
{
        for (; *list; list++)
                if (strcmp(*list, s) == 0)
                        return true;
        return false;
}

/* The one type other than null of a node's "type" ("object" for
 * {"type": ["object", "null"]}); NULL when absent or malformed. */
static const char *
main_type(json_t *node, bool *nullable, struct xb_err *err, const char *ptr)
{
        json_t *t = json_object_get(node, "type"), *v;
        const char *found = NULL;
        size_t i;

        *nullable = false;
        if (json_is_string(t)) {
                if (!in_list(json_types, json_string_value(t))) {
                        xb_err_msg(err, EINVAL, "%s: unknown type `%s`", ptr, json_string_value(t));
                        return NULL;
                }
                *nullable = strcmp(json_string_value(t), "null") == 0;
                return json_string_value(t);
        }
        if (!json_is_array(t) || json_array_size(t) == 0) {
                xb_err_msg(err, EINVAL, "%s: needs \"type\" (a name, or [\"T\", \"null\"])", ptr);
                return NULL;
        }
        json_array_foreach(t, i, v) {
                const char *s = json_string_value(v);

                if (!s || !in_list(json_types, s)) {
                        xb_err_msg(err, EINVAL, "%s: \"type\" holds something that is not a type", ptr);
                        return NULL;
                }
                if (strcmp(s, "null") == 0) {
                        if (*nullable) {
                                xb_err_msg(err, EINVAL, "%s: \"null\" twice in \"type\"", ptr);
                                return NULL;
                        }
                        *nullable = true;
                } else if (found) {
                        xb_err_msg(err, EINVAL, "%s: more than one type besides null; use anyOf", ptr);
                        return NULL;
                } else
                        found = s;
        }
        if (!found)
                xb_err_msg(err, EINVAL, "%s: a type of only null", ptr);
        return found;
}

static bool
value_has_type(json_t *v, const char *type)
{
        if (!strcmp(type, "string"))
                return json_is_string(v);
        if (!strcmp(type, "integer"))
                return json_is_integer(v);
        if (!strcmp(type, "number"))
                return json_is_number(v);
        if (!strcmp(type, "boolean"))
                return json_is_boolean(v);
        return false;   /* enums of objects or arrays are not used here */
}

static int check_node(json_t *node, const char *ptr, unsigned depth, unsigned *nprops, struct xb_err *err);

static int
check_object(json_t *node, const char *ptr, unsigned depth, unsigned *nprops, struct xb_err *err)
{
        json_t *props = json_object_get(node, "properties"), *req = json_object_get(node, "required");
        json_t *ap = json_object_get(node, "additionalProperties"), *v;
        const char *key;
        size_t i;

        if (depth > STRICT_DEPTH_MAX)
                return xb_err_msg(err, EINVAL, "%s: objects nest deeper than %d levels", ptr, STRICT_DEPTH_MAX);
        if (!json_is_object(props))
                return xb_err_msg(err, EINVAL, "%s: an object needs \"properties\" (even {})", ptr);
        if (!json_is_false(ap))
                return xb_err_msg(err, EINVAL, "%s: an object needs \"additionalProperties\": false", ptr);
        if (!json_is_array(req))
                return xb_err_msg(err, EINVAL, "%s: an object needs \"required\" listing every property", ptr);
        if (json_array_size(req) != json_object_size(props))
                return xb_err_msg(err, EINVAL, "%s: \"required\" has %zu names for %zu properties; list every "
                                  "property and make optional ones nullable", ptr, json_array_size(req),
                                  json_object_size(props));
        json_array_foreach(req, i, v) {
                const char *name = json_string_value(v);

                if (!name || !json_object_get(props, name))
                        return xb_err_msg(err, EINVAL, "%s: \"required\" names `%s`, which is not a property", ptr,
                                          name ? name : "(not a string)");
                for (size_t j = 0; j < i; j++)
                        if (!strcmp(name, json_string_value(json_array_get(req, j))))
                                return xb_err_msg(err, EINVAL, "%s: `%s` is required twice", ptr, name);
        }
        json_object_foreach(props, key, v) {
                char sub[512];
                int r;

                if (++*nprops > STRICT_PROPS_MAX)
                        return xb_err_msg(err, EINVAL, "%s: more than %d properties in all", ptr, STRICT_PROPS_MAX);
                snprintf(sub, sizeof(sub), "%s/properties/%s", ptr, key);
                if ((r = check_node(v, sub, depth + 1, nprops, err)) < 0)
                        return r;
        }
        return 0;
}

static int
check_node(json_t *node, const char *ptr, unsigned depth, unsigned *nprops, struct xb_err *err)
{
        json_t *any = json_object_get(node, "anyOf"), *en, *v;
        const char *key, *type;
        char sub[512];
        bool nullable;
        size_t i;
        int r;

        if (!json_is_object(node))
                return xb_err_msg(err, EINVAL, "%s: a schema must be an object", ptr);
        json_object_foreach(node, key, v)
                if (!in_list(strict_keywords, key))
                        return xb_err_msg(err, EINVAL, "%s: \"%s\" is not in OpenAI's strict-mode subset", ptr, key);
        if (json_object_get(node, "description") && !json_is_string(json_object_get(node, "description")))
                return xb_err_msg(err, EINVAL, "%s: \"description\" must be a string", ptr);
        if (any) {
                if (!json_is_array(any) || json_array_size(any) < 2 || json_object_get(node, "type"))
                        return xb_err_msg(err, EINVAL, "%s: \"anyOf\" needs two or more schemas and no \"type\" "
                                          "beside it", ptr);
                json_array_foreach(any, i, v) {
                        snprintf(sub, sizeof(sub), "%s/anyOf/%zu", ptr, i);
                        if ((r = check_node(v, sub, depth, nprops, err)) < 0)
                                return r;
                }
                return 0;
        }
        if (!(type = main_type(node, &nullable, err, ptr)))
                return -EINVAL;
        if ((en = json_object_get(node, "enum"))) {
                bool has_null = false;

                if (!json_is_array(en) || json_array_size(en) == 0)
                        return xb_err_msg(err, EINVAL, "%s: \"enum\" must be a non-empty array", ptr);
                json_array_foreach(en, i, v) {
                        if (json_is_null(v) && nullable)
                                has_null = true;
                        else if (!value_has_type(v, type))
                                return xb_err_msg(err, EINVAL, "%s: enum value %zu is not of type %s", ptr, i, type);
                }
                if (nullable && !has_null)
                        return xb_err_msg(err, EINVAL, "%s: a nullable enum must list null too", ptr);
        }
        if (!strcmp(type, "object"))
                return check_object(node, ptr, depth + 1, nprops, err);
        if (json_object_get(node, "properties") || json_object_get(node, "required") ||
            json_object_get(node, "additionalProperties"))
                return xb_err_msg(err, EINVAL, "%s: object keywords on a %s", ptr, type);
        if (!strcmp(type, "array")) {
                snprintf(sub, sizeof(sub), "%s/items", ptr);
                if (!json_object_get(node, "items"))
                        return xb_err_msg(err, EINVAL, "%s: an array needs \"items\"", ptr);
                return check_node(json_object_get(node, "items"), sub, depth, nprops, err);
        }
        if (json_object_get(node, "items"))
                return xb_err_msg(err, EINVAL, "%s: \"items\" on a %s", ptr, type);
        return 0;
}

int
xb_schema_check_strict(json_t *schema, struct xb_err *err)
{
        unsigned nprops = 0;
        bool nullable;
        const char *type;

        if (!json_is_object(schema) || json_object_get(schema, "anyOf"))
                return xb_err_msg(err, EINVAL, "the root must be an object schema, not anyOf");
        type = main_type(schema, &nullable, err, "(root)");
        if (!type)
                return -EINVAL;
        if (strcmp(type, "object") || nullable)
                return xb_err_msg(err, EINVAL, "the root must have \"type\": \"object\"");
        return check_node(schema, "", 0, &nprops, err);
}

/* ---- start-up ---- */

static bool
valid_name(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > 64)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
                      *s == '-'))
                        return false;
        return true;
}

static json_t *
parse_schema(const char *tool, const char *what, const char *text, struct xb_err *err)
{
        json_error_t je;
        json_t *j = json_loads(text, JSON_REJECT_DUPLICATES, &je);

        if (!j)
                xb_err_msg(err, EINVAL, "tool %s: the %s schema is not JSON: %s at column %d", tool, what, je.text,
                           je.column);
        else if (!json_is_object(j) || strcmp(json_string_value(json_object_get(j, "type")) ?: "", "object")) {
                xb_err_msg(err, EINVAL, "tool %s: the %s schema must be of type object", tool, what);
                json_decref(j);
                j = NULL;
        }
        return j;
}

/* A mapping must name real arguments and fill every {segment} of the path. */
static int
check_rest(const struct xb_tool *t, struct xb_err *err)
{
        json_t *props = json_object_get(t->input, "properties");

        if (!t->rest.method)
                return 0;
        for (const struct xb_tool_arg *a = t->rest.args; a < t->rest.args + XB_TOOL_ARGS_MAX; a++) {
                char seg[80];

                if (!a->name && !a->rest)
                        break;
                if (a->name && !json_object_get(props, a->name))
                        return xb_err_msg(err, EINVAL, "tool %s: the REST mapping names `%s`, not an argument", t->name,
                                          a->name);
                if (a->in == XB_ARG_PATH) {
                        snprintf(seg, sizeof(seg), "{%s}", a->rest ? a->rest : a->name);
                        if (!strstr(t->rest.path, seg))
                                return xb_err_msg(err, EINVAL, "tool %s: %s has no %s", t->name, t->rest.path, seg);
                }
        }
        return 0;
}

int
xb_catalog_init(struct xb_err *err)
{
        if (catalog_ready)
                return 0;
        for (size_t i = 0; i < xb_catalog_ntools; i++) {
                struct xb_tool *t = &xb_catalog_tools[i];
                int r;

                if (!valid_name(t->name))
                        return xb_err_msg(err, EINVAL, "tool name `%s` must match ^[a-zA-Z0-9_-]{1,64}$", t->name);
                if (t->op && !valid_name(t->op))
                        return xb_err_msg(err, EINVAL, "tool %s: operation name `%s` is not a name", t->name, t->op);
                for (size_t j = 0; j < i; j++)
                        if (!strcmp(xb_catalog_tools[j].name, t->name))
                                return xb_err_msg(err, EINVAL, "tool %s is defined twice", t->name);
                json_decref(t->input);
                json_decref(t->output);
                t->input = parse_schema(t->name, "input", t->input_json, err);
                t->output = t->input ? parse_schema(t->name, "output", t->output_json, err) : NULL;
                if (!t->output)
                        return -EINVAL;
                if ((r = xb_schema_check_strict(t->input, err)) < 0)
                        return xb_err_wrap(err, "tool %s: input schema", t->name);
                if ((r = check_rest(t, err)) < 0)
                        return r;
        }
        catalog_ready = true;
        return 0;
}

size_t
xb_catalog_count(void)
{
        return catalog_ready ? xb_catalog_ntools : 0;
}

const struct xb_tool *
xb_catalog_tool(size_t i)
{
        return catalog_ready && i < xb_catalog_ntools ? &xb_catalog_tools[i] : NULL;
}

const struct xb_tool *
xb_catalog_find(const char *name)
{
        for (size_t i = 0; catalog_ready && name && i < xb_catalog_ntools; i++)
                if (!strcmp(xb_catalog_tools[i].name, name))
                        return &xb_catalog_tools[i];
        return NULL;
}

/* ---- rendering ---- */

json_t *
xb_catalog_tool_json(const struct xb_tool *t, enum xb_tool_format f)
{
        switch (f) {
        case XB_TOOLS_OPENAI:
                return json_pack("{s:s,s:{s:s,s:s,s:o,s:b}}", "type", "function", "function", "name", t->name,
                                 "description", t->description, "parameters", json_deep_copy(t->input), "strict", 1);
        case XB_TOOLS_OPENAI_RESPONSES:
                return json_pack("{s:s,s:s,s:s,s:o,s:b}", "type", "function", "name", t->name, "description",
                                 t->description, "parameters", json_deep_copy(t->input), "strict", 1);
        case XB_TOOLS_ANTHROPIC:
                return json_pack("{s:s,s:s,s:o}", "name", t->name, "description", t->description, "input_schema",
                                 json_deep_copy(t->input));
        case XB_TOOLS_MCP:
        default:
                return json_pack("{s:s,s:s,s:s,s:o,s:o,s:{s:s,s:b,s:b,s:b,s:b}}", "name", t->name, "title", t->title,
                                 "description", t->description, "inputSchema", json_deep_copy(t->input),
                                 "outputSchema", json_deep_copy(t->output), "annotations", "title", t->title,
                                 "readOnlyHint", t->read_only, "destructiveHint", t->destructive, "idempotentHint",
                                 t->idempotent, "openWorldHint", t->open_world);
        }
}

json_t *
xb_catalog_list_json(enum xb_tool_format f)
{
        json_t *a = json_array();

        for (size_t i = 0; i < xb_catalog_count(); i++)
                json_array_append_new(a, xb_catalog_tool_json(&xb_catalog_tools[i], f));
        return a;
}

int
xb_catalog_format(const char *name)
{
        if (!name || !strcmp(name, "mcp"))
                return XB_TOOLS_MCP;
        if (!strcmp(name, "openai"))
                return XB_TOOLS_OPENAI;
        if (!strcmp(name, "openai-responses"))
                return XB_TOOLS_OPENAI_RESPONSES;
        if (!strcmp(name, "anthropic"))
                return XB_TOOLS_ANTHROPIC;
        return -1;
}

/* ---- tool calls to operation arguments ---- */

static const struct xb_tool_arg *
find_arg(const struct xb_tool *t, const char *name)
{
        for (const struct xb_tool_arg *a = t->rest.args; a < t->rest.args + XB_TOOL_ARGS_MAX && (a->name || a->rest); a++)
                if (a->name && !strcmp(a->name, name))
                        return a;
        return NULL;
}

static int
env_pairs(json_t *v, json_t **ret, const char *name, struct xb_err *err)
{
        json_t *o = json_object(), *it;
        size_t i;

        if (!json_is_array(v)) {
                json_decref(o);
                return xb_err_msg(err, EINVAL, "`%s` must be a list of {\"name\": ..., \"value\": ...}", name);
        }
        json_array_foreach(v, i, it) {
                const char *k = json_string_value(json_object_get(it, "name"));
                json_t *val = json_object_get(it, "value");

                if (!k || !json_is_string(val)) {
                        json_decref(o);
                        return xb_err_msg(err, EINVAL, "`%s[%zu]` needs a string name and a string value", name, i);
                }
                json_object_set(o, k, val);
        }
        *ret = o;
        return 0;
}

static bool
schema_nullable(json_t *s)
{
        json_t *t = json_object_get(s, "type"), *v;
        size_t i;

        if (json_object_get(s, "anyOf"))
                return true;   /* only used as "object or null" here */
        json_array_foreach(t, i, v)
                if (!strcmp(json_string_value(v) ?: "", "null"))
                        return true;
        return false;
}

static json_t *
fallback_value(const struct xb_tool_arg *a, json_t *args, const struct xb_tool_defaults *d, json_t **tmp)
{
        const char *s = NULL;

        if (!a || !a->fallback)
                return NULL;
        if (a->fallback[0] == '=')
                return (*tmp = json_string(a->fallback + 1));
        if (!strcmp(a->fallback, "$sandbox"))
                s = d ? d->sandbox : NULL;
        else if (!strcmp(a->fallback, "$session"))
                s = d ? d->session : NULL;
        else
                return json_object_get(args, a->fallback);
        return s ? (*tmp = json_string(s)) : NULL;
}

/* A scalar argument as text; NULL if it is not one. */
static char *
scalar_text(json_t *v)
{
        char *s = NULL;

        if (json_is_string(v))
                return strdup(json_string_value(v));
        if (json_is_integer(v) && asprintf(&s, "%lld", (long long)json_integer_value(v)) < 0)
                return NULL;
        if (json_is_real(v) && asprintf(&s, "%.17g", json_real_value(v)) < 0)
                return NULL;
        if (json_is_boolean(v))
                return strdup(json_is_true(v) ? "true" : "false");
        return s;
}

/* Put argument name (its value v, borrowed) into the operation's
 * arguments, checked for where REST would send it. A path parameter is
 * text, as REST passes it: the operation sees one type either way. */
static int
place(json_t *out, const char *name, const struct xb_tool_arg *a, json_t *v, struct xb_err *err)
{
        const char *rest = a && a->rest ? a->rest : name;
        enum xb_arg_in in = a ? a->in : XB_ARG_BODY;
        _cleanup_free_ char *text = NULL;
        json_t *conv = NULL;
        int r;

        switch (in) {
        case XB_ARG_PATH:
        case XB_ARG_QUERY:
                /* A path segment or query value is text: scalars only. */
                if (!json_is_string(v) && !json_is_number(v) && !json_is_boolean(v))
                        return xb_err_msg(err, EINVAL, "`%s` must be a string or a number", name);
                if (in == XB_ARG_QUERY)
                        break;
                if (!(text = scalar_text(v)))
                        return xb_err_set(err, ENOMEM, "tool call");
                if (!*text)
                        return xb_err_msg(err, EINVAL, "{%s} must not be empty", rest);
                if (!(v = conv = json_string(text)))
                        return xb_err_msg(err, EINVAL, "{%s} must be UTF-8 text", rest);
                break;
        case XB_ARG_RAW:
                if (!json_is_string(v))
                        return xb_err_msg(err, EINVAL, "`%s` must be a string", name);
                break;
        case XB_ARG_LOCAL:
                return 0;
        case XB_ARG_BODY:
        default:
                if (a && (a->flags & XB_ARGF_ENV_PAIRS)) {
                        if ((r = env_pairs(v, &conv, name, err)) < 0)
                                return r;
                        v = conv;
                }
                break;
        }
        r = json_object_set(out, rest, v);
        json_decref(conv);
        return r < 0 ? xb_err_set(err, ENOMEM, "tool call") : 0;
}

int
xb_catalog_op_args(const struct xb_tool *t, json_t *args, const struct xb_tool_defaults *d, json_t **ret_args,
                   struct xb_err *err)
{
        _cleanup_(xb_json_decrefp) json_t *out = NULL;
        json_t *props = json_object_get(t->input, "properties"), *v, *schema;
        const char *key;
        int r;

        if (!t->op)
                return xb_err_msg(err, ENOTSUP, "%s has no operation of its own", t->name);
        if (args && !json_is_object(args))
                return xb_err_msg(err, EINVAL, "the arguments must be an object");
        json_object_foreach(args, key, v)
                if (!json_object_get(props, key)) {
                        _cleanup_free_ char *names = NULL;
                        struct xb_buf b = { .max = 4096 };
                        const char *k;

                        json_object_foreach(props, k, schema)
                                xb_buf_printf(&b, "%s%s", b.len ? ", " : "", k);
                        names = xb_buf_steal(&b);
                        return xb_err_msg(err, EINVAL, "unknown argument `%.64s`; %s takes: %s", key, t->name,
                                          names ? names : "nothing");
                }
        if (!(out = json_object()))
                return xb_err_set(err, ENOMEM, "tool call");
        json_object_foreach(props, key, schema) {
                const struct xb_tool_arg *a = find_arg(t, key);
                json_t *tmp = NULL;

                v = json_object_get(args, key);
                if (!v || json_is_null(v))
                        v = fallback_value(a, args, d, &tmp);
                if (!v || json_is_null(v)) {
                        if (!schema_nullable(schema) || (a && a->in == XB_ARG_PATH))
                                return a && a->fallback && !strcmp(a->fallback, "$sandbox")
                                        ? xb_err_msg(err, EINVAL, "`%s` is null and there is no default sandbox; "
                                                     "create one with sandbox_create", key)
                                        : xb_err_msg(err, EINVAL, "`%s` is required", key);
                        continue;
                }
                r = place(out, key, a, v, err);
                json_decref(tmp);
                if (r < 0)
                        return r;
        }
        /* Path segments that are no argument of the tool ("$session"). */
        for (const struct xb_tool_arg *a = t->rest.args; a < t->rest.args + XB_TOOL_ARGS_MAX && (a->name || a->rest); a++) {
                json_t *tmp = NULL;

                if (a->name)
                        continue;
                v = fallback_value(a, args, d, &tmp);
                if (!v)
                        return xb_err_msg(err, EINVAL, "no %s to fill {%s}", a->fallback ? a->fallback : "value",
                                          a->rest);
                r = place(out, a->rest, a, v, err);
                json_decref(tmp);
                if (r < 0)
                        return r;
        }
        *ret_args = TAKE_PTR(out);
        return 0;
}
