/* Reads and writes, built on files.c's operations: what the fd of a file
 * init opened is for. A READ hands it on with the byte range asked for
 * (REST sends it) or returns its content as JSON, read a slice per turn
 * of the loop; a WRITE becomes an upload that REST streams its body into,
 * or takes the content it was given. A failed write is cut back to the
 * length the file had when opened: empty, or its old length when
 * appending. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/log.h"
#include "base/utf8.h"
#include "core/audit.h"
#include "core/files.h"
#include "core/files_int.h"

struct xb_upload {
        struct xb_sbx *sbx;           /* referenced */
        char *path;
        int fd;
        uint64_t base_size;           /* restored when the upload fails */
        int wr, writer;               /* a streamed body: the pipe to the sandbox's writer, and it (pidfd) */
        bool gzip;                    /* the body is gzip, decoded by the writer */
};

#define WRITER_DRAIN_MS 1000          /* the writer's last pipeful, at most */

/* What one READ or WRITE is to do with its fd. */
struct use {
        struct xb_file_range range;   /* open_read */
        struct xb_file_span *span;    /* open_read: the caller's */
        struct xb_upload **up;        /* open_upload: the caller's */
        unsigned flags;               /* open_upload: XB_UPLOAD_* */
        size_t max;                   /* read */
        char *data;                   /* write */
        size_t len;
};

static void
use_free(void *ctx)
{
        struct use *u = ctx;

        if (u)
                free(u->data);
        free(u);
}

