/* libFuzzer target for the init wire reader (proto/wire.h): arbitrary bytes
 * go to xb_msgr_init, and every message it accepts is walked field by field
 * with xb_msgr_next, xb_msgr_u64 and xb_msgr_str. The input is copied into
 * a buffer of exactly its size, so ASan catches any read past the end.
 * Accepted messages are re-encoded with the writer and must read back the
 * same. Built by `make fuzz`; `make fuzz-replay` runs the saved corpus. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int cond)
{
        if (!cond)
                abort();
}

/* Touch every byte of a field so ASan sees any out-of-bounds one. */
static unsigned
touch(const uint8_t *p, size_t n)
{
        unsigned h = 0;

        for (size_t i = 0; i < n; i++)
                h = h * 31 + p[i];
        return h;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static uint8_t out[XB_MSG_MAX];
        volatile unsigned sink = 0;
        struct xb_msgr r, r2;
        struct xb_msgw w;
        struct xb_field f, f2;
        size_t cur = 0, cur2 = 0, nfields = 0;
        uint8_t *msg = malloc(size ? size : 1);

        if (!msg)
                return 0;
        if (size)
                memcpy(msg, data, size);
        if (xb_msgr_init(&r, msg, size) < 0) {
                free(msg);
                return 0;
        }
        check(size >= sizeof(struct xb_msg_hdr) && size <= XB_MSG_MAX);

        xb_msgw_init(&w, out, sizeof(out), r.type, r.tag);
        while (xb_msgr_next(&r, &cur, &f)) {
                const char *s;
                size_t slen;
                uint64_t v;
                int e;

                check(f.data >= msg && f.len <= size && f.data + f.len <= msg + size);
                check(cur <= size);
                sink += touch(f.data, f.len);
                e = xb_msgr_u64(&r, f.key, &v);
                check(e == 0 || e == -EBADMSG);
                e = xb_msgr_str(&r, f.key, &s, &slen);
                check(e == 0 || e == -EBADMSG);
                if (e == 0) {
                        check((const uint8_t *)s >= msg && (const uint8_t *)s + slen <= msg + size);
                        check(memchr(s, '\0', slen) == NULL);
                        sink += touch((const uint8_t *)s, slen);
                }
                xb_msgw_put(&w, f.key, f.data, f.len);
                nfields++;
        }
        /* The message re-encoded (padding zeroed) reads back the same fields. */
        check(!w.overflow);
        check(w.len == size);
        check(xb_msgr_init(&r2, out, w.len) == 0);
        check(r2.type == r.type && r2.tag == r.tag);
        cur = 0;
        for (size_t i = 0; i < nfields; i++) {
                check(xb_msgr_next(&r, &cur, &f));
                check(xb_msgr_next(&r2, &cur2, &f2));
                check(f.key == f2.key && f.len == f2.len && memcmp(f.data, f2.data, f.len) == 0);
        }
        check(!xb_msgr_next(&r2, &cur2, &f2));
        /* Keys that are absent must say so. */
        {
                uint64_t v;

                if (nfields == 0)
                        check(xb_msgr_u64(&r, XB_K_PID, &v) == -ENOENT);
        }
        (void)sink;
        free(msg);
        return 0;
}
