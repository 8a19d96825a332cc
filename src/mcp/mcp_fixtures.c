/* The MCP conformance suite's fixtures, served only with
 * --conformance-fixtures: the tools, resources and prompts its scenarios
 * call by name (test_simple_text, test://static-text, test_simple_prompt,
 * ...), as the suite's own reference server defines them. Nothing here
 * touches a sandbox. The multi round-trip (MRTR) fixtures of 2026-07-28
 * hand out request states as random tokens kept here for ten minutes, so
 * a state a client altered or made up is refused. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "sandbox/sandbox.h"
#include "mcp/mcp_int.h"

#define RED_PIXEL "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
#define WAV "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
#define STATES_MAX 256
#define STATE_TTL_MS (10u * 60 * 1000)

struct mrtr_state {
        struct mrtr_state *next;
        char token[33];
        json_t *state;
        uint64_t expires_ms;
};

/* ---- tools ---- */

static const char legacy_tools[] =
        "[{\"name\": \"test_simple_text\", \"description\": \"Tests simple text content response\"},"
        " {\"name\": \"test_image_content\", \"description\": \"Tests image content response\"},"
        " {\"name\": \"test_audio_content\", \"description\": \"Tests audio content response\"},"
        " {\"name\": \"test_embedded_resource\", \"description\": \"Tests embedded resource content response\"},"
        " {\"name\": \"test_multiple_content_types\", \"description\": \"Tests response with multiple content "
        "types (text, image, resource)\"},"
        " {\"name\": \"test_tool_with_logging\", \"description\": \"Tests tool that emits log messages during "
        "execution\"},"
        " {\"name\": \"test_tool_with_progress\", \"description\": \"Tests tool that reports progress "
        "notifications\"},"
        " {\"name\": \"test_error_handling\", \"description\": \"Tests error response handling\"},"
        " {\"name\": \"json_schema_2020_12_tool\", \"description\": \"Tool with JSON Schema 2020-12 features for "
        "conformance testing (SEP-1613, SEP-2106)\", \"inputSchema\": {\"$schema\": "
        "\"https://json-schema.org/draft/2020-12/schema\", \"type\": \"object\", \"$defs\": {\"address\": "
        "{\"$anchor\": \"addressDef\", \"type\": \"object\", \"properties\": {\"street\": {\"type\": \"string\"}, "
        "\"city\": {\"type\": \"string\"}}}}, \"properties\": {\"name\": {\"type\": \"string\"}, \"address\": "
        "{\"$ref\": \"#/$defs/address\"}, \"contactMethod\": {\"type\": \"string\", \"enum\": [\"phone\", "
        "\"email\"]}, \"phone\": {\"type\": \"string\"}, \"email\": {\"type\": \"string\"}}, \"allOf\": "
        "[{\"anyOf\": [{\"required\": [\"phone\"]}, {\"required\": [\"email\"]}]}], \"if\": {\"properties\": "
        "{\"contactMethod\": {\"const\": \"phone\"}}, \"required\": [\"contactMethod\"]}, \"then\": "
        "{\"required\": [\"phone\"]}, \"else\": {\"required\": [\"email\"]}, \"additionalProperties\": "
        "false}}]";

static const char reconnection_tool[] =
        "{\"name\": \"test_reconnection\", \"description\": \"Tests SSE stream disconnection and client reconnection "
        "(SEP-1699): the server closes the stream mid-call and sends the result after the client reconnects.\"}";

