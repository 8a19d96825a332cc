/* File protocol, daemon side. See filec.h. */
#define _GNU_SOURCE
#include "filec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int
xb_filec_send(int sock, uint32_t tag, const struct xb_file_req *q, struct xb_err *err)
{
        uint8_t buf[2 * XB_FILE_PATH_MAX + 256];
        struct xb_msgw w;
        int r;

        xb_msgw_init(&w, buf, sizeof(buf), XB_REQ_FILE, tag);
        xb_msgw_u64(&w, XB_K_OP, q->op);
        xb_msgw_str(&w, XB_K_PATH, q->path);
        if (q->path2)
                xb_msgw_str(&w, XB_K_PATH2, q->path2);
        xb_msgw_u64(&w, XB_K_UID, q->uid);
        xb_msgw_u64(&w, XB_K_GID, q->gid);
        xb_msgw_u64(&w, XB_K_MODE, q->mode);
        xb_msgw_u64(&w, XB_K_DEPTH, q->depth);
        xb_msgw_u64(&w, XB_K_FLAGS, q->flags);
        if (w.overflow)
                return xb_err_msg(err, E2BIG, "the path is too long");
        r = xb_msg_send(sock, w.buf, w.len, NULL, 0);
        if (r < 0)
                return xb_err_set(err, -r, "send the file request to the sandbox init");
        return 0;
}

static bool
valid_type(uint64_t t)
{
        return t >= XB_FT_FILE && t <= XB_FT_OTHER;
}

static int
get_u64(const struct xb_field *f, uint64_t *v)
{
        if (f->len != sizeof(*v))
                return -EBADMSG;
        memcpy(v, f->data, sizeof(*v));
        return 0;
}

/* True if a relative path has an empty, "." or ".." component. */
static bool
odd_component(const char *p, size_t n)
{
        size_t start = 0;

        for (size_t i = 0; i <= n; i++) {
                size_t len;

                if (i < n && p[i] != '/')
                        continue;
                len = i - start;
                if (len == 0 || (len == 1 && p[start] == '.') || (len == 2 && p[start] == '.' && p[start + 1] == '.'))
                        return true;
                start = i + 1;
        }
        return false;
}

/* An entry: a valid header and a relative path without NUL, a leading
 * slash, or empty, "." and ".." components. */
static int
check_entry(const struct xb_field *f)
{
        struct xb_file_entry e;
        const char *rel = (const char *)f->data + sizeof(e);
        size_t n;

        if (f->len <= sizeof(e))
                return -EBADMSG;
        n = f->len - sizeof(e);
        memcpy(&e, f->data, sizeof(e));
        if (!valid_type(e.type) || e.mode > 07777 || e.size > INT64_MAX || n > XB_FILE_PATH_MAX ||
            memchr(rel, '\0', n) || odd_component(rel, n))
                return -EBADMSG;
        return 0;
}

/* Which keys each operation's reply may carry, besides ERRNO. */
static uint64_t
allowed_keys(enum xb_fop op, bool ok)
{
#define K(k) (1ull << ((k) - XB_K_OP))
        if (!ok)
                return K(XB_K_TYPE);
        switch (op) {
        case XB_FOP_READ:
        case XB_FOP_WRITE:
        case XB_FOP_MOVE:
                return 0;
        case XB_FOP_STAT:
                return K(XB_K_TYPE) | K(XB_K_MODE) | K(XB_K_SIZE) | K(XB_K_MTIME_NS) | K(XB_K_DATA);
        case XB_FOP_LIST:
                return K(XB_K_ENTRY) | K(XB_K_COUNT) | K(XB_K_TRUNC);
        case XB_FOP_MKDIR:
        case XB_FOP_DELETE:
                return K(XB_K_COUNT);
        }
        return 0;
#undef K
}

