/* Unit tests for sandbox/mountplan.h: what the host image plan contains and
 * in which order, the caller's bind specs and destinations, the mount
 * source allowlist, and the /etc allowlist's exclusion of secrets.
 * Only the pure parts: nothing here opens a source or mounts. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "sandbox/mountplan.h"

#define ETC_VIEW "/run/execbox/etc-view.1234"
#define DISK ((uint64_t)256 << 20)

static const struct xb_bind test_binds[] = {
        { .host = (char *)"/srv/data", .dest = (char *)"/home/user/data", .rw = true },
        { .host = (char *)"/srv/models", .dest = (char *)"/mnt/models", .rw = false },
};

static struct xb_image_opts
opts(bool merged)
{
        return (struct xb_image_opts){
                .disk = DISK,
                .user_uid = 1000,
                .user_gid = 1001,
                .etc_dir = ETC_VIEW,
                .binds = test_binds,
                .nbinds = ARRAY_SIZE(test_binds),
                .layout = { .merged_usr = merged, .has_lib64 = true },
        };
}

static void
build(struct xb_mount_plan *p, const struct xb_image_opts *o)
{
        struct xb_err err = { 0 };
        int r;

        *p = (struct xb_mount_plan){ 0 };
        r = xb_mountplan_host(p, o, &err);
        cr_assert_eq(r, 0, "xb_mountplan_host: %d %s", r, err.msg);
        cr_assert_gt(p->n, 0);
}

/* Index of the first step with this dest, or -1. */
static ssize_t
find(const struct xb_mount_plan *p, const char *dest)
{
        for (size_t i = 0; i < p->n; i++)
                if (strcmp(p->steps[i].dest, dest) == 0)
                        return (ssize_t)i;
        return -1;
}

static const struct xb_mop_step *
must(const struct xb_mount_plan *p, const char *dest, enum xb_mop op)
{
        ssize_t i = find(p, dest);

        cr_assert_geq(i, 0, "no step for /%s", dest);
        cr_assert_eq(p->steps[i].op, op, "/%s: op %d, want %d", dest, (int)p->steps[i].op, (int)op);
        return &p->steps[i];
}

static size_t
count_dest(const struct xb_mount_plan *p, const char *dest)
{
        size_t n = 0;

        for (size_t i = 0; i < p->n; i++)
                n += strcmp(p->steps[i].dest, dest) == 0;
        return n;
}

static bool
under(const char *path, const char *dir)
{
        size_t n = strlen(dir);

        return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* ---- the host image ---- */

Test(mountplan_host, usr_is_one_read_only_bind)
{
        struct xb_mount_plan p;
        struct xb_image_opts o = opts(true);
        const struct xb_mop_step *s;

        build(&p, &o);
        s = must(&p, "usr", XB_MOP_BIND);
        cr_assert_str_eq(s->src, "/usr");
        cr_assert(s->flags & XB_MOPF_RO, "/usr is writable");
        cr_assert_not(s->flags & (XB_MOPF_OPTIONAL | XB_MOPF_DEV | XB_MOPF_USER));
        cr_assert_eq(count_dest(&p, "usr"), 1);
        cr_assert_eq(find(&p, "usr"), 0, "/usr must come first: the links point into it");
        xb_mountplan_free(&p);
}

Test(mountplan_host, merged_usr_links)
{
        static const char *const links[][2] = {
                { "bin", "usr/bin" }, { "sbin", "usr/sbin" }, { "lib", "usr/lib" }, { "lib64", "usr/lib64" },
        };
        struct xb_mount_plan p;
        struct xb_image_opts o = opts(true);

        build(&p, &o);
        for (size_t i = 0; i < ARRAY_SIZE(links); i++) {
                const struct xb_mop_step *s = must(&p, links[i][0], XB_MOP_SYMLINK);

                cr_assert_str_eq(s->data, links[i][1], "/%s -> %s", links[i][0], s->data);
                cr_assert_null(s->src);
                cr_assert_eq(count_dest(&p, links[i][0]), 1);
        }
        /* No lib32/libx32 unless the host has them. */
        cr_assert_eq(find(&p, "lib32"), -1);
        cr_assert_eq(find(&p, "libx32"), -1);
        xb_mountplan_free(&p);
}

Test(mountplan_host, split_usr_binds_are_read_only_and_optional)
{
        static const char *const dirs[] = { "bin", "sbin", "lib", "lib64" };
        struct xb_mount_plan p;
        struct xb_image_opts o = opts(false);

        build(&p, &o);
        for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
                const struct xb_mop_step *s = must(&p, dirs[i], XB_MOP_BIND);
                char src[32];

                snprintf(src, sizeof(src), "/%s", dirs[i]);
                cr_assert_str_eq(s->src, src);
                cr_assert((s->flags & (XB_MOPF_RO | XB_MOPF_OPTIONAL)) == (XB_MOPF_RO | XB_MOPF_OPTIONAL),
                          "/%s flags %#x", dirs[i], s->flags);
        }
        xb_mountplan_free(&p);
}

