/* Unit tests for read_file's view (ops/tool_view.c) on read_file results
 * as the operation makes them: the line count and the window of lines
 * against a byte-at-a-time reference (the count goes sixteen bytes and
 * 255 blocks at a time, so lengths around those edges), the cut at
 * 8 MiB, and base64 results: a binary file, an image (its base64 used
 * as it came) and text that is not UTF-8. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "ops/tool_result.h"

/* A read_file result of n bytes of s, as text or base64. */
static json_t *
result(const char *s, size_t n, bool b64, size_t size)
{
        _cleanup_free_ char *enc = NULL;
        json_t *content;

        if (b64) {
                cr_assert_eq(xb_base64_encode_alloc(s, n, &enc), 0);
                content = json_string(enc);
        } else
                content = json_stringn(s, n);
        cr_assert_not_null(content);
        return json_pack("{s:s,s:I,s:o,s:s,s:b}", "path", "/home/user/f", "size", (json_int_t)size, "content", content,
                         "encoding", b64 ? "base64" : "utf-8", "truncated", n < size);
}

static json_t *
view(json_t *args, json_t *r, json_t **ret_structured, char **ret_text)
{
        json_t *content = NULL;

        if (xb_tool_read_view(args, r, &content, ret_structured, ret_text) < 0)
                return NULL;
        return content;
}

/* Line starts the plain way: a final newline starts no line. */
static size_t
ref_lines(const char *s, size_t n, size_t *starts, size_t cap)
{
        size_t k = 0;

        for (size_t i = 0; i < n; i++)
                if (i == 0 || s[i - 1] == '\n') {
                        if (k < cap)
                                starts[k] = i;
                        k++;
                }
        return k;
}

Test(tool_view, counts_and_windows_like_a_byte_at_a_time_scan)
{
        static const size_t lens[] = { 0, 1, 15, 16, 17, 4079, 4080, 4081, 4095, 4096, 4097, 70000 };
        unsigned seed = 7;

        for (size_t t = 0; t < ARRAY_SIZE(lens); t++) {
                size_t n = lens[t], starts[80000], nlines;
                _cleanup_free_ char *s = malloc(n + 1);

                /* Newlines thick or thin, as a file of blank lines would be. */
                for (size_t i = 0; i < n; i++)
                        s[i] = rand_r(&seed) % (t % 2 ? 2 : 40) ? 'a' + (char)(i % 26) : '\n';
                nlines = ref_lines(s, n, starts, ARRAY_SIZE(starts));
                for (size_t from = 1; from <= nlines; from += nlines / 7 + 1) {
                        json_t *args = json_pack("{s:s,s:I,s:I}", "path", "/home/user/f", "start_line",
                                                 (json_int_t)from, "end_line", (json_int_t)from + 2);
                        json_t *r = result(s, n, false, n), *st = NULL, *c;
                        _cleanup_free_ char *err = NULL;
                        size_t to = from + 2 < nlines ? from + 2 : nlines;
                        size_t end = to < nlines ? starts[to] : n;
                        const char *raw;

                        c = view(args, r, &st, &err);
                        cr_assert_not_null(c, "n %zu from %zu: %s", n, from, err);
                        cr_assert_eq(json_integer_value(json_object_get(st, "total_lines")), (json_int_t)nlines,
                                     "n %zu", n);
                        cr_assert_eq(json_integer_value(json_object_get(st, "end_line")), (json_int_t)to);
                        raw = json_string_value(json_object_get(st, "content"));
                        cr_assert_eq(strlen(raw), end - starts[from - 1], "n %zu from %zu", n, from);
                        cr_assert_eq(memcmp(raw, s + starts[from - 1], end - starts[from - 1]), 0);
                        json_decref(c);
                        json_decref(st);
                        json_decref(r);
                        json_decref(args);
                }
        }
}

Test(tool_view, numbers_lines_and_bounds_the_default_view)
{
        json_t *args = json_pack("{s:s}", "path", "/home/user/f"), *st = NULL, *c;
        struct xb_buf b = { 0 };
        _cleanup_free_ char *err = NULL;
        json_t *r;

        for (int i = 1; i <= 2500; i++)
                xb_buf_printf(&b, "line %d\r\n", i);
        r = result(b.data, b.len, false, b.len);
        c = view(args, r, &st, &err);
        cr_assert_not_null(c, "%s", err);
        const char *text = json_string_value(json_object_get(json_array_get(c, 0), "text"));

        cr_assert(!strncmp(text, "     1\tline 1\n     2\tline 2\n", 28), "%.60s", text);
        cr_assert_not_null(strstr(text, "  2000\tline 2000\n(lines 1-2000 of 2500; "), "%s", text + strlen(text) - 200);
        cr_assert_eq(json_integer_value(json_object_get(st, "end_line")), 2000);
        json_decref(c);
        json_decref(st);
        json_decref(r);
        json_decref(args);
        xb_buf_free(&b);
}

/* Read with XB_TOOL_FILE_MAX + 1: the view is of the first 8 MiB, which
 * a character cut there does not end. */
