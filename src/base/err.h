/* Error reporting: functions return -errno and optionally fill a struct
 * xb_err with a message; callers add context on the way up. The layers
 * below core (base, proto, sandbox, proc, init) never log. */
#pragma once
#include <stddef.h>

#include "base/ecode.h"

struct xb_err {
        int code;           /* positive errno, 0 when unset */
        enum xb_ecode ecode; /* what went wrong, for the client; XB_E_NONE when unset */
        const char *hint;   /* static, protocol-neutral advice that beats the adapter's default; or NULL */
        unsigned retry_s;   /* with XB_E_OVER_QUOTA: seconds until a retry may succeed */
        char msg[480];
};

/* Set err (if non-NULL) to errnum and a formatted message; returns -errnum. */
int xb_err_set(struct xb_err *err, int errnum, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Like xb_err_set, without appending strerror(errnum). */
int xb_err_msg(struct xb_err *err, int errnum, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Prefix the message in err with more context; returns -err->code. */
int xb_err_wrap(struct xb_err *err, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* Set err's client-facing code and optional neutral hint, and a formatted
 * message (no strerror); returns -errnum (EIO when errnum is 0). */
int xb_err_code(struct xb_err *err, enum xb_ecode ecode, int errnum, const char *hint, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));

/* Clear err. */
void xb_err_clear(struct xb_err *err);