static const char modern_tools[] =
        "[{\"name\": \"test_missing_capability\", \"description\": \"Test tool requiring sampling\"},"
        " {\"name\": \"test_input_required_result_elicitation\", \"description\": \"MRTR: elicitation request\"},"
        " {\"name\": \"test_input_required_result_sampling\", \"description\": \"MRTR: sampling request\"},"
        " {\"name\": \"test_input_required_result_list_roots\", \"description\": \"MRTR: roots/list request\"},"
        " {\"name\": \"test_input_required_result_request_state\", \"description\": \"MRTR: requestState\"},"
        " {\"name\": \"test_input_required_result_multiple_inputs\", \"description\": \"MRTR: several input "
        "requests\"},"
        " {\"name\": \"test_input_required_result_multi_round\", \"description\": \"MRTR: multi-round workflow\"},"
        " {\"name\": \"test_input_required_result_tampered_state\", \"description\": \"MRTR: requestState "
        "integrity\"},"
        " {\"name\": \"test_input_required_result_capabilities\", \"description\": \"MRTR: respects client "
        "capabilities\"},"
        " {\"name\": \"test_streaming_elicitation\", \"description\": \"Diagnostic tool validating response "
        "streams\"},"
        " {\"name\": \"test_logging_tool\", \"description\": \"Diagnostic logging validator tool\"},"
        " {\"name\": \"test_custom_header\", \"description\": \"A parameter mirrored into the Mcp-Param-Region "
        "header (SEP-2243)\", \"inputSchema\": {\"type\": \"object\", \"properties\": {\"region\": {\"type\": "
        "\"string\", \"description\": \"Where to run\", \"x-mcp-header\": \"Region\"}}, \"required\": "
        "[\"region\"]}}]";

json_t *
mcp_fixture_tools(bool modern)
{
        json_t *t = json_loads(legacy_tools, 0, NULL), *v;
        size_t i;

        if (modern)
                mcp_extend(t, json_loads(modern_tools, 0, NULL));
        else
                json_array_append_new(t, json_loads(reconnection_tool, 0, NULL));
        json_array_foreach(t, i, v)
                if (!json_object_get(v, "inputSchema"))
                        json_object_set_new(v, "inputSchema", json_pack("{s:s,s:{}}", "type", "object", "properties"));
        return t;
}

static void
text_result(struct xb_mcp_call *call, const char *text, bool error)
{
        json_t *r = json_pack("{s:[o]}", "content", mcp_text_block(text));

        if (error)
                json_object_set_new(r, "isError", json_true());
        mcp_result(call, r);
}

/* test_tool_with_logging and test_tool_with_progress: three steps 50 ms apart. */
static void
stepper(struct xb_timer *t)
{
        struct xb_mcp_call *call = t->data;
        static const char *const logs[] = { "Tool execution started", "Tool processing data", "Tool execution completed" };
        bool logging = !strcmp(json_string_value(json_object_get(call->params, "name")) ?: "", "test_tool_with_logging");
        char msg[64];

        if (logging) {
                mcp_log(call, LOG_INFO, "%s", logs[call->step]);
        } else {
                snprintf(msg, sizeof(msg), "Completed step %u of 100", call->step * 50);
                mcp_progress(call, call->step * 50, 100, msg);
        }
        if (++call->step < 3) {
                xb_timer_start(call->m->o.loop, &call->timer, 50, stepper, call);
                return;
        }
        if (logging) {
                text_result(call, "Tool with logging executed successfully", false);
        } else {
                char *tok = call->progress_token ? json_dumps(call->progress_token, JSON_ENCODE_ANY) : NULL;

                if (tok && tok[0] == '"') {
                        memmove(tok, tok + 1, strlen(tok));
                        tok[strlen(tok) - 1] = '\0';
                }
                text_result(call, tok ? tok : "0", false);
                free(tok);
        }
}

static void
reconnected(struct xb_timer *t)
{
        text_result(t->data, "Reconnection test completed successfully. If you received this, the client properly "
                    "reconnected after stream closure.", false);
}

/* ---- MRTR ---- */

static void
states_expire(struct xb_mcp *m)
{
        uint64_t now = xb_now_ms();

        for (struct mrtr_state **p = &m->states; *p;) {
                struct mrtr_state *s = *p;

                if (s->expires_ms < now || (m->nstates > STATES_MAX && !s->next)) {
                        *p = s->next;
                        json_decref(s->state);
                        free(s);
                        m->nstates--;
                } else
                        p = &s->next;
        }
}

