/* multipart/form-data bodies, streamed (xb_req_form in http.h).
 *
 * libmicrohttpd's post processor parses the body as it comes in; its
 * iterator cannot pause, so what it hands over while the consumer holds
 * (a file still opening, a full pipe) is queued here. The body is fed in
 * slices, and only while nothing is queued, so the queue never holds more
 * than a slice and the processor's buffer: the daemon's memory stays flat
 * whatever the body's size. Holding suspends the connection (the client
 * waits) until the consumer calls xb_req_form_wake.
 *
 * The iterator says nothing of where a part ends, and a part's first call
 * may come with no bytes, its data following at offset 0 too. A call at
 * offset 0 begins a new part, unless it carries the bytes of a part whose
 * first call was empty, with the same name and filename: then an empty
 * part followed by an identical one reads as one part (the same file
 * either way).
 *
 * A body sent with `Content-Encoding: gzip` (the whole form compressed,
 * as envd reads it) is decoded here, a slice at a time, before the
 * processor sees it: each decoded slice goes through the same queue, so
 * a full pipe holds the body as before. Where nothing holds (a part that
 * is dropped), a call decodes at most FORM_GZ_BUDGET bytes and then
 * yields to the loop (a deferred wake), so a bomb neither grows the
 * daemon nor holds its loop; decoded bytes count against upload_max. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/gunzip.h"
#include "transport/http_int.h"

#define FORM_PP_BUF (64u << 10)       /* the processor's buffer: the longest header line */
#define FORM_SLICE (64u << 10)        /* body bytes per MHD_post_process */
#define FORM_QUEUE_MAX (4u << 20)     /* a slice's output and its parts' headers, with room */
#define BOUNDARY_MAX 70               /* RFC 2046 */
#define FORM_GZ_BUDGET (4u << 20)     /* decoded bytes per call, at most */

enum { REC_PART = 'P', REC_DATA = 'D' };

struct xb_form {
        struct MHD_PostProcessor *pp;
        const struct xb_form_ops *ops;
        void *arg;
        struct xb_req *req;
        struct xb_defer wake;
        struct xb_buf queue;          /* records: type, 4-byte length, payload */
        size_t qoff;                  /* delivered part of queue */
        unsigned nparts, max_parts;
        uint64_t bytes;               /* fed to the processor (decoded, for gzip) */
        uint64_t raw;                 /* a gzip body's bytes as sent */
        int err;                      /* -E2BIG, -EFBIG, -ENOMEM, -EBADMSG: the form failed */
        bool held, ended, empty_start;
        struct xb_gunzip *gz;         /* a gzip body: its decoder, */
        char *gzbuf;                  /* ... a slice of its output, */
        bool gz_more;                 /* ... and zlib may hold more output */
        int gz_err;                   /* -EBADMSG or -ENODATA: the gzip stream's fault */
        char *name, *filename;        /* the current part's */
};

/* ---- the queue ---- */

static int
queue_rec(struct xb_form *f, char type, const void *a, size_t an, const void *b, size_t bn)
{
        uint32_t n = (uint32_t)(an + bn);
        char hdr[5] = { type };

        memcpy(hdr + 1, &n, 4);
        if (f->queue.len - f->qoff + 5 + an + bn > FORM_QUEUE_MAX || xb_buf_append(&f->queue, hdr, 5) < 0 ||
            (an && xb_buf_append(&f->queue, a, an) < 0) || (bn && xb_buf_append(&f->queue, b, bn) < 0))
                return -ENOMEM;
        return 0;
}

/* A part's names as one payload: present flag, string, NUL; twice. */
static int
queue_part(struct xb_form *f, const char *name, const char *filename)
{
        size_t nn = name ? strlen(name) + 1 : 0, fn = filename ? strlen(filename) + 1 : 0;
        _cleanup_free_ char *p = malloc(2 + nn + fn);

        if (!p)
                return -ENOMEM;
        p[0] = name != NULL;
        memcpy(p + 1, name ? name : "", nn);
        p[1 + nn] = filename != NULL;
        memcpy(p + 2 + nn, filename ? filename : "", fn);
        return queue_rec(f, REC_PART, p, 2 + nn + fn, NULL, 0);
}

/* Hand a part's start to the consumer, or queue it. */
static int
emit_part(struct xb_form *f, const char *name, const char *filename)
{
        if (f->held || f->queue.len > f->qoff)
                return queue_part(f, name, filename);
        f->held = !f->ops->part(f->arg, name, filename);
        return 0;
}

static int
emit_data(struct xb_form *f, const char *p, size_t n)
{
        size_t took = 0;

        if (!f->held && f->queue.len == f->qoff) {
                took = f->ops->data(f->arg, p, n);
                if (took >= n)
                        return 0;
                f->held = true;
        }
        return queue_rec(f, REC_DATA, p + took, n - took, NULL, 0);
}