Test(mountplan_host, lib32_links_when_present)
{
        struct xb_mount_plan p;
        struct xb_image_opts o = opts(true);

        o.layout.has_lib32 = o.layout.has_libx32 = true;
        o.layout.has_lib64 = false;
        build(&p, &o);
        cr_assert_str_eq(must(&p, "lib32", XB_MOP_SYMLINK)->data, "usr/lib32");
        cr_assert_str_eq(must(&p, "libx32", XB_MOP_SYMLINK)->data, "usr/libx32");
        cr_assert_eq(find(&p, "lib64"), -1);
        xb_mountplan_free(&p);
}

Test(mountplan_host, etc_is_one_read_only_bind_of_the_view)
{
        struct xb_mount_plan p;
        struct xb_image_opts o = opts(true);
        const struct xb_mop_step *s;

        build(&p, &o);
        s = must(&p, "etc", XB_MOP_BIND);
        cr_assert_str_eq(s->src, ETC_VIEW);
        cr_assert(s->flags & XB_MOPF_RO, "/etc is writable");
        /* Nothing else lands in /etc, and nothing is taken from the host's. */
        for (size_t i = 0; i < p.n; i++) {
                if (&p.steps[i] != s)
                        cr_assert_not(under(p.steps[i].dest, "etc"), "extra step at /%s", p.steps[i].dest);
                if (p.steps[i].src)
                        cr_assert_not(under(p.steps[i].src, "/etc"), "host /etc source %s", p.steps[i].src);
        }
        xb_mountplan_free(&p);
}

Test(mountplan_host, proc_with_docker_masked_and_read_only_paths)
{
        static const char *const masked[] = {
                "proc/acpi", "proc/asound", "proc/interrupts", "proc/kcore", "proc/keys",
                "proc/latency_stats", "proc/timer_list", "proc/timer_stats", "proc/sched_debug", "proc/scsi",
        };
        static const char *const ro[] = {
                "proc/bus", "proc/fs", "proc/irq", "proc/sys", "proc/sysrq-trigger",
        };
        struct xb_mount_plan p;
        struct xb_image_opts o = opts(true);
        ssize_t proc;

        build(&p, &o);
        must(&p, "proc", XB_MOP_PROC);
        cr_assert_eq(count_dest(&p, "proc"), 1);
        proc = find(&p, "proc");
        for (size_t i = 0; i < ARRAY_SIZE(masked); i++) {
                must(&p, masked[i], XB_MOP_MASK);
                cr_assert_gt(find(&p, masked[i]), proc, "/%s masked before /proc is mounted", masked[i]);
        }
        for (size_t i = 0; i < ARRAY_SIZE(ro); i++) {
                must(&p, ro[i], XB_MOP_RO);
                cr_assert_gt(find(&p, ro[i]), proc, "/%s made read-only before /proc is mounted", ro[i]);
        }
        /* No /sys at all: the sandbox gets none. */
        for (size_t i = 0; i < p.n; i++)
                cr_assert_not(under(p.steps[i].dest, "sys"), "step at /%s", p.steps[i].dest);
        xb_mountplan_free(&p);
}

