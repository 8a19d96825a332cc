/* File operations: read, write, stat, list, mkdir, move and delete inside
 * a sandbox, each one round trip to the sandbox's init (files.h says who
 * calls them; files_data.c does what an opened file's fd is for).
 *
 * Theory of operation. The daemon never opens a sandbox path. An
 * operation (struct xb_fileop) takes a pending tag (xb_sbx_pending_add),
 * sends XB_REQ_FILE with it and holds it until init's XB_EV_FILE with that
 * tag comes back (a listing may come in parts); then it ends its call.
 * Reads and writes get one fd from init, which the daemon checks (a
 * regular file, on a real filesystem, opened for what is asked) before
 * using it. A cancelled call leaves its operation abandoned: the reply,
 * when it comes, only closes fds. When the sandbox dies every pending
 * operation fails XB_E_SANDBOX_GONE (or XB_E_SANDBOX_EXPIRED). A reply
 * that breaks the protocol kills the sandbox. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/utf8.h"
#include "core/audit.h"
#include "core/files.h"
#include "proto/pseudofs.h"

#include "core/files_int.h"

#define PENDING_MAX 64          /* file operations waiting on one sandbox's init */

struct list_entry {
        char *rel;                    /* relative to the listed directory */
        struct xb_file_entry e;
};

struct xb_fileop {
        struct xb_sbx *sbx;           /* referenced */
        struct xb_call *call;         /* NULL once answered or cancelled */
        uint32_t tag;                 /* its pending tag, until init's last reply */
        enum xb_fop op;
        char *path, *path2;           /* as shown to the client: absolute */
        const struct xb_fileop_fd_ops *fd_ops;   /* READ, WRITE */
        void *fd_ctx;
        struct list_entry *entries;   /* LIST: what was kept */
        size_t nentries, cap;
        size_t total, entry_bytes;    /* LIST: what init sent, for its bounds */
};

/* ---- operations ---- */

/* Frees what op holds; it may never have been started (no sandbox yet). */
static void
op_free(struct xb_fileop *op)
{
        for (size_t i = 0; i < op->nentries; i++)
                free(op->entries[i].rel);
        free(op->entries);
        free(op->path);
        free(op->path2);
        if (op->fd_ops)
                op->fd_ops->free(op->fd_ctx);
        if (op->sbx)
                xb_sbx_unref(op->sbx);
        free(op);
}

static bool
op_background(const struct xb_fileop *op)
{
        return op->fd_ops && op->fd_ops->background;
}

static void
op_uncount(struct xb_fileop *op)
{
        op->sbx->nfileops--;
        if (op_background(op))
                op->sbx->nfileops_bg--;
}

/* Init answered op in full, or its sandbox died: op waits no more. */
static void
op_unlink(struct xb_fileop *op)
{
        xb_sbx_pending_del(op->sbx, op->tag);
        op_uncount(op);
}

/* The call is ending: nobody may end it twice, even when its sink starts
 * or kills something on this sandbox. */
static struct xb_call *
take_call(struct xb_fileop *op)
{
        struct xb_call *c = op->call;

        op->call = NULL;
        return c;
}

/* The client left: the operation is abandoned; init's reply only closes fds. */
static void
op_cancel(void *owner)
{
        struct xb_fileop *op = owner;

        op->call = NULL;
}

#define GONE "the sandbox is gone"

int
xb_fileop_sandbox_ok(const struct xb_sbx *x, struct xb_err *err)
{
        if (x->state < XB_SBX_DYING && x->sb)
                return 0;
        return xb_sbx_gone(x, x->error[0] ? x->error : NULL, GONE, err);
}

static const struct xb_pending_ops fileop_pending;

