/* Internal calls: see subcall.h. */
#include "ops/subcall.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

struct sub {
        void *owner;
        xb_subcall_then then;
        xb_subcall_output output;
};

static void
sub_event(void *ctx, const char *name, json_t *data)
{
        struct sub *u = ctx;
        json_t *dv = json_object_get(data, "data");
        const char *d = json_string_value(dv);

        /* Only output: begin (name NULL) and the rest are the client's business. */
        if (!u->output || !name || !d || (strcmp(name, "stdout") && strcmp(name, "stderr")))
                return;
        u->output(u->owner, name, d, json_string_length(dv));
}

static void
sub_done(void *ctx, json_t *res)
{
        struct sub *u = ctx;

        if (u->then)
                u->then(u->owner, res, NULL);
        json_decref(res);
        free(u);
}

static void
sub_fail(void *ctx, const struct xb_err *err)
{
        struct sub *u = ctx;

        if (u->then)
                u->then(u->owner, NULL, err);
        free(u);
}

static const struct xb_sink_ops sub_ops = { .event = sub_event, .done = sub_done, .fail = sub_fail };

struct xb_call *
xb_subcall_new(void *owner, xb_subcall_then then, xb_subcall_output output)
{
        struct sub *u = calloc(1, sizeof(*u));
        struct xb_call *c = u ? xb_call_new(&sub_ops, u, output ? XB_CALL_EVENTS : 0) : NULL;

        if (!c) {
                free(u);
                return NULL;
        }
        *u = (struct sub){ owner, then, output };
        return c;
}

void
xb_subcall_run(struct xb_core *s, int tenant, const char *op, json_t *args, void *owner, xb_subcall_then then,
               xb_subcall_output output)
{
        const struct xb_op *o = xb_op_find(op);
        struct xb_call *c = o && args ? xb_subcall_new(owner, then, output) : NULL;
        struct xb_err err = { 0 };

        if (!c) {
                json_decref(args);
                if (!o)
                        xb_err_code(&err, XB_E_INTERNAL, ENOENT, NULL, "no operation `%s`", op);
                else
                        xb_err_code(&err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
                if (then)
                        then(owner, NULL, &err);
                return;
        }
        xb_op_run(o, s, tenant, args, c);
        json_decref(args);
}
