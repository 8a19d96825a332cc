/* Unit tests for the tool catalog (server/catalog.h) and the OpenAPI
 * document built from it: every tool's schemas parse and stay inside
 * OpenAI's strict-mode subset (checked here independently of the
 * catalog's own checker), the three tool formats have their shapes, tool
 * calls map to the right operation arguments, and every route of the router
 * appears in /openapi.json with its method and path, and nothing else. */
#include <criterion/criterion.h>
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "ops/catalog.h"
#include "rest/openapi_doc.h"
#include "daemon/daemon.h"

#define ROUTES_MAX 256

static void
init_catalog(void)
{
        struct xb_err err = { 0 };

        cr_assert_eq(xb_catalog_init(&err), 0, "the catalog does not load: %s", err.msg);
}

TestSuite(catalog, .init = init_catalog);
TestSuite(openapi, .init = init_catalog);

/* ---- an independent strict-mode checker ---- */

static const char *const allowed_keys[] = {
        "type", "description", "properties", "required", "additionalProperties", "items", "enum", "anyOf",
        "minimum", "maximum", "minItems", "maxItems", NULL,
};

static bool
allowed(const char *k)
{
        for (const char *const *a = allowed_keys; *a; a++)
                if (!strcmp(*a, k))
                        return true;
        return false;
}

static bool
has_null_type(json_t *s)
{
        json_t *t = json_object_get(s, "type"), *v, *any = json_object_get(s, "anyOf");
        size_t i;

        json_array_foreach(any, i, v)
                if (!strcmp(json_string_value(json_object_get(v, "type")) ?: "", "null"))
                        return true;
        if (json_is_string(t))
                return false;
        json_array_foreach(t, i, v)
                if (!strcmp(json_string_value(v), "null"))
                        return true;
        return false;
}

static bool
is_type(json_t *s, const char *name)
{
        json_t *t = json_object_get(s, "type"), *v;
        size_t i;

        if (json_is_string(t))
                return !strcmp(json_string_value(t), name);
        json_array_foreach(t, i, v)
                if (!strcmp(json_string_value(v), name))
                        return true;
        return false;
}

static void
strict_walk(json_t *s, const char *where)
{
        const char *k;
        json_t *v;
        size_t i;
        char sub[512];

        cr_assert(json_is_object(s), "%s: not a schema object", where);
        json_object_foreach(s, k, v)
                cr_assert(allowed(k), "%s: keyword \"%s\" is outside OpenAI's strict subset", where, k);
        if (json_object_get(s, "anyOf")) {
                json_array_foreach(json_object_get(s, "anyOf"), i, v) {
                        snprintf(sub, sizeof(sub), "%s/anyOf/%zu", where, i);
                        strict_walk(v, sub);
                }
                return;
        }
        cr_assert(json_object_get(s, "type"), "%s: no type", where);
        if (json_object_get(s, "enum") && has_null_type(s)) {
                bool null_listed = false;

                json_array_foreach(json_object_get(s, "enum"), i, v)
                        null_listed |= json_is_null(v);
                cr_assert(null_listed, "%s: a nullable enum must list null", where);
        }
        if (is_type(s, "object")) {
                json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");

                cr_assert(json_is_false(json_object_get(s, "additionalProperties")),
                          "%s: additionalProperties must be false", where);
                cr_assert(json_is_object(props), "%s: no properties", where);
                cr_assert(json_is_array(req), "%s: no required", where);
                cr_assert_eq(json_array_size(req), json_object_size(props), "%s: required must list every property",
                             where);
                json_array_foreach(req, i, v)
                        cr_assert(json_object_get(props, json_string_value(v)), "%s: required names %s", where,
                                  json_string_value(v));
                json_object_foreach(props, k, v) {
                        snprintf(sub, sizeof(sub), "%s/properties/%s", where, k);
                        strict_walk(v, sub);
                }
        }
        if (is_type(s, "array")) {
                snprintf(sub, sizeof(sub), "%s/items", where);
                strict_walk(json_object_get(s, "items"), sub);
        }
}

/* ---- catalog ---- */