/* Send q to init for op; on failure end the call and free op. */
static void
op_start(struct xb_sbx *x, struct xb_file_req *q, struct xb_fileop *op)
{
        struct xb_err err = { 0 };
        uint32_t tag;

        if (xb_fileop_sandbox_ok(x, &err) < 0)
                goto fail;
        if (x->nfileops >= PENDING_MAX) {
                xb_err_code(&err, XB_E_TOO_MANY_FILE_REQUESTS, EAGAIN, NULL,
                            "the sandbox has %u file requests in flight, its limit", x->nfileops);
                goto fail;
        }
        tag = xb_sbx_pending_add(x, &fileop_pending, op);
        if (!tag) {
                xb_err_code(&err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
                goto fail;
        }
        /* As the sandbox's user: root in a "user": "root" sandbox. */
        q->uid = q->gid = x->uid;
        if (xb_filec_send(x->sb->sock, tag, q, &err) < 0) {
                xb_sbx_pending_del(x, tag);
                if (err.code == EAGAIN)
                        xb_err_code(&err, XB_E_SANDBOX_BUSY, EAGAIN, NULL, "the sandbox's init is behind on requests");
                else
                        err.ecode = err.code == E2BIG ? XB_E_FILE_REQUEST_FAILED : XB_E_FILE_REQUEST_INTERNAL;
                goto fail;
        }
        op->sbx = x;
        op->tag = tag;
        op->op = q->op;
        xb_sbx_ref(x);
        x->nfileops++;
        if (op_background(op))
                x->nfileops_bg++;
        xb_sbx_used(x);
        xb_call_on_cancel(op->call, op_cancel, op);
        return;
fail:
        xb_call_fail(take_call(op), &err);
        op_free(op);
}

/* A new operation for call, or NULL after failing it (and freeing what it
 * was to take). */
static struct xb_fileop *
op_new(struct xb_call *call, char *path, char *path2, const struct xb_fileop_fd_ops *fd_ops, void *fd_ctx)
{
        struct xb_fileop *op = calloc(1, sizeof(*op));

        if (!op) {
                free(path);
                free(path2);
                if (fd_ops)
                        fd_ops->free(fd_ctx);
                xb_call_failf(call, XB_E_NOMEM, NULL, "out of memory");
                return NULL;
        }
        *op = (struct xb_fileop){ .call = call, .path = path, .path2 = path2, .fd_ops = fd_ops, .fd_ctx = fd_ctx };
        return op;
}

void
xb_fileop_run(struct xb_sbx *x, struct xb_file_req *q, char *path, char *path2, struct xb_call *call)
{
        struct xb_fileop *op = op_new(call, path, path2, NULL, NULL);

        if (op)
                op_start(x, q, op);
}

void
xb_fileop_start_fd(struct xb_sbx *x, struct xb_file_req *q, char *path, const struct xb_fileop_fd_ops *ops,
                   void *ctx, struct xb_call *call)
{
        struct xb_fileop *op = op_new(call, path, NULL, ops, ctx);

        if (op)
                op_start(x, q, op);
}

/* ---- replies ---- */

static const char *
type_name(enum xb_ftype t)
{
        switch (t) {
        case XB_FT_FILE: return "file";
        case XB_FT_DIR: return "dir";
        case XB_FT_SYMLINK: return "symlink";
        default: return "other";
        }
}

static const char *
kind_text(enum xb_ftype t)
{
        static const char *const names[] = { "something", "regular file", "directory", "symlink", "FIFO",
                                             "socket", "character device", "block device", "special file" };

        return (unsigned)t < ARRAY_SIZE(names) ? names[t] : names[0];
}

static const char *
verb(enum xb_fop op)
{
        static const char *const v[] = { "", "read", "write", "stat", "list", "create directory", "move", "delete" };

        return (unsigned)op < ARRAY_SIZE(v) ? v[op] : "access";
}

/* What init's errno means for the client; the adapters add hints. */
static const struct errmap {
        int errnum;
        enum xb_ecode ecode;
} errmap[] = {
        { ENOENT, XB_E_FILE_NOT_FOUND },
        { ENOTDIR, XB_E_NOT_A_DIRECTORY },
        { EISDIR, XB_E_IS_A_DIRECTORY },
        { EACCES, XB_E_PERMISSION_DENIED },
        { EPERM, XB_E_PERMISSION_DENIED_CHANGE },
        { EROFS, XB_E_READ_ONLY },
        { ENOSPC, XB_E_DISK_FULL },
        { EDQUOT, XB_E_DISK_FULL },
        { EEXIST, XB_E_ALREADY_EXISTS },
        { ENOTEMPTY, XB_E_DIRECTORY_NOT_EMPTY },
        { EBUSY, XB_E_PROTECTED_PATH },
        { ELOOP, XB_E_SYMLINK_REFUSED },
        { ENAMETOOLONG, XB_E_PATH_TOO_LONG },
        { EXDEV, XB_E_CROSS_DEVICE },
        { E2BIG, XB_E_TREE_TOO_LARGE },
        { ETXTBSY, XB_E_TEXT_FILE_BUSY },
        { EAGAIN, XB_E_FILE_BUSY },
        { EOPNOTSUPP, XB_E_UNSUPPORTED_FILE },
        { EFBIG, XB_E_FILE_TOO_LARGE },
        { EMFILE, XB_E_SANDBOX_BUSY },
        { ENFILE, XB_E_SANDBOX_BUSY },
        { ENOMEM, XB_E_SANDBOX_BUSY },
        { EINVAL, XB_E_BAD_FILE_NAME },
};

const char *
xb_fileop_shown(const char *path, char *buf, size_t cap)
{
        size_t n = strnlen(path, XB_SHOWN_MAX), len;
        _cleanup_free_ char *clean = xb_utf8_sanitize(path, n, &len);

        snprintf(buf, cap, "%s%s", clean ? clean : "?", path[n] ? "..." : "");
        return buf;
}

json_t *
xb_fileop_str_json(const char *s, size_t n)
{
        size_t len;
        _cleanup_free_ char *clean = xb_utf8_sanitize(s, n, &len);

        return clean ? json_stringn(clean, len) : json_string("");
}

static json_t *
str_json(const char *s)
{
        return xb_fileop_str_json(s, strlen(s));
}

static json_t *
entry_json(const char *path, size_t len, const struct xb_file_entry *e)
{
        const char *slash = memrchr(path, '/', len), *name = slash && len > 1 ? slash + 1 : path;
        int64_t sec = e->mtime_ns / 1000000000, rem = e->mtime_ns % 1000000000;
        char when[64] = "1970-01-01T00:00:00", mode[8];
        time_t t;
        struct tm tm;
        json_t *o;

        if (rem < 0) {
                rem += 1000000000;
                sec--;
        }
        t = (time_t)sec;
        if (gmtime_r(&t, &tm))
                strftime(when, sizeof(when) - 8, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(when + strlen(when), 8, ".%03dZ", (int)(rem / 1000000));
        snprintf(mode, sizeof(mode), "%04o", e->mode & 07777);
        o = json_object();
        json_object_set_new(o, "name", xb_fileop_str_json(name, len - (size_t)(name - path)));
        json_object_set_new(o, "path", xb_fileop_str_json(path, len));
        json_object_set_new(o, "type", json_string(type_name(e->type)));
        json_object_set_new(o, "size", json_integer((json_int_t)e->size));
        json_object_set_new(o, "mode", json_string(mode));
        json_object_set_new(o, "mtime", json_string(when));
        json_object_set_new(o, "mtime_ms", json_integer((json_int_t)(sec * 1000 + rem / 1000000)));
        return o;
}

static void
fail_file(struct xb_call *c, enum xb_fop op, const char *raw, int e, enum xb_ftype found)
{
        char buf[XB_SHOWN_CAP];
        const char *path = xb_fileop_shown(raw, buf, sizeof(buf));
        enum xb_ecode code = XB_E_FILE_ERROR;
        struct xb_err err = { 0 };

        if (e == EINVAL && found) {
                xb_err_code(&err, XB_E_NOT_A_REGULAR_FILE, e, NULL, "cannot %s `%s`: it is a %s, not a regular file",
                            verb(op), path, kind_text(found));
        } else {
                for (size_t i = 0; i < ARRAY_SIZE(errmap); i++)
                        if (errmap[i].errnum == e)
                                code = errmap[i].ecode;
                xb_err_code(&err, code, e, NULL, "cannot %s `%s`: %s", verb(op), path, strerror(e));
        }
        xb_call_fail(c, &err);
}

/* An fd from init is untrusted: a regular file on a real filesystem,
 * open for what we need and nothing that could block or lie. */
static bool
fd_ok(int fd, bool for_write, struct stat *st)
{
        int fl = fcntl(fd, F_GETFL), acc = fl & O_ACCMODE;

        return fl >= 0 && !(fl & O_PATH) && fstat(fd, st) == 0 && S_ISREG(st->st_mode) && st->st_size >= 0 &&
               (for_write ? acc == O_WRONLY || acc == O_RDWR : acc == O_RDONLY || acc == O_RDWR) && !xb_pseudo_fs(fd);
}

static int
entry_cmp(const void *a, const void *b)
{
        return strcmp(((const struct list_entry *)a)->rel, ((const struct list_entry *)b)->rel);
}

static void
finish_list(struct xb_fileop *op, struct xb_call *c, const struct xb_file_reply *rep)
{
        size_t base_len = strlen(op->path);
        json_t *arr = json_array(), *o;

        while (base_len > 1 && op->path[base_len - 1] == '/')
                base_len--;
        if (op->nentries)   /* qsort(NULL, 0, ...) is undefined */
                qsort(op->entries, op->nentries, sizeof(op->entries[0]), entry_cmp);
        for (size_t i = 0; i < op->nentries; i++) {
                _cleanup_free_ char *full = NULL;
                int n = asprintf(&full, "%.*s/%s", base_len == 1 ? 0 : (int)base_len, op->path, op->entries[i].rel);

                if (n < 0) {
                        full = NULL;
                        continue;
                }
                json_array_append_new(arr, entry_json(full, (size_t)n, &op->entries[i].e));
        }
        o = json_pack("{s:o,s:o,s:I,s:b}", "path", str_json(op->path), "entries", arr, "count",
                      (json_int_t)op->nentries, "truncated", rep->trunc);
        if (rep->trunc)
                json_object_set_new(o, "hint", json_string("the listing stopped at 10000 entries (or 2 MiB of names); "
                                                          "list a subdirectory, or use a smaller depth"));
        xb_call_done(c, o);
}

static void
finish_stat(struct xb_fileop *op, struct xb_call *c, const struct xb_file_reply *rep)
{
        struct xb_file_entry e = { .type = rep->type, .mode = rep->mode, .size = rep->size, .mtime_ns = rep->mtime_ns };
        json_t *o = entry_json(op->path, strlen(op->path), &e);

        if (rep->target)
                json_object_set_new(o, "target", xb_fileop_str_json(rep->target, rep->target_len));
        xb_call_done(c, o);
}

/* Takes fd (a READ's or WRITE's, checked), ends c. */
static void
finish(struct xb_fileop *op, struct xb_call *c, const struct xb_file_reply *rep, int fd, const struct stat *st)
{
        json_t *audit;

        if (rep->errnum) {
                fail_file(c, op->op, op->op == XB_FOP_MOVE && rep->errnum == EEXIST ? op->path2 : op->path,
                          rep->errnum, rep->type);
                return;
        }
        switch (op->op) {
        case XB_FOP_READ:
        case XB_FOP_WRITE:
                if (op->fd_ops)
                        op->fd_ops->opened(op->fd_ctx, op->sbx, &op->path, c, fd, st);
                else {
                        close(fd);
                        xb_call_failf(c, XB_E_INTERNAL, NULL, "a file operation got an fd it had no use for");
                }
                break;
        case XB_FOP_STAT:
                finish_stat(op, c, rep);
                break;
        case XB_FOP_LIST:
                finish_list(op, c, rep);
                break;
        case XB_FOP_MKDIR:
                audit = json_pack("{s:o,s:b}", "path", str_json(op->path), "created", rep->count > 0);
                xb_audit_add(op->sbx->audit, "file_mkdir", json_incref(audit));
                xb_call_done(c, audit);
                break;
        case XB_FOP_MOVE:
                audit = json_pack("{s:o,s:o}", "from", str_json(op->path), "to", str_json(op->path2));
                xb_audit_add(op->sbx->audit, "file_move", json_incref(audit));
                xb_call_done(c, audit);
                break;
        case XB_FOP_DELETE:
                audit = json_pack("{s:o,s:I}", "path", str_json(op->path), "deleted", (json_int_t)rep->count);
                xb_audit_add(op->sbx->audit, "file_delete", json_incref(audit));
                xb_call_done(c, audit);
                break;
        }
}

/* Keep a listing part's entries (or only count them, if abandoned). */
static int
absorb_entries(struct xb_fileop *op, const struct xb_msgr *m, const struct xb_file_reply *rep)
{
        size_t cur = 0, rel_len;
        struct xb_file_entry e;
        const char *rel;

        if (op->op != XB_FOP_LIST || op->total + rep->nentries > XB_FILE_LIST_MAX ||
            op->entry_bytes + rep->entry_bytes > XB_FILE_LIST_BYTES_MAX)
                return -EBADMSG;
        op->total += rep->nentries;
        op->entry_bytes += rep->entry_bytes;
        if (!op->call)
                return 0;
        if (op->nentries + rep->nentries > op->cap) {
                size_t cap = XB_MAX(op->cap * 2, op->nentries + rep->nentries);
                struct list_entry *v = realloc(op->entries, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                op->entries = v;
                op->cap = cap;
        }
        while (xb_filec_next_entry(m, &cur, &e, &rel, &rel_len)) {
                char *s = strndup(rel, rel_len);

                if (!s)
                        return -ENOMEM;
                op->entries[op->nentries++] = (struct list_entry){ .rel = s, .e = e };
        }
        return 0;
}

/* Init's reply for op's tag (fds are ours). */
static void
op_file(void *ctx, const struct xb_init_event *ev, int *fds, size_t nfds)
{
        struct xb_fileop *op = ctx;
        struct xb_sbx *x = op->sbx;
        struct xb_file_reply rep;
        struct stat st = { 0 };
        const char *bad = NULL;
        int r = 0;

        if (xb_filec_parse(&ev->msg, op->op, nfds, &rep) < 0)
                bad = "a malformed reply";
        else if (rep.nentries && (r = absorb_entries(op, &ev->msg, &rep)) == -EBADMSG)
                bad = "too many entries";
        else if (op->op == XB_FOP_LIST && !rep.more && !rep.errnum && rep.count != op->total)
                bad = "a listing whose count does not match";
        else if (nfds && !fd_ok(fds[0], op->op == XB_FOP_WRITE, &st))
                bad = "an fd that is not a regular file";
        if (bad) {
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
                xb_warn("sandbox %s: init sent %s; killing it", x->id, bad);
                /* Its death fails and frees op (op_died). */
                xb_sbx_destroy(x, XB_SBX_BROKEN, "the sandbox broke the init protocol and was killed");
                return;
        }
        if (r < 0 && op->call)   /* out of memory for the listing: answer now, drop the rest */
                xb_call_failf(take_call(op), XB_E_NOMEM, NULL, "out of memory");
        if (rep.more)
                return;
        op_unlink(op);
        if (!op->call) {
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
        } else
                finish(op, take_call(op), &rep, nfds ? fds[0] : -1, &st);   /* takes the fd */
        op_free(op);
}

/* The sandbox died before init answered: the call fails, op goes. */
static void
op_died(void *ctx, const char *why)
{
        struct xb_fileop *op = ctx;
        struct xb_err err = { 0 };

        op_uncount(op);
        if (op->call) {
                xb_sbx_gone(op->sbx, why, GONE, &err);
                xb_call_fail(take_call(op), &err);
        }
        op_free(op);
}

static const struct xb_pending_ops fileop_pending = { .file = op_file, .died = op_died };
