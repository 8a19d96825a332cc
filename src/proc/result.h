/* Verdicts and the result of one command, shared by `execbox run`
 * (proc/run.c) and the daemon's processes (core/proc.c). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/outbuf.h"

enum xb_status {
        XB_ST_OK,
        XB_ST_EXIT_NONZERO,
        XB_ST_TIMEOUT,
        XB_ST_CPU_LIMIT,
        XB_ST_MEMORY_LIMIT,
        XB_ST_OUTPUT_LIMIT,
        XB_ST_KILLED,
        XB_ST_RUNNING,        /* soft timeout: still going */
};

const char *xb_status_name(enum xb_status s);

struct xb_result {
        enum xb_status status;
        bool exited;          /* else killed by `signal` */
        int exit_code;
        int signal;
        uint64_t wall_ms, cpu_ms, peak_memory;
        struct xb_outbuf out, err;
        int interrupted_by;   /* the signal that made execbox run stop the command, or 0 */
        int exec_errno;       /* the command could not be executed (ENOENT, EACCES...), or 0 */
};

/* exited, exit_code and signal from a wait status; a command that never
 * reported one (exited false) was killed with SIGKILL. */
void xb_result_set_status(struct xb_result *res, bool exited, int status);

/* The result as JSON: status, exit_code, signal, stdout and stderr (as
 * valid UTF-8, with the marker where output was dropped), their sizes,
 * duration_ms, cpu_ms, peak_memory, and pid when pid > 0. A new reference. */
json_t *xb_result_json(const struct xb_result *res, pid_t pid);

/* What ended the run, from the caller's view, to pick a verdict. */
struct xb_verdict_in {
        bool exited;
        int exit_code, signal;
        bool timed_out, cpu_exceeded, oom, output_killed, killed_by_request;
        bool truncated;
};

/* Precedence: memory (any OOM kill in the run), timeout, cpu, output kill,
 * signal, truncated output, exit code. Callers that share a cgroup among
 * several commands set oom only for a command the OOM killer hit. Pure,
 * unit-tested. */
enum xb_status xb_verdict(const struct xb_verdict_in *v);
