/* MCP over sandbox files: the read_file and edit_file tools, built on the
 * file operations read_file, write_file and list_files.
 *
 * read_file returns numbered lines like `cat -n` (the structured result
 * keeps them raw), or an image block for PNG, JPEG, GIF and WebP files
 * recognized by their magic bytes. edit_file is OpenHands' editor: view,
 * str_replace (exactly one match), insert, and undo_edit from a bounded
 * per-context history of previous contents; an edit answers with a short
 * unified diff (the edit itself and its texts are ops/tool_edit.c).
 * Reads take at most MCP_FILE_MAX bytes of a file. The workspace as
 * resources is in mcp_resources.c. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "mcp/mcp_int.h"

#define FILE_MAX MCP_FILE_MAX

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

/* ---- edit_file: the edit itself is ops/tool_edit.c ---- */

static void
edits_free(struct xb_mcp_client *c)
{
        xb_edit_hist_free(&c->edits);
}

/* The undo history belongs to its context and goes with it. */
static const struct mcp_plugin edits_plugin = { .name = "edits", .client_free = edits_free };
MCP_PLUGIN(edits_plugin)

static void
edit_answer(struct xb_mcp_call *call, const char *path, const char *text)
{
        mcp_tool_done(call, json_pack("[o]", mcp_text_block(text)), json_pack("{s:s,s:s}", "path", path, "output",
                                                                             text ? text : ""));
}

static void
put_done(struct xb_mcp_call *call, json_t *result)
{
        const char *path = json_string_value(json_object_get(call->acc, "path"));
        _cleanup_free_ char *text = NULL;

        json_decref(result);
        text = xb_tool_edit_done(call->args, path, &call->edit, &call->c->edits, call->sandbox);
        mcp_resource_changed(call, path);
        edit_answer(call, path, text);
}

static void
list_done(struct xb_mcp_call *call, json_t *j)
{
        const char *path = json_string_value(json_object_get(call->acc, "path"));
        _cleanup_free_ char *text = xb_tool_edit_listing(path, j);

        json_decref(j);
        edit_answer(call, path, text);
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
edit_fetched(struct xb_mcp_call *call, json_t *r)
{
        const char *path = json_string_value(json_object_get(call->acc, "path"));
        _cleanup_free_ char *owned = NULL;
        size_t n = 0;
        const char *s = xb_tool_file_data(r, &owned, &n);
        json_t *content, *args;
        int k;

        if (!s) {
                mcp_tool_error(call, "Error: the file's content could not be read. Hint: retry.");
                json_decref(r);
                return;
        }
        xb_tool_edit_clear(&call->edit);
        k = xb_tool_edit_text(call->args, path, s, n, xb_tool_file_cut(r, n), &call->c->edits, call->sandbox,
                              &call->edit);
        json_decref(r);
        if (k == 0) {
                edit_answer(call, path, call->edit.text);
                return;
        }
        content = k > 0 ? xb_tool_edit_content(&call->edit) : NULL;
        args = content ? json_pack("{s:s,s:s,s:o}", "id", call->sandbox, "path", path, "content", content) : NULL;
        if (!args) {
                mcp_tool_error(call, call->edit.text ? call->edit.text : "Error: out of memory. Hint: retry.");
                return;
        }
        mcp_op(call, "write_file", args, put_done, NULL, NULL);
        json_decref(args);
}

void
mcp_edit_file(struct xb_mcp_call *call)
{
        _cleanup_free_ char *path = xb_tool_abs_path(json_string_value(json_object_get(call->args, "path")));
        const char *why = xb_tool_edit_why(call->args);

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
