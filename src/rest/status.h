/* The REST adapter's one table from error code (base/ecode.h) to HTTP
 * status and hint, and the replies built from it. */
#pragma once
#include "base/err.h"
#include "transport/http.h"

struct xb_rest_status {
        unsigned status;
        const char *hint;   /* REST's advice: may name routes */
        const char *more;   /* appended to the engine's message (REST's words), or NULL */
};

/* Every code has an entry (tests/unit/test_status.c checks). */
const struct xb_rest_status *xb_rest_status(enum xb_ecode c);
/* err's message as REST gives it: err->msg and its code's `more`. Returns
 * buf, or err->msg itself when there is nothing to add. */
#define XB_REST_MSG_MAX (sizeof(((struct xb_err *)0)->msg) + 128)
const char *xb_rest_message(const struct xb_err *err, char *buf, size_t cap);
/* Reply with err: its code's status and wire name, err->hint or the
 * table's, and xb_rest_message. */
void xb_rest_fail(struct xb_req *r, const struct xb_err *err);
