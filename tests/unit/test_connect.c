/* Unit tests for e2b/connect.h: the envelope parser on whole, partial,
 * oversized, compressed and garbage input (never reading past the
 * buffer), framing round trips, and the error code tables the SDK's typed
 * errors depend on. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/connect.h"

Test(connect, parses_one_envelope_and_leaves_the_rest)
{
        const uint8_t buf[] = { 0, 0, 0, 0, 2, '{', '}', 2, 0, 0, 0, 0 };
        const uint8_t *p;
        size_t n;
        uint8_t f;

        cr_assert_eq(xb_connect_parse(buf, sizeof(buf), 100, &f, &p, &n), 7);
        cr_assert_eq(f, 0);
        cr_assert_eq(n, 2);
        cr_assert(!memcmp(p, "{}", 2));
        cr_assert_eq(xb_connect_parse(buf + 7, sizeof(buf) - 7, 100, &f, &p, &n), 5);
        cr_assert_eq(f, XB_CONNECT_END);
        cr_assert_eq(n, 0);
}

Test(connect, partial_input_asks_for_more)
{
        const uint8_t buf[] = { 0, 0, 0, 0, 4, '{', '}' };
        const uint8_t *p;
        size_t n;
        uint8_t f;

        for (size_t len = 0; len < sizeof(buf); len++)
                cr_assert_eq(xb_connect_parse(buf, len, 100, &f, &p, &n), -EAGAIN, "len %zu", len);
}

Test(connect, refuses_big_compressed_and_unknown_flags)
{
        const uint8_t big[] = { 0, 0x7f, 0xff, 0xff, 0xff };
        const uint8_t comp[] = { XB_CONNECT_COMPRESSED, 0, 0, 0, 0 };
        const uint8_t odd[] = { 0x80, 0, 0, 0, 0 };
        const uint8_t *p;
        size_t n;
        uint8_t f;

        cr_assert_eq(xb_connect_parse(big, sizeof(big), 1 << 20, &f, &p, &n), -EMSGSIZE);
        cr_assert_eq(xb_connect_parse(comp, sizeof(comp), 100, &f, &p, &n), -EPROTO);
        cr_assert_eq(xb_connect_parse(odd, sizeof(odd), 100, &f, &p, &n), -EPROTO);
}

Test(connect, frame_round_trips)
{
        struct xb_buf b = { .max = 1 << 20 };
        const char *msg = "{\"event\":{\"start\":{\"pid\":7}}}";
        const uint8_t *p;
        size_t n;
        uint8_t f;

        cr_assert_eq(xb_connect_frame(&b, 0, msg, strlen(msg)), 0);
        cr_assert_eq(xb_connect_frame(&b, XB_CONNECT_END, "{}", 2), 0);
        cr_assert_eq(xb_connect_parse(b.data, b.len, 1 << 20, &f, &p, &n), (ssize_t)(5 + strlen(msg)));
        cr_assert(n == strlen(msg) && !memcmp(p, msg, n));
        cr_assert_eq(xb_connect_parse(b.data + 5 + n, b.len - 5 - n, 100, &f, &p, &n), 7);
        cr_assert_eq(f, XB_CONNECT_END);
        xb_buf_free(&b);
}

Test(connect, random_bytes_never_overrun)
{
        uint8_t buf[64];
        const uint8_t *p;
        size_t n;
        uint8_t f;

        srand(11);
        for (int i = 0; i < 20000; i++) {
                size_t len = (size_t)rand() % sizeof(buf);
                ssize_t r;

                for (size_t k = 0; k < len; k++)
                        buf[k] = (uint8_t)rand();
                if (len)
                        buf[0] &= 3;
                r = xb_connect_parse(buf, len, 1 << 20, &f, &p, &n);
                if (r >= 0)
                        cr_assert(p == buf + 5 && (size_t)r == 5 + n && (size_t)r <= len);
        }
}

Test(connect, codes_and_statuses)
{
        cr_assert_eq(xb_connect_http_status("not_found"), 404);
        cr_assert_eq(xb_connect_http_status("deadline_exceeded"), 504);
        cr_assert_eq(xb_connect_http_status("unauthenticated"), 401);
        cr_assert_eq(xb_connect_http_status("bogus"), 500);
        cr_assert_str_eq(xb_connect_code(XB_E_FILE_NOT_FOUND, ENOENT), "not_found");
        cr_assert_str_eq(xb_connect_code(XB_E_PROCESS_NOT_FOUND, 0), "not_found");
        cr_assert_str_eq(xb_connect_code(XB_E_SANDBOX_GONE, 0), "unavailable");
        cr_assert_str_eq(xb_connect_code(XB_E_FILE_ERROR, EEXIST), "already_exists");
        cr_assert_str_eq(xb_connect_code(XB_E_INVALID_PATH, EINVAL), "invalid_argument");
        cr_assert_str_eq(xb_connect_code(XB_E_DISK_FULL, ENOSPC), "resource_exhausted");
        cr_assert_str_eq(xb_connect_code(XB_E_WATCHER_NOT_FOUND, 0), "not_found");
        cr_assert_str_eq(xb_connect_code(XB_E_TOO_MANY_WATCHES, 0), "resource_exhausted");
        cr_assert_str_eq(xb_connect_code_of_status(502), "unavailable");
}
