/* Unit tests for base/base64.h: the RFC 4648 section 10 vectors both ways,
 * input the strict decoder must refuse, the output bounds, and a round
 * trip over every length up to a few quanta of pseudo-random bytes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"

static const struct {
        const char *raw, *enc;
} rfc[] = {
        { "", "" },          { "f", "Zg==" },         { "fo", "Zm8=" },         { "foo", "Zm9v" },
        { "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
};

static ssize_t
dec(const char *s, void *out, size_t cap, unsigned flags)
{
        return xb_base64_decode(s, strlen(s), out, cap, flags);
}

Test(base64, rfc4648_encode)
{
        for (size_t i = 0; i < sizeof(rfc) / sizeof(rfc[0]); i++) {
                char out[16];
                char *a = NULL;
                size_t n = strlen(rfc[i].raw);

                cr_assert_eq(xb_base64_encode(rfc[i].raw, n, out, sizeof(out)), (ssize_t)strlen(rfc[i].enc));
                cr_assert_str_eq(out, rfc[i].enc);
                cr_assert_eq(xb_base64_encoded_len(n), strlen(rfc[i].enc));
                cr_assert_eq(xb_base64_encode_alloc(rfc[i].raw, n, &a), 0);
                cr_assert_str_eq(a, rfc[i].enc);
                free(a);
        }
}

Test(base64, rfc4648_decode)
{
        for (size_t i = 0; i < sizeof(rfc) / sizeof(rfc[0]); i++) {
                char out[16];
                void *a = NULL;
                size_t alen = 99;
                ssize_t n = dec(rfc[i].enc, out, sizeof(out), 0);

                cr_assert_eq(n, (ssize_t)strlen(rfc[i].raw), "%s", rfc[i].enc);
                cr_assert(memcmp(out, rfc[i].raw, (size_t)n) == 0);
                cr_assert_eq(xb_base64_decode_alloc(rfc[i].enc, strlen(rfc[i].enc), 64, 0, &a, &alen), 0);
                cr_assert_eq(alen, strlen(rfc[i].raw));
                cr_assert_str_eq(a, rfc[i].raw); /* NUL-terminated for text */
                free(a);
        }
}

Test(base64, rejects_bad_input)
{
        static const char *bad[] = {
                "Z",        "Zg",       "Zg=",      "Zm9",      "Zm9vY",   /* partial quanta */
                "=",        "====",     "Z===",     "=Zg=",     "Zm=9",     /* padding in the wrong place */
                "Zg==Zg==", "Zm8=Zm8=", "Zm9v=",    "Zg===",    "Zm8==",    /* data or '=' after padding */
                "Zm9-",     "Zm9_",     "Zm 9v",    "Zm9v ",    "Zm9v\n",   /* outside the alphabet */
                "Zm9v\r\n", "\xc3\xa9Zm9", "Zm.v",  "Zm9v\t",
        };
        char out[64];

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_assert_eq(dec(bad[i], out, sizeof(out), 0), -EINVAL, "accepted \"%s\"", bad[i]);
        /* A NUL inside the given length is a bad character too. */
        cr_assert_eq(xb_base64_decode("Zm\0v", 4, out, sizeof(out), 0), -EINVAL);
}

Test(base64, newlines_only_when_asked)
{
        char out[64];

        cr_assert_eq(dec("Zm9v\r\nYmFy\n", out, sizeof(out), XB_BASE64_NEWLINES), 6);
        cr_assert(memcmp(out, "foobar", 6) == 0);
        cr_assert_eq(dec("Zm\n8=", out, sizeof(out), XB_BASE64_NEWLINES), 2);
        cr_assert_eq(dec("Zg=\n=", out, sizeof(out), XB_BASE64_NEWLINES), 1);
        cr_assert_eq(dec("Zm9v\nYmFy", out, sizeof(out), 0), -EINVAL);
        /* Newlines are the only thing skipped. */
        cr_assert_eq(dec("Zm9v YmFy", out, sizeof(out), XB_BASE64_NEWLINES), -EINVAL);
        cr_assert_eq(dec("Zm\n", out, sizeof(out), XB_BASE64_NEWLINES), -EINVAL);
}

Test(base64, pad_bits_are_not_checked)
{
        char out[4];

        /* "Zh==" has non-zero pad bits; RFC 4648 3.5 lets a decoder accept it. */
        cr_assert_eq(dec("Zh==", out, sizeof(out), 0), 1);
        cr_assert_eq(out[0], 'f');
}

Test(base64, bounds)
{
        char out[8];
        void *a = (void *)1;
        size_t alen = 7;

        memset(out, 'x', sizeof(out));
        cr_assert_eq(xb_base64_encode("foo", 3, out, 4), -ENOBUFS); /* no room for the NUL */
        cr_assert_eq(out[0], 'x');
        cr_assert_eq(xb_base64_encode("foo", 3, out, 5), 4);
        cr_assert_eq(dec("Zm9vYmFy", out, 5, 0), -ENOBUFS);
        cr_assert_eq(dec("Zm9vYmFy", out, 6, 0), 6);
        cr_assert_eq(dec("Zm9vYg==", out, 3, 0), -ENOBUFS);
        cr_assert_eq(dec("Zm9vYg==", out, 4, 0), 4);
        cr_assert_eq(xb_base64_decode_alloc("Zm9vYmFy", 8, 5, 0, &a, &alen), -ENOBUFS);
        cr_assert_eq(xb_base64_decode_alloc("Zm9v!", 5, 64, 0, &a, &alen), -EINVAL);
        cr_assert_eq(a, (void *)1);
        cr_assert_eq(alen, 7);
        cr_assert_eq(xb_base64_decoded_max(8), 6);
}

Test(base64, round_trip)
{
        unsigned char raw[300], back[300];
        char enc[(300 + 2) / 3 * 4 + 1];
        unsigned x = 12345;

        for (size_t i = 0; i < sizeof(raw); i++) {
                x = x * 1103515245u + 12345u;
                raw[i] = (unsigned char)(x >> 16);
        }
        raw[0] = 0, raw[1] = 0xff;
        for (size_t n = 0; n <= sizeof(raw); n++) {
                ssize_t e = xb_base64_encode(raw, n, enc, sizeof(enc));

                cr_assert_eq(e, (ssize_t)xb_base64_encoded_len(n));
                cr_assert_eq(strspn(enc, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="),
                             (size_t)e);
                cr_assert_eq(xb_base64_decode(enc, (size_t)e, back, n, 0), (ssize_t)n);
                cr_assert(memcmp(raw, back, n) == 0, "length %zu", n);
        }
}

Test(base64, decoded_len_counts_the_padding)
{
        cr_assert_eq(xb_base64_decoded_len("", 0), 0);
        cr_assert_eq(xb_base64_decoded_len("YQ==", 4), 1);
        cr_assert_eq(xb_base64_decoded_len("YWI=", 4), 2);
        cr_assert_eq(xb_base64_decoded_len("YWJj", 4), 3);
        cr_assert_eq(xb_base64_decoded_len("YWJjYQ==", 8), 4);
}
