/* edit_file for a model, shared by the adapters that run tool calls:
 * OpenHands' editor on a file's text. view shows numbered lines (or a
 * directory's listing), str_replace replaces the one match of old_str,
 * insert puts new_str after a line, undo_edit restores the content before
 * the last edit from a bounded history; an edit answers with a short
 * unified diff. The adapter reads and writes the file with the read_file,
 * write_file and list_files operations and keeps the history. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "ops/tool_result.h"

#define FILE_MAX XB_TOOL_FILE_MAX
#define VIEW_LINES_MAX XB_TOOL_VIEW_LINES_MAX
#define VIEW_BYTES_MAX XB_TOOL_VIEW_BYTES_MAX
#define DIFF_LINES_MAX 40
#define LINES_LISTED 20   /* of the matches of a str_replace that is not unique */
#define CONTEXT_LINES 3
#define HOME "/home/user"
#define NOMEM "Error: out of memory. Hint: retry."

char *
xb_tool_abs_path(const char *p)
{
        char *s = NULL;

        if (p[0] == '/')
                return strdup(p);
        if (asprintf(&s, HOME "/%s", p) < 0)
                return NULL;
        return s;
}

/* ---- the undo history ---- */

static void
rec_free(struct xb_edit_rec *r)
{
        if (!r)
                return;
        free(r->sandbox);
        free(r->path);
        free(r->data);
        free(r);
}

void
xb_edit_hist_free(struct xb_edit_hist *h)
{
        for (struct xb_edit_rec *r = h->head, *n; r; r = n) {
                n = r->next;
                rec_free(r);
        }
        h->head = NULL;
        h->n = 0;
        h->bytes = 0;
}

void
xb_edit_hist_prune(struct xb_edit_hist *h, bool (*keep)(const char *sandbox, void *ctx), void *ctx)
{
        for (struct xb_edit_rec **p = &h->head; *p;) {
                struct xb_edit_rec *r = *p;

                if (keep(r->sandbox, ctx)) {
                        p = &r->next;
                        continue;
                }
                *p = r->next;
                h->n--;
                h->bytes -= r->len;
                rec_free(r);
        }
}

static void
hist_record(struct xb_edit_hist *h, const char *sandbox, const char *path, const char *data, size_t len)
{
        struct xb_edit_rec *r = calloc(1, sizeof(*r));

        if (!r || len > XB_TOOL_EDIT_BYTES_MAX || !(r->sandbox = strdup(sandbox)) || !(r->path = strdup(path)) ||
            !(r->data = malloc(len ? len : 1))) {
                rec_free(r);
                return;
        }
        memcpy(r->data, data, len);
        r->len = len;
        r->next = h->head;
        h->head = r;
        h->n++;
        h->bytes += len;
        /* Forget the oldest past the bounds. */
        while (h->n > XB_TOOL_EDITS_MAX || h->bytes > XB_TOOL_EDIT_BYTES_MAX) {
                struct xb_edit_rec **p = &h->head;

                while ((*p)->next)
                        p = &(*p)->next;
                h->n--;
                h->bytes -= (*p)->len;
                rec_free(*p);
                *p = NULL;
        }
}

static struct xb_edit_rec *
hist_take(struct xb_edit_hist *h, const char *sandbox, const char *path)
{
        for (struct xb_edit_rec **p = &h->head; *p; p = &(*p)->next)
                if (!strcmp((*p)->sandbox, sandbox) && !strcmp((*p)->path, path)) {
                        struct xb_edit_rec *r = *p;

                        *p = r->next;
                        h->n--;
                        h->bytes -= r->len;
                        return r;
                }
        return NULL;
}

/* ---- the texts ---- */

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

static int
fail(struct xb_tool_edit *e, const char *msg)
{
        e->text = strdup(msg);
        return -1;
}

const char *
xb_tool_edit_why(json_t *args)
{
        const char *cmd = json_string_value(json_object_get(args, "command"));
        json_t *old_str = json_object_get(args, "old_str"), *new_str = json_object_get(args, "new_str");

        if (!strcmp(cmd, "str_replace") && (!json_is_string(old_str) || !json_string_length(old_str)))
                return "str_replace needs old_str, the exact text to replace";
        if (!strcmp(cmd, "insert") && (!json_is_string(new_str) || !json_is_integer(json_object_get(args,
                                                                                                "insert_line"))))
                return "insert needs insert_line and new_str";
        return NULL;
}

