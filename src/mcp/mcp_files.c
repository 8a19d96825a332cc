/* MCP over sandbox files: the read_file and edit_file tools, built on the
 * file operations read_file, write_file and list_files.
 *
 * read_file returns numbered lines like `cat -n` (the structured result
 * keeps them raw), or an image block for PNG, JPEG, GIF and WebP files
 * recognized by their magic bytes. edit_file is OpenHands' editor: view,
 * str_replace (exactly one match), insert, and undo_edit from a bounded
 * per-context history of previous contents; an edit answers with a short
 * unified diff. Reads take at most MCP_FILE_MAX bytes of a file. The
 * workspace as resources is in mcp_resources.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/utf8.h"
#include "mcp/mcp_int.h"

#define FILE_MAX MCP_FILE_MAX
#define VIEW_LINES_MAX XB_TOOL_VIEW_LINES_MAX
#define VIEW_BYTES_MAX XB_TOOL_VIEW_BYTES_MAX
#define DIFF_LINES_MAX 40
#define CONTEXT_LINES 3
#define HOME "/home/user"

/* "/home/user/x" for a relative x, as the file operations read it. */
static char *
abs_path(const char *p)
{
        char *s = NULL;

        if (p[0] == '/')
                return strdup(p);
        if (asprintf(&s, HOME "/%s", p) < 0)
                return NULL;
        return s;
}

void
mcp_fetch(struct xb_mcp_call *call, const char *path, mcp_done_fn done, mcp_fail_fn fail)
{
        json_t *args = json_pack("{s:s,s:s,s:I}", "id", call->sandbox, "path", path, "max_bytes",
                                 (json_int_t)FILE_MAX + 1);

        mcp_op(call, "read_file", args, done, fail, NULL);
        json_decref(args);
}

/* ---- read_file: the view is ops/tool_view.c ---- */

static void
read_done(struct xb_mcp_call *call, json_t *r)
{
        json_t *content, *structured;
        _cleanup_free_ char *text = NULL;

        if (xb_tool_read_view(call->args, r, &content, &structured, &text) < 0)
                mcp_tool_error(call, text ? text : "Error: out of memory. Hint: retry.");
        else
                mcp_tool_done(call, content, structured);
        json_decref(r);
}

static void
read_fail(struct xb_mcp_call *call, const struct xb_err *err)
{
        if (!mcp_retry_expired(call, err, mcp_read_file))
                mcp_tool_fail(call, err);
}

void
mcp_read_file(struct xb_mcp_call *call)
{
        mcp_fetch(call, json_string_value(json_object_get(call->args, "path")), read_done, read_fail);
}

/* ---- edit_file ---- */

static void
edit_record(struct xb_mcp_client *c, const char *sandbox, const char *path, const char *data, size_t len)
{
        struct edit_record *r = calloc(1, sizeof(*r));

        if (!r || len > MCP_EDIT_BYTES_MAX || !(r->sandbox = strdup(sandbox)) || !(r->path = strdup(path)) ||
            !(r->data = malloc(len ? len : 1))) {
                if (r) {
                        free(r->sandbox);
                        free(r->path);
                }
                free(r);
                return;
        }
        memcpy(r->data, data, len);
        r->len = len;
        r->next = c->edits;
        c->edits = r;
        c->nedits++;
        c->edit_bytes += len;
        /* Forget the oldest past the bounds. */
        while (c->nedits > MCP_EDITS_MAX || c->edit_bytes > MCP_EDIT_BYTES_MAX) {
                struct edit_record **p = &c->edits;

                while ((*p)->next)
                        p = &(*p)->next;
                c->nedits--;
                c->edit_bytes -= (*p)->len;
                free((*p)->sandbox);
                free((*p)->path);
                free((*p)->data);
                free(*p);
                *p = NULL;
        }
}

static struct edit_record *
edit_take(struct xb_mcp_client *c, const char *sandbox, const char *path)
{
        for (struct edit_record **p = &c->edits; *p; p = &(*p)->next)
                if (!strcmp((*p)->sandbox, sandbox) && !strcmp((*p)->path, path)) {
                        struct edit_record *r = *p;

                        *p = r->next;
                        c->nedits--;
                        c->edit_bytes -= r->len;
                        return r;
                }
        return NULL;
}