static const struct {
        const char *name;
        const char *required;   /* the arguments that may not be null, space-separated */
} expected_tools[] = {
        { "sandbox_create", "" },
        { "sandbox_network", "" },
        { "sandbox_list", "" },
        { "sandbox_delete", "sandbox_id" },
        { "sandbox_snapshot", "name" },
        { "template_build", "name" },
        { "install", "apt" },
        { "sandbox_fork", "" },
        { "sandbox_pause", "" },
        { "sandbox_resume", "" },
        { "run_command", "cmd" },
        { "run_code", "language code" },
        { "read_file", "path" },
        { "write_file", "path content" },
        { "edit_file", "command path" },
        { "list_files", "" },
        { "process_start", "cmd" },
        { "process_read", "pid" },
        { "process_input", "pid" },
        { "process_kill", "pid" },
        { "sandbox_ports", "" },
        { "request_secret", "name" },
        { "list_secrets", "" },
        { "get_guide", "" },
};

Test(catalog, names_and_descriptions)
{
        regex_t re;

        cr_assert_eq(regcomp(&re, "^[a-zA-Z0-9_-]{1,64}$", REG_EXTENDED | REG_NOSUB), 0);
        cr_assert_eq(xb_catalog_count(), sizeof(expected_tools) / sizeof(expected_tools[0]));
        for (size_t i = 0; i < xb_catalog_count(); i++) {
                const struct xb_tool *t = xb_catalog_tool(i);

                cr_assert_eq(regexec(&re, t->name, 0, NULL, 0), 0, "tool name %s", t->name);
                cr_assert(xb_catalog_find(t->name) == t, "%s is not unique", t->name);
                cr_assert(t->title && *t->title, "%s has no title", t->name);
                cr_assert(strlen(t->description) > 40 && strlen(t->description) <= 1024,
                          "%s: a description of %zu characters", t->name, strlen(t->description));
        }
        for (size_t i = 0; i < sizeof(expected_tools) / sizeof(expected_tools[0]); i++)
                cr_assert(xb_catalog_find(expected_tools[i].name), "no tool %s", expected_tools[i].name);
        regfree(&re);
}

Test(catalog, schemas_parse_and_are_objects)
{
        for (size_t i = 0; i < xb_catalog_count(); i++) {
                const struct xb_tool *t = xb_catalog_tool(i);
                json_t *again = json_loads(t->output_json, JSON_REJECT_DUPLICATES, NULL);

                cr_assert(json_is_object(t->input) && json_is_object(t->output), "%s", t->name);
                cr_assert_str_eq(json_string_value(json_object_get(t->input, "type")), "object", "%s", t->name);
                cr_assert_str_eq(json_string_value(json_object_get(t->output, "type")), "object", "%s", t->name);
                cr_assert(json_equal(again, t->output), "%s", t->name);
                json_decref(again);
        }
}

Test(catalog, input_schemas_are_strict)
{
        for (size_t i = 0; i < xb_catalog_count(); i++) {
                const struct xb_tool *t = xb_catalog_tool(i);
                struct xb_err err = { 0 };
                char where[80];

                snprintf(where, sizeof(where), "%s input", t->name);
                strict_walk(t->input, where);
                cr_assert_eq(xb_schema_check_strict(t->input, &err), 0, "%s: %s", t->name, err.msg);
        }
}

Test(catalog, optional_arguments_are_nullable)
{
        for (size_t i = 0; i < sizeof(expected_tools) / sizeof(expected_tools[0]); i++) {
                const struct xb_tool *t = xb_catalog_find(expected_tools[i].name);
                const char *k;
                json_t *s;
                char want[80];

                json_object_foreach(json_object_get(t->input, "properties"), k, s) {
                        bool required;

                        snprintf(want, sizeof(want), " %s ", k);
                        {
                                char list[120];

                                snprintf(list, sizeof(list), " %s ", expected_tools[i].required);
                                required = strstr(list, want) != NULL;
                        }
                        cr_assert_eq(has_null_type(s), !required, "%s.%s must %sbe nullable", t->name, k,
                                     required ? "not " : "");
                }
        }
}

static void
expect_rejected(const char *schema, const char *why)
{
        struct xb_err err = { 0 };
        json_t *j = json_loads(schema, 0, NULL);

        cr_assert(j, "test schema does not parse: %s", schema);
        cr_assert_eq(xb_schema_check_strict(j, &err), -EINVAL, "accepted (%s): %s", why, schema);
        cr_assert(err.msg[0]);
        json_decref(j);
}

