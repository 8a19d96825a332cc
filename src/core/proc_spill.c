/* The whole output stream of a background process, in a file inside its
 * sandbox (design.md, invariant 10): the daemon keeps a head and a tail
 * in memory (struct xb_outbuf, under the output budget), and every byte
 * also goes to /var/tmp/execbox/proc-<pid>.stdout (and .stderr), written in
 * the sandbox's own writable layer, so it is charged to its disk limit.
 * Reads by offset are served from the file while it holds the offset.
 *
 * The files are opened like any file API write, by init as the sandbox's
 * user (core/files.h); the daemon reopens the fd it gets through
 * /proc/self/fd (the same inode, never a path inside the sandbox) for
 * reading and writing. The pipes are not read until init reported the
 * spawn (the pid names the files) and both opens answered, so no byte
 * misses the file; a process blocks on its pipe meanwhile. A
 * file that cannot be opened, or a write that fails (the disk limit:
 * EDQUOT), stops that file where it is: the stream's JSON says so, and
 * the head and tail in memory still answer. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files.h"
#include "core/files_int.h"
#include "core/proc_int.h"

#define SPILL_DIR "/var/tmp/execbox"
#define SPILL_FDS XB_FDS_PER_SPILL    /* one per stream, charged to the fd budgets */

/* One open in flight: the call's sink and the fd op's context at once, so
 * two references (each side drops one, in whichever order they end). */
struct spill_req {
        struct xb_proc *p;           /* NULL once p is gone */
        struct xb_call *call;        /* until its sink hears the end */
        struct proc_spill *sp;
        unsigned refs;
        bool resume;                 /* proc_spill_resume: keep the file, go on from its end */
};

static void
req_unref(struct spill_req *q)
{
        if (--q->refs == 0)
                free(q);
}

static void
spill_fail(struct proc_spill *sp, int errnum)
{
        sp->failed = true;
        if (!sp->errnum)
                sp->errnum = errnum ? errnum : EIO;
}

/* The open ended (done or failed): once both have, read the pipes. */
static void
req_ended(struct spill_req *q)
{
        struct xb_proc *p = q->p;

        q->call = NULL;
        if (p) {
                q->sp->req = NULL;
                if (p->spill_pending && --p->spill_pending == 0)
                        proc_watch_pipes(p);
        }
        req_unref(q);
}

static void
sink_done(void *ctx, json_t *result)
{
        json_decref(result);
        req_ended(ctx);
}

static void
sink_fail(void *ctx, const struct xb_err *err)
{
        struct spill_req *q = ctx;

        if (q->p)
                spill_fail(q->sp, err->code);
        req_ended(q);
}

static const struct xb_sink_ops spill_sink = { .done = sink_done, .fail = sink_fail };

static void
spill_opened(void *ctx, struct xb_sbx *x, char **path, struct xb_call *c, int fd, const struct stat *st)
{
        struct spill_req *q = ctx;
        char self[64];
        int rw;

        (void)x;
        (void)path;
        (void)st;
        /* Read and write: the same inode, reopened. */
        snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
        rw = open(self, O_RDWR | O_CLOEXEC);
        close(fd);
        if (rw >= 0 && q->resume && q->p) {
                /* What the earlier daemon read is in the file: the stream goes on at its end. */
                q->sp->written = (uint64_t)st->st_size;
                xb_outbuf_skip(q->sp == &q->p->sp_out ? &q->p->out : &q->p->err, (uint64_t)st->st_size);
        } else if (rw >= 0 && ftruncate(rw, 0) < 0) {
                close(rw);
                rw = -1;
        }
        if (rw < 0) {
                int e = errno;

                if (rw >= 0)
                        close(rw);
                xb_call_failf(c, XB_E_FILE_REQUEST_FAILED, NULL, "open the output file: %s", strerror(e));
                return;
        }
        if (q->p)
                q->sp->fd = rw;
        else
                close(rw);
        xb_call_done(c, NULL);
}

static void
spill_free(void *ctx)
{
        req_unref(ctx);
}

static const struct xb_fileop_fd_ops spill_fd_ops = { .opened = spill_opened, .free = spill_free, .background = true };

/* Open sp's file: path (taken), or a new proc-PID.name when NULL. */
static void
spill_open(struct xb_proc *p, struct proc_spill *sp, const char *name, char *path)
{
        struct xb_file_req fq = { .op = XB_FOP_WRITE, .depth = 1, .mode = 0644, .flags = XB_FILE_PARENTS };
        struct spill_req *q = calloc(1, sizeof(*q));
        bool resume = path != NULL;
        int r = resume ? 0 : -1;

        /* proc-PID, unless a process the sandbox had before with that pid
         * (pids wrap) still holds the name. */
        for (struct xb_proc *o = p->sbx->procs; !resume && o; o = o->next)
                if (o != p && o->spawned && o->pid == p->pid && (o->sp_out.path || o->sp_err.path))
                        r = -2;
        if (q && !resume)
                r = r == -1 ? asprintf(&path, SPILL_DIR "/proc-%d.%s", (int)p->pid, name)
                            : asprintf(&path, SPILL_DIR "/proc-%d-%08x.%s", (int)p->pid, p->tag, name);
        if (!q || r < 0 || !(sp->path = strdup(path)) || !(q->call = xb_call_new(&spill_sink, q, 0))) {
                free(q);
                free(path);
                spill_fail(sp, ENOMEM);
                return;
        }
        /* An earlier daemon's file is read-opened (never created or cut) and reopened read-write. */
        if (resume) {
                fq.op = XB_FOP_READ;
                fq.flags = 0;
        }
        *q = (struct spill_req){ .p = p, .call = q->call, .sp = sp, .refs = 2, .resume = resume };
        sp->req = q;
        p->spill_pending++;
        fq.path = path;
        xb_fileop_start_fd(p->sbx, &fq, path, &spill_fd_ops, q, q->call);
}

