/* Verdict rules, and the result as JSON. */
#include "result.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "base/cleanup.h"
#include "base/utf8.h"

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

static json_t *
text_json(const struct xb_outbuf *b, const char *what)
{
        size_t len, clean_len;
        _cleanup_free_ char *raw = xb_outbuf_render(b, what, &len);
        _cleanup_free_ char *clean = raw ? xb_utf8_sanitize(raw, len, &clean_len) : NULL;

        /* Sanitised already: no second pass over tens of MB. */
        return clean ? json_stringn_nocheck(clean, clean_len) : json_string("");
}

json_t *
xb_result_json(const struct xb_result *res, pid_t pid)
{
        json_t *o = json_object();

        json_object_set_new(o, "status", json_string(xb_status_name(res->status)));
        json_object_set_new(o, "exit_code", res->exited ? json_integer(res->exit_code) : json_null());
        json_object_set_new(o, "signal", !res->exited && res->signal ? json_integer(res->signal) : json_null());
        json_object_set_new(o, "stdout", text_json(&res->out, "stdout"));
        json_object_set_new(o, "stderr", text_json(&res->err, "stderr"));
        json_object_set_new(o, "stdout_truncated", json_boolean(xb_outbuf_truncated(&res->out)));
        json_object_set_new(o, "stderr_truncated", json_boolean(xb_outbuf_truncated(&res->err)));
        json_object_set_new(o, "stdout_bytes", json_integer((json_int_t)res->out.total));
        json_object_set_new(o, "stderr_bytes", json_integer((json_int_t)res->err.total));
        json_object_set_new(o, "duration_ms", json_integer((json_int_t)res->wall_ms));
        json_object_set_new(o, "cpu_ms", json_integer((json_int_t)res->cpu_ms));
        json_object_set_new(o, "peak_memory", json_integer((json_int_t)res->peak_memory));
        if (pid > 0)
                json_object_set_new(o, "pid", json_integer(pid));
        return o;
}