/* Start q with a use; takes path and data. */
static void
start(struct xb_sbx *x, struct xb_file_req *q, char *path, const struct xb_fileop_fd_ops *ops,
      const struct use *init, char *data, struct xb_call *call)
{
        struct use *u = malloc(sizeof(*u));

        if (!u) {
                free(path);
                free(data);
                xb_call_failf(call, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        *u = *init;
        u->data = data;
        xb_fileop_start_fd(x, q, path, ops, u, call);
}

/* ---- reads ---- */

static void
span_opened(void *ctx, struct xb_sbx *x, char **path, struct xb_call *c, int fd, const struct stat *st)
{
        struct use *u = ctx;
        uint64_t size = (uint64_t)st->st_size, off = 0, len = size;
        const struct xb_file_range *rg = &u->range;
        char buf[XB_SHOWN_CAP];

        (void)x;
        *u->span = (struct xb_file_span){ .fd = -1, .size = size };
        if (rg->kind == XB_RANGE_NONE) {
                *u->span = (struct xb_file_span){ .fd = fd, .len = size, .size = size };
                xb_call_done(c, NULL);
                return;
        }
        if ((rg->kind == XB_RANGE_SUFFIX && (rg->b == 0 || size == 0)) || (rg->kind != XB_RANGE_SUFFIX && rg->a >= size)) {
                close(fd);
                xb_call_failf(c, XB_E_RANGE_NOT_SATISFIABLE, NULL, "`%s` is %llu bytes; the range asked for is outside it",
                              xb_fileop_shown(*path, buf, sizeof(buf)), (unsigned long long)size);
                return;
        }
        if (rg->kind == XB_RANGE_SUFFIX) {
                len = XB_MIN(rg->b, size);
                off = size - len;
        } else {
                off = rg->a;
                len = (rg->kind == XB_RANGE_FROM_TO ? XB_MIN(rg->b, size - 1) : size - 1) - off + 1;
        }
        *u->span = (struct xb_file_span){ .fd = fd, .off = off, .len = len, .size = size, .partial = true };
        xb_call_done(c, NULL);
}

static const struct xb_fileop_fd_ops span_ops = { span_opened, use_free };

void
xb_fileop_open_read(struct xb_sbx *x, struct xb_file_req *q, char *path, const struct xb_file_range *rg,
                    struct xb_file_span *ret, struct xb_call *call)
{
        start(x, q, path, &span_ops, &(struct use){ .range = *rg, .span = ret }, NULL, call);
}

/* How many of n bytes to keep so that a read cut at n does not end
 * inside a UTF-8 character. */
static size_t
whole_chars(const unsigned char *s, size_t n)
{
        size_t i = n, need;

        while (i > 0 && n - i < 3 && (s[i - 1] & 0xc0) == 0x80)
                i--;
        if (i == 0 || s[i - 1] < 0xc0)
                return n;
        need = s[i - 1] >= 0xf0 ? 4 : s[i - 1] >= 0xe0 ? 3 : 2;
        return n - i + 1 < need ? i - 1 : n;
}

/* ---- content reads: the file as JSON ---- */

#define SLICE_BYTES (1u << 20)        /* read and checked per turn of the loop */
#define ENCODE_BYTES (3u << 19)       /* base64-encoded per turn: whole quanta */

/* A read of a file's content into JSON, a slice per turn of the loop:
 * reading and checking 8 MiB at once held the loop for tens of ms (and
 * base64 of it as much again). The bytes are read and checked as UTF-8,
 * then, when they are not text, encoded; only the JSON string they become
 * is made in one step (a copy). */
struct slurp {
        struct xb_call *call;
        struct xb_loop *loop;
        struct xb_timer turn;
        char *path;
        int fd;
        uint64_t size;                /* the file's, when opened */
        char *buf;
        size_t max, n;                /* to read, read */
        size_t valid;                 /* of n: whole characters, checked */
        bool binary;                  /* an invalid byte or a NUL: base64 */
        bool ready;                   /* all read (and encoded): the JSON next */
        char *b64;                    /* binary: the encoding so far */
        size_t enc, b64_len;          /* its input bytes, its characters */
};

static void
slurp_free(struct slurp *s)
{
        xb_timer_stop(&s->turn);
        if (s->fd >= 0)
                close(s->fd);
        free(s->path);
        free(s->buf);
        free(s->b64);
        free(s);
}

/* The client left: nothing more is read. */
static void
slurp_cancel(void *owner)
{
        slurp_free(owner);
}

static void
slurp_fail(struct slurp *s, enum xb_ecode ecode, const char *why)
{
        struct xb_call *c = s->call;
        char shown[XB_SHOWN_CAP];

        if (ecode == XB_E_NOMEM)
                xb_call_failf(c, ecode, NULL, "out of memory");
        else
                xb_call_failf(c, ecode, NULL, "cannot read `%s`: %s", xb_fileop_shown(s->path, shown, sizeof(shown)),
                              why);
        slurp_free(s);
}

/* All is read: text, or base64 to make on the next turns. */
static int
read_end(struct slurp *s)
{
        /* A character cut by max is left out of text. */
        size_t text = s->n < s->size ? whole_chars((const unsigned char *)s->buf, s->n) : s->n;

        if (!s->binary && s->valid == text) {
                s->n = text;
                s->ready = true;
                return 0;
        }
        s->binary = true;
        if (!(s->b64 = malloc(xb_base64_encoded_len(s->n) + 1)))
                return -ENOMEM;
        s->b64[0] = '\0';
        return 0;
}

/* Read and check the next slice; at the end (max bytes, or the end of a
 * file that shrank) see what it is. 0, or -errno. */
static int
read_slice(struct slurp *s)
{
        ssize_t k;

        /* A regular file on a real filesystem (checked): a read does not block for long. */
        do
                k = pread(s->fd, s->buf + s->n, XB_MIN(SLICE_BYTES, s->max - s->n), (off_t)s->n);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno;
        s->n += (size_t)k;
        if (!s->binary) {
                s->valid += xb_utf8_valid_prefix(s->buf + s->valid, s->n - s->valid);
                /* Stopped further back than a cut character can reach: no text. */
                s->binary = s->n - s->valid >= 4;
        }
        return k > 0 && s->n < s->max ? 0 : read_end(s);
}

/* Encode the next piece; 0, or -errno. */
static int
encode_slice(struct slurp *s)
{
        size_t k = XB_MIN((size_t)ENCODE_BYTES, s->n - s->enc), cap = xb_base64_encoded_len(s->n) + 1;
        ssize_t w = xb_base64_encode(s->buf + s->enc, k, s->b64 + s->b64_len, cap - s->b64_len);

        if (w < 0)
                return (int)w;
        s->enc += k;
        s->b64_len += (size_t)w;
        s->ready = s->enc == s->n;
        return 0;
}

static void
slurp_done(struct slurp *s)
{
        struct xb_call *c = s->call;
        json_t *content, *res;
        size_t got = s->binary ? s->enc : s->n;

        /* The one step that is not a slice: the JSON string, a copy. */
        if (s->binary) {
                free(TAKE_PTR(s->buf));
                content = json_stringn_nocheck(s->b64, s->b64_len);
        } else
                content = json_stringn_nocheck(s->buf, s->n);
        res = content ? json_pack("{s:o,s:I,s:o,s:s,s:b}", "path", xb_fileop_str_json(s->path, strlen(s->path)),
                                  "size", (json_int_t)s->size, "content", content, "encoding",
                                  s->binary ? "base64" : "utf-8", "truncated", got < s->size)
                      : NULL;
        if (!res) {
                slurp_fail(s, XB_E_NOMEM, NULL);
                return;
        }
        slurp_free(s);
        xb_call_done(c, res);
}

/* One step a turn: a slice read, or encoded, or (in a turn of its own)
 * the JSON made and the call ended. */
static void
slurp_turn(struct xb_timer *t)
{
        struct slurp *s = t->data;
        int r;

        if (s->ready) {
                slurp_done(s);
                return;
        }
        r = s->b64 ? encode_slice(s) : read_slice(s);
        if (r < 0)
                slurp_fail(s, r == -ENOMEM ? XB_E_NOMEM : XB_E_FILE_ERROR, strerror(-r));
        else
                xb_timer_start(s->loop, &s->turn, 0, slurp_turn, s);   /* after the loop's other events */
}

static void
content_opened(void *ctx, struct xb_sbx *x, char **path, struct xb_call *c, int fd, const struct stat *st)
{
        struct use *u = ctx;
        struct slurp *s = calloc(1, sizeof(*s));
        size_t max = XB_MIN(u->max, (size_t)st->st_size);

        if (!s || !(s->buf = malloc(max ? max : 1))) {
                close(fd);
                free(s);
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        s->call = c;
        s->loop = x->core->loop;
        s->path = TAKE_PTR(*path);
        s->fd = fd;
        s->size = (uint64_t)st->st_size;
        s->max = max;
        /* The operation's own hook goes with it: the read answers a cancel now. */
        xb_call_on_cancel(c, slurp_cancel, s);
        s->turn.data = s;
        slurp_turn(&s->turn);
}

static const struct xb_fileop_fd_ops content_ops = { content_opened, use_free };

void
xb_fileop_read(struct xb_sbx *x, struct xb_file_req *q, char *path, size_t max, struct xb_call *call)
{
        start(x, q, path, &content_ops, &(struct use){ .max = max }, NULL, call);
}

/* ---- writes ---- */

/* Close the pipe and reap the writer: 0, or the errno that stopped it
 * (ENOMEM when the sandbox's OOM killer took it). The upload counts as a
 * file operation, so the sandbox is not paused (frozen) under it; a
 * writer that does not finish its last pipeful in time is killed. */
static int
writer_end(struct xb_upload *up)
{
        int r;

        if (up->writer < 0)
                return 0;
        if (up->wr >= 0)
                close(up->wr);
        up->wr = -1;
        r = xb_sandbox_writer_wait(up->writer, WRITER_DRAIN_MS);
        if (r == -2)
                xb_warn("upload %s: the sandbox's writer would not die; left as a zombie", up->path);
        r = r == -1 ? ENOMEM : r == -2 ? ETIMEDOUT : r;
        up->writer = -1;
        if (up->sbx->nfileops)
                up->sbx->nfileops--;
        return r;
}

static void
upload_free(struct xb_upload *up, bool failed)
{
        if (!up)
                return;
        writer_end(up);
        if (up->fd >= 0) {
                if (failed && ftruncate(up->fd, (off_t)up->base_size) < 0) {
                        /* A btrfs layer at its qgroup limit refuses even a
                         * truncate (EDQUOT: it reserves metadata first): lift
                         * the limit for the instant of putting the file back. */
                        if (errno == EDQUOT && up->sbx->sb && xb_sandbox_disk_slack(up->sbx->sb, true) == 0) {
                                if (ftruncate(up->fd, (off_t)up->base_size) < 0)
                                        xb_debug("upload %s: truncate back: %s", up->path, strerror(errno));
                                xb_sandbox_disk_slack(up->sbx->sb, false);
                        } else
                                xb_debug("upload %s: truncate back: %s", up->path, strerror(errno));
                }
                close(up->fd);
        }
        xb_sbx_unref(up->sbx);
        free(up->path);
        free(up);
}

int
xb_upload_fd(const struct xb_upload *up)
{
        return up->wr >= 0 ? up->wr : up->fd;
}

void
xb_upload_abort(struct xb_upload *up)
{
        upload_free(up, true);
}

/* The bytes a gzip upload's writer put in the file: what it grew by. */
static uint64_t
decoded(const struct xb_upload *up)
{
        struct stat st;

        if (fstat(up->fd, &st) < 0 || (uint64_t)st.st_size < up->base_size)
                return 0;
        return (uint64_t)st.st_size - up->base_size;
}

json_t *
xb_upload_end(struct xb_upload *up, uint64_t written, int e, struct xb_err *err)
{
        uint64_t received = written;
        char buf[XB_SHOWN_CAP];
        const char *path = xb_fileop_shown(up->path, buf, sizeof(buf));
        struct stat st;
        json_t *res;

        int we = writer_end(up);

        if (xb_fileop_sandbox_ok(up->sbx, err) < 0) {
                upload_free(up, false);
                return NULL;
        }
        /* The writer's own error says more than the pipe's EPIPE. */
        if (we && (!e || e == EPIPE))
                e = we;
        if (up->gzip)
                written = decoded(up);
        if (e || fstat(up->fd, &st) < 0) {
                e = e ? e : errno;
                if (up->gzip && (e == EBADMSG || e == ENODATA))
                        xb_err_code(err, XB_E_INVALID_ENCODING, e, NULL,
                                    e == EBADMSG ? "the gzip body of `%s` is corrupt (not gzip, bad data or a bad "
                                                   "checksum) after %llu bytes; the file was put back as it was opened"
                                                 : "the gzip body of `%s` is cut short (it ends before the gzip "
                                                   "stream does); the file was put back as it was opened",
                                    path, (unsigned long long)received);
                else if (e == ENOMEM)
                        xb_err_code(err, XB_E_DISK_FULL, e,
                                    "delete files in memory-backed storage such as /tmp, or create the sandbox "
                                    "with a larger {\"limits\": {\"memory\": BYTES}}",
                                    "the sandbox ran out of memory after %llu bytes of "
                                    "`%s` (a file in memory-backed storage, such as /tmp, counts against its memory "
                                    "limit); the file was put back as it was opened",
                                    (unsigned long long)written, path);
                else if (e == ETIMEDOUT)
                        xb_err_code(err, XB_E_WRITE_FAILED, e, NULL, "the sandbox did not take the rest of `%s` in "
                                    "time", path);
                else if (e == ENOSPC || e == EDQUOT)
                        xb_err_code(err, XB_E_DISK_FULL, e, NULL, "the disk filled up after %llu bytes of `%s`; the "
                                    "file was put back as it was opened (empty, or its old length when appending)",
                                    (unsigned long long)written, path);
                else if (e == EFBIG && up->gzip)
                        xb_err_code(err, XB_E_UPLOAD_TOO_LARGE, e, NULL,
                                    "the upload to `%s` is over the server's upload limit (%llu bytes) once "
                                    "decompressed; the file was put back as it was opened",
                                    path, (unsigned long long)up->sbx->core->o.upload_max);
                else if (e == EFBIG)
                        xb_err_code(err, XB_E_UPLOAD_TOO_LARGE, e, NULL,
                                    "the upload to `%s` is over the server's upload limit", path);
                else
                        xb_err_code(err, XB_E_WRITE_FAILED, e, NULL, "writing `%s` failed: %s", path, strerror(e));
                xb_audit_add(up->sbx->audit, "file_write",
                             json_pack("{s:o,s:I,s:s}", "path", xb_fileop_str_json(up->path, strlen(up->path)),
                                       "written", (json_int_t)written, "error", xb_ecode_name(err->ecode)));
                upload_free(up, true);
                return NULL;
        }
        /* Closed before the answer, so the file can be executed at once (no ETXTBSY). */
        close(up->fd);
        up->fd = -1;
        res = json_pack("{s:o,s:I,s:I}", "path", xb_fileop_str_json(up->path, strlen(up->path)), "size",
                        (json_int_t)st.st_size, "written", (json_int_t)written);
        if (res && up->gzip)
                json_object_set_new(res, "received", json_integer((json_int_t)received));
        /* The path and sizes; never the content. */
        xb_audit_add(up->sbx->audit, "file_write", json_deep_copy(res));
        upload_free(up, false);
        return res;
}

/* The open file as an upload; takes fd and *path. */
static struct xb_upload *
upload_new(struct xb_sbx *x, char **path, int fd, const struct stat *st)
{
        struct xb_upload *up = calloc(1, sizeof(*up));

        if (!up) {
                close(fd);
                return NULL;
        }
        /* O_APPEND keeps what was there; otherwise init truncated it. */
        *up = (struct xb_upload){ .sbx = x, .path = TAKE_PTR(*path), .fd = fd, .base_size = (uint64_t)st->st_size,
                                  .wr = -1, .writer = -1 };
        xb_sbx_ref(x);
        return up;
}

/* A streamed body goes through a writer in the sandbox's cgroup, so that
 * its pages are the sandbox's (writer.c), not the daemon's. */
static int
upload_stream(struct xb_upload *up, struct xb_err *err)
{
        if (!up->sbx->sb)
                return xb_err_code(err, XB_E_SANDBOX_GONE, ESRCH, NULL, "the sandbox is gone");
        struct xb_writer_opts o = { XB_WRITER_GUNZIP, up->sbx->core->o.upload_max };

        if (xb_sandbox_writer(up->sbx->sb, up->fd, up->gzip ? &o : NULL, &up->wr, &up->writer, err) < 0) {
                err->ecode = XB_E_WRITE_FAILED;
                return -1;
        }
        up->sbx->nfileops++;   /* no pause under the writer (writer_end) */
        return 0;
}

static void
upload_opened(void *ctx, struct xb_sbx *x, char **path, struct xb_call *c, int fd, const struct stat *st)
{
        struct use *u = ctx;

        struct xb_err err = { 0 };

        if (!(*u->up = upload_new(x, path, fd, st))) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        (*u->up)->gzip = u->flags & XB_UPLOAD_GZIP;
        if (upload_stream(*u->up, &err) < 0) {
                upload_free(TAKE_PTR(*u->up), true);
                xb_call_fail(c, &err);
        } else
                xb_call_done(c, NULL);
}

static const struct xb_fileop_fd_ops upload_ops = { upload_opened, use_free };

void
xb_fileop_open_upload(struct xb_sbx *x, struct xb_file_req *q, char *path, unsigned flags, struct xb_upload **ret,
                      struct xb_call *call)
{
        start(x, q, path, &upload_ops, &(struct use){ .up = ret, .flags = flags }, NULL, call);
}

/* write(2) until done, counting what went in; a positive errno. */
static int
write_counted(int fd, const char *p, size_t n, uint64_t *done)
{
        while (*done < n) {
                ssize_t k = write(fd, p + *done, n - *done);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return errno;
                *done += (uint64_t)k;
        }
        return 0;
}

static void
write_opened(void *ctx, struct xb_sbx *x, char **path, struct xb_call *c, int fd, const struct stat *st)
{
        struct use *u = ctx;
        struct xb_upload *up = upload_new(x, path, fd, st);
        struct xb_err err = { 0 };
        uint64_t written = 0;
        json_t *res;
        int e;

        if (!up) {
                xb_call_failf(c, XB_E_NOMEM, NULL, "out of memory");
                return;
        }
        e = write_counted(up->fd, u->data, u->len, &written);
        if ((res = xb_upload_end(up, written, e, &err)))
                xb_call_done(c, res);
        else
                xb_call_fail(c, &err);
}

static const struct xb_fileop_fd_ops write_ops = { write_opened, use_free };

void
xb_fileop_write(struct xb_sbx *x, struct xb_file_req *q, char *path, char *data, size_t len, struct xb_call *call)
{
        char buf[XB_SHOWN_CAP];

        /* As an upload's body would be: refused before the file is touched. */
        if (len > x->core->o.upload_max) {
                xb_call_failf(call, XB_E_UPLOAD_TOO_LARGE, NULL, "the upload to `%s` is over the server's upload limit",
                              xb_fileop_shown(path, buf, sizeof(buf)));
                free(path);
                free(data);
                return;
        }
        start(x, q, path, &write_ops, &(struct use){ .len = len }, data, call);
}
