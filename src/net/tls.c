/* GnuTLS loaded at run time, the per-daemon CA kept in the state
 * directory, and leaf certificates minted per host (tls.h has the why). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "net/tls_int.h"

#ifndef XB_GNUTLS_SONAME
#define XB_GNUTLS_SONAME "libgnutls.so.30"
#endif

#define PEM_MAX (16u << 10)

struct xb_gnutls xb_gnutls;

static int
load(struct xb_err *err)
{
        void *h;

        if (xb_gnutls.gnutls_global_init)
                return 0;
        h = dlopen(XB_GNUTLS_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h)
                return xb_err_msg(err, ENOENT, "cannot load %s (%s); install libgnutls30", XB_GNUTLS_SONAME,
                                  dlerror());
#define XB_TLS_LOAD(name)                                                                              \
        *(void **)&xb_gnutls.name = dlsym(h, #name);                                                   \
        if (!xb_gnutls.name)                                                                           \
                return xb_err_msg(err, ENOENT, "%s lacks %s; it is older than the headers execbox was "    \
                                  "built with", XB_GNUTLS_SONAME, #name);
        XB_TLS_FUNCS(XB_TLS_LOAD)
#undef XB_TLS_LOAD
        if (xb_gnutls.gnutls_global_init() < 0) {
                xb_gnutls.gnutls_global_init = NULL;
                return xb_err_msg(err, EIO, "GnuTLS failed to initialise");
        }
        return 0;
}

static int
tls_fail(struct xb_err *err, int r, const char *what)
{
        return xb_err_msg(err, EIO, "%s: %s", what, TLS(strerror)(r));
}

static int
read_small(int dir, const char *name, char *buf, size_t cap)
{
        _cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = read(fd, buf, cap - 1);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        return (int)n;
}

static int
write_new(int dir, const char *name, const char *data, size_t len, mode_t mode)
{
        char tmp[64];
        _cleanup_close_ int fd = -1;

        snprintf(tmp, sizeof(tmp), "%s.%d", name, (int)getpid());
        unlinkat(dir, tmp, 0);
        fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0)
                return -errno;
        if (fchmod(fd, mode) < 0 || write(fd, data, len) != (ssize_t)len || fsync(fd) < 0) {
                unlinkat(dir, tmp, 0);
                return -EIO;
        }
        return renameat(dir, tmp, dir, name) < 0 ? -errno : 0;
}

static int
serial(gnutls_x509_crt_t crt)
{
        unsigned char s[16];

        if (getrandom(s, sizeof(s), 0) != (ssize_t)sizeof(s))
                return -EIO;
        s[0] &= 0x7f;   /* positive */
        return TLS(x509_crt_set_serial)(crt, s, sizeof(s));
}

