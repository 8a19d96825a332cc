/* Unit tests for proc/outbuf.h: head-and-tail capture. Under the cap the
 * output comes back whole; over it, exactly the first half of the cap and
 * the last half, with a marker naming what fell between. A reference model
 * (the whole stream kept in memory) checks random write patterns. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/outbuf.h"

/* Byte i of a stream that makes misplaced bytes visible. */
static char
pat(uint64_t i)
{
        return (char)('!' + (i * 7 + i / 91) % 90);
}

static void
write_pat(struct xb_outbuf *o, uint64_t from, size_t n)
{
        char *b = malloc(n ? n : 1);

        cr_assert_not_null(b);
        for (size_t i = 0; i < n; i++)
                b[i] = pat(from + i);
        cr_assert_eq(xb_outbuf_write(o, b, n), 0);
        free(b);
}

/* The stored head and tail must be stream[0, head) and stream[total - tail, total). */
static void
check_against_pattern(const struct xb_outbuf *o)
{
        char *tail = malloc(o->ring_len + 1);

        cr_assert_not_null(tail);
        for (size_t i = 0; i < o->head_len; i++)
                cr_assert_eq(o->head[i], pat(i), "head byte %zu", i);
        xb_outbuf_copy_tail(o, tail);
        for (size_t i = 0; i < o->ring_len; i++)
                cr_assert_eq(tail[i], pat(o->total - o->ring_len + i), "tail byte %zu of %zu (total %" PRIu64 ")",
                             i, o->ring_len, o->total);
        free(tail);
}

Test(outbuf, init_splits_the_limit)
{
        struct xb_outbuf o;

        xb_outbuf_init(&o, 100);
        cr_assert_eq(o.head_cap, 50);
        cr_assert_eq(o.ring_cap, 50);
        cr_assert_eq(o.total, 0);
        xb_outbuf_init(&o, 101);
        cr_assert_eq(o.head_cap + o.ring_cap, 101);
        cr_assert_leq(o.head_cap, o.ring_cap);
        cr_assert_null(o.head);
        cr_assert_null(o.ring);
}

Test(outbuf, empty)
{
        struct xb_outbuf o;
        size_t len = 123;
        char *s;

        xb_outbuf_init(&o, 100);
        cr_assert_not(xb_outbuf_truncated(&o));
        cr_assert_eq(xb_outbuf_dropped(&o), 0);
        s = xb_outbuf_render(&o, "stdout", &len);
        cr_assert_not_null(s);
        cr_assert_eq(len, 0);
        cr_assert_str_eq(s, "");
        free(s);
        cr_assert_eq(xb_outbuf_write(&o, "", 0), 0);
        cr_assert_eq(o.total, 0);
        xb_outbuf_free(&o);
}

Test(outbuf, under_the_cap_is_kept_whole)
{
        struct xb_outbuf o;
        size_t len;
        char *s;

        xb_outbuf_init(&o, 100);
        cr_assert_eq(xb_outbuf_write(&o, "hello ", 6), 0);
        cr_assert_eq(xb_outbuf_write(&o, "world\n", 6), 0);
        cr_assert_not(xb_outbuf_truncated(&o));
        cr_assert_eq(xb_outbuf_dropped(&o), 0);
        s = xb_outbuf_render(&o, "stdout", &len);
        cr_assert_eq(len, 12);
        cr_assert_str_eq(s, "hello world\n");
        free(s);
        xb_outbuf_free(&o);
}

Test(outbuf, exactly_the_cap_is_kept_whole)
{
        /* Both an even and an odd cap; the tail half starts to fill too. */
        for (uint64_t limit = 100; limit <= 101; limit++) {
                struct xb_outbuf o;
                size_t len;
                char *s;

                xb_outbuf_init(&o, limit);
                write_pat(&o, 0, 30);
                write_pat(&o, 30, (size_t)limit - 30);
                cr_assert_not(xb_outbuf_truncated(&o), "limit %" PRIu64, limit);
                cr_assert_eq(xb_outbuf_dropped(&o), 0);
                s = xb_outbuf_render(&o, "stdout", &len);
                cr_assert_eq(len, limit);
                for (size_t i = 0; i < len; i++)
                        cr_assert_eq(s[i], pat(i), "byte %zu", i);
                cr_assert_eq(s[len], '\0');
                free(s);
                xb_outbuf_free(&o);
        }
}