static int
view(json_t *args, const char *path, const char *s, size_t n, struct xb_tool_edit *e)
{
        json_t *vr = json_object_get(args, "view_range");
        _cleanup_free_ size_t *starts = NULL;
        size_t nlines = 0, from = 1, to;
        struct xb_buf out = { .max = 2 * VIEW_BYTES_MAX + 4096 };
        char msg[300];

        starts = xb_tool_line_starts(s, n, &nlines);
        if (!starts)
                return fail(e, NOMEM);
        to = nlines;
        if (json_is_array(vr)) {
                json_int_t a = json_integer_value(json_array_get(vr, 0)), b = json_integer_value(json_array_get(vr, 1));

                if (a < 1 || (nlines && (size_t)a > nlines) || (b != -1 && b < a)) {
                        snprintf(msg, sizeof(msg), "Error: invalid view_range [%lld, %lld]: %s has %zu lines "
                                 "(invalid_range). Hint: use [first, last] within 1-%zu, last -1 for the end.",
                                 (long long)a, (long long)b, path, nlines, nlines);
                        return fail(e, msg);
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
        e->text = out.data ? xb_buf_steal(&out) : strdup("");
        return 0;
}

static int
replace(json_t *args, const char *path, const char *s, size_t n, struct xb_tool_edit *e)
{
        const char *old_str = json_string_value(json_object_get(args, "old_str"));
        const char *new_str = json_string_value(json_object_get(args, "new_str"));
        size_t ol = strlen(old_str), count = 0, first = 0, nl = new_str ? strlen(new_str) : 0, line = 1;
        struct xb_buf lines = { .max = 4096 };
        const char *counted = s;
        char msg[600], q[80];
        char *b;

        /* Lines are counted on from the last match, not from the start: a
         * string found a million times costs one pass, not a million. */
        for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), old_str, ol)); p += ol) {
                for (const char *x; (x = memchr(counted, '\n', (size_t)(p - counted))); counted = x + 1)
                        line++;
                counted = p;
                if (!count++)
                        first = (size_t)(p - s);
                if (count <= LINES_LISTED)
                        xb_buf_printf(&lines, "%s%zu", count > 1 ? ", " : "", line);
                else if (count == LINES_LISTED + 1)
                        xb_buf_puts(&lines, ", ...");
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
                return fail(e, msg);
        }
        xb_buf_free(&lines);
        e->len = n - ol + nl;
        if (!(e->data = b = malloc(e->len + 1)))
                return fail(e, NOMEM);
        memcpy(b, s, first);
        memcpy(b + first, new_str ? new_str : "", nl);
        memcpy(b + first + nl, s + first + ol, n - first - ol);
        return 1;
}

static int
insert(json_t *args, const char *path, const char *s, size_t n, struct xb_tool_edit *e)
{
        const char *new_str = json_string_value(json_object_get(args, "new_str"));
        _cleanup_free_ size_t *starts = NULL;
        size_t nlines = 0, at, nl = strlen(new_str);
        size_t line = (size_t)json_integer_value(json_object_get(args, "insert_line"));
        bool need_nl = n && s[n - 1] != '\n';
        char msg[600];
        char *b;

        starts = xb_tool_line_starts(s, n, &nlines);
        if (!starts)
                return fail(e, NOMEM);
        if (line > nlines) {
                snprintf(msg, sizeof(msg), "Error: insert_line %zu is past the end of %s, which has %zu lines "
                         "(invalid_range). Hint: use 0 to insert at the top, %zu for the end.", line, path,
                         nlines, nlines);
                return fail(e, msg);
        }
        at = line < nlines ? starts[line] : n;
        need_nl = need_nl && at == n;
        if (!(e->data = b = malloc(n + nl + 3)))
                return fail(e, NOMEM);
        memcpy(b, s, at);
        e->len = at;
        if (need_nl)
                b[e->len++] = '\n';
        memcpy(b + e->len, new_str, nl);
        e->len += nl;
        if (!nl || new_str[nl - 1] != '\n')
                b[e->len++] = '\n';
        memcpy(b + e->len, s + at, n - at);
        e->len += n - at;
        return 1;
}

