/* One-line log records on stderr: "execbox: level: message", with an
 * sd-daemon priority prefix when stderr is the journal. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static enum xb_log_level current = XB_LOG_INFO;

void
xb_log_set_level(enum xb_log_level level)
{
        current = level;
}

/* systemd.exec(5): JOURNAL_STREAM is "DEV:INO" of the stream stderr was
 * connected to; a redirected stderr no longer matches, so check both. */
static int
journal_stderr(void)
{
        static int cached = -1;
        const char *e;
        unsigned long long dev, ino;
        struct stat st;

        if (cached >= 0)
                return cached;
        cached = 0;
        e = getenv("JOURNAL_STREAM");
        if (e && sscanf(e, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
            (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino)
                cached = 1;
        return cached;
}

static void
vrecord(enum xb_log_level level, const char *kind, const char *fmt, va_list ap)
{
        /* sd-daemon(3): 3 err, 4 warning, 6 info, 7 debug. */
        static const int prio[] = { 3, 4, 6, 7 };
        char line[4096];
        int n = 0, k;

        /* One write per line (stderr is unbuffered), so lines never interleave. */
        if (journal_stderr())
                n = snprintf(line, sizeof(line), "<%d>", prio[level]);
        n += snprintf(line + n, sizeof(line) - (size_t)n, "execbox: %s: ", kind);
        k = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
        n = k < 0 ? n : n + k >= (int)sizeof(line) - 1 ? (int)sizeof(line) - 2 : n + k;
        line[n++] = '\n';
        fwrite(line, 1, (size_t)n, stderr);
}

void
xb_log(enum xb_log_level level, const char *fmt, ...)
{
        static const char *const names[] = { "error", "warning", "info", "debug" };
        va_list ap;

        if (level > current)
                return;
        va_start(ap, fmt);
        vrecord(level, names[level], fmt, ap);
        va_end(ap);
}

void
xb_log_record(enum xb_log_level level, const char *kind, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vrecord(level, kind, fmt, ap);
        va_end(ap);
}