Test(outbuf, one_byte_over)
{
        struct xb_outbuf o;

        xb_outbuf_init(&o, 100);
        write_pat(&o, 0, 101);
        cr_assert(xb_outbuf_truncated(&o));
        cr_assert_eq(xb_outbuf_dropped(&o), 1);
        cr_assert_eq(o.head_len, 50);
        cr_assert_eq(o.ring_len, 50);
        check_against_pattern(&o);
        xb_outbuf_free(&o);
}

Test(outbuf, render_over_the_cap)
{
        struct xb_outbuf o;
        char marker[256], want_marker[256];
        size_t len, mlen;
        char *s;

        xb_outbuf_init(&o, 64);
        write_pat(&o, 0, 1000);
        s = xb_outbuf_render(&o, "stdout", &len);
        cr_assert_not_null(s);
        mlen = xb_outbuf_marker(&o, "stdout", marker, sizeof(marker));
        cr_assert_eq(mlen, strlen(marker));
        cr_assert_eq(len, 32 + mlen + 32);
        cr_assert_eq(strlen(s), len);
        for (size_t i = 0; i < 32; i++)
                cr_assert_eq(s[i], pat(i), "head byte %zu", i);
        cr_assert_arr_eq(s + 32, marker, mlen);
        for (size_t i = 0; i < 32; i++)
                cr_assert_eq(s[32 + mlen + i], pat(1000 - 32 + i), "tail byte %zu", i);
        /* The marker names the dropped count, the stream, the total and the limit. */
        snprintf(want_marker, sizeof(want_marker), " %d bytes of stdout dropped", 1000 - 64);
        cr_assert(strstr(marker, want_marker), "marker `%s`", marker);
        cr_assert(strstr(marker, "1000 bytes"), "marker `%s` lacks the total", marker);
        cr_assert(strstr(marker, "64-byte limit"), "marker `%s` lacks the limit", marker);
        cr_assert_eq(marker[0], '\n', "marker must start on its own line");
        cr_assert_eq(marker[mlen - 1], '\n', "marker must end its line");
        free(s);
        xb_outbuf_free(&o);
}

Test(outbuf, marker_names_the_stream)
{
        struct xb_outbuf o;
        char *s;

        xb_outbuf_init(&o, 64);
        write_pat(&o, 0, 65);
        s = xb_outbuf_render(&o, "stderr", NULL);
        cr_assert(strstr(s, "1 bytes of stderr dropped"), "render `%s`", s);
        cr_assert_null(strstr(s, "stdout"));
        free(s);
        xb_outbuf_free(&o);
}

Test(outbuf, long_stream_name_cannot_overflow_the_marker)
{
        struct xb_outbuf o;
        char what[600];
        size_t len;
        char *s;

        memset(what, 'w', sizeof(what) - 1);
        what[sizeof(what) - 1] = '\0';
        xb_outbuf_init(&o, 64);
        write_pat(&o, 0, 500);
        s = xb_outbuf_render(&o, what, &len);
        cr_assert_not_null(s);
        cr_assert_eq(strlen(s), len);
        cr_assert_lt(len, 64 + 256);
        for (size_t i = 0; i < 32; i++) {
                cr_assert_eq(s[i], pat(i));
                cr_assert_eq(s[len - 32 + i], pat(500 - 32 + i));
        }
        free(s);
        xb_outbuf_free(&o);
}

Test(outbuf, write_much_larger_than_the_cap)
{
        struct xb_outbuf o;
        const size_t n = 10 * 1000 + 7;

        xb_outbuf_init(&o, 1000);
        write_pat(&o, 0, n);
        cr_assert_eq(o.total, n);
        cr_assert_eq(o.head_len, 500);
        cr_assert_eq(o.ring_len, 500);
        cr_assert_eq(xb_outbuf_dropped(&o), n - 1000);
        check_against_pattern(&o);
        /* And again on top of a full ring. */
        write_pat(&o, n, 3 * n);
        cr_assert_eq(o.total, 4 * n);
        cr_assert_eq(xb_outbuf_dropped(&o), 4 * n - 1000);
        check_against_pattern(&o);
        xb_outbuf_free(&o);
}

