/* Unit tests for transport/json_stream.h: the pieces, joined, are exactly
 * what json_dumps(v, JSON_COMPACT) writes, for any piece size; a big
 * string costs no copy of the document. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "transport/json_stream.h"

/* All of v through pieces of at most max bytes. */
static char *
generate(json_t *v, size_t max, size_t *ret_len, size_t *ret_pieces)
{
        struct xb_jgen *g = xb_jgen_new(json_incref(v));
        size_t len = 0, cap = 1024, pieces = 0;
        char *out = malloc(cap), *buf = malloc(max);
        ssize_t n;

        cr_assert(g && out && buf);
        while ((n = xb_jgen_read(g, buf, max)) > 0) {
                cr_assert_leq((size_t)n, max);
                if (len + (size_t)n + 1 > cap) {
                        while (len + (size_t)n + 1 > cap)
                                cap *= 2;
                        out = realloc(out, cap);
                        cr_assert(out);
                }
                memcpy(out + len, buf, (size_t)n);
                len += (size_t)n;
                pieces++;
        }
        cr_assert_eq(n, 0, "the generator failed");
        out[len] = '\0';
        xb_jgen_free(g);
        free(buf);
        *ret_len = len;
        if (ret_pieces)
                *ret_pieces = pieces;
        return out;
}

static void
check_same(json_t *v)
{
        static const size_t sizes[] = { 6, 7, 13, 64, 4096, 1 << 20 };
        char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

        cr_assert(want);
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                size_t len;
                char *got = generate(v, sizes[i], &len, NULL);

                cr_assert_eq(len, strlen(want), "piece size %zu: %zu bytes, want %zu", sizes[i], len, strlen(want));
                cr_assert_str_eq(got, want, "piece size %zu", sizes[i]);
                free(got);
        }
        free(want);
}

Test(json_stream, same_as_json_dumps)
{
        const char *docs[] = {
                "{}",
                "[]",
                "[[]]",
                "{\"a\":{}}",
                "null",
                "true",
                "1",
                "-2.5",
                "\"\"",
                "\"x\"",
                "{\"a\":1,\"b\":[1,2,{\"c\":null,\"d\":false}],\"e\":\"q\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\"}",
                "[1.0e300,0.1,12345678901234,-0,\"\\u00e9\\u4e2d\\ud83d\\ude00\"]",
                "{\"z\":1,\"a\":2,\"m\":{\"y\":[],\"b\":{}}}",
                "[[[[[[[[[[1]]]]]]]]],{\"k\\n\":\"v\"}]",
        };

        for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
                json_error_t e;
                json_t *v = json_loads(docs[i], JSON_DECODE_ANY, &e);

                cr_assert(v, "%s: %s", docs[i], e.text);
                check_same(v);
                json_decref(v);
        }
}

Test(json_stream, big_string_in_bounded_pieces)
{
        size_t n = 8u << 20, len, pieces;
        char *s = malloc(n);
        json_t *v;
        char *got, *want;

        cr_assert(s);
        for (size_t i = 0; i < n; i++)
                s[i] = (char)(i % 61 == 0 ? '\n' : i % 67 == 0 ? '"' : 'a' + i % 26);
        v = json_pack("{s:s%,s:i,s:b}", "stdout", s, n, "exit_code", 0, "truncated", 0);
        cr_assert(v);
        got = generate(v, 65536, &len, &pieces);
        want = json_dumps(v, JSON_COMPACT);
        cr_assert_eq(len, strlen(want));
        cr_assert(memcmp(got, want, len) == 0);
        /* Each piece is at most 64 KiB: the work per call is bounded. */
        cr_assert_geq(pieces, len / 65536);
        free(got);
        free(want);
        free(s);
        json_decref(v);
}

/* MCP writes its reals to 15 digits: a generator with those flags makes
 * the bytes json_dumps makes with them. */
Test(json_stream, number_flags_as_json_dumps)
{
        size_t flags = JSON_COMPACT | JSON_REAL_PRECISION(15), len = 0;
        json_t *v = json_pack("{s:f,s:[f,i,s]}", "progress", 0.1 + 0.2, "a", 1.0 / 3.0, 7, "x");
        struct xb_jgen *g = xb_jgen_new_flags(json_incref(v), flags);
        char *want = json_dumps(v, flags), got[256];
        ssize_t n;

        cr_assert(v && g && want);
        while ((n = xb_jgen_read(g, got + len, 7)) > 0)
                len += (size_t)n;
        cr_assert_eq(n, 0);
        got[len] = '\0';
        cr_assert_str_eq(got, want);
        /* A positive control: the default precision writes other bytes. */
        cr_assert(strstr(want, "0.3,") && !strstr(want, "0.30000000000000004"), "%s", want);
        xb_jgen_free(g);
        free(want);
        json_decref(v);
}
