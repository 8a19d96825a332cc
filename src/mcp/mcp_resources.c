/* The workspace as MCP resources: the files of a context's default
 * sandbox as file:/// URIs (listed three levels deep under /home/user,
 * read as text, or base64 blobs for anything else), the guide as
 * execbox://guide, and notifications/resources/updated when our own tools
 * change a subscribed file. Listing or reading never makes a sandbox: a
 * context without one has no files yet. Not-found is -32002 in the legacy
 * revisions and -32602 in 2026-07-28, with the URI in data. A file is read
 * whole up to MCP_FILE_MAX (8 MiB; more is -32603, pointing at read_file):
 * the operation reads it a slice per turn of the loop and its text or
 * base64 becomes the block as it is, which the front writes as generated. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "mcp/mcp_int.h"

#define RESOURCES_MAX 500
#define HOME "/home/user"


/* file:// + the path, percent-encoding all but RFC 3986 unreserved and '/'. */
static char *
file_uri(const char *path)
{
        static const char hex[] = "0123456789ABCDEF";
        struct xb_buf b = { .max = 16384 };

        xb_buf_puts(&b, "file://");
        for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
                if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                    strchr("-._~/", *p))
                        xb_buf_append(&b, p, 1);
                else
                        xb_buf_printf(&b, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
        }
        return xb_buf_steal(&b);
}

/* The path of a file:/// URI, percent-decoded; NULL if it is not one or
 * decodes to a NUL byte. */
static char *
uri_path(const char *uri)
{
        const char *p = uri + strlen("file://");
        char *out, *o;

        if (strncmp(uri, "file:///", 8) || strlen(p) > 4096 * 3)
                return NULL;
        out = o = malloc(strlen(p) + 1);
        if (!out)
                return NULL;
        for (; *p; p++) {
                if (*p == '%' && p[1] && p[2]) {
                        char h[3] = { p[1], p[2], 0 }, *end;
                        long v = strtol(h, &end, 16);

                        if (*end || v <= 0) {
                                free(out);
                                return NULL;
                        }
                        *o++ = (char)v;
                        p += 2;
                } else
                        *o++ = *p;
        }
        *o = '\0';
        return out;
}

static const char *
mime_for(const char *path, bool text)
{
        static const struct { const char *ext, *mime; } m[] = {
                { ".py", "text/x-python" }, { ".md", "text/markdown" }, { ".json", "application/json" },
                { ".csv", "text/csv" }, { ".html", "text/html" }, { ".js", "text/javascript" },
                { ".sh", "text/x-shellscript" }, { ".txt", "text/plain" }, { ".png", "image/png" },
                { ".jpg", "image/jpeg" }, { ".jpeg", "image/jpeg" }, { ".gif", "image/gif" },
                { ".svg", "image/svg+xml" }, { ".pdf", "application/pdf" },
        };
        const char *dot = strrchr(path, '.');

        for (size_t i = 0; dot && i < ARRAY_SIZE(m); i++)
                if (!strcmp(dot, m[i].ext))
                        return m[i].mime;
        return text ? "text/plain" : "application/octet-stream";
}

/* The resources: the guide, fixtures, and the files of listing j (taken; NULL: none). */
static void
list_resources(struct xb_mcp_call *call, json_t *j)
{
        json_t *res = json_array(), *e;
        size_t i;

        json_array_append_new(res, json_pack("{s:s,s:s,s:s,s:s}", "uri", "execbox://guide", "name", "guide", "title",
                                             "The execbox usage guide", "mimeType", "text/markdown"));
        mcp_extend(res, mcp_plugin_resources(call->m));
        json_array_foreach(json_object_get(j, "entries"), i, e) {
                const char *p = json_string_value(json_object_get(e, "path"));
                char *uri;

                if (!p || strcmp(json_string_value(json_object_get(e, "type")) ?: "", "file") || strstr(p, "/.") ||
                    json_array_size(res) >= RESOURCES_MAX || !(uri = file_uri(p)))
                        continue;
                json_array_append_new(res, json_pack("{s:s,s:s,s:s,s:I}", "uri", uri, "name", p, "mimeType",
                                                     mime_for(p, true), "size",
                                                     json_integer_value(json_object_get(e, "size"))));
                free(uri);
        }
        json_decref(j);
        if (call->modern)
                mcp_result(call, json_pack("{s:o,s:i,s:s}", "resources", res, "ttlMs", 0, "cacheScope", "private"));
        else
                mcp_result(call, json_pack("{s:o}", "resources", res));
}

/* A listing that failed (the sandbox expired, say) has no files. */
static void
list_resources_failed(struct xb_mcp_call *call, const struct xb_err *err)
{
        (void)err;
        list_resources(call, NULL);
}

void
mcp_resources_list(struct xb_mcp_call *call)
{
        json_t *args;

        /* Listing makes no sandbox: without one there are no files yet. */
        if (!call->c->sandbox) {
                list_resources(call, NULL);
                return;
        }
        call->sandbox = strdup(call->c->sandbox);
        args = json_pack("{s:s,s:s,s:i}", "id", call->sandbox, "path", HOME, "depth", 3);
        mcp_op(call, "list_files", args, list_resources, list_resources_failed, NULL);
        json_decref(args);
}

static void
not_found(struct xb_mcp_call *call, const char *uri)
{
        /* 2026-07-28 settled on -32602; earlier revisions said -32002. */
        mcp_fail(call, call->modern ? -32602 : -32002, "Resource not found", json_pack("{s:s}", "uri", uri), 200);
}