Test(outbuf, many_tiny_writes)
{
        struct xb_outbuf o;
        const uint64_t n = 10007;

        xb_outbuf_init(&o, 1000);
        for (uint64_t i = 0; i < n; i++) {
                char c = pat(i);

                cr_assert_eq(xb_outbuf_write(&o, &c, 1), 0);
        }
        cr_assert_eq(o.total, n);
        cr_assert_eq(xb_outbuf_dropped(&o), n - 1000);
        check_against_pattern(&o);
        xb_outbuf_free(&o);
}

Test(outbuf, random_writes_match_the_model)
{
        /* Every small cap (odd, even, 0 and 1) against a random sequence of
         * write sizes, some of them larger than the cap. */
        unsigned seed = 12345;

        for (uint64_t limit = 0; limit <= 70; limit++) {
                struct xb_outbuf o;
                uint64_t at = 0;

                xb_outbuf_init(&o, limit);
                for (int k = 0; k < 60; k++) {
                        size_t n = (size_t)(rand_r(&seed) % (k % 7 == 0 ? 200 : 9));

                        write_pat(&o, at, n);
                        at += n;
                        cr_assert_eq(o.total, at);
                        cr_assert_leq(o.head_len, o.head_cap);
                        cr_assert_leq(o.ring_len, o.ring_cap);
                        cr_assert_eq(o.head_len + o.ring_len, at < limit ? at : limit,
                                     "limit %" PRIu64 " after %" PRIu64 " bytes: kept %zu + %zu", limit, at,
                                     o.head_len, o.ring_len);
                        cr_assert_eq(xb_outbuf_truncated(&o), at > limit);
                        cr_assert_eq(xb_outbuf_dropped(&o), at > limit ? at - limit : 0);
                        check_against_pattern(&o);
                }
                xb_outbuf_free(&o);
        }
}

Test(outbuf, zero_limit_keeps_nothing)
{
        struct xb_outbuf o;
        size_t len;
        char *s;

        xb_outbuf_init(&o, 0);
        write_pat(&o, 0, 10);
        cr_assert(xb_outbuf_truncated(&o));
        cr_assert_eq(xb_outbuf_dropped(&o), 10);
        s = xb_outbuf_render(&o, "stdout", &len);
        cr_assert_not_null(s);
        cr_assert_eq(strlen(s), len);
        cr_assert(strstr(s, "10 bytes of stdout dropped"), "render `%s`", s);
        free(s);
        xb_outbuf_free(&o);
}

Test(outbuf, memory_stays_within_the_cap)
{
        struct xb_outbuf o;

        xb_outbuf_init(&o, 10000);
        for (int i = 0; i < 200; i++)
                write_pat(&o, (uint64_t)i * 997, 997);
        cr_assert_eq(o.head_len, 5000);
        cr_assert_eq(o.ring_len, 5000);
        /* Allocator rounding aside, the head is never grown past its half. */
        cr_assert_leq(malloc_usable_size(o.head), o.head_cap + 64);
        cr_assert_leq(malloc_usable_size(o.ring), o.ring_cap + 64);
        xb_outbuf_free(&o);
        cr_assert_null(o.head);
        cr_assert_null(o.ring);
        cr_assert_eq(o.head_len + o.ring_len, 0);
}

Test(outbuf, small_output_does_not_allocate_the_ring)
{
        struct xb_outbuf o;

        xb_outbuf_init(&o, (uint64_t)1 << 30);
        write_pat(&o, 0, 100);
        cr_assert_null(o.ring, "ring allocated before the head is full");
        cr_assert_lt(malloc_usable_size(o.head), (size_t)1 << 20, "head allocated at full size up front");
        xb_outbuf_free(&o);
}