static char *
state_new(struct xb_mcp *m, json_t *state)
{
        struct mrtr_state *s = calloc(1, sizeof(*s));

        if (!s || xb_random_id(s->token, sizeof(s->token)) < 0) {
                free(s);
                json_decref(state);
                return NULL;
        }
        s->state = state;
        s->expires_ms = xb_now_ms() + STATE_TTL_MS;
        s->next = m->states;
        m->states = s;
        m->nstates++;
        states_expire(m);
        return strdup(s->token);
}

static json_t *
state_get(struct xb_mcp *m, const char *token)
{
        states_expire(m);
        for (struct mrtr_state *s = m->states; s && token; s = s->next)
                if (!strcmp(s->token, token))
                        return s->state;
        return NULL;
}

void
mcp_fixture_states_free(struct xb_mcp *m)
{
        for (struct mrtr_state *s = m->states, *n; s; s = n) {
                n = s->next;
                json_decref(s->state);
                free(s);
        }
        m->states = NULL;
}

static json_t *
elicit(const char *message, const char *field, const char *type)
{
        return json_pack("{s:s,s:{s:s,s:{s:s,s:{s:{s:s}},s:[s]}}}", "method", "elicitation/create", "params", "message",
                         message, "requestedSchema", "type", "object", "properties", field, "type", type, "required",
                         field);
}

static json_t *
sample(const char *text, int max_tokens)
{
        return json_pack("{s:s,s:{s:[{s:s,s:{s:s,s:s}}],s:i}}", "method", "sampling/createMessage", "params", "messages",
                         "role", "user", "content", "type", "text", "text", text, "maxTokens", max_tokens);
}

/* Ask for input; state (stolen) becomes a requestState token when given. */
static void
input_required(struct xb_mcp_call *call, json_t *requests, json_t *state)
{
        json_t *r = json_pack("{s:s,s:o}", "resultType", "input_required", "inputRequests", requests);

        if (state) {
                _cleanup_free_ char *tok = state_new(call->m, state);

                json_object_set_new(r, "requestState", json_string(tok ? tok : ""));
        }
        mcp_result(call, r);
}

/* The text a form answer gives for field, from an elicitation response. */
static const char *
answer(json_t *resp, const char *field)
{
        return json_string_value(json_object_get(json_object_get(resp, "content"), field));
}

