/* The operations MCP runs: one entry (mcp_op and its context and detached
 * forms) that hands an operation of the op table its arguments and a sink,
 * and brings its events, result or error back to the call. MCP reaches the
 * engine only this way.
 *
 * An operation in flight is a struct mcp_op, linked from its call (or
 * context) and freed when the operation finishes or is cancelled, which
 * the call's end does. Either may happen inside mcp_op itself. */
#include <errno.h>
#include <stdlib.h>

#include "core/call.h"
#include "ops/ops.h"
#include "mcp/mcp_int.h"

struct mcp_op {
        struct xb_mcp_call *call;     /* whom it works for: a call, */
        struct xb_mcp_client *client; /* a context, or neither (detached) */
        struct xb_call *xc;           /* NULL once it finished or was cancelled */
        mcp_done_fn done;
        mcp_fail_fn fail;
        mcp_event_fn event;
        mcp_client_done_fn cdone;
        mcp_client_fail_fn cfail;
        bool inside;                  /* still in op_start, which frees it */
};

static bool
call_listens(const struct xb_mcp_call *call)
{
        return call && !call->answered && !call->abandoned;
}

/* The operation finished: unlink it, so that whatever the callback starts
 * next is the call's new operation. */
static void
op_finished(struct mcp_op *op)
{
        op->xc = NULL;
        if (op->call && op->call->op == op)
                op->call->op = NULL;
        if (op->client && op->client->op == op)
                op->client->op = NULL;
}

static void
op_event(void *ctx, const char *name, json_t *data)
{
        struct mcp_op *op = ctx;

        if (op->event && call_listens(op->call))
                op->event(op->call, name, data);
}

static void
op_done(void *ctx, json_t *result)
{
        struct mcp_op *op = ctx;

        op_finished(op);
        if (op->call && call_listens(op->call))
                op->done(op->call, result);
        else if (op->client)
                op->cdone(op->client, result);
        else
                json_decref(result);
        if (!op->inside)
                free(op);
}

static void
op_fail(void *ctx, const struct xb_err *err)
{
        struct mcp_op *op = ctx;

        op_finished(op);
        if (op->call && call_listens(op->call))
                (op->fail ? op->fail : mcp_tool_fail)(op->call, err);
        else if (op->client)
                op->cfail(op->client, err);
        if (!op->inside)
                free(op);
}

static const struct xb_sink_ops op_sink = { op_event, op_done, op_fail };

static void
oom(const struct mcp_op *tmpl)
{
        struct xb_err err = { .code = ENOMEM, .ecode = XB_E_NOMEM, .msg = "out of memory" };

        if (call_listens(tmpl->call))
                (tmpl->fail ? tmpl->fail : mcp_tool_fail)(tmpl->call, &err);
        else if (tmpl->client)
                tmpl->cfail(tmpl->client, &err);
}

static void
op_start(struct xb_mcp *m, int tenant, const struct mcp_op *tmpl, const char *name, json_t *args)
{
        const struct xb_op *o;
        struct mcp_op *op;

        if (m->closing)
                return;   /* the engine may be gone: no more operations */
        op = malloc(sizeof(*op));
        if (!op) {
                oom(tmpl);
                return;
        }
        *op = *tmpl;
        op->inside = true;
        op->xc = xb_call_new(&op_sink, op, op->event ? XB_CALL_EVENTS : 0);
        if (!op->xc) {
                free(op);
                oom(tmpl);
                return;
        }
        if (op->call)
                op->call->op = op;
        if (op->client)
                op->client->op = op;
        /* Without an engine (the unit tests) no operation runs. */
        o = m->o.core ? xb_op_find(name) : NULL;
        if (o)
                xb_op_run(o, m->o.core, tenant, args, op->xc);
        else
                xb_call_failf(op->xc, XB_E_INTERNAL, NULL, "the operation `%s` is not available here", name);
        op->inside = false;
        if (!op->xc)
                free(op);   /* finished or cancelled already */
}

void
mcp_op(struct xb_mcp_call *call, const char *name, json_t *args, mcp_done_fn done, mcp_fail_fn fail,
       mcp_event_fn event)
{
        struct mcp_op tmpl = { .call = call, .done = done, .fail = fail, .event = event };

        op_start(call->m, call->c->tenant, &tmpl, name, args);
}

void
mcp_op_client(struct xb_mcp_client *c, const char *name, json_t *args, mcp_client_done_fn done,
              mcp_client_fail_fn fail)
{
        struct mcp_op tmpl = { .client = c, .cdone = done, .cfail = fail };

        op_start(c->m, c->tenant, &tmpl, name, args);
}

void
mcp_op_detached(struct xb_mcp *m, int tenant, const char *name, json_t *args)
{
        struct mcp_op tmpl = { 0 };

        op_start(m, tenant, &tmpl, name, args);
}

void
mcp_op_cancel(struct mcp_op *op)
{
        struct xb_call *xc;

        if (!op)
                return;
        xc = op->xc;
        op_finished(op);
        op->call = NULL;
        op->client = NULL;
        xb_call_cancel(xc);
        if (!op->inside)
                free(op);
}