Test(mountplan_host, minimal_dev)
{
        static const char *const nodes[] = { "null", "zero", "full", "random", "urandom", "tty" };
        struct xb_mount_plan p;
        struct xb_image_opts o = opts(true);
        const struct xb_mop_step *s;
        ssize_t dev, remount = -1;
        size_t ndev = 0;

        build(&p, &o);
        s = must(&p, "dev", XB_MOP_TMPFS);
        cr_assert(s->flags & XB_MOPF_NOEXEC);
        dev = find(&p, "dev");
        for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
                char dest[32], src[32];

                snprintf(dest, sizeof(dest), "dev/%s", nodes[i]);
                snprintf(src, sizeof(src), "/dev/%s", nodes[i]);
                s = must(&p, dest, XB_MOP_BIND);
                cr_assert_str_eq(s->src, src);
                cr_assert(s->flags & XB_MOPF_DEV, "/%s lacks XB_MOPF_DEV: it would be nodev", dest);
                cr_assert_gt(find(&p, dest), dev, "/%s bound before the /dev tmpfs", dest);
        }
        /* XB_MOPF_DEV lifts nodev: only these host device nodes may carry it. */
        for (size_t i = 0; i < p.n; i++) {
                if (!(p.steps[i].flags & XB_MOPF_DEV))
                        continue;
                ndev++;
                cr_assert_eq(p.steps[i].op, XB_MOP_BIND);
                cr_assert(under(p.steps[i].src, "/dev") && strchr(p.steps[i].src + 5, '/') == NULL,
                          "XB_MOPF_DEV on %s", p.steps[i].src);
        }
        cr_assert_eq(ndev, ARRAY_SIZE(nodes));

        s = must(&p, "dev/pts", XB_MOP_DEVPTS);
        cr_assert_str_eq(must(&p, "dev/ptmx", XB_MOP_SYMLINK)->data, "pts/ptmx");
        cr_assert_str_eq(must(&p, "dev/fd", XB_MOP_SYMLINK)->data, "/proc/self/fd");
        s = must(&p, "dev/shm", XB_MOP_TMPFS);
        cr_assert_gt(s->size, 0);
        cr_assert_leq(s->size, DISK);

        /* /dev is made read-only after everything in it is in place. */
        for (size_t i = 0; i < p.n; i++)
                if (p.steps[i].op == XB_MOP_REMOUNT_RO && strcmp(p.steps[i].dest, "dev") == 0)
                        remount = (ssize_t)i;
        cr_assert_geq(remount, 0, "/dev is never made read-only");
        for (size_t i = 0; i < p.n; i++)
                if (under(p.steps[i].dest, "dev") && p.steps[i].op != XB_MOP_REMOUNT_RO)
                        cr_assert_lt((ssize_t)i, remount, "/%s after /dev went read-only", p.steps[i].dest);
        xb_mountplan_free(&p);
}

Test(mountplan_host, dev_shm_never_larger_than_disk)
{
        struct xb_mount_plan p;
        struct xb_image_opts o = opts(true);

        o.disk = 1 << 20;
        build(&p, &o);
        cr_assert_eq(must(&p, "dev/shm", XB_MOP_TMPFS)->size, 1 << 20);
        xb_mountplan_free(&p);
}

Test(mountplan_host, writable_tmp_and_home_sized_by_disk)
{
        struct xb_mount_plan p;
        struct xb_image_opts o = opts(true);
        const struct xb_mop_step *s;

        build(&p, &o);
        s = must(&p, "tmp", XB_MOP_TMPFS);
        cr_assert_eq(s->size, DISK);
        cr_assert_eq(s->mode, 01777);
        cr_assert_not(s->flags & XB_MOPF_RO);
        s = must(&p, "home/user", XB_MOP_TMPFS);
        cr_assert_eq(s->size, DISK);
        cr_assert_not(s->flags & XB_MOPF_RO);
        cr_assert_not_null(s->data);
        cr_assert(strstr(s->data, "uid=1000"), "home/user options `%s`", s->data);
        cr_assert(strstr(s->data, "gid=1001"), "home/user options `%s`", s->data);
        /* Different disk sizes reach the plan unchanged. */
        xb_mountplan_free(&p);
        o.disk = (uint64_t)5 << 30;
        build(&p, &o);
        cr_assert_eq(must(&p, "tmp", XB_MOP_TMPFS)->size, (uint64_t)5 << 30);
        cr_assert_eq(must(&p, "home/user", XB_MOP_TMPFS)->size, (uint64_t)5 << 30);
        xb_mountplan_free(&p);
}

