/* One operation in flight, and the sink it reports to.
 *
 * An adapter (REST, MCP, a plugin route, a test) makes a call with its
 * sink and hands it to an operation. The operation reports events (output
 * as it comes, when the caller asked for them), then exactly one of done
 * or fail; the call is freed right after. Either may happen before the
 * operation returns. If the client leaves first, the adapter cancels the
 * call: the operation's cancel hook runs (a departed exec kills its
 * command; a departed wait does not), the call is freed, and the sink
 * hears nothing more. */
#pragma once
#include <jansson.h>
#include <stdbool.h>

#include "base/err.h"

struct xb_sink_ops {
        void (*event)(void *ctx, const char *name, json_t *data);   /* data is borrowed; optional */
        void (*done)(void *ctx, json_t *result);                    /* takes result */
        void (*fail)(void *ctx, const struct xb_err *err);          /* err->ecode says what failed */
};

#define XB_CALL_EVENTS 0x1u   /* the caller wants events (a stream), not only the result */
#define XB_CALL_BEGIN 0x2u    /* with events: the sink's event also hears xb_call_begin, as name NULL */

struct xb_call;

/* ---- the adapter's side ---- */

/* NULL when out of memory: the adapter answers that itself. */
struct xb_call *xb_call_new(const struct xb_sink_ops *ops, void *ctx, unsigned flags);
/* The client left: run the cancel hook and free the call. Only before done or fail. */
void xb_call_cancel(struct xb_call *c);

/* Backpressure: a streaming adapter whose client reads slower than events
 * come holds the call; the operation stops reading its source (a command
 * then blocks on its full pipe, it is not killed) until released, and
 * hears of the release through its xb_call_on_release hook. */
void xb_call_hold(struct xb_call *c, bool on);

/* ---- the operation's side ---- */

bool xb_call_wants_events(const struct xb_call *c);
/* Who to tell when the call is cancelled (one hook; NULL clears it). */
void xb_call_on_cancel(struct xb_call *c, void (*fn)(void *owner), void *owner);
void xb_call_event(struct xb_call *c, const char *name, json_t *data);   /* borrows data */
/* Whether the adapter holds the call (xb_call_hold): produce no more events
 * until fn(owner) says it is released (one hook; NULL clears it). */
bool xb_call_held(const struct xb_call *c);
void xb_call_on_release(struct xb_call *c, void (*fn)(void *owner), void *owner);
/* The operation accepted the call and its events start now, perhaps long
 * before the first one (a streaming adapter sends its headers). Only for
 * a call that wants events; a sink without XB_CALL_BEGIN hears nothing. */
void xb_call_begin(struct xb_call *c);
/* Finish: the sink gets result (taken; NULL means {}), then c is freed. */
void xb_call_done(struct xb_call *c, json_t *result);
/* Finish with err (err->ecode set); c is freed. */
void xb_call_fail(struct xb_call *c, const struct xb_err *err);
/* xb_call_fail with a formatted message. */
void xb_call_failf(struct xb_call *c, enum xb_ecode ecode, const char *hint, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
