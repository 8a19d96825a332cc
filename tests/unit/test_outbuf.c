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

/* ---- reading back by absolute offset (reattach) ---- */

/* What xb_outbuf_read must return: the first kept byte at or after off,
 * then the kept bytes that follow it without a gap, at most max of them. */
static void
check_read(const struct xb_outbuf *o, uint64_t off, size_t max)
{
        uint64_t tail_start = o->total - o->ring_len, start, end, got_start = 0xdead;
        char *dst = malloc(max + 1);
        size_t n;

        cr_assert_not_null(dst);
        if (off >= o->total)
                start = o->total;
        else if (off < o->head_len || off >= tail_start)
                start = off;
        else
                start = tail_start;
        end = start < o->head_len ? o->head_len : o->total;
        if (start < o->head_len && tail_start == o->head_len)
                end = o->total;      /* nothing dropped: head and tail are one run */
        if (end - start > max)
                end = start + max;
        n = xb_outbuf_read(o, off, dst, max, &got_start);
        cr_assert_eq(got_start, start, "read(%" PRIu64 ", %zu): start %" PRIu64 ", want %" PRIu64 " (head %zu, tail from %" PRIu64 ", total %" PRIu64 ")",
                     off, max, got_start, start, o->head_len, tail_start, o->total);
        cr_assert_eq(n, end - start, "read(%" PRIu64 ", %zu): %zu bytes, want %" PRIu64, off, max, n, end - start);
        for (size_t i = 0; i < n; i++)
                cr_assert_eq(dst[i], pat(start + i), "read(%" PRIu64 ", %zu): byte %zu", off, max, i);
        free(dst);
}

Test(outbuf_read, whole_output_under_the_cap)
{
        struct xb_outbuf o;
        char dst[200];
        uint64_t start;

        xb_outbuf_init(&o, 100);
        write_pat(&o, 0, 80);     /* head full, tail partly */
        cr_assert_eq(xb_outbuf_read(&o, 0, dst, sizeof(dst), &start), 80);
        cr_assert_eq(start, 0);
        for (size_t i = 0; i < 80; i++)
                cr_assert_eq(dst[i], pat(i));
        cr_assert_eq(xb_outbuf_read(&o, 75, dst, sizeof(dst), &start), 5);
        cr_assert_eq(start, 75);
        cr_assert_eq(xb_outbuf_read(&o, 80, dst, sizeof(dst), &start), 0);
        cr_assert_eq(start, 80);
        cr_assert_eq(xb_outbuf_read(&o, 1000, dst, sizeof(dst), &start), 0);
        cr_assert_eq(start, 80, "an offset past the end is clamped to the total");
        xb_outbuf_free(&o);
}

Test(outbuf_read, skips_what_was_dropped)
{
        struct xb_outbuf o;
        char dst[200];
        uint64_t start;

        xb_outbuf_init(&o, 100);
        write_pat(&o, 0, 1000);
        /* From the head: stops at the gap. */
        cr_assert_eq(xb_outbuf_read(&o, 10, dst, sizeof(dst), &start), 40);
        cr_assert_eq(start, 10);
        /* From the gap: starts at the tail. */
        cr_assert_eq(xb_outbuf_read(&o, 50, dst, sizeof(dst), &start), 50);
        cr_assert_eq(start, 950);
        for (size_t i = 0; i < 50; i++)
                cr_assert_eq(dst[i], pat(950 + i));
        cr_assert_eq(xb_outbuf_read(&o, 990, dst, 5, &start), 5);
        cr_assert_eq(start, 990);
        cr_assert_eq(dst[0], pat(990));
        xb_outbuf_free(&o);
}

Test(outbuf_read, matches_the_model)
{
        unsigned seed = 777;

        for (uint64_t limit = 0; limit <= 40; limit++) {
                struct xb_outbuf o;
                uint64_t at = 0;

                xb_outbuf_init(&o, limit);
                for (int k = 0; k < 25; k++) {
                        size_t n = (size_t)(rand_r(&seed) % (k % 5 == 0 ? 90 : 7));

                        write_pat(&o, at, n);
                        at += n;
                        for (uint64_t off = 0; off <= at + 2; off++) {
                                check_read(&o, off, 0);
                                check_read(&o, off, 1);
                                check_read(&o, off, 3);
                                check_read(&o, off, 1000);
                        }
                }
                xb_outbuf_free(&o);
        }
}

/* A stream an earlier daemon read up to 1000 (in the stream's file): the
 * memory has none of it, offsets go on from there, and the whole cap keeps
 * the tail of what follows. */
Test(outbuf, skip_counts_the_earlier_bytes_and_keeps_what_follows)
{
        struct xb_outbuf o;
        char buf[64];
        uint64_t start = 0;
        size_t n;

        xb_outbuf_init(&o, 64);
        xb_outbuf_skip(&o, 1000);
        cr_assert_eq(o.total, 1000);
        cr_assert_eq(xb_outbuf_read(&o, 0, buf, sizeof(buf), &start), 0);
        write_pat(&o, 1000, 40);
        cr_assert_eq(o.total, 1040);
        n = xb_outbuf_read(&o, 1000, buf, sizeof(buf), &start);
        cr_assert_eq(start, 1000);
        cr_assert_eq(n, 40, "all 40 fit in the whole cap's tail, got %zu", n);
        for (size_t i = 0; i < n; i++)
                cr_assert_eq(buf[i], pat(1000 + i));
        /* Past the cap only the last 64 stay. */
        write_pat(&o, 1040, 100);
        n = xb_outbuf_read(&o, 1000, buf, sizeof(buf), &start);
        cr_assert_eq(start, 1140 - 64);
        cr_assert_eq(n, 64);
        for (size_t i = 0; i < n; i++)
                cr_assert_eq(buf[i], pat(start + i));
        xb_outbuf_free(&o);
}
