/* Exit statuses and kill lines (report.h). */
#include "cli/report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int
xb_cli_exit_status(const struct xb_cli_end *e)
{
        if (e->status && strcmp(e->status, "timeout") == 0)
                return XB_EXIT_TIMEOUT;
        if (!e->exited)
                return 128 + (e->signal > 0 && e->signal < 128 ? e->signal : 9);
        return e->exit_code & 0xff;
}

int
xb_cli_exec_failed_status(int errnum)
{
        return errnum == ENOENT ? XB_EXIT_NOT_FOUND : XB_EXIT_CANNOT_EXEC;
}

/* 268435456 -> "256 MiB", 1536 -> "1.5 KiB". */
const char *
xb_cli_size(uint64_t v, char *buf, size_t size)
{
        static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
        unsigned u = 0;

        while (u + 1 < sizeof(units) / sizeof(units[0]) && v >= (1ull << (10 * (u + 1))))
                u++;
        if (u == 0)
                snprintf(buf, size, "%" PRIu64 " bytes", v);
        else if (v % (1ull << (10 * u)) == 0)
                snprintf(buf, size, "%" PRIu64 " %s", v >> (10 * u), units[u]);
        else
                snprintf(buf, size, "%.1f %s", (double)v / (double)(1ull << (10 * u)), units[u]);
        return buf;
}

/* 60000 -> "60s", 1500 -> "1.5s", 250 -> "250ms". */
static const char *
ms_text(uint64_t ms, char *buf, size_t size)
{
        if (ms < 1000)
                snprintf(buf, size, "%" PRIu64 "ms", ms);
        else if (ms % 1000 == 0)
                snprintf(buf, size, "%" PRIu64 "s", ms / 1000);
        else
                snprintf(buf, size, "%.3gs", (double)ms / 1000.0);
        return buf;
}

void
xb_cli_report_kill(const struct xb_cli_end *e, const struct xb_cli_limits *l)
{
        const char *what = NULL, *s = e->status ? e->status : "";
        char v[64] = "";

        if (strcmp(s, "memory_limit") == 0) {
                what = "memory limit";
                if (l->memory)
                        xb_cli_size(l->memory, v, sizeof(v));
        } else if (strcmp(s, "timeout") == 0) {
                what = "time limit";
                if (l->wall_ms)
                        ms_text(l->wall_ms, v, sizeof(v));
        } else if (strcmp(s, "cpu_limit") == 0) {
                what = "CPU time limit";
                if (l->cpu_ms)
                        ms_text(l->cpu_ms, v, sizeof(v));
        } else if (strcmp(s, "output_limit") == 0 && !e->exited) {
                /* Only a kill: output past the limit alone is kept as head and tail. */
                what = "output limit";
                if (l->output)
                        xb_cli_size(l->output, v, sizeof(v));
        }
        if (what)
                fprintf(stderr, "execbox: killed: %s%s%s%s reached\n", what, v[0] ? " (" : "", v, v[0] ? ")" : "");
}
