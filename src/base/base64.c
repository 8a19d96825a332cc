/* Base64 per RFC 4648: table-driven encode, and a decode that checks the
 * alphabet, the quantum length and where padding may stand. */
#include "base64.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

ssize_t
xb_base64_encode(const void *in, size_t n, char *out, size_t cap)
{
        const unsigned char *b = in;
        size_t i, o = 0;

        if (n > (SIZE_MAX - 1) / 4 * 3 - 2 || cap < xb_base64_encoded_len(n) + 1)
                return -ENOBUFS;
        for (i = 0; i + 2 < n; i += 3) {
                out[o++] = alphabet[b[i] >> 2];
                out[o++] = alphabet[(b[i] & 3) << 4 | b[i + 1] >> 4];
                out[o++] = alphabet[(b[i + 1] & 15) << 2 | b[i + 2] >> 6];
                out[o++] = alphabet[b[i + 2] & 63];
        }
        if (i < n) {
                unsigned b1 = i + 1 < n ? b[i + 1] : 0;

                out[o++] = alphabet[b[i] >> 2];
                out[o++] = alphabet[(b[i] & 3) << 4 | b1 >> 4];
                out[o++] = i + 1 < n ? alphabet[(b1 & 15) << 2] : '=';
                out[o++] = '=';
        }
        out[o] = '\0';
        return (ssize_t)o;
}

int
xb_base64_encode_alloc(const void *in, size_t n, char **ret)
{
        size_t cap;
        char *out;

        if (n > (SIZE_MAX - 1) / 4 * 3 - 2)
                return -EOVERFLOW;
        cap = xb_base64_encoded_len(n) + 1;
        out = malloc(cap);
        if (!out)
                return -ENOMEM;
        xb_base64_encode(in, n, out, cap);
        *ret = out;
        return 0;
}

static int
value(char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        return c == '+' ? 62 : c == '/' ? 63 : -1;
}

ssize_t
xb_base64_decode(const char *in, size_t n, void *out, size_t cap, unsigned flags)
{
        unsigned char *o = out;
        unsigned char q[4];
        size_t len = 0, k = 0;
        int pad = 0;

        for (size_t i = 0; i < n; i++) {
                char c = in[i];
                int v;

                if ((flags & XB_BASE64_NEWLINES) && (c == '\r' || c == '\n'))
                        continue;
                /* After padding, only the quantum's second '=' may follow. */
                if (pad && (c != '=' || k != 3))
                        return -EINVAL;
                if (c == '=') {
                        if (k < 2)
                                return -EINVAL;
                        pad++;
                        v = 0;
                } else if ((v = value(c)) < 0) {
                        return -EINVAL;
                }
                q[k++] = (unsigned char)v;
                if (k < 4)
                        continue;
                k = 0;
                if (cap - len < (size_t)(3 - pad))
                        return -ENOBUFS;
                o[len++] = (unsigned char)(q[0] << 2 | q[1] >> 4);
                if (pad < 2)
                        o[len++] = (unsigned char)(q[1] << 4 | q[2] >> 2);
                if (pad < 1)
                        o[len++] = (unsigned char)(q[2] << 6 | q[3]);
        }
        if (k)
                return -EINVAL;
        return (ssize_t)len;
}

int
xb_base64_decode_alloc(const char *in, size_t n, size_t max, unsigned flags, void **ret, size_t *ret_len)
{
        size_t cap = xb_base64_decoded_max(n);
        unsigned char *out;
        ssize_t r;

        if (cap > max)
                cap = max;
        out = malloc(cap + 1);
        if (!out)
                return -ENOMEM;
        r = xb_base64_decode(in, n, out, cap, flags);
        if (r < 0) {
                free(out);
                return (int)r;
        }
        out[r] = '\0';
        *ret = out;
        *ret_len = (size_t)r;
        return 0;
}
