/* SHA-256 through GnuTLS, loaded at run time (net/digest.h). */
#include <dlfcn.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/digest.h"

#ifndef XB_GNUTLS_SONAME
#define XB_GNUTLS_SONAME "libgnutls.so.30"
#endif

struct xb_sha256 {
        gnutls_hash_hd_t h;
};

static struct {
        __typeof__(&gnutls_hash_init) init;
        __typeof__(&gnutls_hash) hash;
        __typeof__(&gnutls_hash_deinit) deinit;
} gd;

struct xb_sha256 *
xb_sha256_new(struct xb_err *err)
{
        struct xb_sha256 *h;

        if (!gd.init) {
                void *so = dlopen(XB_GNUTLS_SONAME, RTLD_NOW | RTLD_LOCAL);

                if (!so || !(*(void **)&gd.hash = dlsym(so, "gnutls_hash")) ||
                    !(*(void **)&gd.deinit = dlsym(so, "gnutls_hash_deinit")) ||
                    !(*(void **)&gd.init = dlsym(so, "gnutls_hash_init"))) {
                        xb_err_msg(err, ENOENT, "SHA-256 needs GnuTLS (%s)", XB_GNUTLS_SONAME);
                        return NULL;
                }
        }
        if (!(h = calloc(1, sizeof(*h))) || gd.init(&h->h, GNUTLS_DIG_SHA256) < 0) {
                free(h);
                xb_err_set(err, ENOMEM, "sha256");
                return NULL;
        }
        return h;
}

void
xb_sha256_add(struct xb_sha256 *h, const void *p, size_t n)
{
        if (n)
                gd.hash(h->h, p, n);
}

void
xb_sha256_str(struct xb_sha256 *h, const char *s)
{
        xb_sha256_add(h, s, strlen(s) + 1);
}

void
xb_sha256_end(struct xb_sha256 *h, char out[XB_SHA256_HEX])
{
        unsigned char d[32];

        gd.deinit(h->h, d);
        for (int i = 0; i < 32; i++)
                snprintf(out + 2 * i, 3, "%02x", d[i]);
        free(h);
}
