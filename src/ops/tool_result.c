/* What a model sees of a tool's outcome, for every adapter that runs
 * tool calls (MCP's tools/call, REST's tool bridge): a result as text, a
 * cell's outputs as content blocks, and an error as one line with advice
 * in terms of the tools (tool_hints.c). Content blocks are
 * {"type": "text", "text"} and {"type": "image", "data" (base64),
 * "mimeType"}; an adapter reshapes them for its protocol if it must. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "ops/tool_result.h"

json_t *
xb_tool_text_block(const char *text)
{
        return json_pack("{s:s,s:s}", "type", "text", "text", text ? text : "");
}

/* ---- results as text ---- */

static void
put_stream(struct xb_buf *b, const char *name, json_t *v)
{
        const char *s = json_string_value(v);

        if (!s || !*s)
                return;
        xb_buf_printf(b, "--- %s ---\n%s%s", name, s, s[strlen(s) - 1] == '\n' ? "" : "\n");
}

static char *
render_result(json_t *o)
{
        struct xb_buf b = { .max = 64u << 20 };
        const char *status = json_string_value(json_object_get(o, "status")) ?: "?";
        json_int_t ms = json_integer_value(json_object_get(o, "duration_ms"));
        json_t *code = json_object_get(o, "exit_code"), *sig = json_object_get(o, "signal");

        if (!strcmp(status, "running"))
                xb_buf_printf(&b, "Still running as pid %lld after %.1f s, with no output for a while. Continue with "
                              "process_read {\"pid\": %lld, \"stdout_offset\": %lld, \"stderr_offset\": %lld, "
                              "\"wait_s\": 30}, send input with process_input, or stop it with process_kill.\n",
                              (long long)json_integer_value(json_object_get(o, "pid")), (double)ms / 1000.0,
                              (long long)json_integer_value(json_object_get(o, "pid")),
                              (long long)json_integer_value(json_object_get(o, "stdout_offset")),
                              (long long)json_integer_value(json_object_get(o, "stderr_offset")));
        else if (json_is_integer(code))
                xb_buf_printf(&b, "Exit code %lld (%s) in %.3f s.\n", (long long)json_integer_value(code), status,
                              (double)ms / 1000.0);
        else
                xb_buf_printf(&b, "Ended with status %s%s%.0lld after %.3f s.\n", status,
                              json_is_integer(sig) ? ", signal " : "", (long long)json_integer_value(sig),
                              (double)ms / 1000.0);
        put_stream(&b, "stdout", json_object_get(o, "stdout"));
        put_stream(&b, "stderr", json_object_get(o, "stderr"));
        if (!json_string_length(json_object_get(o, "stdout")) && !json_string_length(json_object_get(o, "stderr")))
                xb_buf_puts(&b, "(no output)\n");
        return xb_buf_steal(&b);
}

static char *
render_output(json_t *o)
{
        struct xb_buf b = { .max = 64u << 20 };
        bool running = json_is_true(json_object_get(o, "running"));
        json_t *code = json_object_get(o, "exit_code");

        if (running)
                xb_buf_printf(&b, "pid %lld is still running.", (long long)json_integer_value(json_object_get(o, "pid")));
        else if (json_is_integer(code))
                xb_buf_printf(&b, "pid %lld has finished (%s, exit code %lld).",
                              (long long)json_integer_value(json_object_get(o, "pid")),
                              json_string_value(json_object_get(o, "status")) ?: "?", (long long)json_integer_value(code));
        else
                xb_buf_printf(&b, "pid %lld has finished (%s).", (long long)json_integer_value(json_object_get(o, "pid")),
                              json_string_value(json_object_get(o, "status")) ?: "?");
        xb_buf_printf(&b, " Next read from stdout_offset %lld, stderr_offset %lld.\n",
                      (long long)json_integer_value(json_object_get(o, "stdout_offset")),
                      (long long)json_integer_value(json_object_get(o, "stderr_offset")));
        put_stream(&b, "stdout", json_object_get(o, "stdout"));
        put_stream(&b, "stderr", json_object_get(o, "stderr"));
        return xb_buf_steal(&b);
}

static char *
render_listing(json_t *o)
{
        struct xb_buf b = { .max = 16u << 20 };
        json_t *e;
        size_t i;

        xb_buf_printf(&b, "%s: %lld entries%s\n", json_string_value(json_object_get(o, "path")) ?: "",
                      (long long)json_integer_value(json_object_get(o, "count")),
                      json_is_true(json_object_get(o, "truncated")) ? " (truncated)" : "");
        json_array_foreach(json_object_get(o, "entries"), i, e) {
                const char *type = json_string_value(json_object_get(e, "type")) ?: "other";

                xb_buf_printf(&b, "%c %s %10lld %.19s %s%s\n", type[0] == 'f' ? '-' : type[0] == 'o' ? '?' : type[0],
                              json_string_value(json_object_get(e, "mode")) ?: "",
                              (long long)json_integer_value(json_object_get(e, "size")),
                              json_string_value(json_object_get(e, "mtime")) ?: "",
                              json_string_value(json_object_get(e, "path")) ?: "", !strcmp(type, "dir") ? "/" : "");
        }
        return xb_buf_steal(&b);
}

