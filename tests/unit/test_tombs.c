/* Unit tests for core/tombs.c: a tombstone is found by its id and tenant
 * only, says why, and the ring stays bounded (the oldest is overwritten);
 * with a state dir (core/records.c) they outlive the daemon. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/core.h"

static void
bury(struct xb_core *s, unsigned n, int tenant, const char *why)
{
        struct xb_sbx x = { .tenant = tenant, .end = XB_SBX_DELETED };

        snprintf(x.id, sizeof(x.id), "%026u", n);
        snprintf(x.error, sizeof(x.error), "%s", why);
        xb_tomb_add(s, &x);
}

Test(tombs, found_by_id_and_tenant_with_why)
{
        struct xb_core *s = calloc(1, sizeof(*s));
        struct xb_err err = { 0 };
        char id[32];

        bury(s, 7, 1, "the sandbox was deleted");
        snprintf(id, sizeof(id), "%026u", 7);
        cr_assert_not_null(xb_tomb_find(s, id, 1));
        cr_assert_null(xb_tomb_find(s, id, 2), "another tenant learns of it");
        cr_assert_null(xb_tomb_find(s, "nope", 1));
        cr_assert_null(xb_tomb_find(s, NULL, 1));
        xb_tomb_err(xb_tomb_find(s, id, 1), &err);
        cr_assert_eq(err.ecode, XB_E_SANDBOX_ENDED);
        cr_assert(strstr(err.msg, "the sandbox was deleted"), "%s", err.msg);
        cr_assert(strstr(err.msg, id), "%s", err.msg);
        free(s);
}

Test(tombs, bounded_ring_drops_the_oldest)
{
        struct xb_core *s = calloc(1, sizeof(*s));
        char id[32];

        for (unsigned i = 0; i < XB_TOMBS_MAX + 10; i++)
                bury(s, i, 0, "gone");
        snprintf(id, sizeof(id), "%026u", 5);
        cr_assert_null(xb_tomb_find(s, id, 0), "the ring kept more than XB_TOMBS_MAX");
        snprintf(id, sizeof(id), "%026u", 10);
        cr_assert_not_null(xb_tomb_find(s, id, 0));
        snprintf(id, sizeof(id), "%026u", XB_TOMBS_MAX + 9);
        cr_assert_not_null(xb_tomb_find(s, id, 0));
        free(s);
}

/* ---- across a restart (core/records.c) ---- */

static struct xb_core *
opened(const char *dir)
{
        struct xb_core *s = calloc(1, sizeof(*s));

        s->o.state_dir = dir;
        cr_assert_eq(xb_records_open(s), 0);
        return s;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

static void
rm_tree(const char *dir)
{
        cr_assert_eq(nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS), 0);
}

static unsigned
lines_of(const char *dir)
{
        char path[512], line[1024];
        unsigned n = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/tombs.log", dir);
        f = fopen(path, "r");
        cr_assert_not_null(f);
        while (fgets(line, sizeof(line), f))
                n++;
        fclose(f);
        return n;
}

Test(tombs, survive_a_restart_and_the_log_stays_bounded)
{
        char dir[] = "/tmp/xb-tombs-XXXXXX", id[32];
        struct xb_core *s;

        cr_assert_not_null(mkdtemp(dir));
        s = opened(dir);
        /* Past twice the ring: the log is compacted on the way. */
        for (unsigned i = 0; i < 2 * XB_TOMBS_MAX + 5; i++)
                bury(s, i, 1, "the sandbox was deleted");
        cr_assert_leq(lines_of(dir), XB_TOMBS_MAX + 5);
        xb_records_close(s);
        free(s);

        s = opened(dir);
        snprintf(id, sizeof(id), "%026u", 2 * XB_TOMBS_MAX + 4);
        cr_assert_not_null(xb_tomb_find(s, id, 1), "the newest tombstone was lost");
        cr_assert(strstr(xb_tomb_find(s, id, 1)->why, "deleted"));
        cr_assert_null(xb_tomb_find(s, id, 2), "another tenant learns of it");
        snprintf(id, sizeof(id), "%026u", XB_TOMBS_MAX + 5);
        cr_assert_not_null(xb_tomb_find(s, id, 1));
        snprintf(id, sizeof(id), "%026u", XB_TOMBS_MAX + 4);
        cr_assert_null(xb_tomb_find(s, id, 1), "more than the ring came back");
        cr_assert_eq(lines_of(dir), XB_TOMBS_MAX, "the start did not compact the log");
        cr_assert_eq(s->m.sandboxes_reaped, 0);
        xb_records_close(s);
        free(s);
        rm_tree(dir);
}

Test(tombs, a_record_left_behind_is_reaped_into_a_tombstone)
{
        char dir[] = "/tmp/xb-tombs-XXXXXX", path[512], id[32];
        struct xb_core *s;
        FILE *f;

        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/sandboxes", dir);
        cr_assert_eq(mkdir(path, 0700), 0);
        snprintf(id, sizeof(id), "%026u", 42);
        snprintf(path, sizeof(path), "%s/sandboxes/%s.json", dir, id);
        f = fopen(path, "w");
        fprintf(f, "{\"id\":\"%s\",\"tenant\":3}", id);
        fclose(f);
        /* Not records: a name that is not an id, a record naming another id. */
        snprintf(path, sizeof(path), "%s/sandboxes/junk.json", dir);
        fclose(fopen(path, "w"));
        snprintf(path, sizeof(path), "%s/sandboxes/%026u.json", dir, 43);
        f = fopen(path, "w");
        fprintf(f, "{\"id\":\"%s\",\"tenant\":3}", id);
        fclose(f);

        s = opened(dir);
        cr_assert_eq(s->m.sandboxes_reaped, 1);
        cr_assert_not_null(xb_tomb_find(s, id, 3));
        cr_assert(strstr(xb_tomb_find(s, id, 3)->why, "daemon restarted"), "%s", xb_tomb_find(s, id, 3)->why);
        snprintf(path, sizeof(path), "%s/sandboxes/%s.json", dir, id);
        cr_assert_neq(access(path, F_OK), 0, "the record stayed");
        snprintf(path, sizeof(path), "%s/sandboxes/%026u.json", dir, 43);
        cr_assert_neq(access(path, F_OK), 0, "the forged record stayed");
        xb_records_close(s);
        free(s);
        /* Reaped once: the next start finds nothing, and the tombstone still. */
        s = opened(dir);
        cr_assert_eq(s->m.sandboxes_reaped, 0);
        cr_assert_not_null(xb_tomb_find(s, id, 3));
        xb_records_close(s);
        free(s);
        rm_tree(dir);
}
