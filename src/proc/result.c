/* Verdict rules. */
#include "result.h"

#include <signal.h>
#include <sys/wait.h>

const char *
xb_status_name(enum xb_status s)
{
        static const char *const names[] = {
                [XB_ST_OK] = "ok", [XB_ST_EXIT_NONZERO] = "exit_nonzero", [XB_ST_TIMEOUT] = "timeout",
                [XB_ST_CPU_LIMIT] = "cpu_limit", [XB_ST_MEMORY_LIMIT] = "memory_limit",
                [XB_ST_OUTPUT_LIMIT] = "output_limit", [XB_ST_KILLED] = "killed",
                [XB_ST_RUNNING] = "running",
        };

        return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

void
xb_result_set_status(struct xb_result *res, bool exited, int status)
{
        res->exited = exited && WIFEXITED(status);
        res->exit_code = res->exited ? WEXITSTATUS(status) : -1;
        res->signal = res->exited ? 0 : exited && WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
}

enum xb_status
xb_verdict(const struct xb_verdict_in *v)
{
        /* An OOM kill anywhere in the run is the verdict even if the main
         * process survived it and exited on its own (v1 has no group OOM). */
        if (v->oom)
                return XB_ST_MEMORY_LIMIT;
        if (v->timed_out)
                return XB_ST_TIMEOUT;
        if (v->cpu_exceeded || (!v->exited && v->signal == SIGXCPU))
                return XB_ST_CPU_LIMIT;
        if (v->output_killed)
                return XB_ST_OUTPUT_LIMIT;
        if (!v->exited || v->killed_by_request)
                return XB_ST_KILLED;
        if (v->truncated)
                return XB_ST_OUTPUT_LIMIT;
        return v->exit_code == 0 ? XB_ST_OK : XB_ST_EXIT_NONZERO;
}