Test(mountplan_host, callers_binds_last_with_their_modes)
{
        struct xb_mount_plan p;
        struct xb_image_opts o = opts(true);
        const struct xb_mop_step *a, *b;
        size_t nuser = 0;

        build(&p, &o);
        cr_assert_geq(p.n, 2);
        a = &p.steps[p.n - 2];
        b = &p.steps[p.n - 1];
        cr_assert_eq(a->op, XB_MOP_BIND);
        cr_assert_str_eq(a->dest, "home/user/data");
        cr_assert_str_eq(a->src, "/srv/data");
        cr_assert(a->flags & XB_MOPF_USER);
        cr_assert_not(a->flags & XB_MOPF_RO, "rw bind made read-only");
        cr_assert_eq(b->op, XB_MOP_BIND);
        cr_assert_str_eq(b->dest, "mnt/models");
        cr_assert_str_eq(b->src, "/srv/models");
        cr_assert(b->flags & XB_MOPF_USER);
        cr_assert(b->flags & XB_MOPF_RO, "ro bind writable");
        for (size_t i = 0; i < p.n; i++) {
                nuser += (p.steps[i].flags & XB_MOPF_USER) != 0;
                cr_assert_not(p.steps[i].flags & XB_MOPF_DEV && p.steps[i].flags & XB_MOPF_USER);
        }
        cr_assert_eq(nuser, 2, "XB_MOPF_USER on a step of execbox's own");
        xb_mountplan_free(&p);
}

Test(mountplan_host, no_binds)
{
        struct xb_mount_plan p;
        struct xb_image_opts o = opts(true);

        o.binds = NULL;
        o.nbinds = 0;
        build(&p, &o);
        for (size_t i = 0; i < p.n; i++)
                cr_assert_not(p.steps[i].flags & XB_MOPF_USER);
        xb_mountplan_free(&p);
        cr_assert_null(p.steps);
        cr_assert_eq(p.n, 0);
}

Test(mountplan_host, every_dest_relative_and_normalised)
{
        struct xb_mount_plan p;
        struct xb_image_opts o = opts(false);

        build(&p, &o);
        for (size_t i = 0; i < p.n; i++) {
                const char *d = p.steps[i].dest;

                cr_assert_neq(d[0], '\0', "step %zu has an empty dest", i);
                cr_assert_neq(d[0], '/', "step %zu dest /%s is absolute", i, d);
                cr_assert_null(strstr(d, ".."), "step %zu dest %s", i, d);
                cr_assert_null(strstr(d, "//"), "step %zu dest %s", i, d);
                cr_assert_neq(d[strlen(d) - 1], '/', "step %zu dest %s", i, d);
                cr_assert_eq(p.steps[i].src_fd, -1);
                cr_assert_not(p.steps[i].skip);
                if (p.steps[i].op == XB_MOP_BIND)
                        cr_assert(p.steps[i].src && p.steps[i].src[0] == '/', "bind /%s has no absolute source", d);
        }
        xb_mountplan_free(&p);
}

Test(mountplan_host, tmpfs_mounts_come_before_binds_into_them)
{
        /* A tmpfs mounted after a bind below it would hide the bind. */
        struct xb_mount_plan p;
        struct xb_image_opts o = opts(true);

        build(&p, &o);
        for (size_t i = 0; i < p.n; i++)
                for (size_t j = i + 1; j < p.n; j++)
                        if (p.steps[j].op == XB_MOP_TMPFS || p.steps[j].op == XB_MOP_PROC)
                                cr_assert_not(under(p.steps[i].dest, p.steps[j].dest) &&
                                                      strcmp(p.steps[i].dest, p.steps[j].dest) != 0,
                                              "/%s (step %zu) is covered by /%s (step %zu)", p.steps[i].dest, i,
                                              p.steps[j].dest, j);
        xb_mountplan_free(&p);
}

