/* read_file's view for a model, shared by the adapters that run tool
 * calls: numbered lines like `cat -n` (the structured result keeps them
 * raw), a range of lines on request, or an image block for PNG, JPEG, GIF
 * and WebP files recognized by their magic bytes; and the byte and line
 * helpers edit_file builds on. A view of 8 MiB costs the loop a count of
 * its newlines: it copies, decodes or indexes only what it shows. */
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
#define HEAD_BYTES 8193               /* xb_tool_is_binary's 8192, in whole base64 quanta */

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


/* Line l, the n bytes at s with their line ending, as `cat -n` shows it. */
static void
numbered_line(struct xb_buf *b, size_t l, const char *s, size_t n)
{
        while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
                n--;
        xb_buf_printf(b, "%6zu\t%.*s\n", l, (int)n, s);
}

void
xb_tool_numbered(struct xb_buf *b, const char *s, size_t n, const size_t *starts, size_t nlines, size_t from, size_t to)
{
        for (size_t l = from; l <= to && l <= nlines; l++) {
                size_t a = starts[l - 1], e = l < nlines ? starts[l] : n;

                numbered_line(b, l, s + a, e - a);
        }
}

typedef unsigned char bytes16 __attribute__((vector_size(16)));

/* The newlines in s, sixteen bytes at a time (GCC's vector extension, a
 * compare and a subtract per block): a view counts the lines of 8 MiB on
 * the loop, which a byte at a time took 5 ms, and memchr per line 45 ms
 * for a file of newlines. Each byte of acc counts up to 255 blocks. */
static size_t
count_newlines(const char *s, size_t n)
{
        size_t c = 0, i = 0;

        while (n - i >= 16) {
                bytes16 acc = { 0 };

                for (unsigned k = 0; k < 255 && n - i >= 16; k++, i += 16) {
                        bytes16 v;

                        memcpy(&v, s + i, 16);
                        acc -= (bytes16)(v == '\n');   /* a match is all ones: -1 */
                }
                for (unsigned j = 0; j < 16; j++)
                        c += acc[j];
        }
        for (; i < n; i++)
                c += s[i] == '\n';
        return c;
}

/* Where line l (1-based) of s starts: counted a block at a time, then
 * found within its block. */
static size_t
line_offset(const char *s, size_t n, size_t l)
{
        size_t i = 0, want = l - 1;   /* newlines to pass */

        while (want && i < n) {
                size_t k = XB_MIN(n - i, (size_t)4096), c = count_newlines(s + i, k);

                if (c < want) {
                        want -= c;
                        i += k;
                        continue;
                }
                for (;; i++)
                        if (s[i] == '\n' && !--want)
                                return i + 1;
        }
        return i;
}


/* Whether a read_file result holds only the start of the file. */
bool
xb_tool_file_cut(json_t *r, size_t n)
{
        json_t *size = json_object_get(r, "size");

        return n > XB_TOOL_FILE_MAX || json_is_true(json_object_get(r, "truncated")) ||
               (json_is_integer(size) && (json_int_t)n < json_integer_value(size));
}

/* The first bytes of a base64 read into head (HEAD_BYTES), enough to tell
 * an image or a binary file; *ret_n gets all its bytes. SIZE_MAX if it is
 * not base64. */
static size_t
b64_head(json_t *content, char *head, size_t *ret_n)
{
        const char *s = json_string_value(content);
        size_t len = json_string_length(content), take = XB_MIN(len, xb_base64_encoded_len(HEAD_BYTES));
        ssize_t k = xb_base64_decode(s, take, head, HEAD_BYTES, 0);

        if (k < 0 || len % 4)
                return SIZE_MAX;
        *ret_n = xb_base64_decoded_len(s, len);
        return (size_t)k;
}

/* An image block for the bytes of the read (b64, when they came as base64,
 * is used as it is). */
static int
image_view(const char *path, const char *mime, const char *s, size_t n, json_t *b64, bool cut, json_t **ret_content,
           json_t **ret_structured, char **ret_text)
{
        _cleanup_free_ char *enc = NULL;
        char msg[400];

        if (cut || n > IMAGE_MAX) {
                snprintf(msg, sizeof(msg), "Error: %.200s is an image (%s) over %u bytes, too large to show. "
                         "Hint: make a smaller copy first, e.g. with Python's PIL.", path, mime, IMAGE_MAX);
                return fail(ret_text, msg);
        }
        if (!b64) {
                xb_base64_encode_alloc(s, n, &enc);
                b64 = json_string(enc ? enc : "");
        } else
                json_incref(b64);
        snprintf(msg, sizeof(msg), "%.200s: %s image, %zu bytes.", path, mime, n);
        *ret_content = json_pack("[{s:s,s:o,s:s},o]", "type", "image", "data", b64, "mimeType", mime,
                                 xb_tool_text_block(msg));
        *ret_structured = json_pack("{s:s,s:s,s:i,s:i,s:i,s:s,s:I}", "path", path, "content", "", "start_line", 0,
                                    "end_line", 0, "total_lines", 0, "mime_type", mime, "size", (json_int_t)n);
        return 0;
}

