/* A background process of an earlier daemon's sandbox, rebuilt from what
 * init kept of it (adopt.c): its tag, pid, output pipes and the note the
 * earlier daemon left with them (a terminal's: its master alone, and its
 * stdin is that master again). Its output from here on is read as any
 * process's; what the earlier daemon had read stays in its stream files
 * inside the sandbox, which this daemon goes on with (proc_spill_resume). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/fd.h"
#include "core/proc_int.h"

int xb__proc_adopt(struct xb_sbx *x, uint32_t tag, pid_t pid, json_t *note, int *fds, size_t nfds);

int
xb__proc_adopt(struct xb_sbx *x, uint32_t tag, pid_t pid, json_t *note, int *fds, size_t nfds)
{
        struct xb_proc *p = calloc(1, sizeof(*p));
        const char *cmd = json_string_value(json_object_get(note, "cmd"));
        const char *cwd = json_string_value(json_object_get(note, "cwd"));
        const char *ctag = json_string_value(json_object_get(note, "tag"));
        json_int_t limit = json_integer_value(json_object_get(note, "limit"));
        json_int_t age = json_integer_value(json_object_get(note, "age_ms"));
        json_int_t started = json_integer_value(json_object_get(note, "started_at_unix_ms"));

        json_t *pty = json_object_get(note, "pty");

        /* Two pipes, or a terminal's master alone. */
        if (!p || nfds != (json_is_object(pty) ? 1u : 2u) || x->nprocs >= XB_PROCS_PER_SANDBOX) {
                free(p);
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
                return -ENOMEM;
        }
        p->sbx = x;
        p->in_fd = p->tty_sock = -1;
        p->sp_out.fd = p->sp_err.fd = -1;
        p->background = true;
        p->spawned = true;
        p->pid = pid;
        p->out_fd = fds[0];
        p->err_fd = nfds > 1 ? fds[1] : -1;
        p->tty = json_is_object(pty);
        /* It came from inside the sandbox once: it must still be a terminal. */
        if (p->tty && !isatty(p->out_fd)) {
                close(p->out_fd);
                free(p);
                return -ENOTTY;
        }
        xb_set_nonblock(p->out_fd, true);
        if (p->err_fd >= 0)
                xb_set_nonblock(p->err_fd, true);
        p->tag = xb_sbx_pending_add_at(x, proc_pending_ops(), p, tag);
        if (!p->tag) {
                close(p->out_fd);
                if (p->err_fd >= 0)
                        close(p->err_fd);
                free(p);
                return -EEXIST;
        }
        if (p->tty) {
                struct winsize ws = { 0 };

                /* Its size now (a resize since the note is the kernel's). */
                if (ioctl(p->out_fd, TIOCGWINSZ, &ws) == 0) {
                        p->rows = ws.ws_row;
                        p->cols = ws.ws_col;
                } else {
                        p->rows = (uint16_t)json_integer_value(json_object_get(pty, "rows"));
                        p->cols = (uint16_t)json_integer_value(json_object_get(pty, "cols"));
                }
                p->in_fd = fcntl(p->out_fd, F_DUPFD_CLOEXEC, 3);
                if (p->in_fd >= 0) {
                        xb_set_nonblock(p->in_fd, true);
                        xb_io_start(x->core->loop, &p->in_io, p->in_fd, 0, proc_on_stdin, p);
                }
        }
        xb_outbuf_init(&p->out, limit > 0 ? (uint64_t)limit : ((uint64_t)1 << 20));
        xb_outbuf_init(&p->err, limit > 0 ? (uint64_t)limit : ((uint64_t)1 << 20));
        snprintf(p->cmd, sizeof(p->cmd), "%s", cmd ? cmd : "");
        p->cwd = cwd ? strdup(cwd) : NULL;
        p->client_tag = ctag ? strdup(ctag) : NULL;
        p->argv = json_incref(json_object_get(note, "argv"));
        p->env = json_incref(json_object_get(note, "env"));
        {
                uint64_t now = xb_now_ms(), unow = xb_unix_ms();

                /* Its start by the wall clock (the monotonic one is per boot,
                 * and this daemon's start is not the process's); a note of a
                 * daemon before started_at_unix_ms only knows its age then. */
                if (started > 0 && (uint64_t)started <= unow)
                        age = (json_int_t)(unow - (uint64_t)started);
                p->start_ms = age > 0 && (uint64_t)age < now ? now - (uint64_t)age : now;
        }
        if (xb_fds_charge(x, XB_FDS_PER_PROCESS, NULL) == 0)
                p->fds_held = XB_FDS_PER_PROCESS;
        xb_sbx_ref(x);
        p->next = x->procs;
        x->procs = p;
        x->nprocs++;
        {
                json_t *spill = json_object_get(note, "spill");
                const char *o = json_string_value(json_array_get(spill, 0)), *e = json_string_value(json_array_get(spill, 1));
                json_int_t at = json_integer_value(json_object_get(note, "timeout_at_unix_ms"));

                /* A deadline survives the restart: the wall clock (the monotonic
                 * one is per boot, and the daemon's start is not the process's). */
                if (at > 0)
                        proc_arm_hard(p, (uint64_t)at > xb_unix_ms() ? (uint64_t)at - xb_unix_ms() : 0);
                if (o && !strncmp(o, "/var/tmp/execbox/", 17) && p->tty)
                        proc_spill_resume(p, o, NULL);
                else if (o && e && !strncmp(o, "/var/tmp/execbox/", 17) && !strncmp(e, "/var/tmp/execbox/", 17))
                        proc_spill_resume(p, o, e);
                else
                        proc_watch_pipes(p);
        }
        return 0;
}
