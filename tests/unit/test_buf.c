/* Unit tests for base/buf.h: appends, printf, the hard cap (-ENOBUFS with
 * nothing appended), steal and reset. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

Test(buf, append_and_puts)
{
        struct xb_buf b = { 0 };

        cr_assert_eq(xb_buf_append(&b, "abc", 3), 0);
        cr_assert_eq(xb_buf_puts(&b, "def"), 0);
        cr_assert_eq(xb_buf_append(&b, "\0x", 2), 0);
        cr_assert_eq(b.len, 8);
        cr_assert_arr_eq(b.data, "abcdef\0x", 8);
        cr_assert_eq(b.data[8], '\0', "not NUL-terminated");
        cr_assert_gt(b.cap, b.len);
        xb_buf_free(&b);
        cr_assert_null(b.data);
        cr_assert_eq(b.len, 0);
        cr_assert_eq(b.cap, 0);
}

Test(buf, empty_append_allocates_a_terminated_string)
{
        struct xb_buf b = { 0 };

        cr_assert_eq(xb_buf_append(&b, NULL, 0), 0);
        cr_assert_not_null(b.data);
        cr_assert_str_eq(b.data, "");
        xb_buf_free(&b);
}

Test(buf, grows_across_many_appends)
{
        struct xb_buf b = { 0 };
        char want[100000];

        for (size_t i = 0; i < sizeof(want); i++) {
                char c = (char)('a' + i % 26);

                want[i] = c;
                cr_assert_eq(xb_buf_append(&b, &c, 1), 0);
        }
        cr_assert_eq(b.len, sizeof(want));
        cr_assert_arr_eq(b.data, want, sizeof(want));
        cr_assert_eq(b.data[b.len], '\0');
        xb_buf_free(&b);
}

Test(buf, printf)
{
        struct xb_buf b = { 0 };
        char big[5000];

        cr_assert_eq(xb_buf_printf(&b, "%d-%s", 42, "x"), 0);
        cr_assert_eq(xb_buf_printf(&b, "|%05.1f|", 3.14159), 0);
        cr_assert_str_eq(b.data, "42-x|003.1|");
        cr_assert_eq(b.len, strlen("42-x|003.1|"));
        /* Output longer than the first allocation. */
        memset(big, 'q', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        cr_assert_eq(xb_buf_printf(&b, "<%s>", big), 0);
        cr_assert_eq(b.len, 11 + 2 + sizeof(big) - 1);
        cr_assert_eq(b.data[11], '<');
        cr_assert_eq(b.data[b.len - 1], '>');
        cr_assert_eq(strlen(b.data), b.len);
        /* An empty format appends nothing. */
        cr_assert_eq(xb_buf_printf(&b, "%s", ""), 0);
        cr_assert_eq(b.len, 11 + 2 + sizeof(big) - 1);
        xb_buf_free(&b);
}

Test(buf, cap_is_enforced)
{
        struct xb_buf b = { .max = 16 };

        cr_assert_eq(xb_buf_append(&b, "0123456789", 10), 0);
        cr_assert_eq(xb_buf_append(&b, "abcdefg", 7), -ENOBUFS);
        cr_assert_eq(b.len, 10, "a refused append changed the length");
        cr_assert_str_eq(b.data, "0123456789");
        /* Exactly up to the cap is fine... */
        cr_assert_eq(xb_buf_append(&b, "abcdef", 6), 0);
        cr_assert_eq(b.len, 16);
        cr_assert_str_eq(b.data, "0123456789abcdef");
        /* ...and not one byte more, in any form. */
        cr_assert_eq(xb_buf_append(&b, "x", 1), -ENOBUFS);
        cr_assert_eq(xb_buf_puts(&b, "x"), -ENOBUFS);
        cr_assert_eq(xb_buf_printf(&b, "%c", 'x'), -ENOBUFS);
        cr_assert_null(xb_buf_reserve(&b, 1));
        cr_assert_eq(xb_buf_append(&b, "", 0), 0);
        cr_assert_eq(b.len, 16);
        cr_assert_str_eq(b.data, "0123456789abcdef");
        cr_assert_leq(b.cap, 17, "allocated %zu bytes for a 16-byte cap", b.cap);
        xb_buf_free(&b);
}