static void
edits_free(struct xb_mcp_client *c)
{
        for (struct edit_record *r = c->edits, *n; r; r = n) {
                n = r->next;
                free(r->sandbox);
                free(r->path);
                free(r->data);
                free(r);
        }
        c->edits = NULL;
}

/* The undo history belongs to its context and goes with it. */
static const struct mcp_plugin edits_plugin = { .name = "edits", .client_free = edits_free };
MCP_PLUGIN(edits_plugin)

/* A unified diff of one hunk: the changed lines between the common head
 * and tail of a and b, with context, at most DIFF_LINES_MAX each way. */
static void
diff(struct xb_buf *out, const char *path, const char *a, size_t an, const char *b, size_t bn)
{
        _cleanup_free_ size_t *as = NULL, *bs = NULL;
        size_t na = 0, nb = 0, head = 0, tail = 0, ca, cb;

        as = xb_tool_line_starts(a, an, &na);
        bs = xb_tool_line_starts(b, bn, &nb);
        if (!as || !bs)
                return;
        while (head < na && head < nb) {
                size_t la = (head + 1 < na ? as[head + 1] : an) - as[head], lb = (head + 1 < nb ? bs[head + 1] : bn) - bs[head];

                if (la != lb || memcmp(a + as[head], b + bs[head], la))
                        break;
                head++;
        }
        while (tail < na - head && tail < nb - head) {
                size_t ia = na - 1 - tail, ib = nb - 1 - tail;
                size_t la = (ia + 1 < na ? as[ia + 1] : an) - as[ia], lb = (ib + 1 < nb ? bs[ib + 1] : bn) - bs[ib];

                if (la != lb || memcmp(a + as[ia], b + bs[ib], la))
                        break;
                tail++;
        }
        ca = head > CONTEXT_LINES ? head - CONTEXT_LINES : 0;
        cb = XB_MIN(tail, (size_t)CONTEXT_LINES);
        xb_buf_printf(out, "--- %s\n+++ %s\n@@ -%zu,%zu +%zu,%zu @@\n", path, path, ca + 1, na - tail + cb - ca, ca + 1,
                      nb - tail + cb - ca);
        for (size_t i = ca; i < head; i++) {
                const char *p;
                size_t l;

                p = a + as[i];
                l = (i + 1 < na ? as[i + 1] : an) - as[i];
                xb_buf_printf(out, " %.*s%s", (int)l, p, l && p[l - 1] == '\n' ? "" : "\n");
        }
        for (size_t i = head, k = 0; i < na - tail; i++, k++) {
                size_t l = (i + 1 < na ? as[i + 1] : an) - as[i];

                if (k == DIFF_LINES_MAX) {
                        xb_buf_printf(out, "-... (%zu more lines)\n", na - tail - i);
                        break;
                }
                xb_buf_printf(out, "-%.*s%s", (int)l, a + as[i], l && a[as[i] + l - 1] == '\n' ? "" : "\n");
        }
        for (size_t i = head, k = 0; i < nb - tail; i++, k++) {
                size_t l = (i + 1 < nb ? bs[i + 1] : bn) - bs[i];

                if (k == DIFF_LINES_MAX) {
                        xb_buf_printf(out, "+... (%zu more lines)\n", nb - tail - i);
                        break;
                }
                xb_buf_printf(out, "+%.*s%s", (int)l, b + bs[i], l && b[bs[i] + l - 1] == '\n' ? "" : "\n");
        }
        for (size_t i = nb - tail; i < nb - tail + cb; i++) {
                size_t l = (i + 1 < nb ? bs[i + 1] : bn) - bs[i];

                xb_buf_printf(out, " %.*s%s", (int)l, b + bs[i], l && b[bs[i] + l - 1] == '\n' ? "" : "\n");
        }
}

