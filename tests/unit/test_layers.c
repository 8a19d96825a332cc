/* Unit tests for sandbox/layers.h and the layered host plan: the overlay
 * options the setup child mounts with (lowers top first, then the base;
 * upper and work dirs of the sandbox's own layer), and what a layered
 * plan holds instead of the read-only binds. Pure code only. */
#include <criterion/criterion.h>
#include <string.h>

#include "base/cleanup.h"
#include "sandbox/layers.h"
#include "sandbox/mountplan.h"
#include "sandbox/store.h"

static char *
opts_of(const struct xb_root_spec *r, size_t part)
{
        struct xb_err err = { 0 };
        char *o = NULL;

        cr_assert_eq(xb_layers_overlay_opts(r, part, &o, &err), 0, "%s", err.msg);
        return o;
}

Test(layers, base_only_disk_upper)
{
        struct xb_root_spec r = { .kind = XB_UPPER_DISK };
        _cleanup_free_ char *root = opts_of(&r, 0), *usr = opts_of(&r, 1), *dpkg = opts_of(&r, 3);

        cr_assert_str_eq(root, "lowerdir=/tmp/s/2,upperdir=/tmp/s/0/up/root,workdir=/tmp/s/0/wk/root,userxattr");
        cr_assert_str_eq(usr, "lowerdir=/tmp/s/3,upperdir=/tmp/s/0/up/usr,workdir=/tmp/s/0/wk/usr,userxattr");
        cr_assert_str_eq(dpkg, "lowerdir=/tmp/s/6:/tmp/s/5,upperdir=/tmp/s/0/up/dpkg,workdir=/tmp/s/0/wk/dpkg,userxattr");
}

Test(layers, template_layers_top_first_over_the_base)
{
        const char *const lowers[] = { "top", "bottom" };
        struct xb_root_spec r = { .kind = XB_UPPER_DISK, .lowers = lowers, .nlowers = 2 };
        _cleanup_free_ char *etc = opts_of(&r, 2);

        cr_assert_str_eq(etc, "lowerdir=/tmp/s/1/top/up/etc:/tmp/s/1/bottom/up/etc:/tmp/s/4,upperdir=/tmp/s/0/up/etc,"
                              "workdir=/tmp/s/0/wk/etc,userxattr");
}

Test(layers, memory_upper)
{
        struct xb_root_spec r = { .kind = XB_UPPER_MEMORY };
        _cleanup_free_ char *usr = opts_of(&r, 1);

        cr_assert_str_eq(usr, "lowerdir=/tmp/s/3,upperdir=/tmp/s/m/up/usr,workdir=/tmp/s/m/wk/usr,userxattr");
}

Test(layers, too_many_layers_refused)
{
        const char *lowers[XB_LAYERS_MAX + 1];
        struct xb_root_spec r = { .kind = XB_UPPER_DISK, .lowers = lowers, .nlowers = XB_LAYERS_MAX + 1 };
        struct xb_err err = { 0 };
        char *o = NULL;

        for (size_t i = 0; i < XB_LAYERS_MAX + 1; i++)
                lowers[i] = "x";
        cr_assert_lt(xb_layers_overlay_opts(&r, 0, &o, &err), 0);
        cr_assert_null(o);
}

Test(layers, parts_match_the_store)
{
        cr_assert_eq(XB_LAYER_PARTS, 4);
        cr_assert_str_eq(xb_layer_parts[0], "root");
        cr_assert_str_eq(xb_layer_parts[1], "usr");
        cr_assert_str_eq(xb_layer_parts[2], "etc");
        cr_assert_str_eq(xb_layer_parts[3], "dpkg");
}

Test(layers, layered_plan_overlays_instead_of_binds)
{
        static const struct xb_bind binds[] = { { .host = (char *)"/srv/ws", .dest = (char *)"/home/user/ws", .rw = true } };
        struct xb_layered_opts lo = { .overlay_opts = { "U", "E", "D" } };
        struct xb_image_opts o = { .disk = 1 << 20, .user_uid = 1000, .user_gid = 1000, .etc_dir = "/v",
                                   .binds = binds, .nbinds = 1, .layered = &lo, .layout = { .merged_usr = true } };
        struct xb_mount_plan p = { 0 };
        struct xb_err err = { 0 };
        bool usr = false, etc = false, dpkg = false, tmp = false, home = false, bind = false;

        cr_assert_eq(xb_mountplan_host(&p, &o, &err), 0, "%s", err.msg);
        for (size_t i = 0; i < p.n; i++) {
                const struct xb_mop_step *s = &p.steps[i];

                cr_assert(!(s->op == XB_MOP_BIND && !strcmp(s->dest, "usr")), "no read-only /usr bind");
                cr_assert(!(s->op == XB_MOP_BIND && !strcmp(s->dest, "etc")), "no read-only /etc bind");
                cr_assert(!(s->op == XB_MOP_SYMLINK && !strcmp(s->dest, "bin")), "the skeleton has the links");
                if (s->op == XB_MOP_OVERLAY) {
                        cr_assert(s->flags & XB_MOPF_LAYER);
                        usr |= !strcmp(s->dest, "usr") && !strcmp(s->data, "U");
                        etc |= !strcmp(s->dest, "etc") && !strcmp(s->data, "E");
                        dpkg |= !strcmp(s->dest, "var/lib/dpkg") && !strcmp(s->data, "D");
                }
                tmp |= s->op == XB_MOP_TMPFS && !strcmp(s->dest, "tmp") && (s->flags & XB_MOPF_LAYER);
                home |= s->op == XB_MOP_TMPFS && !strcmp(s->dest, "home/user");
                if (s->op == XB_MOP_BIND && !strcmp(s->dest, "home/user/ws"))
                        bind = (s->flags & XB_MOPF_USER) && (s->flags & XB_MOPF_LAYER);
                /* Every mount of a step that lands in the sandbox's own root is checked. */
                if (s->op == XB_MOP_PROC || (s->op == XB_MOP_TMPFS && !strcmp(s->dest, "dev")))
                        cr_assert(s->flags & XB_MOPF_LAYER, "%s", s->dest);
        }
        cr_assert(usr && etc && dpkg, "the three overlays");
        cr_assert(tmp, "/tmp is a tmpfs, checked");
        cr_assert_not(home, "/home/user is in the layer, not a tmpfs");
        cr_assert(bind, "the caller's bind is a checked user step");
        xb_mountplan_free(&p);
}