/* Deliver queued records until the consumer holds; true when all went. */
static bool
queue_drain(struct xb_form *f)
{
        while (!f->held && f->qoff < f->queue.len) {
                char *rec = f->queue.data + f->qoff, *pl = rec + 5;
                uint32_t n;

                memcpy(&n, rec + 1, 4);
                if (rec[0] == REC_PART) {
                        const char *name = pl[0] ? pl + 1 : NULL, *fn;
                        size_t nn = pl[0] ? strlen(pl + 1) + 1 : 0;

                        fn = pl[1 + nn] ? pl + 2 + nn : NULL;
                        f->qoff += 5 + n;
                        f->held = !f->ops->part(f->arg, name, fn);
                        continue;
                }
                size_t took = n ? f->ops->data(f->arg, pl, n) : 0;

                if (took < n) {
                        /* Keep the rest as a shorter record in place. */
                        uint32_t left = n - (uint32_t)took;

                        f->qoff += took;
                        rec = f->queue.data + f->qoff;
                        rec[0] = REC_DATA;
                        memcpy(rec + 1, &left, 4);
                        f->held = true;
                        break;
                }
                f->qoff += 5 + n;
        }
        if (f->qoff == f->queue.len) {
                xb_buf_reset(&f->queue);
                f->qoff = 0;
                return !f->held;
        }
        return false;
}

/* ---- the processor's iterator ---- */

static bool
same(const char *a, const char *b)
{
        return a == b || (a && b && !strcmp(a, b));
}

static enum MHD_Result
form_iter(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename, const char *ctype, const char *te,
          const char *data, uint64_t off, size_t size)
{
        struct xb_form *f = cls;

        (void)kind;
        (void)ctype;
        (void)te;
        if (f->err)
                return MHD_NO;
        if (off == 0 && !(f->empty_start && size && same(key, f->name) && same(filename, f->filename))) {
                if (++f->nparts > f->max_parts) {
                        f->err = -E2BIG;
                        return MHD_NO;
                }
                free(f->name);
                free(f->filename);
                f->name = key ? strdup(key) : NULL;
                f->filename = filename ? strdup(filename) : NULL;
                if ((key && !f->name) || (filename && !f->filename) || emit_part(f, key, filename) < 0) {
                        f->err = -ENOMEM;
                        return MHD_NO;
                }
                f->empty_start = !size;
        } else
                f->empty_start = false;
        if (size && emit_data(f, data, size) < 0) {
                f->err = -ENOMEM;
                return MHD_NO;
        }
        return MHD_YES;
}

/* ---- the request's side ---- */

/* The boundary parameter of ctype, checked as libmicrohttpd will take
 * it: everything after "boundary=", so it must be the last parameter. */