static bool
mrtr_call(struct xb_mcp_call *call, const char *name)
{
        json_t *in = json_object_get(call->params, "inputResponses");
        const char *tok = json_string_value(json_object_get(call->params, "requestState"));
        json_t *state = tok ? state_get(call->m, tok) : NULL;
        const char *kind = json_string_value(json_object_get(state, "kind"));
        char text[300];

        if (!strcmp(name, "test_input_required_result_elicitation")) {
                if (json_object_get(in, "user_name")) {
                        snprintf(text, sizeof(text), "Hello, %.100s!", answer(json_object_get(in, "user_name"), "name") ?: "friend");
                        text_result(call, text, false);
                } else
                        input_required(call, json_pack("{s:o}", "user_name", elicit("What is your name?", "name", "string")),
                                       NULL);
        } else if (!strcmp(name, "test_input_required_result_sampling")) {
                json_t *s = json_object_get(in, "capital_question");

                if (s) {
                        snprintf(text, sizeof(text), "Sampling result: %.200s",
                                 json_string_value(json_object_get(json_object_get(s, "content"), "text")) ?: "no response");
                        text_result(call, text, false);
                } else
                        input_required(call, json_pack("{s:o}", "capital_question",
                                                       sample("What is the capital of France?", 100)), NULL);
        } else if (!strcmp(name, "test_input_required_result_list_roots")) {
                json_t *r = json_object_get(in, "client_roots");

                if (r) {
                        snprintf(text, sizeof(text), "Found %zu root(s)", json_array_size(json_object_get(r, "roots")));
                        text_result(call, text, false);
                } else
                        input_required(call, json_pack("{s:{s:s,s:{}}}", "client_roots", "method", "roots/list",
                                                       "params"), NULL);
        } else if (!strcmp(name, "test_input_required_result_request_state")) {
                if (kind && !strcmp(kind, "request-state") &&
                    json_is_true(json_object_get(json_object_get(json_object_get(in, "confirm"), "content"), "ok")))
                        text_result(call, "state-ok: requestState validated", false);
                else
                        input_required(call, json_pack("{s:o}", "confirm", elicit("Please confirm", "ok", "boolean")),
                                       json_pack("{s:s}", "kind", "request-state"));
        } else if (!strcmp(name, "test_input_required_result_multiple_inputs")) {
                if (kind && !strcmp(kind, "multiple-inputs") && json_object_get(in, "user_name") &&
                    json_object_get(in, "greeting") && json_object_get(in, "client_roots")) {
                        snprintf(text, sizeof(text), "Name: %.80s; Greeting: %.80s; Roots: %zu",
                                 answer(json_object_get(in, "user_name"), "name") ?: "friend",
                                 json_string_value(json_object_get(json_object_get(json_object_get(in, "greeting"),
                                                                                   "content"), "text")) ?: "Hello there!",
                                 json_array_size(json_object_get(json_object_get(in, "client_roots"), "roots")));
                        text_result(call, text, false);
                } else
                        input_required(call, json_pack("{s:o,s:o,s:{s:s,s:{}}}", "user_name",
                                                       elicit("What is your name?", "name", "string"), "greeting",
                                                       sample("Generate a greeting", 50), "client_roots", "method",
                                                       "roots/list", "params"),
                                       json_pack("{s:s}", "kind", "multiple-inputs"));
        } else if (!strcmp(name, "test_input_required_result_multi_round")) {
                json_int_t round = json_integer_value(json_object_get(state, "round"));

                if (round == 1 && json_object_get(in, "step1")) {
                        input_required(call, json_pack("{s:o}", "step2", elicit("Step 2: What is your favorite color?",
                                                                                "color", "string")),
                                       json_pack("{s:i,s:s}", "round", 2, "name",
                                                 answer(json_object_get(in, "step1"), "name") ?: "friend"));
                } else if (round == 2 && json_object_get(in, "step2")) {
                        snprintf(text, sizeof(text), "Multi-round complete for %.80s who likes %.80s",
                                 json_string_value(json_object_get(state, "name")) ?: "friend",
                                 answer(json_object_get(in, "step2"), "color") ?: "no color");
                        text_result(call, text, false);
                } else
                        input_required(call, json_pack("{s:o}", "step1", elicit("Step 1: What is your name?", "name",
                                                                                "string")),
                                       json_pack("{s:i}", "round", 1));
        } else if (!strcmp(name, "test_input_required_result_tampered_state")) {
                if (tok && !state)
                        mcp_fail(call, -32602, "requestState integrity check failed", NULL, 200);
                else if (kind && !strcmp(kind, "tamper-test") && json_object_get(in, "confirm"))
                        text_result(call, "integrity-ok: state verified", false);
                else
                        input_required(call, json_pack("{s:o}", "confirm", elicit("Please confirm", "ok", "boolean")),
                                       json_pack("{s:s}", "kind", "tamper-test"));
        } else if (!strcmp(name, "test_input_required_result_capabilities")) {
                json_t *reqs = json_object();

                if (json_object_get(call->client_caps, "elicitation"))
                        json_object_set_new(reqs, "elicit_input", elicit("Elicitation input", "value", "string"));
                if (json_object_get(call->client_caps, "sampling"))
                        json_object_set_new(reqs, "sample_input", sample("Sample request", 50));
                if (json_object_size(in)) {
                        struct xb_buf b = { .max = 256 };
                        const char *k;
                        json_t *v;

                        xb_buf_puts(&b, "capabilities-ok: received ");
                        json_object_foreach(in, k, v)
                                xb_buf_printf(&b, "%s%.32s", b.data[b.len - 1] == ' ' ? "" : ",", k);
                        text_result(call, b.data, false);
                        xb_buf_free(&b);
                        json_decref(reqs);
                } else if (!json_object_size(reqs)) {
                        json_decref(reqs);
                        text_result(call, "No supported capabilities declared", false);
                } else
                        input_required(call, reqs, json_pack("{s:s}", "kind", "capabilities-test"));
        } else
                return false;
        return true;
}

