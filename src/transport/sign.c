/* Signed links (sign.h): the key and the HMAC, GnuTLS's, found with
 * dlopen(3) where libmicrohttpd has loaded it already. */
#define _GNU_SOURCE
#include "transport/sign.h"

#include <dlfcn.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#ifndef XB_GNUTLS_SONAME
#define XB_GNUTLS_SONAME "libgnutls.so.30"
#endif

static __typeof__(&gnutls_hmac_fast) hmac_fast;
static uint8_t key[32];
static int init_err;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void
init(void)
{
        void *h = dlopen(XB_GNUTLS_SONAME, RTLD_NOW | RTLD_LOCAL);

        if (!h || !(hmac_fast = (__typeof__(hmac_fast))dlsym(h, "gnutls_hmac_fast"))) {
                init_err = -ENOSYS;
                return;
        }
        if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
                init_err = -EIO;
}

int
xb_sign(const char *msg, size_t len, char out[XB_SIGN_HEX_LEN + 1])
{
        uint8_t mac[32];

        pthread_once(&once, init);
        if (init_err)
                return init_err;
        if (hmac_fast(GNUTLS_MAC_SHA256, key, sizeof(key), msg, len, mac) < 0)
                return -EIO;
        for (size_t i = 0; i < sizeof(mac); i++)
                snprintf(out + 2 * i, 3, "%02x", mac[i]);
        return 0;
}

bool
xb_sign_check(const char *msg, size_t len, const char *hex)
{
        char want[XB_SIGN_HEX_LEN + 1];
        unsigned char diff = 0;

        if (!hex || strlen(hex) != XB_SIGN_HEX_LEN || xb_sign(msg, len, want) < 0)
                return false;
        for (size_t i = 0; i < XB_SIGN_HEX_LEN; i++)
                diff |= (unsigned char)(want[i] ^ hex[i]);
        return !diff;
}
