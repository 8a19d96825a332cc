/* Error structs: a message plus errno, built up with context. */
#include "err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int
xb_err_set(struct xb_err *err, int errnum, const char *fmt, ...)
{
        if (errnum <= 0)
                errnum = errnum < 0 ? -errnum : EIO;
        if (err) {
                va_list ap;
                char head[sizeof(err->msg)];

                va_start(ap, fmt);
                vsnprintf(head, sizeof(head), fmt, ap);
                va_end(ap);
                err->code = errnum;
                snprintf(err->msg, sizeof(err->msg), "%s: %s", head, strerror(errnum));
        }
        return -errnum;
}

int
xb_err_msg(struct xb_err *err, int errnum, const char *fmt, ...)
{
        if (errnum <= 0)
                errnum = errnum < 0 ? -errnum : EIO;
        if (err) {
                va_list ap;

                va_start(ap, fmt);
                vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
                va_end(ap);
                err->code = errnum;
        }
        return -errnum;
}

int
xb_err_wrap(struct xb_err *err, const char *fmt, ...)
{
        va_list ap;
        char head[sizeof(err->msg)], old[sizeof(err->msg)];

        if (!err)
                return -EIO;
        va_start(ap, fmt);
        vsnprintf(head, sizeof(head), fmt, ap);
        va_end(ap);
        memcpy(old, err->msg, sizeof(old));
        snprintf(err->msg, sizeof(err->msg), "%s: %s", head, old);
        return -(err->code ? err->code : EIO);
}

int
xb_err_code(struct xb_err *err, enum xb_ecode ecode, int errnum, const char *hint, const char *fmt, ...)
{
        if (errnum <= 0)
                errnum = errnum < 0 ? -errnum : EIO;
        if (err) {
                va_list ap;

                va_start(ap, fmt);
                vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
                va_end(ap);
                err->code = errnum;
                err->ecode = ecode;
                err->hint = hint;
        }
        return -errnum;
}

const char *
xb_ecode_name(enum xb_ecode c)
{
        static const char *const names[] = {
#define XB_ECODE_NAME(e, name) [XB_E_##e] = name,
                XB_ECODES(XB_ECODE_NAME)
#undef XB_ECODE_NAME
        };

        return (unsigned)c < XB_E__COUNT ? names[c] : "error";
}

void
xb_err_clear(struct xb_err *err)
{
        if (err) {
                err->code = 0;
                err->ecode = XB_E_NONE;
                err->hint = NULL;
                err->msg[0] = '\0';
        }
}