bool
mcp_fixture_call(struct xb_mcp_call *call, const char *name, json_t *args)
{
        (void)args;
        if (call->modern) {
                if (!strncmp(name, "test_input_required_result_", 27) || !strcmp(name, "test_missing_capability") ||
                    !strcmp(name, "test_streaming_elicitation") || !strcmp(name, "test_logging_tool") ||
                    !strcmp(name, "test_custom_header") || !strcmp(name, "test_trigger_tool_change") ||
                    !strcmp(name, "test_trigger_prompt_change")) {
                        if (!strncmp(name, "test_input_required_result_", 27) && mrtr_call(call, name))
                                return true;
                        if (!strcmp(name, "test_missing_capability")) {
                                if (!json_object_get(call->client_caps, "sampling"))
                                        mcp_fail(call, -32021, "Missing required client capability: sampling",
                                                 json_pack("{s:{s:{}}}", "requiredCapabilities", "sampling"), 400);
                                else
                                        text_result(call, "Success", false);
                        } else if (!strcmp(name, "test_streaming_elicitation")) {
                                mcp_progress(call, 50, 100, "halfway");
                                text_result(call, "Streaming complete", false);
                        } else if (!strcmp(name, "test_logging_tool")) {
                                mcp_log(call, LOG_INFO, "Diagnostic trace logging activated");
                                text_result(call, "Logging evaluated", false);
                        } else if (!strcmp(name, "test_custom_header")) {
                                char text[160];

                                snprintf(text, sizeof(text), "region: %.100s",
                                         json_string_value(json_object_get(args, "region")) ?: "");
                                text_result(call, text, false);
                        } else if (!strncmp(name, "test_trigger_", 13)) {
                                /* Lists never change here, and no listChanged is advertised. */
                                text_result(call, "Nothing to change: this server's lists are static", false);
                        } else
                                return false;
                        return true;
                }
        }
        if (!strcmp(name, "test_simple_text"))
                text_result(call, "This is a simple text response for testing.", false);
        else if (!strcmp(name, "test_image_content"))
                mcp_result(call, json_pack("{s:[{s:s,s:s,s:s}]}", "content", "type", "image", "data", RED_PIXEL,
                                           "mimeType", "image/png"));
        else if (!strcmp(name, "test_audio_content"))
                mcp_result(call, json_pack("{s:[{s:s,s:s,s:s}]}", "content", "type", "audio", "data", WAV, "mimeType",
                                           "audio/wav"));
        else if (!strcmp(name, "test_embedded_resource"))
                mcp_result(call, json_pack("{s:[{s:s,s:{s:s,s:s,s:s}}]}", "content", "type", "resource", "resource",
                                           "uri", "test://embedded-resource", "mimeType", "text/plain", "text",
                                           "This is an embedded resource content."));
        else if (!strcmp(name, "test_multiple_content_types"))
                mcp_result(call, json_pack("{s:[{s:s,s:s},{s:s,s:s,s:s},{s:s,s:{s:s,s:s,s:s}}]}", "content", "type",
                                           "text", "text", "Multiple content types test:", "type", "image", "data",
                                           RED_PIXEL, "mimeType", "image/png", "type", "resource", "resource", "uri",
                                           "test://mixed-content-resource", "mimeType", "application/json", "text",
                                           "{\"test\":\"data\",\"value\":123}"));
        else if (!strcmp(name, "test_error_handling"))
                text_result(call, "This tool intentionally returns an error for testing", true);
        else if (!strcmp(name, "test_tool_with_logging") || !strcmp(name, "test_tool_with_progress"))
                stepper(&(struct xb_timer){ .data = call });
        else if (!strcmp(name, "json_schema_2020_12_tool")) {
                _cleanup_free_ char *a = json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS);
                char text[600];

                snprintf(text, sizeof(text), "JSON Schema 2020-12 tool called with: %.500s", a ? a : "{}");
                text_result(call, text, false);
        } else if (!strcmp(name, "test_reconnection") && !call->modern) {
                if (call->out->close_stream)
                        call->out->close_stream(call->out_ctx);
                xb_timer_start(call->m->o.loop, &call->timer, 100, reconnected, call);
        } else
                return false;
        return true;
}