Test(mountplan, add_copies_strings)
{
        struct xb_mount_plan p = { 0 };
        char dest[] = "mnt/a", src[] = "/srv/a", data[] = "x=1";

        cr_assert_eq(xb_mountplan_add(&p, XB_MOP_BIND, XB_MOPF_RO, dest, src, data, 7, 0700), 0);
        cr_assert_eq(xb_mountplan_add(&p, XB_MOP_DIR, 0, "d", NULL, NULL, 0, 0755), 0);
        memset(dest, 'Z', sizeof(dest) - 1);
        memset(src, 'Z', sizeof(src) - 1);
        memset(data, 'Z', sizeof(data) - 1);
        cr_assert_eq(p.n, 2);
        cr_assert_str_eq(p.steps[0].dest, "mnt/a");
        cr_assert_str_eq(p.steps[0].src, "/srv/a");
        cr_assert_str_eq(p.steps[0].data, "x=1");
        cr_assert_eq(p.steps[0].size, 7);
        cr_assert_eq(p.steps[0].mode, 0700);
        cr_assert_eq(p.steps[0].flags, XB_MOPF_RO);
        cr_assert_eq(p.steps[0].src_fd, -1);
        cr_assert_null(p.steps[1].src);
        cr_assert_null(p.steps[1].data);
        xb_mountplan_free(&p);
}

Test(mountplan, add_grows_past_initial_capacity)
{
        struct xb_mount_plan p = { 0 };
        char name[16];

        for (int i = 0; i < 1000; i++) {
                snprintf(name, sizeof(name), "d%d", i);
                cr_assert_eq(xb_mountplan_add(&p, XB_MOP_DIR, 0, name, NULL, NULL, 0, 0755), 0);
        }
        cr_assert_eq(p.n, 1000);
        cr_assert_geq(p.cap, 1000);
        for (int i = 0; i < 1000; i++) {
                snprintf(name, sizeof(name), "d%d", i);
                cr_assert_str_eq(p.steps[i].dest, name);
        }
        xb_mountplan_free(&p);
}

/* ---- bind specs ---- */

static void
parse_ok(const char *spec, const char *host, const char *dest, bool rw)
{
        struct xb_bind b = { 0 };
        struct xb_err err = { 0 };
        int r = xb_bind_parse(spec, &b, &err);

        cr_assert_eq(r, 0, "xb_bind_parse(\"%s\") = %d: %s", spec, r, err.msg);
        cr_assert_str_eq(b.host, host);
        cr_assert_str_eq(b.dest, dest);
        cr_assert_eq(b.rw, rw, "%s: rw = %d", spec, b.rw);
        xb_bind_free(&b);
        cr_assert_null(b.host);
        cr_assert_null(b.dest);
}

static int
parse_bad(const char *spec)
{
        struct xb_bind b = { 0 };
        struct xb_err err = { 0 };
        int r = xb_bind_parse(spec, &b, &err);

        cr_assert_lt(r, 0, "xb_bind_parse(\"%s\") accepted", spec);
        cr_assert_eq(err.code, -r);
        cr_assert_neq(err.msg[0], '\0');
        xb_bind_free(&b);
        return r;
}

Test(bind_parse, valid)
{
        parse_ok("/srv/data:/home/user/data", "/srv/data", "/home/user/data", false);
        parse_ok("/srv/data:/home/user/data:ro", "/srv/data", "/home/user/data", false);
        parse_ok("/srv/data:/home/user/data:rw", "/srv/data", "/home/user/data", true);
        parse_ok("rel/host:/mnt/x", "rel/host", "/mnt/x", false);
}