static void
put_done(struct xb_mcp_call *call, json_t *result)
{
        const char *cmd = json_string_value(json_object_get(call->args, "command"));
        const char *path = json_string_value(json_object_get(call->acc, "path"));
        const char *old = json_string_value(json_object_get(call->acc, "old"));
        size_t old_len = json_string_length(json_object_get(call->acc, "old"));
        struct xb_buf out = { .max = 1u << 20 };

        json_decref(result);
        if (strcmp(cmd, "undo_edit"))
                edit_record(call->c, call->sandbox, path, old, old_len);
        mcp_resource_changed(call, path);
        xb_buf_printf(&out, "%s %s. The change:\n", !strcmp(cmd, "undo_edit") ? "Undid the last edit of" : "Edited",
                      path);
        diff(&out, path, old, old_len, call->buf, call->buf_len);
        xb_buf_puts(&out, strcmp(cmd, "undo_edit") ? "Review the change; edit again if it is not what you meant, or "
                                                      "revert it with undo_edit.\n" : "");
        mcp_tool_done(call, json_pack("[o]", mcp_text_block(out.data)),
                      json_pack("{s:s,s:s}", "path", path, "output", out.data ? out.data : ""));
        xb_buf_free(&out);
}

static void
put(struct xb_mcp_call *call, const char *path)
{
        /* The content was built from UTF-8 text: it is text too. */
        json_t *content = json_stringn(call->buf, call->buf_len);
        json_t *args = content ? json_pack("{s:s,s:s,s:o}", "id", call->sandbox, "path", path, "content", content)
                               : NULL;

        if (!args) {
                mcp_tool_error(call, "Error: the new content is not valid UTF-8 text (not_editable). Hint: use "
                               "run_command.");
                return;
        }
        mcp_op(call, "write_file", args, put_done, NULL, NULL);
        json_decref(args);
}

/* Show old_str for an error message: the start of it, on one line. */
static void
quote(char *out, size_t cap, const char *s)
{
        size_t i = 0;

        for (; *s && i + 4 < cap; s++)
                out[i++] = *s == '\n' ? ' ' : *s;
        if (*s && i >= 3)
                memcpy(out + i - 3, "...", 3);
        out[i] = '\0';
}

static void
edit_view(struct xb_mcp_call *call, const char *path, const char *s, size_t n)
{
        json_t *vr = json_object_get(call->args, "view_range");
        _cleanup_free_ size_t *starts = NULL;
        size_t nlines = 0, from = 1, to;
        struct xb_buf out = { .max = 2 * VIEW_BYTES_MAX + 4096 };
        char msg[300];

        starts = xb_tool_line_starts(s, n, &nlines);
        if (!starts) {
                mcp_tool_error(call, "Error: out of memory. Hint: retry.");
                return;
        }
        to = nlines;
        if (json_is_array(vr)) {
                json_int_t a = json_integer_value(json_array_get(vr, 0)), b = json_integer_value(json_array_get(vr, 1));

                if (a < 1 || (nlines && (size_t)a > nlines) || (b != -1 && b < a)) {
                        snprintf(msg, sizeof(msg), "Error: invalid view_range [%lld, %lld]: %s has %zu lines "
                                 "(invalid_range). Hint: use [first, last] within 1-%zu, last -1 for the end.",
                                 (long long)a, (long long)b, path, nlines, nlines);
                        mcp_tool_error(call, msg);
                        return;
                }
                from = (size_t)a;
                to = b == -1 || (size_t)b > nlines ? nlines : (size_t)b;
        } else if (nlines > VIEW_LINES_MAX) {
                to = VIEW_LINES_MAX;
        }
        xb_buf_printf(&out, "Here's the result of running `cat -n` on %s:\n", path);
        xb_tool_numbered(&out, s, n, starts, nlines, from, to);
        if (to < nlines && !json_is_array(vr))
                xb_buf_printf(&out, "(%zu more lines; use view_range to see them)\n", nlines - to);
        mcp_tool_done(call, json_pack("[o]", mcp_text_block(out.data)),
                      json_pack("{s:s,s:s}", "path", path, "output", out.data ? out.data : ""));
        xb_buf_free(&out);
}