char *
xb_tool_text(const struct xb_tool *t, json_t *o)
{
        const char *n = t->name;
        char *s = NULL;

        if (!strcmp(n, "run_command"))
                return render_result(o);
        if (!strcmp(n, "process_read"))
                return render_output(o);
        if (!strcmp(n, "list_files"))
                return render_listing(o);
        if (!strcmp(n, "write_file") &&
            asprintf(&s, "Wrote %lld bytes to %s (its size is now %lld bytes).",
                     (long long)json_integer_value(json_object_get(o, "written")),
                     json_string_value(json_object_get(o, "path")) ?: "",
                     (long long)json_integer_value(json_object_get(o, "size"))) >= 0)
                return s;
        if (!strcmp(n, "process_start") &&
            asprintf(&s, "Started pid %lld: %s. Read its output with process_read {\"pid\": %lld}; stop it with "
                     "process_kill.", (long long)json_integer_value(json_object_get(o, "pid")),
                     json_string_value(json_object_get(o, "cmd")) ?: "",
                     (long long)json_integer_value(json_object_get(o, "pid"))) >= 0)
                return s;
        if (!strcmp(n, "sandbox_create") &&
            asprintf(&s, "Created sandbox %s. Pass \"sandbox_id\": \"%s\" to the other tools to use it; it is deleted "
                     "after %lld s without use.\n", json_string_value(json_object_get(o, "id")) ?: "",
                     json_string_value(json_object_get(o, "id")) ?: "",
                     (long long)json_integer_value(json_object_get(o, "timeout_s"))) >= 0)
                return s;
        if (!strcmp(n, "sandbox_delete") &&
            asprintf(&s, "Deleted sandbox %s.", json_string_value(json_object_get(o, "id")) ?: "") >= 0)
                return s;
        return json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

void
xb_tool_annotate(const struct xb_tool *t, json_t *o)
{
        if (!strcmp(t->name, "run_command") && !strcmp(json_string_value(json_object_get(o, "status")) ?: "", "running"))
                json_object_set_new(o, "hint", json_string("the command is still running: call process_read with this "
                                                           "pid, stdout_offset and stderr_offset (and wait_s) for more "
                                                           "output, process_input to type into it, or process_kill to "
                                                           "stop it"));
}

/* ---- run_code's cells ---- */

/* IPython colors its tracebacks: drop the escape sequences. */
static char *
strip_ansi(const char *s)
{
        char *out = malloc(strlen(s) + 1), *o = out;

        if (!out)
                return NULL;
        while (*s) {
                if (s[0] == '\x1b' && s[1] == '[') {
                        s += 2;
                        while (*s && !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
                                s++;
                        if (*s)
                                s++;
                        continue;
                }
                *o++ = *s++;
        }
        *o = '\0';
        return out;
}

static void
add_text(json_t *content, struct xb_buf *pending)
{
        if (pending->len) {
                json_array_append_new(content, json_pack("{s:s,s:s%}", "type", "text", "text", pending->data,
                                                         pending->len));
                xb_buf_reset(pending);
        }
}

/* A cell's outputs as content blocks: text, and images as image blocks.
 * The structured copy keeps image URLs but not their base64. */
json_t *
xb_tool_cell_content(json_t *cell)
{
        json_t *content = json_array(), *o, *outs = json_object_get(cell, "outputs");
        struct xb_buf text = { .max = 64u << 20 };
        const char *status = json_string_value(json_object_get(cell, "status")) ?: "?";
        size_t i;

        xb_buf_printf(&text, "[%s, execution %lld, %.3f s]\n", status,
                      (long long)json_integer_value(json_object_get(cell, "execution_count")),
                      (double)json_integer_value(json_object_get(cell, "duration_ms")) / 1000.0);
        json_array_foreach(outs, i, o) {
                const char *type = json_string_value(json_object_get(o, "type")) ?: "";
                json_t *data = json_object_get(o, "data");

                if (!strcmp(type, "stream")) {
                        xb_buf_puts(&text, json_string_value(json_object_get(o, "text")) ?: "");
                } else if (!strcmp(type, "error")) {
                        json_t *tb = json_object_get(o, "traceback"), *l;
                        size_t k;

                        json_array_foreach(tb, k, l) {
                                _cleanup_free_ char *clean = strip_ansi(json_string_value(l) ?: "");

                                xb_buf_printf(&text, "%s\n", clean ? clean : "");
                        }
                        if (!json_array_size(tb))
                                xb_buf_printf(&text, "%s: %s\n", json_string_value(json_object_get(o, "name")) ?: "Error",
                                              json_string_value(json_object_get(o, "value")) ?: "");
                } else if (!strcmp(type, "exit")) {
                        xb_buf_printf(&text, "[exit code %lld]\n", (long long)json_integer_value(json_object_get(o, "exit_code")));
                } else if (json_is_object(data)) {
                        static const char *const images[] = { "image/png", "image/jpeg", "image/gif", "image/webp" };
                        bool shown = false;

                        for (size_t k = 0; k < ARRAY_SIZE(images); k++) {
                                json_t *img = json_object_get(data, images[k]);

                                if (json_is_string(img) && !shown) {
                                        add_text(content, &text);
                                        json_array_append_new(content, json_pack("{s:s,s:O,s:s}", "type", "image",
                                                                                 "data", img, "mimeType", images[k]));
                                        shown = true;
                                }
                                json_object_del(data, images[k]);
                        }
                        if (!shown && json_is_string(json_object_get(data, "text/plain")))
                                xb_buf_printf(&text, "%s%s\n", !strcmp(type, "result") ? "Out: " : "",
                                              json_string_value(json_object_get(data, "text/plain")));
                }
        }
        if (json_is_string(json_object_get(cell, "hint")))
                xb_buf_printf(&text, "\n(%s)\n", json_string_value(json_object_get(cell, "hint")));
        add_text(content, &text);
        xb_buf_free(&text);
        return content;
}