Test(catalog, strict_checker_rejects)
{
        expect_rejected("{\"type\": \"object\", \"properties\": {}, \"required\": []}", "no additionalProperties");
        expect_rejected("{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"string\"}}, \"required\": [], "
                        "\"additionalProperties\": false}", "a property left out of required");
        expect_rejected("{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"string\", \"default\": \"x\"}}, "
                        "\"required\": [\"a\"], \"additionalProperties\": false}", "default");
        expect_rejected("{\"type\": \"object\", \"properties\": {\"a\": {\"type\": [\"string\", \"null\"], "
                        "\"enum\": [\"x\"]}}, \"required\": [\"a\"], \"additionalProperties\": false}",
                        "nullable enum without null");
        expect_rejected("{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"object\", \"properties\": {}, "
                        "\"required\": []}}, \"required\": [\"a\"], \"additionalProperties\": false}",
                        "nested object without additionalProperties");
        expect_rejected("{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"array\"}}, \"required\": "
                        "[\"a\"], \"additionalProperties\": false}", "array without items");
        expect_rejected("{\"anyOf\": [{\"type\": \"object\"}, {\"type\": \"null\"}]}", "anyOf at the root");
        expect_rejected("{\"type\": [\"object\", \"null\"], \"properties\": {}, \"required\": [], "
                        "\"additionalProperties\": false}", "nullable root");
        expect_rejected("{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"string\", \"minLength\": 1}}, "
                        "\"required\": [\"a\"], \"additionalProperties\": false}", "minLength");
}

Test(catalog, formats)
{
        for (size_t i = 0; i < xb_catalog_count(); i++) {
                const struct xb_tool *t = xb_catalog_tool(i);
                json_t *mcp = xb_catalog_tool_json(t, XB_TOOLS_MCP), *oa = xb_catalog_tool_json(t, XB_TOOLS_OPENAI);
                json_t *an = xb_catalog_tool_json(t, XB_TOOLS_ANTHROPIC), *ann = json_object_get(mcp, "annotations");

                cr_assert_str_eq(json_string_value(json_object_get(mcp, "name")), t->name);
                cr_assert(json_equal(json_object_get(mcp, "inputSchema"), t->input));
                cr_assert(json_equal(json_object_get(mcp, "outputSchema"), t->output));
                cr_assert(json_is_string(json_object_get(mcp, "title")));
                cr_assert_eq(json_object_size(ann), 5, "%s annotations", t->name);
                cr_assert(json_is_boolean(json_object_get(ann, "readOnlyHint")));
                cr_assert(json_is_boolean(json_object_get(ann, "destructiveHint")));
                cr_assert(json_is_boolean(json_object_get(ann, "idempotentHint")));
                cr_assert(json_is_boolean(json_object_get(ann, "openWorldHint")));
                cr_assert(!t->read_only || !t->destructive, "%s: read-only and destructive", t->name);

                cr_assert_str_eq(json_string_value(json_object_get(oa, "type")), "function");
                cr_assert(json_is_true(json_object_get(json_object_get(oa, "function"), "strict")));
                cr_assert(json_equal(json_object_get(json_object_get(oa, "function"), "parameters"), t->input));
                cr_assert_eq(json_object_size(json_object_get(oa, "function")), 4);

                cr_assert(json_equal(json_object_get(an, "input_schema"), t->input));
                cr_assert_eq(json_object_size(an), 3);
                json_decref(mcp);
                json_decref(oa);
                json_decref(an);
        }
        cr_assert_eq(xb_catalog_format(NULL), XB_TOOLS_MCP);
        cr_assert_eq(xb_catalog_format("openai"), XB_TOOLS_OPENAI);
        cr_assert_eq(xb_catalog_format("anthropic"), XB_TOOLS_ANTHROPIC);
        cr_assert_eq(xb_catalog_format("gemini"), -1);
        cr_assert_eq(xb_catalog_format(""), -1);
}

static json_t *
args(const char *text)
{
        json_t *j = json_loads(text, 0, NULL);

        cr_assert(j, "bad test JSON: %s", text);
        return j;
}

static void
expect_args(const char *tool, const char *in, const struct xb_tool_defaults *d, const char *want)
{
        struct xb_err err = { 0 };
        json_t *a = args(in), *w = args(want), *got = NULL;
        char *s;

        cr_assert_eq(xb_catalog_op_args(xb_catalog_find(tool), a, d, &got, &err), 0, "%s: %s", tool, err.msg);
        s = json_dumps(got, JSON_SORT_KEYS);
        cr_assert(json_equal(got, w), "%s: got %s, want %s", tool, s, want);
        free(s);
        json_decref(got);
        json_decref(w);
        json_decref(a);
}

