/* Shared by tls.c (GnuTLS, the CA, the leaves) and tls_relay.c (the
 * relay on the loop). */
#pragma once
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdint.h>

#include "net/tls.h"

#define XB_TLS_FUNCS(X)                                                                           \
        X(gnutls_global_init) X(gnutls_strerror) X(gnutls_error_is_fatal)                          \
        X(gnutls_x509_privkey_init) X(gnutls_x509_privkey_deinit) X(gnutls_x509_privkey_generate)  \
        X(gnutls_x509_privkey_export) X(gnutls_x509_privkey_import)                               \
        X(gnutls_x509_crt_init) X(gnutls_x509_crt_deinit) X(gnutls_x509_crt_import)                \
        X(gnutls_x509_crt_export) X(gnutls_x509_crt_set_version) X(gnutls_x509_crt_set_serial)     \
        X(gnutls_x509_crt_set_activation_time) X(gnutls_x509_crt_set_expiration_time)             \
        X(gnutls_x509_crt_set_dn) X(gnutls_x509_crt_set_key) X(gnutls_x509_crt_set_basic_constraints) \
        X(gnutls_x509_crt_set_key_usage) X(gnutls_x509_crt_set_subject_alt_name)                  \
        X(gnutls_x509_crt_set_key_purpose_oid) X(gnutls_x509_crt_sign2) X(gnutls_x509_crt_get_key_id) \
        X(gnutls_x509_crt_set_subject_key_id) X(gnutls_x509_crt_set_authority_key_id)             \
        X(gnutls_certificate_allocate_credentials) X(gnutls_certificate_free_credentials)         \
        X(gnutls_certificate_set_x509_key) X(gnutls_certificate_set_x509_system_trust)            \
        X(gnutls_certificate_set_x509_trust_file) X(gnutls_init) X(gnutls_deinit)                 \
        X(gnutls_credentials_set) X(gnutls_set_default_priority) X(gnutls_server_name_set)        \
        X(gnutls_session_set_verify_cert) X(gnutls_transport_set_int2) X(gnutls_handshake)        \
        X(gnutls_record_recv) X(gnutls_record_send) X(gnutls_record_get_direction)                \
        X(gnutls_record_check_pending) X(gnutls_bye) X(gnutls_alpn_set_protocols)

struct xb_gnutls {
#define XB_TLS_FIELD(name) __typeof__(&name) name;
        XB_TLS_FUNCS(XB_TLS_FIELD)
#undef XB_TLS_FIELD
};

extern struct xb_gnutls xb_gnutls;
#define TLS(name) (xb_gnutls.gnutls_##name)

#define XB_TLS_LEAVES_MAX 256

struct xb_tlsleaf {
        char host[256];
        gnutls_certificate_credentials_t cred;
        unsigned refs;                /* the table's, and each session's */
        int64_t made_s;
        uint64_t used;                /* for eviction: the oldest unused goes */
};

struct xb_tls {
        gnutls_x509_crt_t ca;
        gnutls_x509_privkey_t ca_key, leaf_key;
        char *ca_pem;
        gnutls_certificate_credentials_t upstream;
        struct xb_tlsleaf *leaves[XB_TLS_LEAVES_MAX];
        uint64_t tick, intercepted;
};

/* A leaf for host, referenced (xb__tls_leaf_put); NULL when it cannot be made. */
struct xb_tlsleaf *xb__tls_leaf_get(struct xb_tls *t, const char *host);
void xb__tls_leaf_put(struct xb_tlsleaf *l);
