/* What a model sees of a tool call's outcome, for every adapter that runs
 * tool calls (MCP's tools/call, REST's POST /v1/tools/{name}): the text of
 * a result, a cell's outputs and a file's view as content blocks, and an
 * error as one line with advice in terms of the tools.
 *
 * Content blocks are {"type": "text", "text"} and {"type": "image",
 * "data" (base64), "mimeType"}: MCP's, which an adapter reshapes for its
 * protocol if it must. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"
#include "ops/catalog.h"

#define XB_TOOL_FILE_MAX (8u << 20)          /* bytes read_file and edit_file read of a file */
#define XB_TOOL_VIEW_LINES_MAX 2000          /* lines read_file returns when no range is given */
#define XB_TOOL_VIEW_BYTES_MAX (256u << 10)
#define XB_TOOL_EDITS_MAX 32                 /* edit_file's undo history, per history */
#define XB_TOOL_EDIT_BYTES_MAX (16u << 20)

/* ---- tool_result.c ---- */
json_t *xb_tool_text_block(const char *text);
/* A tool's JSON result as text for a model (malloc'd). */
char *xb_tool_text(const struct xb_tool *t, json_t *result);
/* Add the advice a model needs to a result (run_command still running). */
void xb_tool_annotate(const struct xb_tool *t, json_t *result);
/* A run_code cell's outputs as content blocks: text, and images as image
 * blocks. The cell's image data is removed (its URLs stay). */
json_t *xb_tool_cell_content(json_t *cell);

/* ---- tool_hints.c ---- */
/* What a model should do about err: the tools' advice for its code, else
 * err->hint, else a neutral default. Static. */
const char *xb_tool_hint(const struct xb_err *err);
/* "Error: MESSAGE (code). Hint: ..." for a model (malloc'd; NULL: no memory). */
char *xb_tool_err_text(const struct xb_err *err);

/* ---- tool_view.c ---- */
/* read_file's answer from a read_file operation's result r (read with
 * max_bytes XB_TOOL_FILE_MAX + 1) and the tool's arguments (path,
 * start_line, end_line): 0 with content blocks and the structured result,
 * or -1 with the error text for the model (malloc'd; NULL: no memory). */
int xb_tool_read_view(json_t *args, json_t *r, json_t **ret_content, json_t **ret_structured, char **ret_text);
/* "image/png" and the like from magic bytes; NULL if not an image we show. */
const char *xb_tool_image_mime(const void *p, size_t n);
/* The bytes of a read_file result: its content, decoded if base64 (then
 * in *owned, to free). NULL if the result has no readable content. */
const char *xb_tool_file_data(json_t *result, char **owned, size_t *ret_len);
/* NUL bytes near the start: not text. */
bool xb_tool_is_binary(const char *p, size_t n);
/* Whether a read_file result of n bytes holds only the start of the file. */
bool xb_tool_file_cut(json_t *r, size_t n);
/* Start offsets of the lines of s; a final newline starts no line. */
size_t *xb_tool_line_starts(const char *s, size_t n, size_t *ret_n);
/* Lines from..to of s as `cat -n` shows them. */
void xb_tool_numbered(struct xb_buf *b, const char *s, size_t n, const size_t *starts, size_t nlines, size_t from,
                      size_t to);

/* ---- tool_schema.c ---- */
/* Check a tool's arguments against its input schema (the strict subset
 * the catalog uses, plus the fixtures' plain schemas). -EINVAL with a
 * message naming the argument. */
int xb_tool_args_check(json_t *schema, json_t *args, struct xb_err *err);

/* ---- tool_edit.c ---- */
/* edit_file's undo history: the content before each edit, newest first,
 * at most XB_TOOL_EDITS_MAX records and XB_TOOL_EDIT_BYTES_MAX bytes (the
 * oldest go first). The adapter owns it; zeroed is empty. */
struct xb_edit_rec {
        struct xb_edit_rec *next;
        char *sandbox, *path;
        char *data;
        size_t len;
};
struct xb_edit_hist {
        struct xb_edit_rec *head;
        unsigned n;
        size_t bytes;
};
void xb_edit_hist_free(struct xb_edit_hist *h);
/* Drop the records of the sandboxes keep says no to. */
void xb_edit_hist_prune(struct xb_edit_hist *h, bool (*keep)(const char *sandbox, void *ctx), void *ctx);

/* One edit_file call's work: the view or error text for the model, or the
 * file's text before (old) and after (data, len) the edit. */
struct xb_tool_edit {
        char *text;
        json_t *old;
        char *data;
        size_t len;
};
/* "/home/user/x" for a relative x (malloc'd). */
char *xb_tool_abs_path(const char *p);
/* What the arguments (checked against the schema) lack, or NULL. */
const char *xb_tool_edit_why(json_t *args);
/* Run the command in args on the text s of path (n bytes; cut: only its
 * start was read) in sandbox: -1 with the error in e->text, 0 with the
 * view in e->text, 1 with the new content to write with write_file (for
 * undo_edit, taken from h). e->text may be NULL when out of memory. */
int xb_tool_edit_text(json_t *args, const char *path, const char *s, size_t n, bool cut, struct xb_edit_hist *h,
                      const char *sandbox, struct xb_tool_edit *e);
/* The new content as write_file's content; NULL with the error in e->text. */
json_t *xb_tool_edit_content(struct xb_tool_edit *e);
/* Once written: remember the old content in h (not for undo_edit), and
 * the answer, a diff (malloc'd). */
char *xb_tool_edit_done(json_t *args, const char *path, struct xb_tool_edit *e, struct xb_edit_hist *h,
                        const char *sandbox);
/* view of a directory: list_files's result at depth 2 as text (malloc'd). */
char *xb_tool_edit_listing(const char *path, json_t *list);
void xb_tool_edit_clear(struct xb_tool_edit *e);
