/* The file API's operations: read, write, stat, list, mkdir, move and
 * delete inside a sandbox, each one round trip to the sandbox's init
 * (api_files.c parses the requests).
 *
 * Theory of operation. The daemon never opens a sandbox path. An
 * operation (struct xb_fileop) sends XB_REQ_FILE with a fresh tag, its
 * request is suspended, and it waits on its sandbox until init's
 * XB_EV_FILE with that tag comes back (a listing may come in parts).
 * Reads get one fd from init: the daemon checks it (a regular file, on a
 * real filesystem, opened for reading) and the HTTP front sends it, with
 * Range. Writes are a sink route: at the headers init opens the file, the
 * body then streams into the fd it returned, and the end answers; a failed
 * upload is cut back to the length the file had when opened. A client
 * that leaves marks its operation abandoned: the reply, when it comes,
 * only closes fds. When the sandbox dies every pending operation is
 * answered 410. A reply that breaks the protocol kills the sandbox. */
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
#include "core/files.h"
#include "proto/pseudofs.h"

#define CTYPE_BYTES "application/octet-stream"
#define PENDING_MAX 64          /* file operations waiting on one sandbox's init */
#define HINT_TOOL "use POST /v1/sandboxes/{id}/exec {\"cmd\": \"...\"} for anything the file API cannot do"

struct list_entry {
        char *rel;                    /* relative to the listed directory */
        struct xb_file_entry e;
};

struct upload {
        struct xb_sbx *sbx;           /* referenced */
        char *path;
        int fd;                       /* from init, once it answered */
        uint64_t base_size;           /* restored when the upload fails */
};

struct range {
        enum { R_NONE, R_FROM_TO, R_FROM, R_SUFFIX } kind;
        uint64_t a, b;
};

struct xb_fileop {
        struct xb_fileop *next;
        struct xb_sbx *sbx;           /* referenced */
        struct xb_req *req;           /* NULL once abandoned */
        uint32_t tag;
        enum xb_fop op;
        char *path, *path2;           /* as shown to the client: absolute */
        struct range range;           /* READ */
        struct upload *up;            /* WRITE, until the fd is handed over */
        struct list_entry *entries;   /* LIST: what was kept */
        size_t nentries, cap;
        size_t total, entry_bytes;    /* LIST: what init sent, for its bounds */
};

static void parse_range(const char *h, struct range *rg);

/* ---- operations ---- */

static void
upload_free(struct upload *up, bool failed)
{
        if (!up)
                return;
        if (up->fd >= 0) {
                if (failed && ftruncate(up->fd, (off_t)up->base_size) < 0)
                        xb_debug("upload %s: truncate back: %s", up->path, strerror(errno));
                close(up->fd);
        }
        xb_sbx_unref(up->sbx);
        free(up->path);
        free(up);
}

static void
op_free(struct xb_fileop *op)
{
        upload_free(op->up, true);
        for (size_t i = 0; i < op->nentries; i++)
                free(op->entries[i].rel);
        free(op->entries);
        free(op->path);
        free(op->path2);
        xb_sbx_unref(op->sbx);
        free(op);
}

static void
op_unlink(struct xb_fileop *op)
{
        for (struct xb_fileop **pp = &op->sbx->fileops; *pp; pp = &(*pp)->next)
                if (*pp == op) {
                        *pp = op->next;
                        return;
                }
}

/* The client left: its operation is abandoned; init's reply only closes fds. */
static void
op_gone(struct xb_req *r, void *owner)
{
        struct xb_fileop *op = owner;

        (void)r;
        op->req = NULL;
        upload_free(op->up, false);
        op->up = NULL;
}

bool
xb_fileop_sandbox_ok(struct xb_req *r, struct xb_sbx *x)
{
        if (x->state < XB_SBX_DYING && x->sb)
                return true;
        xb_reply_error(r, 410, "sandbox_gone", "create a new sandbox", "%s",
                       x->error[0] ? x->error : "the sandbox is gone");
        return false;
}

