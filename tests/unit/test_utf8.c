/* Unit tests for base/utf8.h: named valid and invalid sequences, then the
 * validator against an independent reference decoder (decode, then check
 * the code point) over every 1-3 byte string and a large sample of 4-byte
 * ones, and sanitize's output against the same reference. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

#define FFFD "\xef\xbf\xbd"

/* Reference: structure first, then the decoded value's range (RFC 3629). */
static size_t
ref_len(const unsigned char *p, size_t n)
{
        uint32_t cp, min;
        size_t k;

        if (p[0] < 0x80)
                return 1;
        if ((p[0] & 0xe0) == 0xc0)
                k = 2, cp = p[0] & 0x1f, min = 0x80;
        else if ((p[0] & 0xf0) == 0xe0)
                k = 3, cp = p[0] & 0x0f, min = 0x800;
        else if ((p[0] & 0xf8) == 0xf0)
                k = 4, cp = p[0] & 0x07, min = 0x10000;
        else
                return 0;
        if (n < k)
                return 0;
        for (size_t i = 1; i < k; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
                cp = cp << 6 | (p[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return k;
}

static bool
ref_valid(const unsigned char *p, size_t n)
{
        for (size_t i = 0; i < n;) {
                size_t k = ref_len(p + i, n - i);

                if (!k || p[i] == 0)
                        return false;
                i += k;
        }
        return true;
}

static bool
valid(const char *s, size_t n)
{
        return xb_utf8_valid(s, n);
}

Test(utf8, valid_sequences)
{
        cr_assert(valid("", 0));
        cr_assert(valid("plain ascii\n\t~", 14));
        cr_assert(valid("\x7f", 1));                 /* U+007F */
        cr_assert(valid("\xc2\x80", 2));             /* U+0080 */
        cr_assert(valid("\xc3\xa9", 2));             /* é */
        cr_assert(valid("\xdf\xbf", 2));             /* U+07FF */
        cr_assert(valid("\xe0\xa0\x80", 3));         /* U+0800 */
        cr_assert(valid("\xe2\x82\xac", 3));         /* € */
        cr_assert(valid("\xed\x9f\xbf", 3));         /* U+D7FF */
        cr_assert(valid("\xee\x80\x80", 3));         /* U+E000 */
        cr_assert(valid("\xef\xbf\xbd", 3));         /* U+FFFD */
        cr_assert(valid("\xef\xbf\xbf", 3));         /* U+FFFF */
        cr_assert(valid("\xf0\x90\x80\x80", 4));     /* U+10000 */
        cr_assert(valid("\xf0\x9f\x98\x80", 4));     /* 😀 */
        cr_assert(valid("\xf4\x8f\xbf\xbf", 4));     /* U+10FFFF */
        cr_assert(valid("a\xc3\xa9z\xe2\x82\xac\xf0\x9f\x98\x80!", 12));
}

Test(utf8, sequence_lengths)
{
        cr_assert_eq(xb_utf8_seq_len((const unsigned char *)"A", 1), 1);
        cr_assert_eq(xb_utf8_seq_len((const unsigned char *)"\xc3\xa9", 2), 2);
        cr_assert_eq(xb_utf8_seq_len((const unsigned char *)"\xe2\x82\xac", 3), 3);
        cr_assert_eq(xb_utf8_seq_len((const unsigned char *)"\xf0\x9f\x98\x80", 4), 4);
        /* Only the first sequence counts. */
        cr_assert_eq(xb_utf8_seq_len((const unsigned char *)"\xc3\xa9\xff", 3), 2);
}

Test(utf8, overlongs)
{
        cr_assert_not(valid("\xc0\x80", 2));         /* NUL */
        cr_assert_not(valid("\xc0\xaf", 2));         /* '/' */
        cr_assert_not(valid("\xc1\xbf", 2));
        cr_assert_not(valid("\xe0\x80\x80", 3));
        cr_assert_not(valid("\xe0\x80\xaf", 3));
        cr_assert_not(valid("\xe0\x9f\xbf", 3));     /* U+07FF in 3 bytes */
        cr_assert_not(valid("\xf0\x80\x80\x80", 4));
        cr_assert_not(valid("\xf0\x80\x80\xaf", 4));
        cr_assert_not(valid("\xf0\x8f\xbf\xbf", 4)); /* U+FFFF in 4 bytes */
}

Test(utf8, surrogates)
{
        cr_assert_not(valid("\xed\xa0\x80", 3));     /* U+D800 */
        cr_assert_not(valid("\xed\xad\xbf", 3));
        cr_assert_not(valid("\xed\xb0\x80", 3));     /* U+DC00 */
        cr_assert_not(valid("\xed\xbf\xbf", 3));     /* U+DFFF */
        cr_assert_not(valid("\xed\xa0\xbd\xed\xb8\x80", 6));  /* CESU-8 pair */
}

Test(utf8, beyond_u10ffff)
{
        cr_assert_not(valid("\xf4\x90\x80\x80", 4)); /* U+110000 */
        cr_assert_not(valid("\xf4\xbf\xbf\xbf", 4));
        cr_assert_not(valid("\xf5\x80\x80\x80", 4));
        cr_assert_not(valid("\xf7\xbf\xbf\xbf", 4));
        cr_assert_not(valid("\xf8\x88\x80\x80\x80", 5));
        cr_assert_not(valid("\xfc\x84\x80\x80\x80\x80", 6));
        cr_assert_not(valid("\xfe", 1));
        cr_assert_not(valid("\xff", 1));
}

Test(utf8, truncated_and_stray)
{
        cr_assert_not(valid("\xc3", 1));
        cr_assert_not(valid("\xe2\x82", 2));
        cr_assert_not(valid("\xe2", 1));
        cr_assert_not(valid("\xf0\x9f\x98", 3));
        cr_assert_not(valid("\xf0\x9f", 2));
        cr_assert_not(valid("a\xe2\x82", 3));
        cr_assert_not(valid("\xe2\x82z", 3));        /* cut short by ASCII */
        cr_assert_not(valid("\x80", 1));             /* lone continuation */
        cr_assert_not(valid("\xbf", 1));
        cr_assert_not(valid("\xc3\xa9\xa9", 3));
        /* The length bounds the read: a valid sequence cut by n is invalid. */
        cr_assert_not(valid("\xe2\x82\xac", 2));
        cr_assert_eq(xb_utf8_seq_len((const unsigned char *)"\xf0\x9f\x98\x80", 3), 0);
}

Test(utf8, nul_is_not_valid)
{
        cr_assert_not(valid("\0", 1));
        cr_assert_not(valid("ab\0cd", 5));
}

Test(utf8, validator_matches_reference_on_all_short_strings)
{
        unsigned char b[4];

        for (uint32_t x = 0; x < 256; x++) {
                b[0] = (unsigned char)x;
                cr_assert_eq(xb_utf8_seq_len(b, 1), ref_len(b, 1), "%02x", x);
        }
        for (uint32_t x = 0; x < 1u << 16; x++) {
                b[0] = (unsigned char)(x >> 8), b[1] = (unsigned char)x;
                cr_assert_eq(xb_utf8_seq_len(b, 2), ref_len(b, 2), "%04x", x);
                cr_assert_eq(xb_utf8_valid((char *)b, 2), ref_valid(b, 2), "%04x", x);
        }
        for (uint32_t x = 0; x < 1u << 24; x++) {
                b[0] = (unsigned char)(x >> 16), b[1] = (unsigned char)(x >> 8), b[2] = (unsigned char)x;
                if (xb_utf8_seq_len(b, 3) != ref_len(b, 3) || xb_utf8_valid((char *)b, 3) != ref_valid(b, 3))
                        cr_assert_fail("%06x: seq_len %zu (want %zu), valid %d (want %d)", x,
                                       xb_utf8_seq_len(b, 3), ref_len(b, 3), xb_utf8_valid((char *)b, 3),
                                       ref_valid(b, 3));
        }
}

Test(utf8, validator_matches_reference_on_four_byte_strings)
{
        static const unsigned char tails[] = { 0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xf4, 0xff };
        unsigned char b[4];

        for (uint32_t x = 0; x < 1u << 16; x++)
                for (size_t i = 0; i < sizeof(tails); i++)
                        for (size_t j = 0; j < sizeof(tails); j++) {
                                b[0] = (unsigned char)(x >> 8), b[1] = (unsigned char)x;
                                b[2] = tails[i], b[3] = tails[j];
                                for (size_t n = 1; n <= 4; n++)
                                        if (xb_utf8_seq_len(b, n) != ref_len(b, n) ||
                                            xb_utf8_valid((char *)b, n) != ref_valid(b, n))
                                                cr_assert_fail("%02x %02x %02x %02x (n %zu)", b[0], b[1], b[2], b[3], n);
                        }
}

/* ---- sanitize ---- */

static void
sanitized(const char *in, size_t n, const char *want, size_t want_len)
{
        size_t len = 12345;
        char *out = xb_utf8_sanitize(in, n, &len);

        cr_assert_not_null(out);
        cr_assert_eq(len, want_len, "length %zu, want %zu", len, want_len);
        cr_assert_arr_eq(out, want, want_len);
        cr_assert_eq(out[len], '\0');
        cr_assert(xb_utf8_valid(out, len), "sanitized output is not valid UTF-8");
        free(out);
}

Test(utf8, sanitize_keeps_valid_text)
{
        sanitized("", 0, "", 0);
        sanitized("hello", 5, "hello", 5);
        sanitized("a\xc3\xa9z\xe2\x82\xac\xf0\x9f\x98\x80", 11, "a\xc3\xa9z\xe2\x82\xac\xf0\x9f\x98\x80", 11);
        sanitized(FFFD, 3, FFFD, 3);
}

Test(utf8, sanitize_replaces_each_invalid_byte)
{
        sanitized("a\xff" "b", 3, "a" FFFD "b", 5);
        sanitized("\x80", 1, FFFD, 3);
        sanitized("\xc0\x80", 2, FFFD FFFD, 6);
        sanitized("\xed\xa0\x80", 3, FFFD FFFD FFFD, 9);
        sanitized("\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD, 12);
        sanitized("\xe2\x82", 2, FFFD FFFD, 6);
        sanitized("x\xe2\x82" "y", 4, "x" FFFD FFFD "y", 8);
        /* A truncated lead does not swallow the valid sequence after it. */
        sanitized("\xe2\xc3\xa9", 3, FFFD "\xc3\xa9", 5);
}

Test(utf8, sanitize_replaces_nul)
{
        sanitized("\0", 1, FFFD, 3);
        sanitized("a\0b", 3, "a" FFFD "b", 5);
}

Test(utf8, sanitize_worst_case_growth)
{
        char in[1000], *out;
        size_t len;

        memset(in, 0xff, sizeof(in));
        out = xb_utf8_sanitize(in, sizeof(in), &len);
        cr_assert_eq(len, 3 * sizeof(in));
        for (size_t i = 0; i < sizeof(in); i++)
                cr_assert_arr_eq(out + 3 * i, FFFD, 3);
        cr_assert_eq(out[len], '\0');
        free(out);
        /* ret_len may be NULL. */
        out = xb_utf8_sanitize("ok", 2, NULL);
        cr_assert_str_eq(out, "ok");
        free(out);
}

Test(utf8, sanitize_random_bytes)
{
        /* Random strings biased towards UTF-8 structure: the output is always
         * valid, equals the input when the input was valid, and matches the
         * reference replacement. */
        static const unsigned char pool[] = {
                0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf,
                0xe0, 0xe1, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf4, 0xf5, 0xf8, 0xff,
        };
        unsigned seed = 4242;
        unsigned char in[24];
        char want[24 * 3];

        for (int iter = 0; iter < 200000; iter++) {
                size_t n = (size_t)(rand_r(&seed) % sizeof(in)), w = 0, len;
                char *out;

                for (size_t i = 0; i < n; i++)
                        in[i] = pool[(size_t)rand_r(&seed) % sizeof(pool)];
                for (size_t i = 0; i < n;) {
                        size_t k = ref_len(in + i, n - i);

                        if (k && in[i]) {
                                memcpy(want + w, in + i, k);
                                w += k, i += k;
                        } else {
                                memcpy(want + w, FFFD, 3);
                                w += 3, i++;
                        }
                }
                out = xb_utf8_sanitize((char *)in, n, &len);
                cr_assert_not_null(out);
                if (len != w || memcmp(out, want, w) != 0 || !xb_utf8_valid(out, len) ||
                    (ref_valid(in, n) && (len != n || memcmp(out, in, n) != 0)))
                        cr_assert_fail("iteration %d: sanitize differs from the reference", iter);
                free(out);
        }
}

/* The valid start of a text read in slices: whole characters only, so
 * checking the next slice resumes at a character cut by this one. */
Test(utf8, valid_prefix)
{
        static const char euro[] = "ab\xe2\x82\xac";  /* "ab€" */

        for (size_t n = 0; n <= 5; n++)
                cr_assert_eq(xb_utf8_valid_prefix(euro, n), n < 2 ? n : n < 5 ? 2 : 5, "n %zu", n);
        cr_assert_eq(xb_utf8_valid_prefix("ok\0no", 5), 2);
        cr_assert_eq(xb_utf8_valid_prefix("ok\xffno", 5), 2);
        cr_assert_eq(xb_utf8_valid_prefix("\xed\xa0\x80", 3), 0);   /* a surrogate */
        /* Resuming at the prefix sees the same as checking all at once. */
        cr_assert_eq(xb_utf8_valid_prefix(euro + 2, 3), 3);
}