static int
make_ca(struct xb_tls *t, int dir, struct xb_err *err)
{
        char pem[PEM_MAX], dn[160], host[64] = "host";
        size_t len = sizeof(pem);
        unsigned char kid[64];
        size_t kidlen = sizeof(kid);
        time_t now = time(NULL);
        int r;

        if ((r = TLS(x509_privkey_generate)(t->ca_key, GNUTLS_PK_ECDSA,
                                            GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0)
                return tls_fail(err, r, "make the egress CA's key");
        gethostname(host, sizeof(host) - 1);
        snprintf(dn, sizeof(dn), "CN=execbox egress CA (%.48s),O=execbox", host);
        if ((r = TLS(x509_crt_set_version)(t->ca, 3)) < 0 || (r = serial(t->ca)) < 0 ||
            (r = TLS(x509_crt_set_activation_time)(t->ca, now - 3600)) < 0 ||
            (r = TLS(x509_crt_set_expiration_time)(t->ca, now + 10 * 366 * 86400L)) < 0 ||
            (r = TLS(x509_crt_set_dn)(t->ca, dn, NULL)) < 0 || (r = TLS(x509_crt_set_key)(t->ca, t->ca_key)) < 0 ||
            (r = TLS(x509_crt_set_basic_constraints)(t->ca, 1, 0)) < 0 ||
            (r = TLS(x509_crt_set_key_usage)(t->ca, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN)) < 0 ||
            (r = TLS(x509_crt_get_key_id)(t->ca, 0, kid, &kidlen)) < 0 ||
            (r = TLS(x509_crt_set_subject_key_id)(t->ca, kid, kidlen)) < 0 ||
            (r = TLS(x509_crt_sign2)(t->ca, t->ca, t->ca_key, GNUTLS_DIG_SHA256, 0)) < 0)
                return tls_fail(err, r, "make the egress CA");
        if ((r = TLS(x509_privkey_export)(t->ca_key, GNUTLS_X509_FMT_PEM, pem, &len)) < 0)
                return tls_fail(err, r, "export the egress CA's key");
        r = write_new(dir, "ca.key", pem, len, 0600);
        explicit_bzero(pem, sizeof(pem));
        if (r < 0)
                return xb_err_msg(err, -r, "write the egress CA's key");
        len = sizeof(pem);
        if ((r = TLS(x509_crt_export)(t->ca, GNUTLS_X509_FMT_PEM, pem, &len)) < 0)
                return tls_fail(err, r, "export the egress CA");
        if ((r = write_new(dir, "ca.pem", pem, len, 0644)) < 0)
                return xb_err_msg(err, -r, "write the egress CA");
        return 0;
}

static int
load_ca(struct xb_tls *t, int dir, struct xb_err *err)
{
        char pem[PEM_MAX];
        gnutls_datum_t d;
        struct stat st;
        int r = read_small(dir, "ca.key", pem, sizeof(pem));

        if (r == -ENOENT)
                return make_ca(t, dir, err);
        if (r < 0)
                return xb_err_msg(err, -r, "read the egress CA's key");
        /* Only root may read it: a key others could read is not used. */
        if (fstatat(dir, "ca.key", &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
                explicit_bzero(pem, sizeof(pem));
                return xb_err_msg(err, EPERM, "egress-ca/ca.key must be a file of mode 0600 owned by the server");
        }
        d = (gnutls_datum_t){ (unsigned char *)pem, (unsigned)r };
        r = TLS(x509_privkey_import)(t->ca_key, &d, GNUTLS_X509_FMT_PEM);
        explicit_bzero(pem, sizeof(pem));
        if (r < 0)
                return tls_fail(err, r, "read egress-ca/ca.key");
        r = read_small(dir, "ca.pem", pem, sizeof(pem));
        if (r < 0)
                return xb_err_msg(err, -r, "read egress-ca/ca.pem");
        d = (gnutls_datum_t){ (unsigned char *)pem, (unsigned)r };
        if ((r = TLS(x509_crt_import)(t->ca, &d, GNUTLS_X509_FMT_PEM)) < 0)
                return tls_fail(err, r, "read egress-ca/ca.pem");
        return 0;
}

int
xb_tls_open(const char *dir, const char *upstream_ca, struct xb_tls **ret, struct xb_err *err)
{
        _cleanup_close_ int root = -1, d = -1;
        struct xb_tls *t;
        char pem[PEM_MAX];
        size_t len = sizeof(pem);
        int r;

        if (load(err) < 0)
                return -1;
        root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return xb_err_msg(err, errno, "open %s", dir);
        if (mkdirat(root, "egress-ca", 0700) < 0 && errno != EEXIST)
                return xb_err_msg(err, errno, "mkdir %s/egress-ca", dir);
        d = openat(root, "egress-ca", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d < 0 || fchmod(d, 0700) < 0)
                return xb_err_msg(err, errno, "open %s/egress-ca", dir);
        t = calloc(1, sizeof(*t));
        if (!t)
                return xb_err_msg(err, ENOMEM, "out of memory");
        if (TLS(x509_crt_init)(&t->ca) < 0 || TLS(x509_privkey_init)(&t->ca_key) < 0 ||
            TLS(x509_privkey_init)(&t->leaf_key) < 0 ||
            TLS(certificate_allocate_credentials)(&t->upstream) < 0) {
                xb_tls_close(t);
                return xb_err_msg(err, ENOMEM, "out of memory");
        }
        if (load_ca(t, d, err) < 0) {
                xb_tls_close(t);
                return -1;
        }
        /* One key for every leaf, made now and never written down. */
        if ((r = TLS(x509_privkey_generate)(t->leaf_key, GNUTLS_PK_ECDSA,
                                            GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0)) < 0 ||
            (r = TLS(x509_crt_export)(t->ca, GNUTLS_X509_FMT_PEM, pem, &len)) < 0) {
                xb_tls_close(t);
                return tls_fail(err, r, "egress CA");
        }
        t->ca_pem = strndup(pem, len);
        if (TLS(certificate_set_x509_system_trust)(t->upstream) < 0) {
                /* No system store: only --upstream-ca is trusted. */
        }
        if (upstream_ca && (r = TLS(certificate_set_x509_trust_file)(t->upstream, upstream_ca,
                                                                     GNUTLS_X509_FMT_PEM)) <= 0) {
                xb_tls_close(t);
                return xb_err_msg(err, EINVAL, "--upstream-ca %s: no certificate in it (%s)", upstream_ca,
                                  r < 0 ? TLS(strerror)(r) : "empty");
        }
        if (!t->ca_pem) {
                xb_tls_close(t);
                return xb_err_msg(err, ENOMEM, "out of memory");
        }
        *ret = t;
        return 0;
}

void
xb_tls_close(struct xb_tls *t)
{
        if (!t)
                return;
        for (size_t i = 0; i < XB_TLS_LEAVES_MAX; i++)
                if (t->leaves[i])
                        xb__tls_leaf_put(t->leaves[i]);
        if (t->upstream)
                TLS(certificate_free_credentials)(t->upstream);
        if (t->ca)
                TLS(x509_crt_deinit)(t->ca);
        if (t->ca_key)
                TLS(x509_privkey_deinit)(t->ca_key);
        if (t->leaf_key)
                TLS(x509_privkey_deinit)(t->leaf_key);
        free(t->ca_pem);
        free(t);
}

const char *
xb_tls_ca_pem(const struct xb_tls *t)
{
        return t->ca_pem;
}

uint64_t
xb_tls_intercepted(const struct xb_tls *t)
{
        return t ? t->intercepted : 0;
}

static struct xb_tlsleaf *
mint(struct xb_tls *t, const char *host)
{
        struct xb_tlsleaf *l = calloc(1, sizeof(*l));
        gnutls_x509_crt_t crt = NULL;
        unsigned char kid[64];
        size_t kidlen = sizeof(kid);
        time_t now = time(NULL);
        char dn[300];
        bool ip = strchr(host, ':') || strspn(host, "0123456789.") == strlen(host);
        int r;

        if (!l || TLS(x509_crt_init)(&crt) < 0)
                goto fail;
        snprintf(l->host, sizeof(l->host), "%s", host);
        snprintf(dn, sizeof(dn), "CN=%s", host);
        if (TLS(x509_crt_set_version)(crt, 3) < 0 || serial(crt) < 0 ||
            TLS(x509_crt_set_activation_time)(crt, now - 3600) < 0 ||
            TLS(x509_crt_set_expiration_time)(crt, now + 45 * 86400L) < 0 ||
            TLS(x509_crt_set_dn)(crt, dn, NULL) < 0 || TLS(x509_crt_set_key)(crt, t->leaf_key) < 0 ||
            TLS(x509_crt_set_basic_constraints)(crt, 0, -1) < 0 ||
            TLS(x509_crt_set_key_usage)(crt, GNUTLS_KEY_DIGITAL_SIGNATURE) < 0 ||
            TLS(x509_crt_set_key_purpose_oid)(crt, GNUTLS_KP_TLS_WWW_SERVER, 0) < 0 ||
            TLS(x509_crt_get_key_id)(t->ca, 0, kid, &kidlen) < 0 ||
            TLS(x509_crt_set_authority_key_id)(crt, kid, kidlen) < 0)
                goto fail;
        if (ip) {
                unsigned char a[16];
                int af = strchr(host, ':') ? AF_INET6 : AF_INET;

                if (inet_pton(af, host, a) != 1 ||
                    TLS(x509_crt_set_subject_alt_name)(crt, GNUTLS_SAN_IPADDRESS, a, af == AF_INET ? 4 : 16,
                                                       GNUTLS_FSAN_SET) < 0)
                        goto fail;
        } else if (TLS(x509_crt_set_subject_alt_name)(crt, GNUTLS_SAN_DNSNAME, host, (unsigned)strlen(host),
                                                      GNUTLS_FSAN_SET) < 0)
                goto fail;
        if (TLS(x509_crt_sign2)(crt, t->ca, t->ca_key, GNUTLS_DIG_SHA256, 0) < 0 ||
            TLS(certificate_allocate_credentials)(&l->cred) < 0)
                goto fail;
        {
                gnutls_x509_crt_t chain[2] = { crt, t->ca };

                r = TLS(certificate_set_x509_key)(l->cred, chain, 2, t->leaf_key);
        }
        if (r < 0)
                goto fail;
        TLS(x509_crt_deinit)(crt);
        l->refs = 1;
        l->made_s = now;
        return l;
fail:
        if (crt)
                TLS(x509_crt_deinit)(crt);
        if (l && l->cred)
                TLS(certificate_free_credentials)(l->cred);
        free(l);
        return NULL;
}

struct xb_tlsleaf *
xb__tls_leaf_get(struct xb_tls *t, const char *host)
{
        size_t slot = XB_TLS_LEAVES_MAX, oldest = XB_TLS_LEAVES_MAX;
        time_t now = time(NULL);
        struct xb_tlsleaf *l;

        for (size_t i = 0; i < XB_TLS_LEAVES_MAX; i++) {
                l = t->leaves[i];
                if (!l) {
                        slot = i;
                        continue;
                }
                if (!strcmp(l->host, host) && now - l->made_s < 30 * 86400L) {
                        l->used = ++t->tick;
                        l->refs++;
                        return l;
                }
                if (oldest == XB_TLS_LEAVES_MAX || l->used < t->leaves[oldest]->used)
                        oldest = i;
        }
        if (slot == XB_TLS_LEAVES_MAX) {
                /* Full: the least recently used goes (its sessions keep it). */
                slot = oldest;
                xb__tls_leaf_put(t->leaves[slot]);
                t->leaves[slot] = NULL;
        }
        l = mint(t, host);
        if (!l)
                return NULL;
        l->used = ++t->tick;
        t->leaves[slot] = l;
        l->refs++;
        return l;
}

void
xb__tls_leaf_put(struct xb_tlsleaf *l)
{
        if (l && --l->refs == 0) {
                TLS(certificate_free_credentials)(l->cred);
                free(l);
        }
}
