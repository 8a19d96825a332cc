/* The REST adapter's one table from error code (base/ecode.h) to HTTP
 * status and hint, and the replies built from it. */
#pragma once
#include "base/err.h"
#include "transport/http.h"

struct xb_rest_status {
        unsigned status;
        const char *hint;   /* REST's advice: may name routes */
};

/* Every code has an entry (tests/unit/test_status.c checks). */
const struct xb_rest_status *xb_rest_status(enum xb_ecode c);
/* Reply with err: its code's status and wire name, err->hint or the
 * table's, and err->msg. */
void xb_rest_fail(struct xb_req *r, const struct xb_err *err);
