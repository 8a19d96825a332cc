/* read_file's view for a model, shared by the adapters that run tool
 * calls: numbered lines like `cat -n` (the structured result keeps them
 * raw), a range of lines on request, or an image block for PNG, JPEG, GIF
 * and WebP files recognized by their magic bytes; and the byte and line
 * helpers edit_file builds on. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/cleanup.h"
#include "base/utf8.h"
#include "ops/tool_result.h"

#define IMAGE_MAX (5u << 20)          /* an image bigger than this is not inlined */
#define VIEW_LINES_MAX XB_TOOL_VIEW_LINES_MAX
#define VIEW_BYTES_MAX XB_TOOL_VIEW_BYTES_MAX

static int
fail(char **ret_text, const char *msg)
{
        *ret_text = strdup(msg);
        return -1;
}

const char *
xb_tool_image_mime(const void *p, size_t n)
{
        const unsigned char *b = p;

        if (n >= 8 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8))
                return "image/png";
        if (n >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff)
                return "image/jpeg";
        if (n >= 6 && (!memcmp(b, "GIF87a", 6) || !memcmp(b, "GIF89a", 6)))
                return "image/gif";
        if (n >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WEBP", 4))
                return "image/webp";
        return NULL;
}

const char *
xb_tool_file_data(json_t *result, char **owned, size_t *ret_len)
{
        json_t *content = json_object_get(result, "content");
        const char *enc = json_string_value(json_object_get(result, "encoding"));

        *owned = NULL;
        if (!json_is_string(content))
                return NULL;
        if (enc && !strcmp(enc, "base64")) {
                void *buf = NULL;

                if (xb_base64_decode_alloc(json_string_value(content), json_string_length(content), SIZE_MAX, 0,
                                           &buf, ret_len) < 0)
                        return NULL;
                return *owned = buf;
        }
        *ret_len = json_string_length(content);
        return json_string_value(content);
}

bool
xb_tool_is_binary(const char *p, size_t n)
{
        return memchr(p, '\0', XB_MIN(n, (size_t)8192)) != NULL;
}

/* Start offsets of the lines of s; a final newline starts no line. */
size_t *
xb_tool_line_starts(const char *s, size_t n, size_t *ret_n)
{
        size_t cap = 64, k = 0;
        size_t *v = malloc(cap * sizeof(*v));

        if (!v)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (i == 0 || s[i - 1] == '\n') {
                        if (k == cap) {
                                size_t *nv = realloc(v, (cap *= 2) * sizeof(*v));

                                if (!nv) {
                                        free(v);
                                        return NULL;
                                }
                                v = nv;
                        }
                        v[k++] = i;
                }
        *ret_n = k;
        return v;
}


void
xb_tool_numbered(struct xb_buf *b, const char *s, size_t n, const size_t *starts, size_t nlines, size_t from, size_t to)
{
        for (size_t l = from; l <= to && l <= nlines; l++) {
                size_t a = starts[l - 1], e = l < nlines ? starts[l] : n;

                while (e > a && (s[e - 1] == '\n' || s[e - 1] == '\r'))
                        e--;
                xb_buf_printf(b, "%6zu\t%.*s\n", l, (int)(e - a), s + a);
        }
}


/* Whether a read_file result holds only the start of the file. */
bool
xb_tool_file_cut(json_t *r, size_t n)
{
        json_t *size = json_object_get(r, "size");

        return n > XB_TOOL_FILE_MAX || json_is_true(json_object_get(r, "truncated")) ||
               (json_is_integer(size) && (json_int_t)n < json_integer_value(size));
}

