/* Unit tests for base/gunzip.h: a fixed `gzip -n` vector, round trips fed
 * a byte at a time into small outputs, several members, and the streams
 * it must refuse: corrupt, cut short, empty, trailing garbage, not gzip.
 * A bomb's output per call stays within the caller's cap. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/gunzip.h"

/* printf 'hello\n' | gzip -n */
static const unsigned char hello_gz[] = { 0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xcb, 0x48, 0xcd,
                                          0xc9, 0xc9, 0xe7, 0x02, 0x00, 0x20, 0x30, 0x3a, 0x36, 0x06, 0x00, 0x00, 0x00 };

/* gzip of n bytes of p, malloc'd. */
static unsigned char *
gz(const void *p, size_t n, size_t *ret_len)
{
        z_stream z = { 0 };
        size_t cap = compressBound((uLong)n) + 64;
        unsigned char *out = malloc(cap);

        cr_assert(out);
        cr_assert_eq(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
        z.next_in = (Bytef *)(uintptr_t)p;
        z.avail_in = (uInt)n;
        z.next_out = out;
        z.avail_out = (uInt)cap;
        cr_assert_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
        *ret_len = cap - z.avail_out;
        deflateEnd(&z);
        return out;
}

/* Decode all of in, step input bytes and cap output bytes a call;
 * returns the last error and the output in *ret (malloc'd). */
static int
decode(const void *in, size_t n, size_t step, size_t cap, unsigned char **ret, size_t *ret_len)
{
        struct xb_gunzip *g = xb_gunzip_new();
        unsigned char *out = NULL, *buf = malloc(cap);
        size_t len = 0, off = 0;
        int r = 0;

        cr_assert(g && buf);
        for (;;) {
                size_t k = n - off < step ? n - off : step, used, made;

                r = xb_gunzip_run(g, (const char *)in + off, k, &used, buf, cap, &made);
                cr_assert_leq(made, cap);
                cr_assert_leq(used, k);
                out = realloc(out, len + made + 1);
                memcpy(out + len, buf, made);
                len += made;
                off += used;
                if (r < 0)
                        break;
                if (off == n && made < cap) {
                        r = xb_gunzip_end(g);
                        break;
                }
        }
        cr_assert_eq(xb_gunzip_out_bytes(g), len);
        xb_gunzip_free(g);
        free(buf);
        *ret = out;
        *ret_len = len;
        return r;
}

Test(gunzip, gzip_vector)
{
        unsigned char *out;
        size_t len;

        cr_assert_eq(decode(hello_gz, sizeof(hello_gz), sizeof(hello_gz), 64, &out, &len), 0);
        cr_assert_eq(len, 6);
        cr_assert_arr_eq(out, "hello\n", 6);
        free(out);
}

Test(gunzip, round_trip_byte_at_a_time)
{
        size_t n = 200000, zlen, len;
        unsigned char *raw = malloc(n), *z, *out;
        unsigned s = 1;

        for (size_t i = 0; i < n; i++) {
                s = s * 1103515245u + 12345u;
                raw[i] = i % 3 ? (unsigned char)(s >> 16) : (unsigned char)'a';
        }
        z = gz(raw, n, &zlen);
        cr_assert_eq(decode(z, zlen, 1, 7, &out, &len), 0);
        cr_assert_eq(len, n);
        cr_assert_arr_eq(out, raw, n);
        free(out);
        cr_assert_eq(decode(z, zlen, zlen, 1 << 16, &out, &len), 0);
        cr_assert_arr_eq(out, raw, n);
        free(out);
        free(z);
        free(raw);
}

Test(gunzip, several_members)
{
        unsigned char two[2 * sizeof(hello_gz)], *out;
        size_t len;

        memcpy(two, hello_gz, sizeof(hello_gz));
        memcpy(two + sizeof(hello_gz), hello_gz, sizeof(hello_gz));
        for (size_t step = 1; step <= sizeof(two); step++) {
                cr_assert_eq(decode(two, sizeof(two), step, 5, &out, &len), 0, "step %zu", step);
                cr_assert_eq(len, 12);
                cr_assert_arr_eq(out, "hello\nhello\n", 12);
                free(out);
        }
}

Test(gunzip, corrupt)
{
        unsigned char bad[sizeof(hello_gz)], *out;
        size_t len;

        /* The CRC-32, the length, the data and the magic, each in turn. */
        static const size_t at[] = { 18, 22, 11, 0, 2 };

        for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
                memcpy(bad, hello_gz, sizeof(bad));
                bad[at[i]] ^= 0x55;
                cr_assert_eq(decode(bad, sizeof(bad), 4, 64, &out, &len), -EBADMSG, "byte %zu", at[i]);
                free(out);
        }
}

Test(gunzip, cut_short_or_empty)
{
        unsigned char *out;
        size_t len;

        for (size_t n = 0; n < sizeof(hello_gz); n++) {
                cr_assert_eq(decode(hello_gz, n, 3, 64, &out, &len), -ENODATA, "%zu bytes", n);
                free(out);
        }
}

Test(gunzip, trailing_garbage_or_not_gzip)
{
        unsigned char more[sizeof(hello_gz) + 4], *out;
        size_t len;

        memcpy(more, hello_gz, sizeof(hello_gz));
        memcpy(more + sizeof(hello_gz), "junk", 4);
        cr_assert_eq(decode(more, sizeof(more), sizeof(more), 64, &out, &len), -EBADMSG);
        free(out);
        cr_assert_eq(decode("plain text, not gzip", 20, 20, 64, &out, &len), -EBADMSG);
        free(out);
}

Test(gunzip, bomb_output_is_bounded_per_call)
{
        size_t n = 8u << 20, zlen, used, made, total = 0;
        unsigned char *zeros = calloc(1, n), *z, buf[4096];
        struct xb_gunzip *g = xb_gunzip_new();
        unsigned calls = 0;

        z = gz(zeros, n, &zlen);
        cr_assert_lt(zlen, 64u << 10);
        /* All the input at once: each call still makes at most the cap. */
        for (size_t off = 0;; calls++) {
                cr_assert_eq(xb_gunzip_run(g, z + off, zlen - off, &used, buf, sizeof(buf), &made), 0);
                cr_assert_leq(made, sizeof(buf));
                off += used;
                total += made;
                if (made < sizeof(buf) && off == zlen)
                        break;
        }
        cr_assert_eq(total, n);
        cr_assert_geq(calls, n / sizeof(buf) - 1);
        cr_assert_eq(xb_gunzip_end(g), 0);
        xb_gunzip_free(g);
        free(z);
        free(zeros);
}