Test(tool_view, a_cut_file_ends_at_a_whole_character)
{
        size_t n = XB_TOOL_FILE_MAX + 1, last = (n - 1) / 100 * 100;
        _cleanup_free_ char *s = malloc(n);
        json_t *args = json_pack("{s:s,s:I}", "path", "/home/user/f", "start_line", (json_int_t)(last / 100 + 1));
        _cleanup_free_ char *err = NULL;
        json_t *r, *st = NULL, *c;

        for (size_t i = 0; i < n; i++)
                s[i] = i % 100 == 99 ? '\n' : 'x';
        memcpy(s + n - 3, "\xe2\x82\xac", 3);   /* a euro sign across the 8 MiB mark */
        r = result(s, n, false, 2 * n);
        c = view(args, r, &st, &err);
        cr_assert_not_null(c, "%s", err);
        const char *raw = json_string_value(json_object_get(st, "content"));

        cr_assert_eq(strlen(raw), n - 3 - last, "%zu", strlen(raw));
        cr_assert_not_null(strstr(json_string_value(json_object_get(json_array_get(c, 0), "text")),
                                  "in the first 8 MiB"));
        json_decref(c);
        json_decref(st);
        json_decref(r);
        json_decref(args);
}

Test(tool_view, base64_results)
{
        static const char png[] = "\x89PNG\r\n\x1a\n0123456789";
        json_t *args = json_pack("{s:s}", "path", "/home/user/f"), *st = NULL, *c, *r;
        char *err = NULL;
        char bin[20000];

        /* Binary: told from its first bytes. */
        memset(bin, 'a', sizeof(bin));
        bin[9000] = '\0';
        r = result(bin, sizeof(bin), true, sizeof(bin));
        cr_assert_not_null((c = view(args, r, &st, &err)), "a NUL after 8 KiB is text: %s", err);
        json_decref(c);
        json_decref(st);
        json_decref(r);
        bin[100] = '\0';
        r = result(bin, sizeof(bin), true, sizeof(bin));
        cr_assert_null(view(args, r, &st, &err));
        cr_assert_not_null(strstr(err, "is a binary file (20000 bytes)"), "%s", err);
        free(err);
        err = NULL;
        json_decref(r);

        /* An image: its base64 is the block's data, as it came. */
        r = result(png, sizeof(png) - 1, true, sizeof(png) - 1);
        c = view(args, r, &st, &err);
        cr_assert_not_null(c, "%s", err);
        cr_assert_str_eq(json_string_value(json_object_get(json_array_get(c, 0), "mimeType")), "image/png");
        cr_assert_eq(json_object_get(json_array_get(c, 0), "data"), json_object_get(r, "content"));
        json_decref(c);
        json_decref(st);
        json_decref(r);

        /* Latin-1: shown with U+FFFD. */
        r = result("caf\xe9\nb\n", 7, true, 7);
        c = view(args, r, &st, &err);
        cr_assert_not_null(c, "%s", err);
        cr_assert_str_eq(json_string_value(json_object_get(st, "content")), "caf\xef\xbf\xbd\nb\n");
        cr_assert_eq(json_integer_value(json_object_get(st, "total_lines")), 2);
        json_decref(c);
        json_decref(st);
        json_decref(r);
        json_decref(args);
}

/* Text that is not UTF-8 is cleaned only in the lines shown: the same
 * lines, numbers and count as cleaning the whole, and the byte bound
 * counts what is shown (each bad byte grows to three). */
Test(tool_view, lossy_text_is_cleaned_in_the_lines_shown)
{
        json_t *args = json_pack("{s:s,s:i,s:i}", "path", "/home/user/f", "start_line", 1000, "end_line", 1002), *st = NULL,
               *c, *r;
        struct xb_buf b = { 0 };
        char *err = NULL;

        for (int i = 1; i <= 3000; i++)
                xb_buf_printf(&b, "caf\xe9 %d\n", i);
        r = result(b.data, b.len, true, b.len);
        c = view(args, r, &st, &err);
        cr_assert_not_null(c, "%s", err);
        cr_assert_str_eq(json_string_value(json_object_get(st, "content")),
                         "caf\xef\xbf\xbd 1000\ncaf\xef\xbf\xbd 1001\ncaf\xef\xbf\xbd 1002\n");
        cr_assert_eq(json_integer_value(json_object_get(st, "total_lines")), 3000);
        cr_assert_not_null(strstr(json_string_value(json_object_get(json_array_get(c, 0), "text")),
                                  "  1001\tcaf\xef\xbf\xbd 1001\n"));
        json_decref(c);
        json_decref(st);
        json_decref(r);
        json_decref(args);
        xb_buf_free(&b);

        /* One long line of bad bytes: its cleaned size is what the view bound counts. */
        args = json_pack("{s:s}", "path", "/home/user/f");
        {
                size_t n = XB_TOOL_VIEW_BYTES_MAX / 2;
                char *bad = malloc(n);

                cr_assert_not_null(bad);
                memset(bad, '\xe9', n);
                r = result(bad, n, true, n);
                free(bad);
        }
        c = view(args, r, &st, &err);
        cr_assert_not_null(c, "%s", err);
        cr_assert_eq(json_integer_value(json_object_get(st, "end_line")), 0, "a line over the bound once cleaned is not shown");
        json_decref(c);
        json_decref(st);
        json_decref(r);
        json_decref(args);
}