static void
expect_refused(const char *tool, const char *in, const struct xb_tool_defaults *d, int code, const char *why)
{
        struct xb_err err = { 0 };
        json_t *a = in ? args(in) : NULL, *got = NULL;

        cr_assert_eq(xb_catalog_op_args(xb_catalog_find(tool), a, d, &got, &err), code, "%s %s", tool, in);
        cr_assert_null(got);
        cr_assert(strstr(err.msg, why), "%s: `%s` is not in: %s", tool, why, err.msg);
        json_decref(a);
}

/* A tool call becomes its operation's flat arguments, under their REST names. */
Test(catalog, op_args)
{
        struct xb_tool_defaults d = { .sandbox = "sbxdefault", .session = "sess01" };

        /* The default sandbox fills a null sandbox_id; env pairs become an object; nulls go. */
        expect_args("run_command", "{\"sandbox_id\": null, \"cmd\": \"ls\", \"cwd\": null, \"env\": [{\"name\": "
                    "\"A\", \"value\": \"1\"}], \"timeout_s\": 5, \"yield_after_s\": null, \"stdin\": null}", &d,
                    "{\"id\": \"sbxdefault\", \"cmd\": \"ls\", \"env\": {\"A\": \"1\"}, \"timeout_s\": 5}");
        /* Path parameters are text, as REST passes them; query values keep
         * their JSON types; nothing is escaped. */
        expect_args("process_read", "{\"sandbox_id\": \"a/b\", \"pid\": 42, \"stdout_offset\": 10, "
                    "\"stderr_offset\": null, \"wait_s\": 5}", &d,
                    "{\"id\": \"a/b\", \"pid\": \"42\", \"stdout_offset\": 10, \"wait_s\": 5}");
        /* The tool layer's own arguments stay out. */
        expect_args("read_file", "{\"sandbox_id\": \"s1\", \"path\": \"/home/user/a b.txt\", \"start_line\": 3, "
                    "\"end_line\": null}", &d, "{\"id\": \"s1\", \"path\": \"/home/user/a b.txt\"}");
        expect_args("write_file", "{\"sandbox_id\": \"s1\", \"path\": \"/home/user/x.sh\", \"content\": "
                    "\"echo hi\\n\", \"mode\": \"0755\"}", &d,
                    "{\"id\": \"s1\", \"path\": \"/home/user/x.sh\", \"content\": \"echo hi\\n\", \"mode\": \"0755\"}");
        /* run_code: the session picked for the call fills sid; language only picks it. */
        expect_args("run_code", "{\"sandbox_id\": null, \"language\": \"python\", \"code\": \"1+1\", "
                    "\"timeout_s\": null}", &d, "{\"id\": \"sbxdefault\", \"sid\": \"sess01\", \"code\": \"1+1\"}");
        expect_args("sandbox_delete", "{\"sandbox_id\": \"s1\"}", NULL, "{\"id\": \"s1\"}");
        /* A literal fallback: list_files lists /home/user when path is null. */
        expect_args("list_files", "{\"sandbox_id\": \"s1\", \"path\": null, \"depth\": 2}", NULL,
                    "{\"id\": \"s1\", \"path\": \"/home/user\", \"depth\": 2}");
        expect_args("sandbox_create", "{\"timeout_s\": 60, \"env\": null, \"limits\": {\"memory\": 1024}}", NULL,
                    "{\"timeout_s\": 60, \"limits\": {\"memory\": 1024}}");
        expect_args("sandbox_list", "{}", NULL, "{}");
        {
                struct xb_err err = { 0 };
                json_t *got = NULL;

                cr_assert_eq(xb_catalog_op_args(xb_catalog_find("sandbox_list"), NULL, NULL, &got, &err), 0);
                cr_assert(json_is_object(got) && json_object_size(got) == 0);
                json_decref(got);
        }

        /* Refusals, with the messages a model reads. */
        expect_refused("run_command", "{\"sandbox_id\": null, \"cmd\": \"ls\"}", NULL, -EINVAL,
                       "no default sandbox; create one with sandbox_create");
        expect_refused("run_command", "{\"command\": \"ls\"}", &d, -EINVAL, "unknown argument `command`; "
                       "run_command takes: sandbox_id, cmd");
        expect_refused("run_command", "{\"sandbox_id\": \"s1\"}", &d, -EINVAL, "`cmd` is required");
        expect_refused("run_command", "{\"sandbox_id\": \"\", \"cmd\": \"ls\"}", &d, -EINVAL, "{id} must not be empty");
        expect_refused("run_command", "{\"cmd\": \"ls\", \"env\": {\"A\": \"1\"}}", &d, -EINVAL,
                       "`env` must be a list of");
        expect_refused("run_command", "{\"cmd\": \"ls\", \"env\": [{\"name\": \"A\"}]}", &d, -EINVAL,
                       "`env[0]` needs a string name and a string value");
        expect_refused("process_read", "{\"pid\": [1]}", &d, -EINVAL, "`pid` must be a string or a number");
        expect_refused("write_file", "{\"path\": \"/x\", \"content\": 5}", &d, -EINVAL, "`content` must be a string");
        expect_refused("run_code", "{\"language\": \"python\", \"code\": \"1\"}", &(struct xb_tool_defaults){
                               .sandbox = "s1" }, -EINVAL, "no $session to fill {sid}");
        expect_refused("edit_file", "{\"sandbox_id\": \"s1\"}", &d, -ENOTSUP, "no operation of its own");
        expect_refused("get_guide", NULL, &d, -ENOTSUP, "no operation of its own");
        expect_refused("sandbox_list", "[]", &d, -EINVAL, "must be an object");
}