static struct xb_fileop *
op_start(struct xb_req *r, struct xb_sbx *x, struct xb_file_req *q, char *path, char *path2)
{
        struct xb_fileop *op = NULL;
        struct xb_err err = { 0 };
        unsigned pending = 0;

        for (struct xb_fileop *o = x->fileops; o; o = o->next)
                pending++;
        if (pending >= PENDING_MAX) {
                free(path);
                free(path2);
                xb_reply_error(r, 429, "too_many_file_requests", "wait for earlier file requests to this sandbox to finish",
                               "the sandbox has %u file requests in flight, its limit", pending);
                return NULL;
        }
        op = calloc(1, sizeof(*op));
        if (!op) {
                free(path);
                free(path2);
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                return NULL;
        }
        *op = (struct xb_fileop){ .sbx = x, .req = r, .tag = xb_sbx_tag(x), .op = q->op, .path = path, .path2 = path2 };
        q->uid = q->gid = XB_USER_UID;
        if (xb_filec_send(x->sb->sock, op->tag, q, &err) < 0) {
                free(path);
                free(path2);
                free(op);
                if (err.code == EAGAIN)
                        xb_reply_error(r, 503, "sandbox_busy", "retry in a moment",
                                       "the sandbox's init is behind on requests");
                else
                        xb_reply_error(r, err.code == E2BIG ? 400 : 500, "file_request_failed",
                                       "shorten the path, or retry", "%s", err.msg);
                return NULL;
        }
        xb_sbx_ref(x);
        op->next = x->fileops;
        x->fileops = op;
        xb_sbx_touch(x, 0);
        xb_req_suspend(r, op_gone, op);
        return op;
}