int
xb_tool_edit_text(json_t *args, const char *path, const char *s, size_t n, bool cut, struct xb_edit_hist *h,
                  const char *sandbox, struct xb_tool_edit *e)
{
        const char *cmd = json_string_value(json_object_get(args, "command"));
        char msg[600];

        memset(e, 0, sizeof(*e));
        if (n > FILE_MAX || cut || xb_tool_is_binary(s, n)) {
                snprintf(msg, sizeof(msg), "Error: %s is %s (not_editable). Hint: edit_file works on text files up to "
                         "%u bytes; use run_command for others.", path, n > FILE_MAX || cut ? "too large" : "a binary file",
                         FILE_MAX);
                return fail(e, msg);
        }
        if (!strcmp(cmd, "view"))
                return view(args, path, s, n, e);
        if (!(e->old = json_stringn(s, n)))
                return fail(e, "Error: the file is not valid UTF-8 text (not_editable). Hint: use run_command.");
        if (!strcmp(cmd, "str_replace"))
                return replace(args, path, s, n, e);
        if (!strcmp(cmd, "insert"))
                return insert(args, path, s, n, e);
        /* undo_edit */
        {
                struct xb_edit_rec *r = hist_take(h, sandbox, path);

                if (!r) {
                        snprintf(msg, sizeof(msg), "Error: no edit of %s to undo (no_history). Hint: only edits made "
                                 "with edit_file in this session can be undone.", path);
                        return fail(e, msg);
                }
                e->data = r->data;
                e->len = r->len;
                r->data = NULL;
                rec_free(r);
                return 1;
        }
}

json_t *
xb_tool_edit_content(struct xb_tool_edit *e)
{
        /* The content was built from UTF-8 text: it is text too. */
        json_t *content = json_stringn(e->data, e->len);

        if (!content) {
                free(e->text);
                e->text = strdup("Error: the new content is not valid UTF-8 text (not_editable). Hint: use "
                                 "run_command.");
        }
        return content;
}

char *
xb_tool_edit_done(json_t *args, const char *path, struct xb_tool_edit *e, struct xb_edit_hist *h,
                  const char *sandbox)
{
        const char *cmd = json_string_value(json_object_get(args, "command"));
        const char *old = json_string_value(e->old);
        size_t old_len = json_string_length(e->old);
        struct xb_buf out = { .max = 1u << 20 };

        if (strcmp(cmd, "undo_edit"))
                hist_record(h, sandbox, path, old, old_len);
        xb_buf_printf(&out, "%s %s. The change:\n", !strcmp(cmd, "undo_edit") ? "Undid the last edit of" : "Edited",
                      path);
        diff(&out, path, old, old_len, e->data, e->len);
        xb_buf_puts(&out, strcmp(cmd, "undo_edit") ? "Review the change; edit again if it is not what you meant, or "
                                                      "revert it with undo_edit.\n" : "");
        return out.data ? xb_buf_steal(&out) : strdup("");
}

char *
xb_tool_edit_listing(const char *path, json_t *list)
{
        json_t *e;
        struct xb_buf out = { .max = 1u << 20 };
        size_t i;

        xb_buf_printf(&out, "Here's the files and directories up to 2 levels deep in %s, excluding hidden items:\n",
                      path);
        json_array_foreach(json_object_get(list, "entries"), i, e) {
                const char *p = json_string_value(json_object_get(e, "path")) ?: "";
                const char *name = json_string_value(json_object_get(e, "name")) ?: "";

                if (name[0] == '.' || strstr(p, "/."))
                        continue;
                xb_buf_printf(&out, "%s%s\n", p, !strcmp(json_string_value(json_object_get(e, "type")) ?: "", "dir") ? "/" : "");
        }
        return out.data ? xb_buf_steal(&out) : strdup("");
}

void
xb_tool_edit_clear(struct xb_tool_edit *e)
{
        free(e->text);
        free(e->data);
        json_decref(e->old);
        memset(e, 0, sizeof(*e));
}