Test(bind_parse, malformed)
{
        cr_assert_eq(parse_bad("/srv/data"), -EINVAL);
        cr_assert_eq(parse_bad(""), -EINVAL);
        cr_assert_eq(parse_bad(":/mnt/x"), -EINVAL);
        cr_assert_eq(parse_bad("/srv:"), -EINVAL);
        cr_assert_eq(parse_bad("/srv::rw"), -EINVAL);
        cr_assert_eq(parse_bad("/srv:mnt/x"), -EINVAL);
        cr_assert_eq(parse_bad("/srv:/mnt/x:"), -EINVAL);
        cr_assert_eq(parse_bad("/srv:/mnt/x:RW"), -EINVAL);
        cr_assert_eq(parse_bad("/srv:/mnt/x:rx"), -EINVAL);
        cr_assert_eq(parse_bad("/srv:/mnt/x:rw:ro"), -EINVAL);
        cr_assert_eq(parse_bad("/srv:/mnt/x/"), -EINVAL);
        cr_assert_eq(parse_bad("/srv:/mnt/../etc"), -EINVAL);
}

Test(bind_parse, reserved_dest)
{
        cr_assert_eq(parse_bad("/srv:/proc/x"), -EPERM);
        cr_assert_eq(parse_bad("/srv:/etc:rw"), -EPERM);
        cr_assert_eq(parse_bad("/srv:/usr/local"), -EPERM);
}

Test(bind_parse, failure_leaves_ret_untouched)
{
        /* House style: ret_ parameters are left untouched on failure, so a
         * caller that keeps only successful parses (cmd_run.c does) leaks
         * nothing. A refused destination must not leave allocations behind. */
        struct xb_bind b = { 0 };
        bool host_left, dest_left;

        cr_assert_lt(xb_bind_parse("/srv:/proc/x", &b, NULL), 0);
        host_left = b.host != NULL;
        dest_left = b.dest != NULL;
        xb_bind_free(&b);
        cr_assert_not(host_left, "host left allocated after a failed parse");
        cr_assert_not(dest_left, "dest left allocated after a failed parse");
}

/* ---- bind destinations ---- */

static void
dest_ok(const char *d)
{
        struct xb_err err = { 0 };
        int r = xb_bind_dest_validate(d, &err);

        cr_assert_eq(r, 0, "`%s` refused: %s", d, err.msg);
}

static void
dest_bad(const char *d, int want)
{
        struct xb_err err = { 0 };
        int r = xb_bind_dest_validate(d, &err);

        cr_assert_eq(r, -want, "`%s`: %d, want %d", d, r, -want);
        cr_assert_eq(err.code, want);
        cr_assert_neq(err.msg[0], '\0');
}

Test(bind_dest, accepted)
{
        dest_ok("/home/user/x");
        dest_ok("/home/user/project/data");
        dest_ok("/home/user/.hidden");
        dest_ok("/home/user/...");
        dest_ok("/home/user/x.");
        dest_ok("/mnt/x");
        dest_ok("/mnt/x/y");
        dest_ok("/data");
        dest_ok("/opt/tool");
        dest_ok("/tmp/in");
        dest_ok("/x");
}

Test(bind_dest, not_absolute_or_not_normalised)
{
        dest_bad("", EINVAL);
        dest_bad("/", EINVAL);
        dest_bad("mnt/x", EINVAL);
        dest_bad("./mnt/x", EINVAL);
        dest_bad("//mnt", EINVAL);
        dest_bad("/mnt//x", EINVAL);
        dest_bad("/mnt/./x", EINVAL);
        dest_bad("/mnt/../x", EINVAL);
        dest_bad("/mnt/x/", EINVAL);
        dest_bad("/mnt/.", EINVAL);
        dest_bad("/mnt/..", EINVAL);
        dest_bad("/.", EINVAL);
        dest_bad("/..", EINVAL);
        dest_bad("/../etc", EINVAL);
}

Test(bind_dest, too_long)
{
        char d[1100];

        d[0] = '/';
        memset(d + 1, 'a', 1023);
        d[1024] = '\0';
        dest_ok(d);           /* 1024 bytes */
        d[1024] = 'a';
        d[1025] = '\0';
        dest_bad(d, EINVAL);  /* 1025 bytes */
}

