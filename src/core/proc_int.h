/* Internals shared by proc.c (spawn, pipes, output, verdicts, init's
 * events) and proc_wait.c (the calls waiting on a process, and its JSON).
 * Not for the rest of core: it uses core.h. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "core/core.h"

struct proc_waiter;
struct spill_req;

/* A stream's file inside the sandbox (proc_spill.c). */
struct proc_spill {
        int fd;                      /* read and write; -1: none (yet) */
        uint64_t written;            /* the stream's first bytes, all in the file */
        bool failed;                 /* the file stops at written (errnum says why) */
        int errnum;
        char *path;                  /* as the sandbox sees it */
        struct spill_req *req;       /* its open, in flight */
};

struct xb_proc {
        struct xb_proc *next;
        struct xb_defer defer;        /* proc_free */
        struct xb_sbx *sbx;
        uint32_t tag;                /* its pending tag, for init's events and signals */
        pid_t pid;
        char cmd[256];
        char *client_tag;            /* the client's name for it, or NULL */
        char *cwd;                   /* as asked */
        json_t *argv, *env;          /* as asked: argv, and the request's own env {K: V} */
        bool background;
        bool spawned, exited, finished, forgotten, unlinked;
        int status;
        bool timed_out, killed_by_request;
        uint64_t oom_before;
        uint64_t start_ms, end_ms, cpu_us, maxrss;
        uint64_t timeout_ms, yield_ms;
        struct xb_outbuf out, err;
        int out_fd, err_fd, in_fd;
        struct xb_io out_io, err_io, in_io;
        bool out_held;               /* the exec call's stream is behind: pipes not read */
        unsigned fds_held;
        bool budget_held;            /* pipes not read: the daemon's output budget is spent */           /* charged to the sandbox's fd budget until its pipes close */
        struct proc_spill sp_out, sp_err;   /* background: the whole streams */
        bool spill_wait;             /* background: pipes not read until the spawn names the files */
        unsigned spill_pending;      /* opens in flight: pipes not read until they answer */
        unsigned spill_fds;          /* charged to the fd budgets */
        struct xb_buf stdin_buf;
        bool stdin_close;            /* close stdin once stdin_buf drains */
        struct xb_timer hard, soft, drain;
        /* A terminal: the master comes over tty_sock as the command starts,
         * then stands for stdout (out_fd) and stdin (in_fd, a dup). */
        bool tty;
        int tty_sock;
        struct xb_io tty_io;
        uint16_t rows, cols;
        struct xb_result result;     /* valid once finished */
        json_t *audit;               /* its exec event so far (argv, cwd, user), logged at the end */
        struct xb_call *exec;        /* the exec call, if any (it counts as a waiter) */
        struct xb_call *start;       /* process_start waits for the spawn */
        struct proc_waiter *waiters; /* wait and long-poll read calls */
};

/* ---- proc.c ---- */
/* A process's init events (its pending tag's owner). */
const struct xb_pending_ops *proc_pending_ops(void);
/* Drop p from its sandbox (its memory goes at the next loop turn). Once. */
void proc_unlink(struct xb_proc *p);
/* Keep at most XB_FINISHED_KEPT finished processes, unless waited on. */
void proc_prune_finished(struct xb_sbx *x);
/* p exited and its pipes are done (or drained): its verdict and answers. */
void proc_finish(struct xb_proc *p);

/* ---- proc_io.c: pipes, stdin and the terminal ---- */
/* Read the pipes again after the exec call held them (or left). */
void proc_output_resume(struct xb_proc *p);
/* Watch the pipes, unless something holds them. */
void proc_watch_pipes(struct xb_proc *p);
/* Stop watching io and close *fd (then -1). */
void proc_close_pipe(struct xb_io *io, int *fd);
/* The output bytes p keeps in memory, charged to the daemon's budget. */
uint64_t proc_kept(const struct xb_proc *p);
/* Output memory came back: processes held by the budget are read again. */
void proc_budget_freed(struct xb_core *s);
/* p ended, or is being killed: read what is left in its pipes. */
void proc_budget_unhold(struct xb_proc *p);
/* The loop's callbacks for p's stdout or stderr, stdin and pty socket. */
void proc_on_output(struct xb_io *io, uint32_t events);
void proc_on_stdin(struct xb_io *io, uint32_t events);
void proc_on_tty(struct xb_io *io, uint32_t events);
/* Write what waits for stdin, as much as the pipe takes. */
void proc_pump_stdin(struct xb_proc *p);

/* ---- proc_spill.c: the whole streams in files inside the sandbox ---- */
/* Open p's files (background; a terminal's one stream is stdout); its
 * pipes wait for them. */
void proc_spill_start(struct xb_proc *p);
/* A re-adopted process (proc_adopt.c): go on with the files an earlier
 * daemon wrote, from their ends; the pipes are read once both are open.
 * err_path is NULL for a terminal. */
void proc_spill_resume(struct xb_proc *p, const char *out_path, const char *err_path);
/* The hard timeout, after_ms from now (0: at once). */
void proc_arm_hard(struct xb_proc *p, uint64_t after_ms);
/* Close them, and give back their fds (the files stay). */
void proc_spill_free(struct xb_proc *p);
/* Append n bytes; a failure stops the file there. */
void proc_spill_write(struct proc_spill *sp, const char *data, size_t n);
/* Up to max bytes at off, from the file; 0 when it does not hold off. */
size_t proc_spill_read(const struct proc_spill *sp, uint64_t off, char *dst, size_t max);
/* stdout_file and stderr_file ({path, bytes, complete, error}) into o. */
void proc_spill_json(const struct xb_proc *p, json_t *o);

/* ---- proc_wait.c: what the calls hear ---- */
/* A chunk of output ("stdout" or "stderr"): an event for the exec call. */
void proc_output(struct xb_proc *p, const char *name, const char *data, size_t n);
/* After a batch of output: restart the soft timer, answer readers. */
void proc_output_done(struct xb_proc *p);
/* p finished (p->result is set): answer the exec call and every waiter. */
void proc_answer_finished(struct xb_proc *p);
/* Init spawned p: answer the start call. */
void proc_answer_spawned(struct xb_proc *p);
/* The spawn failed: fail the exec or start call. */
void proc_answer_spawn_error(struct xb_proc *p, int errnum, const char *stage);
/* The sandbox died before p was confirmed: fail the start call with err. */
void proc_answer_gone(struct xb_proc *p, const struct xb_err *err);
/* The result so far of a running process (soft timeout, a wait's timeout). */
json_t *proc_running_json(const struct xb_proc *p);