static void
read_resource_failed(struct xb_mcp_call *call, const struct xb_err *err)
{
        const char *uri = json_string_value(json_object_get(call->params, "uri"));
        _cleanup_free_ char *text = NULL;

        if (err->ecode == XB_E_FILE_NOT_FOUND || err->ecode == XB_E_SANDBOX_NOT_FOUND) {
                not_found(call, uri);
                return;
        }
        text = xb_tool_err_text(err);
        mcp_fail(call, -32603, text ? text : "the file could not be read", NULL, 200);
}

/* A blob's image type, from the magic bytes at the start of its base64. */
static const char *
blob_image_mime(json_t *b64)
{
        unsigned char head[12];
        ssize_t n = xb_base64_decode(json_string_value(b64), XB_MIN(json_string_length(b64), (size_t)16), head,
                                     sizeof(head), 0);

        return n > 0 ? xb_tool_image_mime(head, (size_t)n) : NULL;
}

/* The operation read the file as text when it is valid UTF-8 without a
 * NUL, else as base64: exactly a resource's text and blob. Its JSON string
 * is the block's, taken as it is: an 8 MiB file is never decoded, checked
 * or encoded again on the loop (the reply is generated as it is sent). */
static void
read_resource_done(struct xb_mcp_call *call, json_t *r)
{
        const char *uri = json_string_value(json_object_get(call->params, "uri"));
        const char *path = json_string_value(json_object_get(call->acc, "path")) ?: "";
        const char *enc = json_string_value(json_object_get(r, "encoding")) ?: "";
        json_t *content = json_object_get(r, "content"), *c;
        bool text = !strcmp(enc, "utf-8");
        const char *mime;
        size_t len;

        if (!json_is_string(content) || (!text && strcmp(enc, "base64"))) {
                json_decref(r);
                mcp_fail(call, -32603, "the file could not be read", NULL, 200);
                return;
        }
        /* Read with MCP_FILE_MAX + 1: more, or a cut (text leaves out a
         * character cut at the end), means over the cap. */
        len = json_string_length(content);
        if ((text ? len : xb_base64_decoded_len(json_string_value(content), len)) > MCP_FILE_MAX ||
            json_is_true(json_object_get(r, "truncated"))) {
                json_decref(r);
                mcp_fail(call, -32603, "the file is over 8 MiB; read parts of it with the read_file tool", NULL, 200);
                return;
        }
        if (text)
                c = json_pack("{s:s,s:s,s:O}", "uri", uri, "mimeType", mime_for(path, true), "text", content);
        else {
                mime = blob_image_mime(content);
                c = json_pack("{s:s,s:s,s:O}", "uri", uri, "mimeType", mime ? mime : mime_for(path, false), "blob",
                              content);
        }
        json_decref(r);
        if (call->modern)
                mcp_result(call, json_pack("{s:[o],s:i,s:s}", "contents", c, "ttlMs", 0, "cacheScope", "private"));
        else
                mcp_result(call, json_pack("{s:[o]}", "contents", c));
}

void
mcp_resources_read(struct xb_mcp_call *call, const char *uri)
{
        if (!strcmp(uri, "execbox://guide")) {
                _cleanup_free_ char *g = mcp_guide(call->m);
                json_t *r = json_pack("{s:[{s:s,s:s,s:s}]}", "contents", "uri", uri, "mimeType", "text/markdown", "text",
                                      g ? g : "");

                if (call->modern) {
                        json_object_set_new(r, "ttlMs", json_integer(300000));
                        json_object_set_new(r, "cacheScope", json_string("public"));
                }
                mcp_result(call, r);
                return;
        }
        _cleanup_free_ char *path = uri_path(uri);

        /* Without a default sandbox there are no files yet: none is made. */
        if (!path || !call->c->sandbox) {
                not_found(call, uri);
                return;
        }
        call->sandbox = strdup(call->c->sandbox);
        call->acc = json_pack("{s:s}", "path", path);
        mcp_fetch(call, path, read_resource_done, read_resource_failed);
}

void
mcp_resource_subscribe(struct xb_mcp_call *call, const char *uri, bool sub)
{
        _cleanup_free_ char *path = uri_path(uri);

        mcp_watch_subscribe(call, uri, path, sub);
}

void
mcp_resource_changed(struct xb_mcp_call *call, const char *path)
{
        struct xb_mcp_client *c = call->c;
        _cleanup_free_ char *uri = NULL;
        json_t *v;
        size_t i;

        /* Resources are the default sandbox's files. */
        if (!json_array_size(c->subs) || !c->ops || !c->ops->notify || !path || !call->sandbox || !c->sandbox ||
            strcmp(call->sandbox, c->sandbox) || !(uri = file_uri(path)))
                return;
        if (mcp_watch_active(c, uri))
                return;   /* the watch tells it */
        json_array_foreach(c->subs, i, v)
                if (!strcmp(json_string_value(v) ?: "", uri)) {
                        json_t *n = json_pack("{s:s,s:s,s:{s:s}}", "jsonrpc", "2.0", "method",
                                              "notifications/resources/updated", "params", "uri", uri);

                        c->ops->notify(c->ctx, n);
                        json_decref(n);
                        return;
                }
}

json_t *
mcp_resource_templates(struct xb_mcp *m)
{
        (void)m;
        return json_pack("[{s:s,s:s,s:s,s:s}]", "uriTemplate", "file:///{+path}", "name", "workspace-file", "title",
                         "A file in your default sandbox", "description",
                         "Any file in your default sandbox by absolute path, e.g. file:///home/user/report.csv; text "
                         "comes back as text, anything else as a base64 blob.");
}