bool
xb_fileop_start(struct xb_req *r, struct xb_sbx *x, struct xb_file_req *q, char *path, char *path2,
                const char *range)
{
        struct xb_fileop *op = op_start(r, x, q, path, path2);

        if (op && range)
                parse_range(range, &op->range);
        return op != NULL;
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

static const struct errmap {
        int errnum;
        unsigned status;
        const char *code, *hint;
} errmap[] = {
        { ENOENT, 404, "file_not_found", "check the path; list a directory with GET /v1/sandboxes/{id}/files/list?path=DIR" },
        { ENOTDIR, 400, "not_a_directory", "a component of the path is a file, not a directory" },
        { EISDIR, 400, "is_a_directory", "a directory has no content: list it with GET /v1/sandboxes/{id}/files/list?path=DIR" },
        { EACCES, 403, "permission_denied", "file operations run as the sandbox user (uid 1000): only /home/user, /tmp and "
          "writable mounts can be written, and other users' private files cannot be read" },
        { EPERM, 403, "permission_denied", "file operations run as the sandbox user (uid 1000): only /home/user, /tmp and "
          "writable mounts can be written, and files owned by others cannot be changed" },
        { EROFS, 403, "read_only", "only /home/user, /tmp and writable mounts can be written" },
        { ENOSPC, 507, "disk_full", "the sandbox's disk limit is reached: delete files, or create the sandbox with a larger "
          "{\"limits\": {\"disk\": BYTES}}" },
        { EDQUOT, 507, "disk_full", "the sandbox's disk limit is reached: delete files, or create the sandbox with a larger "
          "{\"limits\": {\"disk\": BYTES}}" },
        { EEXIST, 409, "already_exists", "choose another name, delete the existing one first, or for a move pass "
          "\"overwrite\": true" },
        { ENOTEMPTY, 409, "directory_not_empty", "delete it with recursive=true to remove everything inside too" },
        { EBUSY, 409, "protected_path", "/, /home/user and mount points cannot be deleted or moved; act on what is inside them" },
        { ELOOP, 400, "symlink_refused", "the path crosses a /proc magic link or a symlink loop, or ends in a dangling "
          "symlink; use the real path" },
        { ENAMETOOLONG, 400, "path_too_long", "names are at most 255 bytes and paths 4096" },
        { EXDEV, 400, "cross_device", "the source and destination are on different filesystems (such as /tmp and "
          "/home/user); " HINT_TOOL ", e.g. mv" },
        { E2BIG, 413, "tree_too_large", "the tree is over 100000 entries or 128 levels deep, and only part of it was "
          "deleted; repeat the request, or " HINT_TOOL },
        { ETXTBSY, 409, "text_file_busy", "a running program is this file; write a new file and move it over the old one" },
        { EAGAIN, 503, "file_busy", "the path kept changing during the operation, or a process holds a lease on the file; "
          "retry" },
        { EOPNOTSUPP, 400, "unsupported_file", "files in /proc and similar filesystems are not served; " HINT_TOOL },
        { EFBIG, 413, "file_too_large", "the file would exceed a size limit" },
        { EMFILE, 503, "sandbox_busy", "retry in a moment" },
        { ENFILE, 503, "sandbox_busy", "retry in a moment" },
        { ENOMEM, 503, "sandbox_busy", "retry in a moment" },
        { EINVAL, 400, "invalid_path", "the last component cannot be . or .., and a directory cannot move into itself" },
};

/* A path for a message: valid UTF-8 (messages are JSON strings) and short
 * enough that the message is never cut inside a character. */
#define SHOWN_MAX 128

static const char *
shown(const char *path, char *buf, size_t cap)
{
        size_t n = strnlen(path, SHOWN_MAX), len;
        _cleanup_free_ char *clean = xb_utf8_sanitize(path, n, &len);

        snprintf(buf, cap, "%s%s", clean ? clean : "?", path[n] ? "..." : "");
        return buf;
}

static void
reply_file_error(struct xb_req *r, enum xb_fop op, const char *raw, int e, enum xb_ftype found)
{
        char buf[SHOWN_MAX * 3 + 8];
        const char *path = shown(raw, buf, sizeof(buf));

        if (e == EINVAL && found) {
                xb_reply_error(r, 400, "not_a_regular_file", "only regular files can be read or written; FIFOs, sockets "
                               "and devices are refused", "cannot %s `%s`: it is a %s, not a regular file",
                               verb(op), path, kind_text(found));
                return;
        }
        for (size_t i = 0; i < ARRAY_SIZE(errmap); i++)
                if (errmap[i].errnum == e) {
                        xb_reply_error(r, errmap[i].status, errmap[i].code, errmap[i].hint, "cannot %s `%s`: %s",
                                       verb(op), path, strerror(e));
                        return;
                }
        xb_reply_error(r, 500, "file_error", "retry; if it persists, " HINT_TOOL, "cannot %s `%s`: %s", verb(op),
                       path, strerror(e));
}

static json_t *
str_json(const char *s, size_t n)
{
        size_t len;
        _cleanup_free_ char *clean = xb_utf8_sanitize(s, n, &len);

        return clean ? json_stringn(clean, len) : json_string("");
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
        json_object_set_new(o, "name", str_json(name, len - (size_t)(name - path)));
        json_object_set_new(o, "path", str_json(path, len));
        json_object_set_new(o, "type", json_string(type_name(e->type)));
        json_object_set_new(o, "size", json_integer((json_int_t)e->size));
        json_object_set_new(o, "mode", json_string(mode));
        json_object_set_new(o, "mtime", json_string(when));
        json_object_set_new(o, "mtime_ms", json_integer((json_int_t)(sec * 1000 + rem / 1000000)));
        return o;
}

/* Range: bytes=a-b, a- and -n; anything else (several ranges, other
 * units, bad syntax) is ignored and the whole file is sent (RFC 9110 14.2). */
static bool
digits(const char **p, uint64_t *v)
{
        uint64_t n = 0;
        const char *s = *p;

        if (*s < '0' || *s > '9')
                return false;
        for (; *s >= '0' && *s <= '9'; s++) {
                if (n > (UINT64_MAX - 9) / 10)
                        return false;
                n = n * 10 + (uint64_t)(*s - '0');
        }
        *p = s;
        *v = n;
        return true;
}

static void
parse_range(const char *h, struct range *rg)
{
        struct range r = { R_NONE, 0, 0 };

        rg->kind = R_NONE;
        if (!h || strncmp(h, "bytes=", 6) != 0)
                return;
        h += 6;
        while (*h == ' ')
                h++;
        if (*h == '-') {
                h++;
                if (!digits(&h, &r.b))
                        return;
                r.kind = R_SUFFIX;
        } else {
                if (!digits(&h, &r.a) || *h++ != '-')
                        return;
                r.kind = R_FROM;
                if (*h >= '0' && *h <= '9') {
                        if (!digits(&h, &r.b) || r.b < r.a)
                                return;
                        r.kind = R_FROM_TO;
                }
        }
        while (*h == ' ')
                h++;
        if (*h == '\0')
                *rg = r;
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

static void
finish_read(struct xb_fileop *op, int fd, const struct stat *st)
{
        uint64_t size = (uint64_t)st->st_size, off = 0, len = size;
        const struct range *rg = &op->range;
        char cr[96], buf[SHOWN_MAX * 3 + 8];

        if (rg->kind == R_NONE) {
                xb_reply_fd(op->req, 200, CTYPE_BYTES, fd, 0, size, NULL);
                return;
        }
        if ((rg->kind == R_SUFFIX && (rg->b == 0 || size == 0)) || (rg->kind != R_SUFFIX && rg->a >= size)) {
                close(fd);
                snprintf(cr, sizeof(cr), "bytes */%llu", (unsigned long long)size);
                xb_req_add_reply_header(op->req, "Content-Range", cr);
                xb_reply_error(op->req, 416, "range_not_satisfiable", "ask for bytes inside the file, or leave out the "
                               "Range header", "`%s` is %llu bytes; the range asked for is outside it", shown(op->path, buf, sizeof(buf)),
                               (unsigned long long)size);
                return;
        }
        if (rg->kind == R_SUFFIX) {
                len = XB_MIN(rg->b, size);
                off = size - len;
        } else {
                off = rg->a;
                len = (rg->kind == R_FROM_TO ? XB_MIN(rg->b, size - 1) : size - 1) - off + 1;
        }
        snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)off, (unsigned long long)(off + len - 1),
                 (unsigned long long)size);
        xb_reply_fd(op->req, 206, CTYPE_BYTES, fd, off, len, cr);
}

