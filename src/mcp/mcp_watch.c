/* Resource subscriptions that see every change: a legacy context's
 * resources/subscribe on a file:/// URI of its default sandbox starts a
 * directory watch (the watch_dir operation) on the file's directory, and a
 * change to that name, made by any process in the sandbox, sends
 * notifications/resources/updated. Unsubscribing, or the context going,
 * cancels the watch; one that ends (the sandbox or directory gone) leaves
 * the subscription to the tool-made changes (mcp_resource_changed). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/call.h"
#include "mcp/mcp_int.h"
#include "ops/jsonv.h"
#include "ops/ops.h"

#define WATCHES_MAX 8   /* per context: a sandbox has 32 in all */

struct mcp_watch {
        struct mcp_watch *next;
        struct xb_mcp_client *c;
        struct xb_call *call;         /* NULL once it ended */
        char *uri;
        char *name;                   /* the file's name in the watched directory */
};

static void
mw_event(void *ctx, const char *name, json_t *data)
{
        struct mcp_watch *w = ctx;
        const char *n = json_string_value(json_object_get(data, "name"));
        json_t *note;

        if (!name || strcmp(name, "event") || !n || strcmp(n, w->name) || !w->c->ops || !w->c->ops->notify)
                return;
        note = json_pack("{s:s,s:s,s:{s:s}}", "jsonrpc", "2.0", "method", "notifications/resources/updated", "params",
                         "uri", w->uri);
        w->c->ops->notify(w->c->ctx, note);
        json_decref(note);
}

static void
mw_done(void *ctx, json_t *result)
{
        ((struct mcp_watch *)ctx)->call = NULL;
        json_decref(result);
}

static void
mw_fail(void *ctx, const struct xb_err *err)
{
        (void)err;
        ((struct mcp_watch *)ctx)->call = NULL;
}

static const struct xb_sink_ops mw_sink = { .event = mw_event, .done = mw_done, .fail = mw_fail };

static void
mw_free(struct mcp_watch *w)
{
        if (w->call)
                xb_call_cancel(w->call);
        free(w->uri);
        free(w->name);
        free(w);
}

bool
mcp_watch_active(struct xb_mcp_client *c, const char *uri)
{
        for (struct mcp_watch *w = c->watches; w; w = w->next)
                if (w->call && !strcmp(w->uri, uri))
                        return true;
        return false;
}

void
mcp_watch_subscribe(struct xb_mcp_call *call, const char *uri, const char *path, bool sub)
{
        struct xb_mcp_client *c = call->c;
        const struct xb_op *op = xb_op_find("watch_dir");
        struct mcp_watch **pp, *w;
        _cleanup_(xb_json_decrefp) json_t *args = NULL;
        _cleanup_free_ char *dir = NULL;
        const char *slash;
        unsigned n = 0;

        for (pp = &c->watches; *pp; pp = &(*pp)->next, n++)
                if (!strcmp((*pp)->uri, uri))
                        break;
        if (!sub) {
                if ((w = *pp)) {
                        *pp = w->next;
                        mw_free(w);
                }
                return;
        }
        /* No sandbox yet, no files to watch; a second subscribe is one. */
        if (*pp || n >= WATCHES_MAX || !c->sandbox || !call->m->o.core || !op || !path || path[0] != '/' ||
            !(slash = strrchr(path, '/')) || !slash[1])
                return;
        if (!(dir = strndup(path, slash == path ? 1 : (size_t)(slash - path))) || !(w = calloc(1, sizeof(*w))))
                return;
        w->c = c;
        if (!(w->uri = strdup(uri)) || !(w->name = strdup(slash + 1)) ||
            !(w->call = xb_call_new(&mw_sink, w, XB_CALL_EVENTS)) ||
            !(args = json_pack("{s:s,s:s}", "id", c->sandbox, "path", dir))) {
                mw_free(w);
                return;
        }
        w->next = c->watches;
        c->watches = w;
        xb_op_run(op, call->m->o.core, c->tenant, args, w->call);
}

void
mcp_watch_free_all(struct xb_mcp_client *c)
{
        while (c->watches) {
                struct mcp_watch *w = c->watches;

                c->watches = w->next;
                mw_free(w);
        }
}
