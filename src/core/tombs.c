/* Tombstones: what the registry remembers of a sandbox that ended, so a
 * later request for it hears why (410) rather than a bare 404. A ring of
 * XB_TOMBS_MAX entries, each kept XB_TOMB_KEEP_MS: bounded, whatever the
 * churn. Kept across a restart of the daemon (records.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"

void
xb_tomb_add(struct xb_core *s, const struct xb_sbx *x)
{
        struct xb_tomb *t = &s->tombs[s->tomb_next];

        s->tomb_next = (s->tomb_next + 1) % XB_TOMBS_MAX;
        memcpy(t->id, x->id, sizeof(t->id));
        t->tenant = x->tenant;
        t->end = x->end;
        t->ended_ms = xb_now_ms();
        snprintf(t->why, sizeof(t->why), "%s", x->error[0] ? x->error : "the sandbox ended");
        xb_tomb_persist(s, t);
}

const struct xb_tomb *
xb_tomb_find(const struct xb_core *s, const char *id, int tenant)
{
        uint64_t now = xb_now_ms();

        if (!id || strlen(id) != XB_SANDBOX_ID_LEN)
                return NULL;
        for (size_t i = 0; i < XB_TOMBS_MAX; i++) {
                const struct xb_tomb *t = &s->tombs[i];

                /* Another tenant's: as unknown to this caller as the live one would be. */
                if (t->ended_ms && !strcmp(t->id, id) && t->tenant == tenant && now - t->ended_ms <= XB_TOMB_KEEP_MS)
                        return t;
        }
        return NULL;
}

int
xb_tomb_err(const struct xb_tomb *t, struct xb_err *err)
{
        /* No time in the words: replies are compared, and the why says enough. */
        return xb_err_code(err, XB_E_SANDBOX_ENDED, ESRCH, NULL, "sandbox `%s` has ended: %s", t->id, t->why);
}