void
proc_spill_start(struct xb_proc *p)
{
        p->sp_out.fd = p->sp_err.fd = -1;
        if (xb_fds_charge(p->sbx, SPILL_FDS, NULL) < 0) {
                spill_fail(&p->sp_out, EMFILE);
                spill_fail(&p->sp_err, EMFILE);
                return;
        }
        p->spill_fds = SPILL_FDS;
        /* Held until both answer (either may answer at once). */
        p->spill_pending++;
        spill_open(p, &p->sp_out, "stdout", NULL);
        /* A terminal has one stream: its master stands for stdout. */
        if (!p->tty)
                spill_open(p, &p->sp_err, "stderr", NULL);
        p->spill_pending--;
}

void
proc_spill_resume(struct xb_proc *p, const char *out_path, const char *err_path)
{
        char *o = strdup(out_path), *e = err_path ? strdup(err_path) : NULL;

        p->sp_out.fd = p->sp_err.fd = -1;
        if (!o || (err_path && !e) || xb_fds_charge(p->sbx, SPILL_FDS, NULL) < 0) {
                free(o);
                free(e);
                spill_fail(&p->sp_out, EMFILE);
                spill_fail(&p->sp_err, EMFILE);
                proc_watch_pipes(p);
                return;
        }
        p->spill_fds = SPILL_FDS;
        p->spill_pending++;
        spill_open(p, &p->sp_out, "stdout", o);
        if (e)
                spill_open(p, &p->sp_err, "stderr", e);
        if (--p->spill_pending == 0)
                proc_watch_pipes(p);
}

static void
spill_close(struct proc_spill *sp)
{
        struct spill_req *q = sp->req;

        if (q) {
                sp->req = NULL;
                q->p = NULL;
                /* Its reply, when it comes, only closes the fd. */
                if (q->call) {
                        struct xb_call *c = q->call;

                        q->call = NULL;
                        xb_call_cancel(c);
                        req_unref(q);   /* the sink's: it hears nothing now */
                }
        }
        if (sp->fd >= 0)
                close(sp->fd);
        sp->fd = -1;
        free(sp->path);
        sp->path = NULL;
}

void
proc_spill_free(struct xb_proc *p)
{
        spill_close(&p->sp_out);
        spill_close(&p->sp_err);
        if (p->spill_fds)
                xb_fds_release(p->sbx, p->spill_fds);
        p->spill_fds = 0;
}

void
proc_spill_write(struct proc_spill *sp, const char *data, size_t n)
{
        size_t done = 0;

        if (sp->fd < 0 || sp->failed)
                return;
        while (done < n) {
                ssize_t k = pwrite(sp->fd, data + done, n - done, (off_t)sp->written);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        spill_fail(sp, k < 0 ? errno : ENOSPC);
                        return;
                }
                done += (size_t)k;
                sp->written += (uint64_t)k;
        }
}

size_t
proc_spill_read(const struct proc_spill *sp, uint64_t off, char *dst, size_t max)
{
        size_t got = 0;

        if (sp->fd < 0 || off >= sp->written)
                return 0;
        if (max > sp->written - off)
                max = (size_t)(sp->written - off);
        while (got < max) {
                ssize_t k = pread(sp->fd, dst + got, max - got, (off_t)(off + got));

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;   /* cut inside the sandbox: the memory answers */
                got += (size_t)k;
        }
        return got;
}

void
proc_spill_json(const struct xb_proc *p, json_t *o)
{
        static const char *const names[2] = { "stdout", "stderr" };
        const struct proc_spill *sps[2] = { &p->sp_out, &p->sp_err };

        if (!p->background)
                return;
        for (int i = 0; i < (p->tty ? 1 : 2); i++) {
                const struct proc_spill *sp = sps[i];
                char key[32];
                json_t *f;

                snprintf(key, sizeof(key), "%s_file", names[i]);
                if (!sp->path && !sp->failed)
                        continue;
                f = json_pack("{s:s?,s:I,s:b}", "path", sp->path, "bytes", (json_int_t)sp->written, "complete",
                              !sp->failed);
                if (sp->failed)
                        json_object_set_new(f, "error", json_string(strerror(sp->errnum)));
                json_object_set_new(o, key, f);
        }
}