/* ---- resources ---- */

json_t *
mcp_fixture_resources(void)
{
        return json_pack("[{s:s,s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s,s:s}]",
                         "uri", "test://static-text", "name", "static-text", "title", "Static Text Resource",
                         "description", "A static text resource for testing", "mimeType", "text/plain",
                         "uri", "test://static-binary", "name", "static-binary", "title", "Static Binary Resource",
                         "description", "A static binary resource (image) for testing", "mimeType", "image/png",
                         "uri", "test://watched-resource", "name", "watched-resource", "title", "Watched Resource",
                         "description", "A resource that can be subscribed to", "mimeType", "text/plain");
}

json_t *
mcp_fixture_templates(void)
{
        return json_pack("[{s:s,s:s,s:s,s:s,s:s}]", "uriTemplate", "test://template/{id}/data", "name", "template",
                         "title", "Resource Template", "description", "A resource template with parameter substitution",
                         "mimeType", "application/json");
}

static void
contents(struct xb_mcp_call *call, json_t *c)
{
        json_t *r = json_pack("{s:[o]}", "contents", c);

        if (call->modern) {
                json_object_set_new(r, "ttlMs", json_integer(300000));
                json_object_set_new(r, "cacheScope", json_string("private"));
        }
        mcp_result(call, r);
}

bool
mcp_fixture_read(struct xb_mcp_call *call, const char *uri)
{
        const char *id;
        size_t n;

        if (!strcmp(uri, "test://static-text"))
                contents(call, json_pack("{s:s,s:s,s:s}", "uri", uri, "mimeType", "text/plain", "text",
                                         "This is the content of the static text resource."));
        else if (!strcmp(uri, "test://static-binary"))
                contents(call, json_pack("{s:s,s:s,s:s}", "uri", uri, "mimeType", "image/png", "blob", RED_PIXEL));
        else if (!strcmp(uri, "test://watched-resource"))
                contents(call, json_pack("{s:s,s:s,s:s}", "uri", uri, "mimeType", "text/plain", "text",
                                         "Watched resource content"));
        else if (!strncmp(uri, "test://template/", 16) && (n = strlen(uri)) > 21 && !strcmp(uri + n - 5, "/data") &&
                 !memchr((id = uri + 16), '/', n - 21)) {
                json_t *data = json_pack("{s:s%,s:b}", "id", id, n - 21, "templateTest", 1);
                char text[300];
                _cleanup_free_ char *s = NULL;

                snprintf(text, sizeof(text), "Data for ID: %.*s", (int)XB_MIN(n - 21, (size_t)200), id);
                json_object_set_new(data, "data", json_string(text));
                s = json_dumps(data, JSON_COMPACT | JSON_PRESERVE_ORDER);
                json_decref(data);
                contents(call, json_pack("{s:s,s:s,s:s}", "uri", uri, "mimeType", "application/json", "text", s ? s : "{}"));
        } else
                return false;
        return true;
}

/* ---- prompts ---- */

