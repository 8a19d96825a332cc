/* How execbox's commands that run something end, for `execbox run` and
 * `execbox exec`: the exit status as timeout(1), env(1) and the shells
 * give it, and one stderr line when a limit killed the command. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XB_EXIT_TIMEOUT 124      /* as timeout(1) */
#define XB_EXIT_CANNOT_EXEC 126  /* found but not executable */
#define XB_EXIT_NOT_FOUND 127

/* The end of a command: status is a verdict name (proc/result.h). */
struct xb_cli_end {
        const char *status;
        bool exited;
        int exit_code, signal;
};

/* What the kill line names; 0 where unknown. */
struct xb_cli_limits {
        uint64_t memory, output, wall_ms, cpu_ms;
};

/* 124 for a timeout, 128+N for death by signal N, else the exit code. */
int xb_cli_exit_status(const struct xb_cli_end *e);
/* 127 for ENOENT, 126 for any other failed execve. */
int xb_cli_exec_failed_status(int errnum);
/* 268435456 -> "256 MiB", into buf. */
const char *xb_cli_size(uint64_t v, char *buf, size_t size);
/* "execbox: killed: memory limit (256 MiB) reached" on stderr when a
 * memory, output, time or CPU time limit ended the command. */
void xb_cli_report_kill(const struct xb_cli_end *e, const struct xb_cli_limits *l);