/* The open file is ready: stream the body into it (see put_file). */
static void
upload_gone(struct xb_req *r, void *owner)
{
        (void)r;
        upload_free(owner, true);
}

static void
finish_write(struct xb_fileop *op, int fd, const struct stat *st)
{
        struct upload *up = op->up;
        struct xb_req *r = op->req;

        op->up = NULL;
        up->fd = fd;
        /* O_APPEND keeps what was there; otherwise init truncated it. */
        up->base_size = (uint64_t)st->st_size;
        /* Still suspended: this only hands on_gone to the upload for the body's time. */
        xb_req_suspend(r, upload_gone, up);
        xb_req_set_sink(r, fd);
        xb_req_resume(r);
}

static int
entry_cmp(const void *a, const void *b)
{
        return strcmp(((const struct list_entry *)a)->rel, ((const struct list_entry *)b)->rel);
}

static void
finish_list(struct xb_fileop *op, const struct xb_file_reply *rep)
{
        size_t base_len = strlen(op->path);
        json_t *arr = json_array(), *o;

        while (base_len > 1 && op->path[base_len - 1] == '/')
                base_len--;
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
        o = json_pack("{s:o,s:o,s:I,s:b}", "path", str_json(op->path, strlen(op->path)), "entries", arr, "count",
                      (json_int_t)op->nentries, "truncated", rep->trunc);
        if (rep->trunc)
                json_object_set_new(o, "hint", json_string("the listing stopped at 10000 entries (or 2 MiB of names); "
                                                          "list a subdirectory, or use a smaller depth"));
        xb_reply_json(op->req, 200, o);
}

static void
finish_stat(struct xb_fileop *op, const struct xb_file_reply *rep)
{
        struct xb_file_entry e = { .type = rep->type, .mode = rep->mode, .size = rep->size, .mtime_ns = rep->mtime_ns };
        json_t *o = entry_json(op->path, strlen(op->path), &e);

        if (rep->target)
                json_object_set_new(o, "target", str_json(rep->target, rep->target_len));
        xb_reply_json(op->req, 200, o);
}

