/* gzip decoding for uploads sent with `Content-Encoding: gzip`
 * (base/gunzip.h). zlib's inflate with windowBits 16+15 reads one gzip
 * member and checks its CRC-32 and length; at a member's end the
 * decoder resets for the next one, as Go's compress/gzip (envd's) does
 * by default. zlib keeps ~40 KiB of state; nothing else is allocated. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/gunzip.h"

struct xb_gunzip {
        z_stream z;
        bool member_done;            /* at a member's end: what follows must be another */
        bool failed;
        bool any;                    /* a member was begun */
        uint64_t out;
};

struct xb_gunzip *
xb_gunzip_new(void)
{
        struct xb_gunzip *g = calloc(1, sizeof(*g));

        if (!g)
                return NULL;
        if (inflateInit2(&g->z, 16 + MAX_WBITS) != Z_OK) {
                free(g);
                return NULL;
        }
        return g;
}

void
xb_gunzip_free(struct xb_gunzip *g)
{
        if (!g)
                return;
        inflateEnd(&g->z);
        free(g);
}

int
xb_gunzip_run(struct xb_gunzip *g, const void *in, size_t n, size_t *ret_used, void *out, size_t cap,
              size_t *ret_made)
{
        const size_t chunk = 1u << 30;   /* zlib counts in uInt */
        size_t used = 0, made = 0;
        int r = 0;

        while (!g->failed && made < cap && (used < n || !g->member_done)) {
                size_t in_n = n - used < chunk ? n - used : chunk, out_n = cap - made < chunk ? cap - made : chunk;
                int zr;

                if (g->member_done) {
                        /* More bytes after a member: another member, or garbage. */
                        if (inflateReset(&g->z) != Z_OK) {
                                g->failed = true;
                                break;
                        }
                        g->member_done = false;
                }
                g->z.next_in = (Bytef *)(uintptr_t)((const char *)in + used);
                g->z.avail_in = (uInt)in_n;
                g->z.next_out = (Bytef *)out + made;
                g->z.avail_out = (uInt)out_n;
                if (in_n)
                        g->any = true;
                zr = inflate(&g->z, Z_NO_FLUSH);
                used += in_n - g->z.avail_in;
                made += out_n - g->z.avail_out;
                if (zr == Z_STREAM_END) {
                        g->member_done = true;
                        continue;
                }
                if (zr == Z_BUF_ERROR || (zr == Z_OK && in_n - g->z.avail_in == 0 && out_n == g->z.avail_out))
                        break;   /* no progress possible: it needs more input */
                if (zr != Z_OK) {
                        g->failed = true;   /* Z_DATA_ERROR, Z_NEED_DICT, Z_MEM_ERROR */
                        break;
                }
        }
        g->out += made;
        *ret_used = used;
        *ret_made = made;
        if (g->failed)
                r = -EBADMSG;
        return r;
}

int
xb_gunzip_end(const struct xb_gunzip *g)
{
        if (g->failed)
                return -EBADMSG;
        return g->any && g->member_done ? 0 : -ENODATA;
}

uint64_t
xb_gunzip_out_bytes(const struct xb_gunzip *g)
{
        return g->out;
}