static void
list_done(struct xb_mcp_call *call, json_t *j)
{
        const char *path = json_string_value(json_object_get(call->acc, "path"));
        json_t *e;
        struct xb_buf out = { .max = 1u << 20 };
        size_t i;

        xb_buf_printf(&out, "Here's the files and directories up to 2 levels deep in %s, excluding hidden items:\n",
                      path);
        json_array_foreach(json_object_get(j, "entries"), i, e) {
                const char *p = json_string_value(json_object_get(e, "path")) ?: "";
                const char *name = json_string_value(json_object_get(e, "name")) ?: "";

                if (name[0] == '.' || strstr(p, "/."))
                        continue;
                xb_buf_printf(&out, "%s%s\n", p, !strcmp(json_string_value(json_object_get(e, "type")) ?: "", "dir") ? "/" : "");
        }
        json_decref(j);
        mcp_tool_done(call, json_pack("[o]", mcp_text_block(out.data)),
                      json_pack("{s:s,s:s}", "path", path, "output", out.data ? out.data : ""));
        xb_buf_free(&out);
}

static void
edit_fetch_failed(struct xb_mcp_call *call, const struct xb_err *err)
{
        const char *cmd = json_string_value(json_object_get(call->args, "command"));

        if (!strcmp(cmd, "view") && err->ecode == XB_E_IS_A_DIRECTORY) {
                json_t *args = json_pack("{s:s,s:O,s:i}", "id", call->sandbox, "path",
                                         json_object_get(call->acc, "path"), "depth", 2);

                mcp_op(call, "list_files", args, list_done, NULL, NULL);
                json_decref(args);
                return;
        }
        if (!mcp_retry_expired(call, err, mcp_edit_file))
                mcp_tool_fail(call, err);
}