static void
finish(struct xb_fileop *op, const struct xb_file_reply *rep, int fd, const struct stat *st)
{
        struct xb_req *r = op->req;

        if (rep->errnum) {
                reply_file_error(r, op->op, op->op == XB_FOP_MOVE && rep->errnum == EEXIST ? op->path2 : op->path,
                                 rep->errnum, rep->type);
                return;
        }
        switch (op->op) {
        case XB_FOP_READ:
                finish_read(op, fd, st);
                break;
        case XB_FOP_WRITE:
                finish_write(op, fd, st);
                break;
        case XB_FOP_STAT:
                finish_stat(op, rep);
                break;
        case XB_FOP_LIST:
                finish_list(op, rep);
                break;
        case XB_FOP_MKDIR:
                xb_reply_json(r, 200, json_pack("{s:o,s:b}", "path", str_json(op->path, strlen(op->path)), "created",
                                                rep->count > 0));
                break;
        case XB_FOP_MOVE:
                xb_reply_json(r, 200, json_pack("{s:o,s:o}", "from", str_json(op->path, strlen(op->path)), "to",
                                                str_json(op->path2, strlen(op->path2))));
                break;
        case XB_FOP_DELETE:
                xb_reply_json(r, 200, json_pack("{s:o,s:I}", "path", str_json(op->path, strlen(op->path)), "deleted",
                                                (json_int_t)rep->count));
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
        if (!op->req)
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

static struct xb_fileop *
find_op(struct xb_sbx *x, uint32_t tag)
{
        for (struct xb_fileop *op = x->fileops; op; op = op->next)
                if (op->tag == tag)
                        return op;
        return NULL;
}

void
xb_fileop_on_reply(struct xb_sbx *x, const struct xb_init_event *ev, int *fds, size_t nfds)
{
        struct xb_fileop *op = find_op(x, ev->tag);
        struct xb_file_reply rep;
        struct stat st = { 0 };
        const char *bad = NULL;
        int r = 0;

        if (!op)
                bad = "a reply nobody asked for";
        else if (xb_filec_parse(&ev->msg, op->op, nfds, &rep) < 0)
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
                xb_sbx_destroy(x, "the sandbox broke the init protocol and was killed");
                return;
        }
        if (r < 0 && op->req) {
                /* Out of memory for the listing: answer now, drop the rest. */
                xb_reply_error(op->req, 503, "out_of_memory", "retry", "out of memory");
                op->req = NULL;
        }
        if (rep.more)
                return;
        op_unlink(op);
        if (!op->req) {
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
        } else
                finish(op, &rep, nfds ? fds[0] : -1, &st);   /* takes the fd */
        op_free(op);
}

void
xb_fileop_sandbox_died(struct xb_sbx *x)
{
        while (x->fileops) {
                struct xb_fileop *op = x->fileops;

                x->fileops = op->next;
                if (op->req)
                        xb_reply_error(op->req, 410, "sandbox_gone", "create a new sandbox", "%s",
                                       x->error[0] ? x->error : "the sandbox is gone");
                op_free(op);
        }
}

/* ---- uploads ---- */

void
xb_fileop_upload_begin(struct xb_req *r, struct xb_sbx *x, struct xb_file_req *q, char *path)
{
        struct xb_fileop *op;
        struct upload *up = calloc(1, sizeof(*up));

        if (!up || !(up->path = strdup(path))) {
                free(up);
                free(path);
                xb_reply_error(r, 503, "out_of_memory", "retry", "out of memory");
                return;
        }
        up->fd = -1;
        up->sbx = x;
        xb_sbx_ref(x);
        xb_req_set_data(r, up);
        op = op_start(r, x, q, path, NULL);
        if (!op) {
                xb_req_set_data(r, NULL);
                upload_free(up, false);
                return;
        }
        op->up = up;
}

void
xb_fileop_upload_end(struct xb_req *r)
{
        struct upload *up = xb_req_data(r);
        int e = xb_req_sink_error(r);
        uint64_t written = xb_req_sink_bytes(r);
        char buf[SHOWN_MAX * 3 + 8];
        struct stat st;

        xb_req_set_data(r, NULL);
        if (!up || up->fd < 0) {
                upload_free(up, true);
                xb_reply_error(r, 500, "internal", "retry", "the upload lost its file");
                return;
        }
        if (!xb_fileop_sandbox_ok(r, up->sbx)) {
                upload_free(up, false);
                return;
        }
        if (e || fstat(up->fd, &st) < 0) {
                e = e ? e : errno;
                if (e == ENOSPC || e == EDQUOT)
                        xb_reply_error(r, 507, "disk_full", "the sandbox's disk limit is reached: delete files, or create "
                                       "the sandbox with a larger {\"limits\": {\"disk\": BYTES}}",
                                       "the disk filled up after %llu bytes of `%s`; the file was put back as it was "
                                       "opened (empty, or its old length when appending)", (unsigned long long)written,
                                       shown(up->path, buf, sizeof(buf)));
                else if (e == EFBIG)
                        xb_reply_error(r, 413, "upload_too_large", "upload smaller files, or raise the server's --upload-max",
                                       "the upload to `%s` is over the server's upload limit",
                                       shown(up->path, buf, sizeof(buf)));
                else
                        xb_reply_error(r, 500, "write_failed", "retry", "writing `%s` failed: %s",
                                       shown(up->path, buf, sizeof(buf)), strerror(e));
                upload_free(up, true);
                return;
        }
        /* Closed before the reply, so the file can be executed at once (no ETXTBSY). */
        close(up->fd);
        up->fd = -1;
        xb_reply_json(r, 200, json_pack("{s:o,s:I,s:I}", "path", str_json(up->path, strlen(up->path)), "size",
                                        (json_int_t)st.st_size, "written", (json_int_t)written));
        upload_free(up, false);
}