Test(buf, cap_refuses_huge_sizes_without_wrapping)
{
        struct xb_buf b = { .max = 64 };

        cr_assert_eq(xb_buf_append(&b, "abc", 3), 0);
        cr_assert_null(xb_buf_reserve(&b, SIZE_MAX));
        cr_assert_null(xb_buf_reserve(&b, SIZE_MAX - 2));
        cr_assert_null(xb_buf_reserve(&b, 62));
        cr_assert_not_null(xb_buf_reserve(&b, 61));
        cr_assert_eq(b.len, 3);
        xb_buf_free(&b);
}

Test(buf, printf_over_the_cap_appends_nothing)
{
        struct xb_buf b = { .max = 8 };

        cr_assert_eq(xb_buf_printf(&b, "%s", "abc"), 0);
        cr_assert_eq(xb_buf_printf(&b, "%s", "defghi"), -ENOBUFS);
        cr_assert_eq(b.len, 3);
        cr_assert_str_eq(b.data, "abc");
        cr_assert_eq(xb_buf_printf(&b, "%d", 12345), 0);
        cr_assert_str_eq(b.data, "abc12345");
        xb_buf_free(&b);
}

Test(buf, default_cap)
{
        struct xb_buf b = { 0 };
        char *p;

        cr_assert_null(xb_buf_reserve(&b, XB_BUF_DEFAULT_MAX + 1));
        p = xb_buf_reserve(&b, 10);
        cr_assert_not_null(p);
        b.len = XB_BUF_DEFAULT_MAX - 1;   /* pretend it is nearly full */
        cr_assert_null(xb_buf_reserve(&b, 2));
        b.len = 0;
        xb_buf_free(&b);
}

Test(buf, reserve_then_commit)
{
        struct xb_buf b = { 0 };
        char *p;

        cr_assert_eq(xb_buf_puts(&b, "ab"), 0);
        p = xb_buf_reserve(&b, 100);
        cr_assert_not_null(p);
        cr_assert_eq(p, b.data + 2);
        cr_assert_geq(b.cap, 2 + 100 + 1);
        memcpy(p, "cd", 2);
        b.len += 2;
        b.data[b.len] = '\0';
        cr_assert_str_eq(b.data, "abcd");
        xb_buf_free(&b);
}

Test(buf, steal)
{
        struct xb_buf b = { 0 };
        char *s;

        cr_assert_eq(xb_buf_puts(&b, "owned"), 0);
        s = xb_buf_steal(&b);
        cr_assert_str_eq(s, "owned");
        cr_assert_null(b.data);
        cr_assert_eq(b.len, 0);
        cr_assert_eq(b.cap, 0);
        /* The buffer is reusable and independent of the stolen string. */
        cr_assert_eq(xb_buf_puts(&b, "next"), 0);
        cr_assert_str_eq(b.data, "next");
        cr_assert_str_eq(s, "owned");
        free(s);
        xb_buf_free(&b);
}

Test(buf, steal_empty_is_an_empty_string)
{
        struct xb_buf b = { 0 };
        char *s = xb_buf_steal(&b);

        cr_assert_not_null(s);
        cr_assert_str_eq(s, "");
        free(s);
        cr_assert_null(b.data);
}

Test(buf, reset_keeps_the_allocation)
{
        struct xb_buf b = { 0 };
        char *data;

        cr_assert_eq(xb_buf_puts(&b, "something"), 0);
        data = b.data;
        xb_buf_reset(&b);
        cr_assert_eq(b.len, 0);
        cr_assert_eq(b.data, data);
        cr_assert_str_eq(b.data, "");
        cr_assert_eq(xb_buf_puts(&b, "x"), 0);
        cr_assert_str_eq(b.data, "x");
        xb_buf_free(&b);
        xb_buf_reset(&b);    /* harmless on a freed buffer */
        cr_assert_null(b.data);
}

Test(buf, tail_keeps_the_last_bytes_of_every_piece)
{
        char tail[8 + 1];
        size_t n = 0;

        xb_tail_add(tail, &n, 8, "abc", 3);
        cr_assert_str_eq(tail, "abc");
        xb_tail_add(tail, &n, 8, "defgh", 5);
        cr_assert_str_eq(tail, "abcdefgh");
        xb_tail_add(tail, &n, 8, "ij", 2);   /* the oldest two go */
        cr_assert_str_eq(tail, "cdefghij");
        cr_assert_eq(n, 8);
        xb_tail_add(tail, &n, 8, "0123456789", 10);   /* one piece over the whole tail */
        cr_assert_str_eq(tail, "23456789");
        xb_tail_add(tail, &n, 8, "", 0);
        cr_assert_str_eq(tail, "23456789");
}
