/* One command in a fresh sandbox, start to finish: the engine behind
 * `execbox run`. Streams or captures output, enforces the wall, CPU and
 * output limits, and tears the sandbox down before returning. */
#pragma once
#include <stdbool.h>

#include "base/err.h"
#include "proc/result.h"
#include "sandbox/sandbox.h"

#define XB_DRAIN_MS 100   /* how long output may trail the main process's exit */

struct xb_run_opts {
        struct xb_sandbox_config sandbox;
        char *const *argv;
        char *const *env;       /* the complete environment */
        const char *cwd;
        uint32_t uid;           /* inside: 0 or XB_USER_UID */
        bool capture;           /* else stream to out_fd/err_fd */
        int out_fd, err_fd;
        int stdin_fd;           /* relayed through a pipe; -1 for /dev/null */
        bool kill_on_output_limit;
        int signal_fd;          /* optional signalfd: SIGINT/SIGTERM end the run; SIGWINCH resizes the tty */
        bool force_freezer;     /* tests: kill through the v1 freezer */
        /* A terminal: the command runs on a pty of the sandbox, its output
         * (stdout and stderr as one) goes where stdout would, stdin is
         * typed into it (its EOF is the terminal's EOF character). */
        bool tty;
        int tty_size_fd;        /* a terminal whose size the pty follows, or -1 */
};

/* Run; returns <0 with err set for execbox's own failures (setup, missing
 * command). res is filled on success and must be freed with xb_result_free;
 * on failure only res->exec_errno means anything. */
int xb_run(struct xb_engine *e, const struct xb_run_opts *o, struct xb_result *res, struct xb_err *err);
void xb_result_free(struct xb_result *res);