json_t *
mcp_fixture_prompts(bool modern)
{
        json_t *p = json_pack("[{s:s,s:s,s:s},"
                              "{s:s,s:s,s:s,s:[{s:s,s:s,s:b},{s:s,s:s,s:b}]},"
                              "{s:s,s:s,s:s,s:[{s:s,s:s,s:b}]},"
                              "{s:s,s:s,s:s}]",
                              "name", "test_simple_prompt", "title", "Simple Test Prompt", "description",
                              "A simple prompt without arguments",
                              "name", "test_prompt_with_arguments", "title", "Prompt With Arguments", "description",
                              "A prompt with required arguments", "arguments", "name", "arg1", "description",
                              "First test argument", "required", 1, "name", "arg2", "description",
                              "Second test argument", "required", 1,
                              "name", "test_prompt_with_embedded_resource", "title", "Prompt With Embedded Resource",
                              "description", "A prompt that includes an embedded resource", "arguments", "name",
                              "resourceUri", "description", "URI of the resource to embed", "required", 1,
                              "name", "test_prompt_with_image", "title", "Prompt With Image", "description",
                              "A prompt that includes image content");

        if (modern)
                json_array_append_new(p, json_pack("{s:s,s:s}", "name", "test_input_required_result_prompt",
                                                   "description", "MRTR: prompt that requires elicitation input"));
        return p;
}

static json_t *
user_text(const char *text)
{
        return json_pack("{s:s,s:{s:s,s:s}}", "role", "user", "content", "type", "text", "text", text);
}

bool
mcp_fixture_prompt(struct xb_mcp_call *call, const char *name, json_t *args)
{
        const char *a1 = json_string_value(json_object_get(args, "arg1"));
        const char *a2 = json_string_value(json_object_get(args, "arg2"));
        const char *uri = json_string_value(json_object_get(args, "resourceUri"));
        char text[600];

        if (!strcmp(name, "test_simple_prompt")) {
                mcp_result(call, json_pack("{s:[o]}", "messages", user_text("This is a simple prompt for testing.")));
        } else if (!strcmp(name, "test_prompt_with_arguments")) {
                if (!a1 || !a2) {
                        mcp_fail(call, -32602, "test_prompt_with_arguments needs arguments arg1 and arg2", NULL, 200);
                        return true;
                }
                snprintf(text, sizeof(text), "Prompt with arguments: arg1='%.200s', arg2='%.200s'", a1, a2);
                mcp_result(call, json_pack("{s:[o]}", "messages", user_text(text)));
        } else if (!strcmp(name, "test_prompt_with_embedded_resource")) {
                if (!uri) {
                        mcp_fail(call, -32602, "test_prompt_with_embedded_resource needs the argument resourceUri", NULL,
                                 200);
                        return true;
                }
                mcp_result(call, json_pack("{s:[{s:s,s:{s:s,s:{s:s,s:s,s:s}}},o]}", "messages", "role", "user",
                                           "content", "type", "resource", "resource", "uri", uri, "mimeType",
                                           "text/plain", "text", "Embedded resource content for testing.",
                                           user_text("Please process the embedded resource above.")));
        } else if (!strcmp(name, "test_prompt_with_image")) {
                mcp_result(call, json_pack("{s:[{s:s,s:{s:s,s:s,s:s}},o]}", "messages", "role", "user", "content",
                                           "type", "image", "data", RED_PIXEL, "mimeType", "image/png",
                                           user_text("Please analyze the image above.")));
        } else if (!strcmp(name, "test_input_required_result_prompt") && call->modern) {
                json_t *in = json_object_get(json_object_get(call->params, "inputResponses"), "user_context");

                if (in) {
                        snprintf(text, sizeof(text), "Prompt with context: %.200s", answer(in, "context") ?: "none");
                        mcp_result(call, json_pack("{s:[o]}", "messages", user_text(text)));
                } else
                        input_required(call, json_pack("{s:o}", "user_context",
                                                       elicit("What context should the prompt use?", "context",
                                                              "string")), NULL);
        } else
                return false;
        return true;
}