/* Tools name operations of the op table, by their operationIds. */
Test(catalog, tools_name_operations)
{
        static const char *const ops[] = {
                "sandbox_create", "sandbox_network", "sandbox_list", "sandbox_delete", "run_command", "process_start",
                "process_read", "process_input", "process_kill", "read_file", "write_file", "list_files", "run_code",
                "sandbox_ports", "sandbox_snapshot", "template_build", "sandbox_fork", "sandbox_pause", "sandbox_resume",
                "install", "request_secret", "list_secrets", NULL,
        };

        for (size_t i = 0; i < xb_catalog_count(); i++) {
                const struct xb_tool *t = xb_catalog_tool(i);
                bool known = false;

                for (size_t k = 0; t->op && ops[k]; k++)
                        known |= !strcmp(ops[k], t->op);
                cr_assert(!t->op || known, "%s runs an unknown operation %s", t->name, t->op);
                cr_assert(t->op || !strcmp(t->name, "edit_file") || !strcmp(t->name, "get_guide"),
                          "%s runs no operation", t->name);
                /* A tool's operation is the REST operation its route documents. */
                cr_assert(!t->op || !strcmp(t->op, t->name), "%s: operationId %s", t->name, t->op);
        }
}

/* The model is the tools' caller: none may decide an approval or set a
 * secret's value. Those are for humans, with a token (REST) or the CLI. */
Test(catalog, no_tool_approves_or_sets_a_secret)
{
        static const char *const human_only[] = { "approval_decide", "approval_list", "secret_create",
                                                  "secret_delete", NULL };
        size_t seen = 0;

        for (size_t i = 0; i < xb_catalog_count(); i++) {
                const struct xb_tool *t = xb_catalog_tool(i);
                json_t *props = json_object_get(t->input, "properties");

                cr_assert(json_is_object(props), "%s", t->name);
                cr_assert_null(json_object_get(props, "decision"), "%s takes a decision", t->name);
                cr_assert_null(json_object_get(props, "value"), "%s takes a value", t->name);
                cr_assert_null(json_object_get(props, "remember"), "%s takes remember", t->name);
                for (size_t k = 0; t->op && human_only[k]; k++)
                        cr_assert(strcmp(t->op, human_only[k]), "%s runs %s", t->name, t->op);
                cr_assert(!t->rest.path || strncmp(t->rest.path, "/v1/approvals", 13), "%s: %s", t->name,
                          t->rest.path);
                cr_assert(!t->rest.path || strcmp(t->rest.path, "/v1/secrets") || !strcmp(t->rest.method, "GET"),
                          "%s: %s %s", t->name, t->rest.method, t->rest.path);
                seen += !strcmp(t->name, "request_secret") || !strcmp(t->name, "list_secrets");
        }
        /* The check sees the secret tools it is about. */
        cr_assert_eq(seen, 2);
}

