/* A pooled sandbox's warm-up: when its init is ready, and while nobody
 * has claimed it, it runs `/bin/bash -l -c true` once as its user, under a
 * keeper, the way a client's first command (E2B's SDK runs every command
 * so) would run; the sandbox is ready once that has ended. A fresh
 * sandbox's first command paid for what nothing had touched yet: its
 * overlay's dentries and inodes, init's first fork (its pages copied on
 * write), the keeper's: REST exec of bash -l -c true in 30 fresh
 * sandboxes took 4.5 ms of CPU against 3.7 for the second one, 7.5 ms of
 * wall time against 6.0. Now the pool pays it, before the claim.
 *
 * It leaves nothing a client could find: it is no process of the engine
 * (no pid in the lists, no audit event: a pooled sandbox has no audit log
 * yet, no exec in the metrics), its output goes to /dev/null, bash -c
 * keeps no history, and the sandbox is still starting meanwhile: a claim
 * prefers a ready one, and a create that claims this one waits for its
 * ready, as for any sandbox still starting, so the warm-up and its keeper
 * have ended before the client can run anything. What remains is what the
 * kernel keeps warm, and the pids it used (a client's first command gets
 * a pid a few numbers higher). A warm-up that fails to start is skipped;
 * one that has not ended after XB_WARM_MAX_MS ends its sandbox, which the
 * pool replaces. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/sbx_int.h"
#include "proc/env.h"
#include "proc/initc.h"
#include "sandbox/execspec.h"

#define XB_WARM_MAX_MS 5000

struct xb_pool_warm {
        struct xb_sbx *x;
        uint32_t tag;
        struct xb_timer limit;
};

/* Over: the sandbox is ready, unless it is going (died: ready means nothing). */
static void
warm_end(struct xb_pool_warm *w, bool ready)
{
        struct xb_sbx *x = w->x;

        xb_timer_stop(&w->limit);
        if (w->tag)
                xb_sbx_pending_del(x, w->tag);
        free(w);
        if (ready && x->state == XB_SBX_STARTING)
                xb__sbx_ready(x);
}

static void
warm_exited(void *ctx, int status, uint64_t cpu_us, uint64_t maxrss_kb)
{
        (void)status;
        (void)cpu_us;
        (void)maxrss_kb;
        warm_end(ctx, true);
}

static void
warm_error(void *ctx, int errnum, const char *stage)
{
        struct xb_pool_warm *w = ctx;

        xb_debug("pool: sandbox %s: no warm-up (%s: %s)", w->x->id, stage ? stage : "spawn", strerror(errnum));
        warm_end(w, true);
}

static void
warm_died(void *ctx, const char *why)
{
        struct xb_pool_warm *w = ctx;

        (void)why;
        w->tag = 0;   /* the table is emptied already */
        warm_end(w, false);
}

static void
warm_overdue(struct xb_timer *t)
{
        struct xb_pool_warm *w = t->data;

        xb_warn("pool: sandbox %s: its warm-up did not end in %d ms; ending the sandbox", w->x->id, XB_WARM_MAX_MS);
        xb_sbx_destroy(w->x, XB_SBX_SETUP_FAILED, "the warm pool's warm-up did not end");
}

static const struct xb_pending_ops warm_ops = {
        .exited = warm_exited, .error = warm_error, .died = warm_died,
};

bool
xb__pool_warm_run(struct xb_sbx *x)
{
        char *argv[] = { (char *)"/bin/bash", (char *)"-l", (char *)"-c", (char *)"true", NULL };
        struct xb_pool_warm *w;
        struct xb_exec_spec q;
        struct xb_err err = { 0 };
        char **env = NULL;
        int r;

        x->warm_up = false;
        if (!x->sb || xb_env_build("/home/user", x->uid, NULL, 0, &env, &err) < 0)
                return false;
        w = calloc(1, sizeof(*w));
        if (!w || !(w->tag = xb_sbx_pending_add(x, &warm_ops, w))) {
                free(w);
                xb_strv_free(env);
                return false;
        }
        w->x = x;
        q = (struct xb_exec_spec){
                .argv = argv, .env = env, .cwd = x->uid ? "/home/user" : "/root", .uid = x->uid, .gid = x->uid,
                .std = { -1, -1, -1 }, .tty_sock = -1, .keeper = true,
        };
        r = xb_initc_spawn(x->sb->sock, w->tag, &q, &err);
        xb_strv_free(env);
        if (r < 0) {
                xb_sbx_pending_del(x, w->tag);
                free(w);
                return false;
        }
        xb_timer_start(x->core->loop, &w->limit, XB_WARM_MAX_MS, warm_overdue, w);
        return true;
}
