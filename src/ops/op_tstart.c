/* A template's start command: run at sandbox_create, which answers once
 * it is ready (a port listens inside the sandbox, or a file exists), at
 * most start.timeout_s later (default 30 s). The start and the readiness
 * probe are ordinary operations (process_start, run_command) in the new
 * sandbox, so they run as its user, in its workdir, under its limits.
 * The probe reads /proc/net/tcp{,6} (no bash or netcat needed: busybox
 * images have grep), and stops early when the start command exits. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "core/core.h"
#include "core/templates.h"
#include "ops/op_tmpl.h"
#include "ops/subcall.h"

#define READY_DEFAULT_S 30

struct tstart {
        struct xb_core *core;
        int tenant;
        struct xb_call *client;       /* NULL once it left */
        json_t *sbx;                  /* the create's answer */
        char id[XB_SANDBOX_ID_LEN + 1];
        char *cmd, *file;
        uint16_t port;
        unsigned timeout_s;
        long long pid;
        uint64_t t0_ms;
        int stage;                    /* 0 create, 1 start, 2 probe, 3 output */
        int probe_rc;
};

static void
ts_free(struct tstart *t)
{
        json_decref(t->sbx);
        free(t->cmd);
        free(t->file);
        free(t);
}

static void
ts_left(void *owner)
{
        ((struct tstart *)owner)->client = NULL;
}

static void
ts_fail(struct tstart *t, const struct xb_err *err)
{
        if (t->client) {
                xb_call_on_cancel(t->client, NULL, NULL);
                xb_call_fail(t->client, err);
        }
        ts_free(t);
}

static void ts_next(void *owner, json_t *res, const struct xb_err *err);

/* Its steps hear no output: a probe's is read from the process at the end. */
static void
run(struct tstart *t, const char *op, json_t *args)
{
        xb_subcall_run(t->core, t->tenant, op, args, t, ts_next, NULL);
}

static void
delete_sbx(struct tstart *t)
{
        xb_subcall_run(t->core, t->tenant, "sandbox_delete", json_pack("{s:s}", "id", t->id), NULL, NULL, NULL);
}

static char *
probe_cmd(const struct tstart *t)
{
        char *s = NULL;
        char test[4200];
        unsigned tenths = t->timeout_s * 10;

        if (t->port)
                snprintf(test, sizeof(test),
                         "grep -qiE '^ *[0-9]+: [0-9A-F]+:%04X [0-9A-F]+:0000 0A ' "
                         "/proc/net/tcp /proc/net/tcp6 2>/dev/null",
                         t->port);
        else
                snprintf(test, sizeof(test), "test -e '%s'", t->file);
        /* 3: the start command ended first. */
        if (asprintf(&s,
                     "i=0; while [ $i -lt %u ]; do %s && exit 0; [ -d /proc/%lld ] || exit 3; sleep 0.1; "
                     "i=$((i+1)); done; exit 4",
                     tenths, test, t->pid) < 0)
                return NULL;
        return s;
}

static void
not_ready(struct tstart *t, json_t *out)
{
        struct xb_err err = { .ecode = XB_E_TEMPLATE_NOT_READY, .code = ETIMEDOUT };
        const char *o = json_string_value(json_object_get(out, "stdout")) ?: "";
        const char *e = json_string_value(json_object_get(out, "stderr")) ?: "";
        size_t no = strlen(o), ne = strlen(e);
        char what[4200];

        if (t->port)
                snprintf(what, sizeof(what), "listen on port %u", t->port);
        else
                snprintf(what, sizeof(what), "make %.4000s", t->file);
        snprintf(err.msg, sizeof(err.msg),
                 "the template's start command %s before it did %s (waited at most %u s); "
                 "the end of its output: %s%s",
                 t->probe_rc == 3 ? "exited" : "was not ready", what, t->timeout_s, no > 600 ? o + no - 600 : o,
                 ne > 600 ? e + ne - 600 : e);
        delete_sbx(t);
        ts_fail(t, &err);
}

static void
ts_next(void *owner, json_t *res, const struct xb_err *err)
{
        struct tstart *t = owner;
        json_int_t rc;

        switch (t->stage++) {
        case 0:   /* created */
                if (err) {
                        ts_fail(t, err);
                        return;
                }
                t->sbx = json_incref(res);
                snprintf(t->id, sizeof(t->id), "%s", json_string_value(json_object_get(res, "id")) ?: "");
                run(t, "process_start",
                    json_pack("{s:s,s:[sss],s:s}", "id", t->id, "argv", "/bin/sh", "-c", t->cmd, "tag",
                              "template-start"));
                return;
        case 1:   /* started */
                if (err) {
                        struct xb_err e2 = *err;

                        e2.ecode = XB_E_TEMPLATE_NOT_READY;
                        snprintf(e2.msg, sizeof(e2.msg), "the template's start command could not start: %s", err->msg);
                        delete_sbx(t);
                        ts_fail(t, &e2);
                        return;
                }
                t->pid = json_integer_value(json_object_get(res, "pid"));
                if (!t->port && !t->file) {
                        t->stage = 4;
                        break;
                }
                {
                        char *cmd = probe_cmd(t);

                        run(t, "run_command",
                            cmd ? json_pack("{s:s,s:[sss],s:s,s:I}", "id", t->id, "argv", "/bin/sh", "-c", cmd, "user",
                                            "root", "timeout_s", (json_int_t)t->timeout_s + 10)
                                : NULL);
                        free(cmd);
                }
                return;
        case 2:   /* probed */
                rc = err ? -1 : json_integer_value(json_object_get(res, "exit_code"));
                if (rc == 0 && !err && !strcmp(json_string_value(json_object_get(res, "status")) ?: "", "ok")) {
                        t->stage = 4;
                        break;
                }
                t->probe_rc = (int)rc;
                run(t, "process_read", json_pack("{s:s,s:I}", "id", t->id, "pid", (json_int_t)t->pid));
                return;
        case 3: /* its output, for the error */ not_ready(t, err ? NULL : res); return;
        default: return;
        }
        /* Ready. */
        if (t->client) {
                json_t *j = json_copy(t->sbx);

                json_object_set_new(j, "start",
                                    json_pack("{s:I,s:I}", "pid", (json_int_t)t->pid, "ready_ms",
                                              (json_int_t)(xb_now_ms() - t->t0_ms)));
                xb_call_on_cancel(t->client, NULL, NULL);
                xb_call_done(t->client, j);
        }
        ts_free(t);
}

struct xb_call *
xb_op_tstart_call(struct xb_core *s, int tenant, const struct xb_template *tp, struct xb_call *c)
{
        struct tstart *t = calloc(1, sizeof(*t));
        struct xb_call *inner = NULL;

        /* The call last: a sub-call ends by done or fail only, never dropped. */
        if (!t || !(t->cmd = strdup(tp->start_cmd)) || (tp->ready_file && !(t->file = strdup(tp->ready_file))) ||
            !(inner = xb_subcall_new(t, ts_next, NULL))) {
                if (t)
                        ts_free(t);
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return NULL;
        }
        t->core = s;
        t->tenant = tenant;
        t->client = c;
        t->port = tp->ready_port;
        t->timeout_s = tp->ready_timeout_s ? tp->ready_timeout_s : READY_DEFAULT_S;
        t->t0_ms = xb_now_ms();
        xb_call_on_cancel(c, ts_left, t);
        return inner;
}