static int
read_view(json_t *args, json_t *r, const char *s, size_t n, json_t **ret_content, json_t **ret_structured,
          char **ret_text)
{
        const char *path = json_string_value(json_object_get(args, "path"));
        json_t *js = json_object_get(args, "start_line"), *je = json_object_get(args, "end_line");
        const char *mime;
        _cleanup_free_ size_t *starts = NULL;
        _cleanup_free_ char *clean = NULL;
        struct xb_buf text = { .max = 2 * VIEW_BYTES_MAX + 4096 }, raw = { .max = 2 * VIEW_BYTES_MAX + 4096 };
        size_t nlines = 0, from, to;
        bool cut = xb_tool_file_cut(r, n), more;
        char msg[400];

        if (cut)
                n = XB_TOOL_FILE_MAX;
        if ((mime = xb_tool_image_mime(s, n))) {
                _cleanup_free_ char *b64 = NULL;

                if (cut || n > IMAGE_MAX) {
                        snprintf(msg, sizeof(msg), "Error: %.200s is an image (%s) over %u bytes, too large to show. "
                                 "Hint: make a smaller copy first, e.g. with Python's PIL.", path, mime, IMAGE_MAX);
                        return fail(ret_text, msg);
                }
                xb_base64_encode_alloc(s, n, &b64);
                snprintf(msg, sizeof(msg), "%.200s: %s image, %zu bytes.", path, mime, n);
                *ret_content = json_pack("[{s:s,s:s,s:s},o]", "type", "image", "data", b64 ? b64 : "", "mimeType",
                                         mime, xb_tool_text_block(msg));
                *ret_structured = json_pack("{s:s,s:s,s:i,s:i,s:i,s:s,s:I}", "path", path, "content", "", "start_line", 0,
                                        "end_line", 0, "total_lines", 0, "mime_type", mime, "size", (json_int_t)n);
                return 0;
        }
        if (xb_tool_is_binary(s, n)) {
                snprintf(msg, sizeof(msg), "Error: %.200s is a binary file (%s%zu bytes), not text (binary_file). Hint: "
                         "inspect it with run_command, e.g. `file PATH` or `xxd PATH | head`.", path,
                         cut ? "over " : "", n);
                return fail(ret_text, msg);
        }
        clean = xb_utf8_sanitize(s, n, &n);
        starts = clean ? xb_tool_line_starts(clean, n, &nlines) : NULL;
        if (!clean || !starts) {
                return fail(ret_text, "Error: out of memory. Hint: retry.");
        }
        from = json_is_integer(js) ? (size_t)json_integer_value(js) : 1;
        to = json_is_integer(je) ? (size_t)json_integer_value(je) : nlines;
        if (nlines && from > nlines) {
                snprintf(msg, sizeof(msg), "Error: start_line %zu is past the end of %.200s, which has %zu lines "
                         "(invalid_range). Hint: ask for lines 1-%zu.", from, path, nlines, nlines);
                return fail(ret_text, msg);
        }
        if (nlines && to < from) {
                snprintf(msg, sizeof(msg), "Error: end_line %zu is before start_line %zu (invalid_range).", to, from);
                return fail(ret_text, msg);
        }
        if (to > nlines)
                to = nlines;
        /* Bound what one call returns; the model can ask for the rest. */
        more = false;
        if (!json_is_integer(je) && to - from + 1 > VIEW_LINES_MAX) {
                to = from + VIEW_LINES_MAX - 1;
                more = true;
        }
        for (size_t l = from; nlines && l <= to; l++) {
                size_t a = starts[l - 1], e = l < nlines ? starts[l] : n;

                if (raw.len + (e - a) > VIEW_BYTES_MAX) {
                        to = l - 1;
                        more = true;
                        break;
                }
                xb_buf_append(&raw, clean + a, e - a);
        }
        if (nlines && to >= from)
                xb_tool_numbered(&text, clean, n, starts, nlines, from, to);
        if (!nlines)
                xb_buf_printf(&text, "(%.200s is empty)\n", path);
        else if (more || from > 1 || to < nlines)
                xb_buf_printf(&text, "(lines %zu-%zu of %zu%s; ask for others with start_line and end_line)\n", from,
                              to, nlines, cut ? " in the first 8 MiB" : "");
        if (cut)
                xb_buf_printf(&text, "(the file is over %u bytes: only its start was read; use run_command with "
                              "`sed -n 'A,Bp' FILE` for the rest)\n", XB_TOOL_FILE_MAX);
        *ret_content = json_pack("[o]", xb_tool_text_block(text.data ? text.data : ""));
        *ret_structured = json_pack("{s:s,s:s%,s:I,s:I,s:I}", "path", path, "content", raw.data ? raw.data : "", raw.len,
                                "start_line", (json_int_t)(nlines ? from : 0), "end_line",
                                (json_int_t)(nlines ? to : 0), "total_lines", (json_int_t)nlines);
        xb_buf_free(&text);
        xb_buf_free(&raw);
        return 0;
}

int
xb_tool_read_view(json_t *args, json_t *r, json_t **ret_content, json_t **ret_structured, char **ret_text)
{
        _cleanup_free_ char *owned = NULL;
        size_t n = 0;
        const char *s = xb_tool_file_data(r, &owned, &n);

        *ret_content = *ret_structured = NULL;
        *ret_text = NULL;
        if (!s)
                return fail(ret_text, "Error: the file's content could not be read. Hint: retry.");
        return read_view(args, r, s, n, ret_content, ret_structured, ret_text);
}
