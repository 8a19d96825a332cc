/* template_build "from": "debian:SUITE": a clean Debian root made by
 * mmdebstrap (minbase, unshare mode), kept as the template debian-SUITE
 * and shared by every build from it. mmdebstrap's output streams to the
 * build's client as `log` events while it runs (bounded: a bootstrap's
 * whole output is a few hundred KB; past LOG_EVENTS_MAX the events stop,
 * with a marker, and only the progress tail goes on); a failure quotes the
 * end of it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "core/rootfs.h"
#include "core/templates.h"
#include "ops/op_tbuild_int.h"

#define LOG_EVENTS_MAX ((uint64_t)4 << 20)

int
xb_tb_debian_from(struct xb_core *s, int tenant, const char *from, char *from_name, const char **suite_out,
                  struct xb_call *c, struct xb_err *err)
{
        const char *suite;
        struct xb_template *dt;

        if (!from || strncmp(from, "debian:", 7))
                return 0;
        suite = from + 7;
        if (!*suite || strlen(suite) > 32 || strspn(suite, "abcdefghijklmnopqrstuvwxyz") != strlen(suite)) {
                xb_err_msg(err, EINVAL, "`from`: a Debian suite is lower-case letters, such as \"debian:bookworm\"");
                return -EINVAL;
        }
        snprintf(from_name, XB_TEMPLATE_NAME_MAX + 1, "debian-%s", suite);
        if ((dt = xb_template_find(s, from_name, tenant)) && !dt->rootfs) {
                xb_call_failf(c, XB_E_TEMPLATE_EXISTS, NULL,
                              "`%s` is a template of yours, not a clean Debian root; rename it to build from %s",
                              from_name, from);
                return -EEXIST;
        }
        *suite_out = dt ? NULL : suite;
        return 1;
}

/* The layer of a clean Debian root: one per suite (and mirror), shared by
 * every build from it, as the template debian-SUITE. */
static void
rootfs_made(void *data, const char *layer, const struct xb_err *err)
{
        struct build *b = data;
        struct xb_template *t;
        struct xb_err e2 = { 0 };
        char *layers[] = { (char *)layer, NULL };

        if (!layer) {
                xb_tb_fail(b, XB_E_TEMPLATE_BUILD_FAILED, "step %zu of %zu (rootfs: mmdebstrap %s) failed: %s",
                           b->cur + 1, b->nsteps, b->steps[b->cur].arg, err->msg);
                return;
        }
        if (!xb_template_find(b->core, b->from, b->tenant) &&
            xb_template_create(b->core, b->from, b->tenant, layers, true, &t, &e2) < 0) {
                xb_tb_fail(b, XB_E_TEMPLATE_BUILD_FAILED, "step %zu of %zu (rootfs) failed: %s", b->cur + 1,
                           b->nsteps, e2.msg);
                return;
        }
        b->cur++;
        xb_tb_create_sandbox(b);
}

static void
rootfs_output(void *data, const char *text, size_t n)
{
        struct build *b = data;
        static const char cut[] = "\n[execbox: the rest of mmdebstrap's output is not streamed; its end is in "
                                  "the template's progress.log_tail]\n";

        if (b->logged >= LOG_EVENTS_MAX) {
                /* Past the bound: the tail only (no client event). */
                struct xb_call *c = b->client;

                b->client = NULL;
                xb_tb_log(b, "stdout", text, n);
                b->client = c;
                return;
        }
        b->logged += n;
        xb_tb_log(b, "stdout", text, n);
        if (b->logged >= LOG_EVENTS_MAX)
                xb_tb_log(b, "stdout", cut, sizeof(cut) - 1);
}

void
xb_tb_rootfs_step(struct build *b)
{
        const char *suite = b->steps[b->cur].arg;
        char mirror[512] = "", layer[128];
        struct xb_err err = { 0 };
        unsigned long long h = 1469598103934665603ULL;

        if (!xb_host_debian_mirror(mirror, sizeof(mirror))) {
                xb_tb_fail(b, XB_E_TEMPLATE_BUILD_FAILED,
                           "step 1 of %zu (rootfs) failed: the host has no Debian mirror in /etc/apt to build from",
                           b->nsteps);
                return;
        }
        for (const char *c = mirror; *c; c++)
                h = (h ^ (unsigned char)*c) * 1099511628211ULL;
        snprintf(layer, sizeof(layer), "debian-%s-minbase-%08llx", suite, h & 0xffffffffULL);
        if (xb_rootfs_layer_exists(b->core, layer)) {
                rootfs_made(b, layer, NULL);
                return;
        }
        {
                /* unshare mode: its maintainer scripts run in a user namespace of their own. */
                char *argv[] = { (char *)"/bin/sh",
                                 (char *)"-c",
                                 (char *)"exec mmdebstrap --variant=minbase --mode=unshare --skip=output/dev "
                                         "--customize-hook='chroot \"$1\" useradd -m -u 1000 -U -s /bin/bash user' "
                                         "\"$0\" \"$XB_ROOTFS\" \"$1\"",
                                 (char *)suite,
                                 mirror,
                                 NULL };

                b->logged = 0;
                if (xb_rootfs_import(b->core, layer, argv, -1, rootfs_made, rootfs_output, b, &err) < 0)
                        xb_tb_fail(b, XB_E_TEMPLATE_BUILD_FAILED, "step 1 of %zu (rootfs) failed: %s", b->nsteps,
                                   err.msg);
        }
}
