/* One-line log records on stderr: "execbox: level: message". */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static enum xb_log_level current = XB_LOG_INFO;

void
xb_log_set_level(enum xb_log_level level)
{
        current = level;
}

void
xb_log(enum xb_log_level level, const char *fmt, ...)
{
        static const char *const names[] = { "error", "warning", "info", "debug" };
        va_list ap;

        if (level > current)
                return;
        fprintf(stderr, "execbox: %s: ", names[level]);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}