Test(bind_dest, reserved_prefixes)
{
        static const char *const reserved[] = {
                "/proc", "/dev", "/sys", "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32",
                "/lib64", "/libx32", "/var/tmp", "/root",
        };
        char d[64];

        for (size_t i = 0; i < ARRAY_SIZE(reserved); i++) {
                dest_bad(reserved[i], EPERM);
                snprintf(d, sizeof(d), "%s/x", reserved[i]);
                dest_bad(d, EPERM);
                snprintf(d, sizeof(d), "%s/x/y", reserved[i]);
                dest_bad(d, EPERM);
        }
        dest_bad("/dev/shm", EPERM);
        dest_bad("/proc/self", EPERM);
        dest_bad("/etc/passwd", EPERM);
        dest_bad("/root/.ssh", EPERM);
}

Test(bind_dest, reserved_is_a_whole_component)
{
        /* Names that merely start like a reserved directory are fine. */
        dest_ok("/proc2");
        dest_ok("/devices");
        dest_ok("/system");
        dest_ok("/usrdata");
        dest_ok("/etcetera");
        dest_ok("/binaries");
        dest_ok("/library");
        dest_ok("/var/tmpdata");
        dest_ok("/rootfs");
        dest_ok("/mnt/proc");
        dest_ok("/home/user/etc");
}

/* ---- the mount source allowlist ---- */

Test(bind_allowed, whole_components_only)
{
        const char *allow[] = { "/data" };

        cr_assert(xb_bind_allowed("/data", allow, 1));
        cr_assert(xb_bind_allowed("/data/x", allow, 1));
        cr_assert(xb_bind_allowed("/data/x/y", allow, 1));
        cr_assert_not(xb_bind_allowed("/data2", allow, 1));
        cr_assert_not(xb_bind_allowed("/data2/x", allow, 1));
        cr_assert_not(xb_bind_allowed("/dat", allow, 1));
        cr_assert_not(xb_bind_allowed("/datax/y", allow, 1));
        cr_assert_not(xb_bind_allowed("/", allow, 1));
        cr_assert_not(xb_bind_allowed("/srv/data", allow, 1));
        cr_assert_not(xb_bind_allowed("data", allow, 1));
}

Test(bind_allowed, several_entries)
{
        const char *allow[] = { "/srv/a", "/home/alice/work" };

        cr_assert(xb_bind_allowed("/srv/a/x", allow, 2));
        cr_assert(xb_bind_allowed("/home/alice/work", allow, 2));
        cr_assert(xb_bind_allowed("/home/alice/work/p", allow, 2));
        cr_assert_not(xb_bind_allowed("/home/alice", allow, 2));
        cr_assert_not(xb_bind_allowed("/home/alice/workshop", allow, 2));
        cr_assert_not(xb_bind_allowed("/srv", allow, 2));
        /* Only the first nallow entries count. */
        cr_assert_not(xb_bind_allowed("/home/alice/work", allow, 1));
        cr_assert_not(xb_bind_allowed("/srv/a", allow, 0));
}

Test(bind_allowed, root_allows_everything_absolute)
{
        const char *allow[] = { "/nope", "/" };

        cr_assert(xb_bind_allowed("/", allow, 2));
        cr_assert(xb_bind_allowed("/anything/at/all", allow, 2));
        cr_assert_not(xb_bind_allowed("relative", allow, 2));
}

/* ---- sets of binds ---- */

static int
validate(const char *const *dests, size_t n)
{
        struct xb_bind b[8];
        struct xb_err err = { 0 };
        int r;

        cr_assert_leq(n, ARRAY_SIZE(b));
        for (size_t i = 0; i < n; i++)
                b[i] = (struct xb_bind){ .host = (char *)"/srv", .dest = (char *)dests[i] };
        r = xb_binds_validate(b, n, &err);
        if (r < 0) {
                cr_assert_eq(err.code, -r);
                cr_assert_neq(err.msg[0], '\0');
        }
        return r;
}

Test(binds_validate, distinct_siblings_accepted)
{
        const char *a[] = { "/mnt/a", "/mnt/b", "/home/user/a" };
        const char *b[] = { "/data", "/data2" };
        const char *c[] = { "/data2", "/data" };

        cr_assert_eq(validate(NULL, 0), 0);
        cr_assert_eq(validate(a, 3), 0);
        cr_assert_eq(validate(b, 2), 0);
        cr_assert_eq(validate(c, 2), 0);
}

