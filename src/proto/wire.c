/* Encoding and decoding of init messages, and fd passing. */
#define _GNU_SOURCE
#include "wire.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FIELD_HDR 8u

static size_t
pad4(size_t n)
{
        return (n + 3u) & ~(size_t)3u;
}

void
xb_msgw_init(struct xb_msgw *w, void *buf, size_t cap, uint32_t type, uint32_t tag)
{
        struct xb_msg_hdr h = { .type = type, .tag = tag };

        w->buf = buf;
        w->cap = cap < XB_MSG_MAX ? cap : XB_MSG_MAX;
        w->len = 0;
        w->overflow = w->cap < sizeof(h);
        if (!w->overflow) {
                memcpy(w->buf, &h, sizeof(h));
                w->len = sizeof(h);
        }
}

void
xb_msgw_put(struct xb_msgw *w, uint32_t key, const void *p, size_t n)
{
        uint32_t hdr[2] = { key, (uint32_t)n };
        size_t total;

        if (w->overflow)
                return;
        if (n > XB_MSG_MAX || pad4(n) + FIELD_HDR > w->cap - w->len) {
                w->overflow = true;
                return;
        }
        total = FIELD_HDR + pad4(n);
        memcpy(w->buf + w->len, hdr, FIELD_HDR);
        if (n)
                memcpy(w->buf + w->len + FIELD_HDR, p, n);
        memset(w->buf + w->len + FIELD_HDR + n, 0, pad4(n) - n);
        w->len += total;
}

void
xb_msgw_u64(struct xb_msgw *w, uint32_t key, uint64_t v)
{
        xb_msgw_put(w, key, &v, sizeof(v));
}

void
xb_msgw_str(struct xb_msgw *w, uint32_t key, const char *s)
{
        xb_msgw_put(w, key, s, strlen(s));
}

int
xb_msgr_init(struct xb_msgr *r, const void *buf, size_t len)
{
        struct xb_msg_hdr h;
        size_t off = sizeof(h);

        if (len < sizeof(h) || len > XB_MSG_MAX)
                return -EBADMSG;
        memcpy(&h, buf, sizeof(h));
        r->buf = buf;
        r->len = len;
        r->type = h.type;
        r->tag = h.tag;
        while (off < len) {
                uint32_t hdr[2];

                if (len - off < FIELD_HDR)
                        return -EBADMSG;
                memcpy(hdr, r->buf + off, FIELD_HDR);
                if (pad4(hdr[1]) > len - off - FIELD_HDR)
                        return -EBADMSG;
                off += FIELD_HDR + pad4(hdr[1]);
        }
        return 0;
}

bool
xb_msgr_next(const struct xb_msgr *r, size_t *cursor, struct xb_field *f)
{
        uint32_t hdr[2];
        size_t off = *cursor ? *cursor : sizeof(struct xb_msg_hdr);

        /* xb_msgr_init proved every field in bounds. */
        if (off + FIELD_HDR > r->len)
                return false;
        memcpy(hdr, r->buf + off, FIELD_HDR);
        f->key = hdr[0];
        f->len = hdr[1];
        f->data = r->buf + off + FIELD_HDR;
        *cursor = off + FIELD_HDR + pad4(hdr[1]);
        return true;
}

static int
find(const struct xb_msgr *r, uint32_t key, struct xb_field *f)
{
        size_t cur = 0;

        while (xb_msgr_next(r, &cur, f))
                if (f->key == key)
                        return 0;
        return -ENOENT;
}

int
xb_msgr_u64(const struct xb_msgr *r, uint32_t key, uint64_t *ret)
{
        struct xb_field f;
        int e = find(r, key, &f);

        if (e < 0)
                return e;
        if (f.len != sizeof(uint64_t))
                return -EBADMSG;
        memcpy(ret, f.data, sizeof(uint64_t));
        return 0;
}

bool
xb_field_is_str(const struct xb_field *f)
{
        return memchr(f->data, '\0', f->len) == NULL;
}

int
xb_msgr_str(const struct xb_msgr *r, uint32_t key, const char **ret, size_t *ret_len)
{
        struct xb_field f;
        int e = find(r, key, &f);

        if (e < 0)
                return e;
        if (!xb_field_is_str(&f))
                return -EBADMSG;
        *ret = (const char *)f.data;
        *ret_len = f.len;
        return 0;
}

int
xb_msg_send(int sock, const void *buf, size_t len, const int *fds, size_t nfds)
{
        union {
                char raw[CMSG_SPACE(sizeof(int) * XB_MSG_MAXFDS)];
                struct cmsghdr align;
        } ctl;
        struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n;

        if (nfds > XB_MSG_MAXFDS || len > XB_MSG_MAX)
                return -EINVAL;
        if (nfds) {
                struct cmsghdr *c;

                memset(&ctl, 0, sizeof(ctl));
                m.msg_control = ctl.raw;
                m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
                c = CMSG_FIRSTHDR(&m);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
        }
        do
                n = sendmsg(sock, &m, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        return (size_t)n == len ? 0 : -EIO;
}

ssize_t
xb_msg_recv(int sock, void *buf, size_t cap, int *fds, size_t *nfds, bool nonblock)
{
        union {
                char raw[CMSG_SPACE(sizeof(int) * XB_MSG_MAXFDS)];
                struct cmsghdr align;
        } ctl;
        struct iovec iov = { .iov_base = buf, .iov_len = cap };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
                            .msg_control = ctl.raw, .msg_controllen = sizeof(ctl.raw) };
        size_t got = 0;
        bool bad = false;
        ssize_t n;

        do
                n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC | (nonblock ? MSG_DONTWAIT : 0));
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
                size_t k;

                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
                        bad = true;
                        continue;
                }
                k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k; i++) {
                        int fd;

                        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (got < XB_MSG_MAXFDS && fds)
                                fds[got++] = fd;
                        else {
                                close(fd);
                                bad = true;
                        }
                }
        }
        if (bad || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
                for (size_t i = 0; i < got; i++)
                        close(fds[i]);
                if (nfds)
                        *nfds = 0;
                return -EBADMSG;
        }
        if (nfds)
                *nfds = got;
        return n;
}