int
xb_filec_parse(const struct xb_msgr *m, enum xb_fop op, size_t nfds, struct xb_file_reply *ret)
{
        struct xb_file_reply rep = { .errnum = -1 };
        uint64_t seen = 0, allowed, v, flags = 0;
        size_t cur = 0;
        struct xb_field f;
        bool has_flags = false;

        /* ERRNO first decides which keys may follow. */
        if (xb_msgr_u64(m, XB_K_ERRNO, &v) < 0 || v > 4095)
                return -EBADMSG;
        rep.errnum = (int)v;
        allowed = allowed_keys(op, rep.errnum == 0);
        while (xb_msgr_next(m, &cur, &f)) {
                uint64_t bit;

                if (f.key == XB_K_ERRNO)
                        continue;
                if (f.key == XB_K_FLAGS) {
                        if (has_flags || get_u64(&f, &flags) < 0 || op != XB_FOP_LIST || rep.errnum ||
                            flags != XB_FILE_MORE)
                                return -EBADMSG;
                        has_flags = true;
                        rep.more = true;
                        continue;
                }
                if (f.key < XB_K_OP || f.key > XB_K_TRUNC || !(allowed & (1ull << (f.key - XB_K_OP))))
                        return -EBADMSG;
                bit = 1ull << (f.key - XB_K_OP);
                if (f.key == XB_K_ENTRY) {
                        if (check_entry(&f) < 0)
                                return -EBADMSG;
                        rep.nentries++;
                        rep.entry_bytes += f.len - sizeof(struct xb_file_entry);
                        continue;
                }
                if (seen & bit)
                        return -EBADMSG;     /* each scalar once */
                seen |= bit;
                if (f.key == XB_K_DATA) {
                        if (f.len == 0 || f.len > XB_FILE_PATH_MAX || !xb_field_is_str(&f))
                                return -EBADMSG;
                        rep.target = (const char *)f.data;
                        rep.target_len = f.len;
                        continue;
                }
                if (get_u64(&f, &v) < 0)
                        return -EBADMSG;
                switch (f.key) {
                case XB_K_TYPE:
                        if (!valid_type(v))
                                return -EBADMSG;
                        rep.type = (enum xb_ftype)v;
                        break;
                case XB_K_MODE:
                        if (v > 07777)
                                return -EBADMSG;
                        rep.mode = (uint32_t)v;
                        break;
                case XB_K_SIZE:
                        if (v > INT64_MAX)
                                return -EBADMSG;
                        rep.size = v;
                        break;
                case XB_K_MTIME_NS:
                        memcpy(&rep.mtime_ns, &v, sizeof(v));
                        break;
                case XB_K_COUNT:
                        rep.count = v;
                        break;
                case XB_K_TRUNC:
                        if (v > 1)
                                return -EBADMSG;
                        rep.trunc = v == 1;
                        break;
                default:
                        return -EBADMSG;
                }
        }
        /* What must be there, and the fds. */
        if (rep.errnum == 0 && op == XB_FOP_STAT) {
                uint64_t need = (1ull << (XB_K_TYPE - XB_K_OP)) | (1ull << (XB_K_MODE - XB_K_OP)) |
                                (1ull << (XB_K_SIZE - XB_K_OP)) | (1ull << (XB_K_MTIME_NS - XB_K_OP));

                if ((seen & need) != need || (rep.target && rep.type != XB_FT_SYMLINK))
                        return -EBADMSG;
        }
        if (op == XB_FOP_LIST && rep.more) {
                /* A part: entries only, at least one. */
                if (seen || rep.nentries == 0)
                        return -EBADMSG;
        } else if (op == XB_FOP_LIST && rep.errnum == 0 && !(seen & (1ull << (XB_K_COUNT - XB_K_OP))))
                return -EBADMSG;
        if (nfds != ((op == XB_FOP_READ || op == XB_FOP_WRITE) && rep.errnum == 0 ? 1u : 0u))
                return -EBADMSG;
        *ret = rep;
        return 0;
}

bool
xb_filec_next_entry(const struct xb_msgr *m, size_t *cursor, struct xb_file_entry *e, const char **rel,
                    size_t *rel_len)
{
        struct xb_field f;

        while (xb_msgr_next(m, cursor, &f)) {
                if (f.key != XB_K_ENTRY || f.len <= sizeof(*e))
                        continue;
                memcpy(e, f.data, sizeof(*e));
                *rel = (const char *)f.data + sizeof(*e);
                *rel_len = f.len - sizeof(*e);
                return true;
        }
        return false;
}