/* ---- the OpenAPI document against the router ---- */

static json_t *
build_doc(bool auth_optional)
{
        static struct xb_route routes[ROUTES_MAX];
        size_t n = xb_server_routes(routes, ROUTES_MAX), undocumented = 99;
        json_t *doc;

        cr_assert(n > 0 && n < ROUTES_MAX);
        doc = xb_openapi_build(routes, n, "http://127.0.0.1:8000", auth_optional, &undocumented);
        cr_assert(doc, "the OpenAPI document does not build (see stderr)");
        cr_assert_eq(undocumented, 0, "%zu routes have no entry in src/rest/openapi_ops.c; see the "
                     "undocumented_* operations", undocumented);
        return doc;
}

static void
upper(char *dst, const char *src, size_t n)
{
        size_t i;

        for (i = 0; src[i] && i < n - 1; i++)
                dst[i] = (char)(src[i] >= 'a' && src[i] <= 'z' ? src[i] - 32 : src[i]);
        dst[i] = '\0';
}

Test(openapi, every_route_has_an_operation_and_back)
{
        static struct xb_route routes[ROUTES_MAX];
        size_t n = xb_server_routes(routes, ROUTES_MAX), nops = 0, nhidden = 0;
        json_t *doc = build_doc(false), *paths = json_object_get(doc, "paths"), *item, *op;
        const char *path, *method;

        for (size_t i = 0; i < n; i++) {
                bool found = false;

                if (routes[i].flags & XB_ROUTE_HIDDEN) {   /* another spec's discovery document */
                        nhidden++;
                        continue;
                }
                json_object_foreach(paths, path, item) {
                        _cleanup_free_ char *pat = xb_openapi_route_pattern(path);

                        if (strcmp(pat, routes[i].pattern))
                                continue;
                        json_object_foreach(item, method, op) {
                                char m[16];

                                upper(m, method, sizeof(m));
                                found |= !strcmp(routes[i].method, "*") || !strcmp(m, routes[i].method);
                        }
                }
                cr_assert(found, "route %s %s is not in openapi.json", routes[i].method, routes[i].pattern);
        }
        json_object_foreach(paths, path, item) {
                _cleanup_free_ char *pat = xb_openapi_route_pattern(path);

                json_object_foreach(item, method, op) {
                        char m[16];
                        bool found = false;

                        upper(m, method, sizeof(m));
                        for (size_t i = 0; i < n && !found; i++)
                                found = !strcmp(routes[i].pattern, pat) &&
                                        (!strcmp(routes[i].method, m) || !strcmp(routes[i].method, "*"));
                        cr_assert(found, "openapi.json has %s %s, which no route serves", m, path);
                        nops++;
                }
        }
        cr_assert_geq(nops + nhidden, n);
        json_decref(doc);
}

Test(openapi, operations_are_complete)
{
        static struct xb_route routes[ROUTES_MAX];
        size_t n = xb_server_routes(routes, ROUTES_MAX);
        json_t *doc = build_doc(false), *paths = json_object_get(doc, "paths"), *item, *op, *ids = json_object();
        const char *path, *method;

        cr_assert_str_eq(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
        cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(doc, "servers"), 0), "url")),
                         "http://127.0.0.1:8000");
        cr_assert(json_object_get(json_object_get(json_object_get(doc, "components"), "securitySchemes"), "bearerAuth"));
        json_object_foreach(paths, path, item) {
                _cleanup_free_ char *pat = xb_openapi_route_pattern(path);

                json_object_foreach(item, method, op) {
                        const char *id = json_string_value(json_object_get(op, "operationId"));
                        const char *summary = json_string_value(json_object_get(op, "summary"));
                        json_t *resp = json_object_get(op, "responses");
                        bool public = false;
                        char m[16];

                        upper(m, method, sizeof(m));
                        for (size_t i = 0; i < n; i++)
                                if (!strcmp(routes[i].pattern, pat) && !strcmp(routes[i].method, m))
                                        public = routes[i].flags & XB_ROUTE_PUBLIC;
                        cr_assert(id && *id, "%s %s has no operationId", m, path);
                        cr_assert_null(json_object_get(ids, id), "operationId %s is used twice", id);
                        json_object_set_new(ids, id, json_true());
                        cr_assert(summary && *summary && !strchr(summary, '\n') && strlen(summary) <= 100,
                                  "%s: the summary must be one short line", id);
                        cr_assert(json_object_get(resp, "default"), "%s: no default (error) response", id);
                        if (public)
                                cr_assert(json_is_array(json_object_get(op, "security")) &&
                                          json_array_size(json_object_get(op, "security")) == 0,
                                          "%s is public: security must be []", id);
                        else
                                cr_assert(!json_object_get(op, "security") && json_object_get(resp, "401"),
                                          "%s needs the token: no security override, and a 401", id);
                }
        }
        cr_assert(json_object_get(ids, "healthz") && json_object_get(ids, "get_openapi"));
        json_decref(ids);
        json_decref(doc);
}