Test(binds_validate, duplicates_rejected)
{
        const char *a[] = { "/mnt/a", "/mnt/a" };
        const char *b[] = { "/mnt/b", "/mnt/a", "/mnt/c", "/mnt/a" };

        cr_assert_eq(validate(a, 2), -EINVAL);
        cr_assert_eq(validate(b, 4), -EINVAL);
}

Test(binds_validate, nesting_rejected_in_either_order)
{
        const char *a[] = { "/mnt/a", "/mnt/a/b" };
        const char *b[] = { "/mnt/a/b", "/mnt/a" };
        const char *c[] = { "/home/user/x", "/mnt/q", "/home/user/x/y/z" };

        cr_assert_eq(validate(a, 2), -EINVAL);
        cr_assert_eq(validate(b, 2), -EINVAL);
        cr_assert_eq(validate(c, 3), -EINVAL);
}

Test(binds_validate, each_dest_is_validated)
{
        const char *a[] = { "/mnt/a", "/proc/x" };
        const char *b[] = { "/mnt/a", "/mnt/b/" };

        cr_assert_eq(validate(a, 2), -EPERM);
        cr_assert_eq(validate(b, 2), -EINVAL);
}

/* ---- the /etc allowlist ---- */

/* Host files no sandbox may see, and directories nothing may come from. */
static const char *const secret_files[] = {
        "shadow", "shadow-", "gshadow", "gshadow-", "passwd-", "group-", "sudoers", "machine-id",
        "krb5.keytab", "ipsec.secrets", "subuid", "subgid", "apt/auth.conf", "environment", "ssl/private",
        "credstore", "ssh",
};
static const char *const secret_dirs[] = {
        "ssh", "ssl/private", "sudoers.d", "security", "NetworkManager", "wpa_supplicant", "ppp", "openvpn",
        "wireguard", "ipsec.d", "letsencrypt", "docker", "containerd", "kubernetes", "credstore",
        "credstore.encrypted", "pki/tls/private", "apt/auth.conf.d", "sssd", "execbox", "libvirt", "polkit-1",
};

Test(etc_allowlist, well_formed_and_unique)
{
        size_t n = 0;

        for (const char *const *e = xb_etc_allowlist; *e; e++, n++) {
                size_t len = strlen(*e);

                cr_assert_lt(n, 1000, "xb_etc_allowlist is not NULL-terminated");
                cr_assert_gt(len, 0);
                cr_assert_neq((*e)[0], '/', "%s is absolute", *e);
                cr_assert_neq((*e)[len - 1], '/', "%s", *e);
                cr_assert_null(strstr(*e, ".."), "%s", *e);
                cr_assert_null(strstr(*e, "//"), "%s", *e);
                for (const char *const *f = xb_etc_allowlist; f != e; f++)
                        cr_assert_str_neq(*f, *e, "%s listed twice", *e);
        }
        cr_assert_gt(n, 0);
}

Test(etc_allowlist, never_exposes_secrets)
{
        for (const char *const *e = xb_etc_allowlist; *e; e++) {
                for (size_t i = 0; i < ARRAY_SIZE(secret_files); i++)
                        cr_assert_not(under(secret_files[i], *e), "allowlist entry `%s` exposes /etc/%s", *e,
                                      secret_files[i]);
                for (size_t i = 0; i < ARRAY_SIZE(secret_dirs); i++)
                        cr_assert_not(under(secret_dirs[i], *e) || under(*e, secret_dirs[i]),
                                      "allowlist entry `%s` overlaps /etc/%s", *e, secret_dirs[i]);
        }
}

Test(etc_allowlist, no_host_identity_files)
{
        /* The view writes its own: the host's would list host users and
         * hosts, and clash with the generated ones. */
        static const char *const generated[] = {
                "passwd", "group", "hostname", "hosts", "resolv.conf", "nsswitch.conf",
        };

        for (const char *const *e = xb_etc_allowlist; *e; e++)
                for (size_t i = 0; i < ARRAY_SIZE(generated); i++)
                        cr_assert_not(under(generated[i], *e), "allowlist entry `%s` covers /etc/%s", *e,
                                      generated[i]);
}