static bool
boundary_ok(const char *ctype)
{
        const char *b = strstr(ctype, "boundary=");
        size_t n;

        if (!b)
                return false;
        b += 9;
        n = strlen(b);
        if (n >= 2 && b[0] == '"' && b[n - 1] == '"') {
                b++;
                n -= 2;
        }
        if (n < 1 || n > BOUNDARY_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (b[i] == '"' || b[i] == ';' || (unsigned char)b[i] < 0x20 || (unsigned char)b[i] > 0x7e)
                        return false;
        return true;
}

int
xb_req_form(struct xb_req *r, const struct xb_form_ops *ops, void *arg, unsigned max_parts)
{
        const char *ctype = xb_req_header(r, "Content-Type");
        struct xb_form *f;

        if (!ctype || strncasecmp(ctype, "multipart/form-data", 19) || !boundary_ok(ctype))
                return -EINVAL;
        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        if (xb_req_content_coding(r) == XB_CODING_GZIP &&
            (!(f->gz = xb_gunzip_new()) || !(f->gzbuf = malloc(FORM_SLICE)))) {
                xb_gunzip_free(f->gz);
                free(f);
                return -ENOMEM;
        }
        f->pp = MHD(create_post_processor)(r->conn, FORM_PP_BUF, form_iter, f);
        if (!f->pp) {
                xb_gunzip_free(f->gz);
                free(f->gzbuf);
                free(f);
                return -EINVAL;
        }
        f->ops = ops;
        f->arg = arg;
        f->req = r;
        f->max_parts = max_parts;
        f->queue.max = FORM_QUEUE_MAX + 64;
        r->form = f;
        return 0;
}

static void
hold(struct xb_req *r)
{
        if (r->suspended)
                return;
        http_conn_suspend(r);
        http_watch_start(r);   /* a client that leaves ends the request */
}

static void
form_wake(void *data)
{
        struct xb_req *r = data;
        struct xb_form *f = r->form;

        if (!f || f->ended || r->complete)
                return;
        f->held = false;
        if (queue_drain(f) && r->suspended) {
                http_watch_stop(r);
                http_conn_resume(r);
                http_mark_run(r->http);
        }
}

void
xb_req_form_wake(struct xb_req *r)
{
        /* Never after the request completed: it is freed by a later defer. */
        if (r->form && !r->form->ended && !r->complete)
                xb_loop_defer(r->http->loop, &r->form->wake, form_wake, r);
}

/* One slice of (decoded) body into the processor. */
static void
form_feed(struct xb_req *r, struct xb_form *f, const char *p, size_t k)
{
        f->bytes += k;
        if (f->bytes > r->http->o.upload_max) {
                f->err = -EFBIG;
        } else if (MHD(post_process)(f->pp, p, k) != MHD_YES && !f->err) {
                MHD(destroy_post_processor)(f->pp);
                f->pp = NULL;
                f->err = -EBADMSG;
        }
}

/* Decode n bytes (0: what zlib still holds) into the processor while
 * nothing holds, at most FORM_GZ_BUDGET; returns the input used. */
static size_t
form_gz(struct xb_req *r, struct xb_form *f, const char *upload, size_t n)
{
        size_t used = 0, budget = 0;

        f->raw += n;   /* empty members decode to nothing: the sent bytes count too */
        if (f->raw > r->http->o.upload_max) {
                f->err = -EFBIG;
                return n;
        }
        while ((used < n || f->gz_more) && !f->err && !f->held && f->queue.len == f->qoff) {
                size_t u, made;
                int e;

                if (budget >= FORM_GZ_BUDGET) {
                        /* Yield: the loop runs others, then form_wake goes on. */
                        f->held = true;
                        xb_loop_defer(r->http->loop, &f->wake, form_wake, r);
                        break;
                }
                e = xb_gunzip_run(f->gz, upload + used, n - used, &u, f->gzbuf, FORM_SLICE, &made);
                used += u;
                budget += made;
                f->gz_more = made == FORM_SLICE;
                if (made)
                        form_feed(r, f, f->gzbuf, made);
                if (e < 0) {
                        f->gz_err = e;
                        f->err = -EBADMSG;
                }
                if (!u && !made)
                        break;
        }
        return f->err ? n : used;
}

void
xb_req_form_drop(struct xb_req *r)
{
        if (r->form && !r->form->err)
                r->form->err = -ECANCELED;
}

void
http_form_body(struct xb_req *r, const char *upload, size_t *upload_size)
{
        struct xb_form *f = r->form;
        size_t n = *upload_size, used = 0;

        if (f->err || !f->pp) {
                *upload_size = 0;     /* failed: the rest is read and dropped */
                return;
        }
        if (f->gz) {
                used = form_gz(r, f, upload, n);
                f->raw -= n - used;   /* what waits is counted when it is fed */
        }
        while (!f->gz && used < n && !f->held && f->queue.len == f->qoff) {
                size_t k = n - used < FORM_SLICE ? n - used : FORM_SLICE;

                form_feed(r, f, upload + used, k);
                used += k;
                if (f->err) {
                        used = n;
                        break;
                }
        }
        *upload_size = n - used;
        if (f->held || f->queue.len > f->qoff)
                hold(r);
}

bool
http_form_idle(struct xb_req *r)
{
        struct xb_form *f = r->form;

        if (f->gz && f->gz_more && f->pp && !f->err)
                form_gz(r, f, NULL, 0);   /* the last of the decoded body */
        if (!f->held && f->queue.len == f->qoff && !(f->gz && f->gz_more && !f->err))
                return true;
        hold(r);
        return false;
}

int
xb_req_form_end(struct xb_req *r)
{
        struct xb_form *f = r->form;
        bool whole = true;

        if (!f || f->ended)
                return -EINVAL;
        f->ended = true;
        if (f->pp)
                whole = MHD(destroy_post_processor)(f->pp) == MHD_YES;
        f->pp = NULL;
        if (f->gz && !f->gz_err && !f->err)
                f->gz_err = xb_gunzip_end(f->gz);
        if (f->gz_err)
                return f->gz_err == -EBADMSG ? -EILSEQ : -ENODATA;
        if (f->err)
                return f->err;
        return whole ? 0 : -EBADMSG;
}

void
http_form_free(struct xb_req *r)
{
        struct xb_form *f = r->form;

        if (!f)
                return;
        r->form = NULL;
        if (f->pp)
                MHD(destroy_post_processor)(f->pp);
        if (!f->ended && f->ops->gone)
                f->ops->gone(f->arg);
        xb_buf_free(&f->queue);
        xb_gunzip_free(f->gz);
        free(f->gzbuf);
        free(f->name);
        free(f->filename);
        free(f);
}
