/* Calls and sinks: see call.h. */
#define _GNU_SOURCE
#include "core/call.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

struct xb_call {
        const struct xb_sink_ops *ops;
        void *ctx;
        unsigned flags;
        void (*cancel)(void *owner);
        void *owner;
        bool held;
        void (*release)(void *owner);
        void *release_owner;
};

struct xb_call *
xb_call_new(const struct xb_sink_ops *ops, void *ctx, unsigned flags)
{
        struct xb_call *c = calloc(1, sizeof(*c));

        if (c)
                *c = (struct xb_call){ .ops = ops, .ctx = ctx, .flags = flags };
        return c;
}

void
xb_call_cancel(struct xb_call *c)
{
        if (!c)
                return;
        if (c->cancel)
                c->cancel(c->owner);
        free(c);
}

bool
xb_call_wants_events(const struct xb_call *c)
{
        return c->flags & XB_CALL_EVENTS;
}

void
xb_call_on_cancel(struct xb_call *c, void (*fn)(void *owner), void *owner)
{
        c->cancel = fn;
        c->owner = owner;
}

void
xb_call_hold(struct xb_call *c, bool on)
{
        bool was = c->held;

        c->held = on;
        if (was && !on && c->release)
                c->release(c->release_owner);
}

bool
xb_call_held(const struct xb_call *c)
{
        return c->held;
}

void
xb_call_on_release(struct xb_call *c, void (*fn)(void *owner), void *owner)
{
        c->release = fn;
        c->release_owner = owner;
}

void
xb_call_event(struct xb_call *c, const char *name, json_t *data)
{
        if (c->ops->event)
                c->ops->event(c->ctx, name, data);
}

void
xb_call_begin(struct xb_call *c)
{
        if ((c->flags & (XB_CALL_EVENTS | XB_CALL_BEGIN)) == (XB_CALL_EVENTS | XB_CALL_BEGIN) && c->ops->event)
                c->ops->event(c->ctx, NULL, NULL);
}

void
xb_call_done(struct xb_call *c, json_t *result)
{
        const struct xb_sink_ops *ops = c->ops;
        void *ctx = c->ctx;

        free(c);   /* first: the sink may start another call */
        ops->done(ctx, result ? result : json_object());
}

void
xb_call_fail(struct xb_call *c, const struct xb_err *err)
{
        const struct xb_sink_ops *ops = c->ops;
        void *ctx = c->ctx;
        struct xb_err e = *err;

        free(c);
        if (e.ecode == XB_E_NONE)
                e.ecode = XB_E_INTERNAL;
        ops->fail(ctx, &e);
}

void
xb_call_failf(struct xb_call *c, enum xb_ecode ecode, const char *hint, const char *fmt, ...)
{
        struct xb_err err = { .code = EIO, .ecode = ecode, .hint = hint };
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(err.msg, sizeof(err.msg), fmt, ap);
        va_end(ap);
        xb_call_fail(c, &err);
}