/* Operations that are tools take their schemas from the catalog. */
Test(openapi, tool_operations_reuse_tool_schemas)
{
        json_t *doc = build_doc(true), *paths = json_object_get(doc, "paths");

        for (size_t i = 0; i < xb_catalog_count(); i++) {
                const struct xb_tool *t = xb_catalog_tool(i);
                char lower[16], status[12];
                json_t *op, *props, *body;
                const char *k;
                json_t *s;

                if (!t->rest.method)
                        continue;
                snprintf(lower, sizeof(lower), "%s", t->rest.method);
                for (char *p = lower; *p; p++)
                        *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
                op = json_object_get(json_object_get(paths, t->rest.path), lower);
                if (!op)
                        continue;   /* its route is not built yet */
                cr_assert_str_eq(json_string_value(json_object_get(op, "x-execbox-tool")), t->name);
                snprintf(status, sizeof(status), "%u", t->rest.status ? t->rest.status : 200);
                if (t->rest.reply == XB_REPLY_JSON || t->rest.reply == XB_REPLY_TEXT)
                        cr_assert(json_equal(json_object_get(json_object_get(json_object_get(json_object_get(
                                                     json_object_get(op, "responses"), status), "content"),
                                                     "application/json"), "schema"), t->output),
                                  "%s: the reply is not the tool's output schema", t->name);
                body = json_object_get(json_object_get(json_object_get(json_object_get(op, "requestBody"), "content"),
                                                       "application/json"), "schema");
                props = json_object_get(body, "properties");
                json_object_foreach(json_object_get(t->input, "properties"), k, s) {
                        json_t *rest = json_object_get(props, k);

                        /* Name/value pair lists go to REST as objects. */
                        if (!rest || !strcmp(k, "env") || !strcmp(k, "files"))
                                continue;
                        cr_assert(json_equal(rest, s), "%s: body field %s differs from the tool's", t->name, k);
                }
                if (body)
                        cr_assert(json_is_false(json_object_get(body, "additionalProperties")), "%s", t->name);
        }
        cr_assert_eq(json_array_size(json_object_get(doc, "security")), 2, "--no-auth makes the token optional");
        json_decref(doc);
}

Test(openapi, route_patterns)
{
        char *p = xb_openapi_route_pattern("/v1/sandboxes/{id}/processes/{pid}/output");

        cr_assert_str_eq(p, "/v1/sandboxes/{}/processes/{}/output");
        free(p);
        p = xb_openapi_route_pattern("/healthz");
        cr_assert_str_eq(p, "/healthz");
        free(p);
}

Test(openapi, an_undocumented_route_is_counted)
{
        static const struct xb_route extra[] = { { "POST", "/v1/nothing/{}", NULL, 0 } };
        size_t undocumented = 0;
        json_t *doc = xb_openapi_build(extra, 1, "", false, &undocumented);

        cr_assert(doc);
        cr_assert_eq(undocumented, 1);
        cr_assert(json_object_get(json_object_get(json_object_get(doc, "paths"), "/v1/nothing/{p1}"), "post"));
        json_decref(doc);
}

Test(openapi, guide)
{
        struct xb_limits l = { .memory = 1ull << 30, .pids = 512, .disk = 1ull << 30 };
        _cleanup_free_ char *g = xb_guide_render(&l);
        size_t lines = 0;

        cr_assert(g);
        for (const char *p = g; *p; p++)
                lines += *p == '\n';
        cr_assert_leq(lines, 200, "the guide has %zu lines", lines);
        cr_assert(strstr(g, "## Legal") && strstr(g, "memory 1 GiB") && strstr(g, "512 processes"));
}
