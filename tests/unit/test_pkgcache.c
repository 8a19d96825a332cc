/* Unit tests for net/pkgcache.h: the store of the shared package cache.
 * A fill is kept only when whole, under its URL, by the hash of its bytes;
 * two fills of one URL leave one entry; the bound evicts the least
 * recently used; a reopened store keeps its entries and drops leftovers. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/pkgcache.h"

static char dir[64];

static void
setup(void)
{
        snprintf(dir, sizeof(dir), "/tmp/xb-pkgcache-unit-XXXXXX");
        cr_assert_not_null(mkdtemp(dir));
        strcat(dir, "/c");
}

static void
teardown(void)
{
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%.*s'", (int)(strlen(dir) - 2), dir);
        cr_assert_eq(system(cmd), 0);
}

static struct xb_pkgcache *
open_cache(uint64_t max)
{
        struct xb_pkgcache *pc = NULL;
        struct xb_err err = { 0 };

        cr_assert_eq(xb_pkgcache_open(dir, max, &pc, &err), 0, "%s", err.msg);
        return pc;
}

static int
store(struct xb_pkgcache *pc, const char *url, const char *body, uint64_t expect)
{
        struct xb_pkgfill *f = xb_pkgfill_begin(pc, url);

        cr_assert_not_null(f);
        cr_assert_eq(xb_pkgfill_write(f, body, strlen(body)), 0);
        return xb_pkgfill_commit(f, expect);
}

static char *
read_hit(struct xb_pkgcache *pc, const char *url)
{
        uint64_t size = 0;
        int fd = xb_pkgcache_lookup(pc, url, &size);
        char *b;

        if (fd < 0)
                return NULL;
        b = calloc(1, size + 1);
        cr_assert_eq(read(fd, b, size), (ssize_t)size);
        close(fd);
        return b;
}

static size_t
count(const char *sub)
{
        char p[128];
        DIR *d;
        struct dirent *e;
        size_t n = 0;

        snprintf(p, sizeof(p), "%s/%s", dir, sub);
        d = opendir(p);
        cr_assert_not_null(d);
        while ((e = readdir(d)))
                n += e->d_name[0] != '.';
        closedir(d);
        return n;
}

TestSuite(pkgcache, .init = setup, .fini = teardown);

Test(pkgcache, whole_fills_are_kept_by_url)
{
        struct xb_pkgcache *pc = open_cache(1 << 20);
        char *b;

        cr_assert_null(read_hit(pc, "http://a.test/x.deb"));
        cr_assert_eq(store(pc, "http://a.test/x.deb", "hello", 5), 0);
        b = read_hit(pc, "http://a.test/x.deb");
        cr_assert_str_eq(b, "hello");
        free(b);
        cr_assert_null(read_hit(pc, "http://b.test/x.deb"), "another URL is another key");
        cr_assert_eq(xb_pkgcache_stats(pc)->hits, 1);
        cr_assert_eq(xb_pkgcache_stats(pc)->bytes_stored, 5);
        xb_pkgcache_close(pc);
}

Test(pkgcache, partial_and_aborted_fills_are_never_kept)
{
        struct xb_pkgcache *pc = open_cache(1 << 20);
        struct xb_pkgfill *f;

        cr_assert_lt(store(pc, "http://a.test/short.deb", "hel", 5), 0, "fewer bytes than Content-Length");
        cr_assert_null(read_hit(pc, "http://a.test/short.deb"));
        f = xb_pkgfill_begin(pc, "http://a.test/cut.deb");
        xb_pkgfill_write(f, "abc", 3);
        xb_pkgfill_abort(f);
        cr_assert_null(read_hit(pc, "http://a.test/cut.deb"));
        cr_assert_eq(count("tmp"), 0);
        cr_assert_eq(count("objects"), 0);
        cr_assert_eq(xb_pkgcache_stats(pc)->entries, 0);
        xb_pkgcache_close(pc);
}

Test(pkgcache, two_fills_of_one_url_leave_one_entry)
{
        struct xb_pkgcache *pc = open_cache(1 << 20);
        struct xb_pkgfill *a = xb_pkgfill_begin(pc, "http://a.test/x.deb");
        struct xb_pkgfill *b = xb_pkgfill_begin(pc, "http://a.test/x.deb");
        char *got;

        xb_pkgfill_write(a, "same", 4);
        xb_pkgfill_write(b, "same", 4);
        cr_assert_eq(xb_pkgfill_commit(a, 4), 0);
        cr_assert_eq(xb_pkgfill_commit(b, 4), 0);
        cr_assert_eq(xb_pkgcache_stats(pc)->entries, 1);
        cr_assert_eq(xb_pkgcache_stats(pc)->size, 4);
        cr_assert_eq(count("objects"), 1);
        cr_assert_eq(count("index"), 1);
        got = read_hit(pc, "http://a.test/x.deb");
        cr_assert_str_eq(got, "same");
        free(got);
        xb_pkgcache_close(pc);
}

Test(pkgcache, the_bound_evicts_the_least_recently_used)
{
        struct xb_pkgcache *pc = open_cache(10);
        char *b;

        cr_assert_eq(store(pc, "http://a.test/1.deb", "aaaa", 4), 0);
        usleep(2000);
        cr_assert_eq(store(pc, "http://a.test/2.deb", "bbbb", 4), 0);
        usleep(2000);
        b = read_hit(pc, "http://a.test/1.deb");   /* 1 is now the more recent */
        free(b);
        usleep(2000);
        cr_assert_eq(store(pc, "http://a.test/3.deb", "cccc", 4), 0);
        cr_assert_leq(xb_pkgcache_stats(pc)->size, 10);
        cr_assert_eq(xb_pkgcache_stats(pc)->evictions, 1);
        cr_assert_null(read_hit(pc, "http://a.test/2.deb"));
        b = read_hit(pc, "http://a.test/1.deb");
        cr_assert_not_null(b);
        free(b);
        {
                struct xb_pkgfill *f = xb_pkgfill_begin(pc, "http://a.test/big.deb");

                cr_assert_eq(xb_pkgfill_write(f, "0123456789abc", 13), -EFBIG, "larger than the bound");
                cr_assert_lt(xb_pkgfill_commit(f, UINT64_MAX), 0);
        }
        cr_assert_eq(count("objects"), 2);
        xb_pkgcache_close(pc);
}

Test(pkgcache, reopening_keeps_entries_and_drops_leftovers)
{
        struct xb_pkgcache *pc = open_cache(1 << 20);
        char p[160];
        FILE *f;
        char *b;

        cr_assert_eq(store(pc, "http://a.test/x.deb", "kept", 4), 0);
        xb_pkgcache_close(pc);
        snprintf(p, sizeof(p), "%s/tmp/leftover", dir);
        f = fopen(p, "w");
        fputs("partial", f);
        fclose(f);
        snprintf(p, sizeof(p), "%s/objects/%064d", dir, 0);
        f = fopen(p, "w");
        fputs("orphan", f);
        fclose(f);
        pc = open_cache(1 << 20);
        b = read_hit(pc, "http://a.test/x.deb");
        cr_assert_str_eq(b, "kept");
        free(b);
        cr_assert_eq(count("tmp"), 0);
        cr_assert_eq(count("objects"), 1);
        xb_pkgcache_close(pc);
}