/* Numbered lines of s: only the lines shown are looked at, past a count
 * of the newlines, so 8 MiB of text costs the loop little. s is valid
 * UTF-8, or (lossy) text that is not, whose shown lines get U+FFFD for what
 * is not: a newline is never part of a character, so cleaning line by line
 * is cleaning the whole. */
static int
text_view(json_t *args, const char *path, const char *s, size_t n, bool cut, bool lossy, json_t **ret_content,
          json_t **ret_structured, char **ret_text)
{
        json_t *js = json_object_get(args, "start_line"), *je = json_object_get(args, "end_line");
        struct xb_buf text = { .max = 2 * VIEW_BYTES_MAX + 4096 }, raw = { .max = 2 * VIEW_BYTES_MAX + 4096 };
        size_t nlines = n ? count_newlines(s, n - 1) + 1 : 0, from, to, a;
        bool more;
        char msg[400];

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
        a = nlines ? line_offset(s, n, from) : 0;
        for (size_t l = from; nlines && l <= to; l++) {
                const char *nl = memchr(s + a, '\n', n - a);
                size_t e = nl ? (size_t)(nl - s) + 1 : n, ll = e - a;
                _cleanup_free_ char *clean = lossy ? xb_utf8_sanitize(s + a, ll, &ll) : NULL;
                const char *line = lossy ? clean : s + a;

                if (!line) {
                        xb_buf_free(&text);
                        xb_buf_free(&raw);
                        return fail(ret_text, "Error: out of memory. Hint: retry.");
                }
                if (raw.len + ll > VIEW_BYTES_MAX) {
                        to = l - 1;
                        more = true;
                        break;
                }
                xb_buf_append(&raw, line, ll);
                numbered_line(&text, l, line, ll);
                a = e;
        }
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
        const char *path = json_string_value(json_object_get(args, "path"));
        json_t *content = json_object_get(r, "content");
        const char *enc = json_string_value(json_object_get(r, "encoding"));
        bool b64 = enc && !strcmp(enc, "base64");
        _cleanup_free_ char *owned = NULL;
        char head[HEAD_BYTES];
        const char *s = json_string_value(content), *mime;
        size_t n = json_string_length(content), nhead;
        bool cut;
        char msg[400];

        *ret_content = *ret_structured = NULL;
        *ret_text = NULL;
        if (!json_is_string(content) || (b64 && (nhead = b64_head(content, head, &n)) == SIZE_MAX))
                return fail(ret_text, "Error: the file's content could not be read. Hint: retry.");
        /* Text is valid UTF-8 without NUL (the operation checked); base64 is
         * decoded only as far as its kind shows, and whole only for text. */
        if (!b64)
                nhead = XB_MIN(n, sizeof(head));
        cut = xb_tool_file_cut(r, n);
        if (cut)
                n = XB_MIN(n, XB_TOOL_FILE_MAX);
        /* Text cut there ends with the character before the cut. */
        while (cut && !b64 && n && ((unsigned char)s[n] & 0xc0) == 0x80)
                n--;
        if ((mime = xb_tool_image_mime(b64 ? head : s, nhead)))
                return image_view(path, mime, s, n, b64 ? content : NULL, cut, ret_content, ret_structured, ret_text);
        if (xb_tool_is_binary(b64 ? head : s, nhead)) {
                snprintf(msg, sizeof(msg), "Error: %.200s is a binary file (%s%zu bytes), not text (binary_file). Hint: "
                         "inspect it with run_command, e.g. `file PATH` or `xxd PATH | head`.", path,
                         cut ? "over " : "", n);
                return fail(ret_text, msg);
        }
        if (b64) {
                /* Not UTF-8 (Latin-1, say): the lines shown get U+FFFD for what is not. */
                s = xb_tool_file_data(r, &owned, &n);
                if (!s)
                        return fail(ret_text, "Error: out of memory. Hint: retry.");
                n = XB_MIN(n, XB_TOOL_FILE_MAX);
        }
        return text_view(args, path, s, n, cut, b64, ret_content, ret_structured, ret_text);
}