static void
edit_text(struct xb_mcp_call *call, const char *s, size_t n, bool cut)
{
        const char *cmd = json_string_value(json_object_get(call->args, "command"));
        const char *path = json_string_value(json_object_get(call->acc, "path"));
        const char *old_str = json_string_value(json_object_get(call->args, "old_str"));
        const char *new_str = json_string_value(json_object_get(call->args, "new_str"));
        char msg[600], q[80];

        if (n > FILE_MAX || cut || xb_tool_is_binary(s, n)) {
                snprintf(msg, sizeof(msg), "Error: %s is %s (not_editable). Hint: edit_file works on text files up to "
                         "%u bytes; use run_command for others.", path, n > FILE_MAX || cut ? "too large" : "a binary file",
                         FILE_MAX);
                mcp_tool_error(call, msg);
                return;
        }
        if (!strcmp(cmd, "view")) {
                edit_view(call, path, s, n);
                return;
        }
        json_object_set_new(call->acc, "old", json_stringn(s, n));
        if (!json_object_get(call->acc, "old")) {
                mcp_tool_error(call, "Error: the file is not valid UTF-8 text (not_editable). Hint: use run_command.");
                return;
        }
        if (!strcmp(cmd, "str_replace")) {
                size_t ol = strlen(old_str), count = 0, first = 0, nl = new_str ? strlen(new_str) : 0;
                struct xb_buf lines = { .max = 4096 };

                for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), old_str, ol)); p += ol) {
                        size_t line = 1;

                        for (const char *x = s; x < p; x++)
                                line += *x == '\n';
                        if (!count++)
                                first = (size_t)(p - s);
                        xb_buf_printf(&lines, "%s%zu", lines.len ? ", " : "", line);
                }
                quote(q, sizeof(q), old_str);
                if (count != 1) {
                        if (!count)
                                snprintf(msg, sizeof(msg), "Error: no replacement was performed: old_str `%s` did not "
                                         "appear verbatim in %s (no_match). Hint: view the file and copy the exact text, "
                                         "whitespace included.", q, path);
                        else
                                snprintf(msg, sizeof(msg), "Error: no replacement was performed: old_str `%s` occurs %zu "
                                         "times in %s, on lines %s (not_unique). Hint: include more surrounding lines "
                                         "so that it matches exactly once.", q, count, path, lines.data ? lines.data : "");
                        xb_buf_free(&lines);
                        mcp_tool_error(call, msg);
                        return;
                }
                xb_buf_free(&lines);
                call->buf_len = n - ol + nl;
                call->buf = malloc(call->buf_len + 1);
                if (!call->buf) {
                        mcp_tool_error(call, "Error: out of memory. Hint: retry.");
                        return;
                }
                memcpy(call->buf, s, first);
                memcpy(call->buf + first, new_str ? new_str : "", nl);
                memcpy(call->buf + first + nl, s + first + ol, n - first - ol);
                put(call, path);
                return;
        }
        if (!strcmp(cmd, "insert")) {
                _cleanup_free_ size_t *starts = NULL;
                size_t nlines = 0, at, nl = strlen(new_str);
                size_t line = (size_t)json_integer_value(json_object_get(call->args, "insert_line"));
                bool need_nl = n && s[n - 1] != '\n';
                char *b;

                starts = xb_tool_line_starts(s, n, &nlines);
                if (!starts) {
                        mcp_tool_error(call, "Error: out of memory. Hint: retry.");
                        return;
                }
                if (line > nlines) {
                        snprintf(msg, sizeof(msg), "Error: insert_line %zu is past the end of %s, which has %zu lines "
                                 "(invalid_range). Hint: use 0 to insert at the top, %zu for the end.", line, path,
                                 nlines, nlines);
                        mcp_tool_error(call, msg);
                        return;
                }
                at = line < nlines ? starts[line] : n;
                need_nl = need_nl && at == n;
                call->buf = b = malloc(n + nl + 3);
                if (!b) {
                        mcp_tool_error(call, "Error: out of memory. Hint: retry.");
                        return;
                }
                memcpy(b, s, at);
                call->buf_len = at;
                if (need_nl)
                        b[call->buf_len++] = '\n';
                memcpy(b + call->buf_len, new_str, nl);
                call->buf_len += nl;
                if (!nl || new_str[nl - 1] != '\n')
                        b[call->buf_len++] = '\n';
                memcpy(b + call->buf_len, s + at, n - at);
                call->buf_len += n - at;
                put(call, path);
                return;
        }
        /* undo_edit */
        {
                struct edit_record *r = edit_take(call->c, call->sandbox, path);

                if (!r) {
                        snprintf(msg, sizeof(msg), "Error: no edit of %s to undo (no_history). Hint: only edits made "
                                 "with edit_file in this session can be undone.", path);
                        mcp_tool_error(call, msg);
                        return;
                }
                call->buf = r->data;
                call->buf_len = r->len;
                free(r->sandbox);
                free(r->path);
                free(r);
                put(call, path);
        }
}

static void
edit_fetched(struct xb_mcp_call *call, json_t *r)
{
        _cleanup_free_ char *owned = NULL;
        size_t n = 0;
        const char *s = xb_tool_file_data(r, &owned, &n);

        if (s)
                edit_text(call, s, n, xb_tool_file_cut(r, n));
        else
                mcp_tool_error(call, "Error: the file's content could not be read. Hint: retry.");
        json_decref(r);
}

void
mcp_edit_file(struct xb_mcp_call *call)
{
        const char *cmd = json_string_value(json_object_get(call->args, "command"));
        _cleanup_free_ char *path = abs_path(json_string_value(json_object_get(call->args, "path")));
        json_t *old_str = json_object_get(call->args, "old_str"), *new_str = json_object_get(call->args, "new_str");
        const char *why = NULL;

        if (!strcmp(cmd, "str_replace") && (!json_is_string(old_str) || !json_string_length(old_str)))
                why = "str_replace needs old_str, the exact text to replace";
        else if (!strcmp(cmd, "insert") && (!json_is_string(new_str) || !json_is_integer(json_object_get(call->args,
                                                                                                         "insert_line"))))
                why = "insert needs insert_line and new_str";
        if (why || !path) {
                char msg[200];

                snprintf(msg, sizeof(msg), "Error: %s (invalid_arguments).", why ? why : "out of memory");
                mcp_tool_error(call, msg);
                return;
        }
        json_decref(call->acc);
        call->acc = json_pack("{s:s}", "path", path);
        mcp_fetch(call, path, edit_fetched, edit_fetch_failed);
}
