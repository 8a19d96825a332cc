/* Secrets a sandbox uses without holding them. A secret is a tenant's
 * value, the hosts it is for and, optionally, a header that carries it.
 * A sandbox it is attached to gets a random placeholder (in an env var
 * named after the secret); the egress proxy swaps the placeholder for the
 * value, and adds the header, only in requests to the secret's hosts:
 * plain http:// heads as it forwards them, https by terminating TLS for
 * those hosts alone (tls.h). The value lives in the daemon's memory only:
 * never written to disk, logged, counted or answered; wiped when the last
 * reference goes. Secrets are immutable and reference counted. A
 * sandbox's binding is by name: a placeholder the sandbox keeps for life,
 * bound to whichever secret of that name its tenant has now (core/secrets.c
 * rebinds on a rotation, a delete and a restart). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "net/policy.h"

#define XB_SECRET_NAME_MAX 64
#define XB_SECRET_VALUE_MAX 4096
#define XB_SECRET_HOSTS_MAX 32
#define XB_SECRET_HEADER_MAX 1024
#define XB_SECRET_PLACEHOLDER_LEN 41  /* "execbox-secret-" and 26 random letters */
#define XB_NET_SECRETS_MAX 32         /* per sandbox */

struct xb_secret {
        unsigned refs;
        int tenant;
        bool revoked;
        char *name, *value, *header;  /* header: "Name: ...{value}..." or NULL */
        struct xb_netrule *hosts;     /* names and *.wildcards */
        size_t nhosts;
        uint64_t created_ms;          /* Unix time */
};

/* A name fit for an environment variable: [A-Za-z_][A-Za-z0-9_]*, at most 64. */
bool xb_secret_name_ok(const char *name);
/* {"name", "value", "hosts", "header"}; err names the bad field. The value
 * is never put into err. */
int xb_secret_parse(json_t *body, int tenant, struct xb_secret **ret, struct xb_err *err);
struct xb_secret *xb_secret_ref(struct xb_secret *s);
void xb_secret_unref(struct xb_secret *s);
/* {"name", "hosts", "header", "created_ms"}: never the value (the header
 * template is the caller's text, with {value} unfilled). */
json_t *xb_secret_json(const struct xb_secret *s);
bool xb_secret_for_host(const struct xb_secret *s, const char *host);

struct xb_net;
/* Attach s to a sandbox's egress; ph gets its placeholder (NUL ended, of
 * XB_SECRET_PLACEHOLDER_LEN): a new random one, or the one a binding of
 * that name has already. -E2BIG past XB_NET_SECRETS_MAX. */
int xb_net_add_secret(struct xb_net *n, struct xb_secret *s, char ph[XB_SECRET_PLACEHOLDER_LEN + 1]);
/* Whether n holds s (not revoked); ph, unless NULL, gets the placeholder
 * of its latest attachment, the one in the sandbox's env var. */
bool xb_net_holds_secret(const struct xb_net *n, const struct xb_secret *s, char *ph);
/* A binding of a re-adopted sandbox from its record, with no value yet
 * (waiting): -EINVAL for a bad name or placeholder, -EEXIST, -E2BIG. */
int xb_net_restore_secret(struct xb_net *n, const char *name, const char *ph);
/* Bind n's binding called name to s (a reference is taken; NULL: waiting,
 * so its placeholder goes out as it is). Returns 1 if it changed, 0 if n
 * has no such binding or it is bound to s already; *was_waiting (may be
 * NULL) says whether it had no secret before. */
int xb_net_rebind_secret(struct xb_net *n, const char *name, struct xb_secret *s, bool *was_waiting);
/* The i-th binding's name (NULL past the last); *ph its placeholder, and
 * *waiting whether it has no secret now. Either may be NULL. */
const char *xb_net_secret_binding(const struct xb_net *n, size_t i, const char **ph, bool *waiting);
/* Whether some secret of n is for host (its https must be terminated). */
bool xb_net_secret_host(const struct xb_net *n, const char *host);
/* Placeholders swapped and headers added in one request head to host
 * (request line, header lines, the blank line): a new head in *out, or
 * NULL when nothing applies. Returns how many secrets applied, or -errno. */
int xb_net_inject_head(struct xb_net *n, const char *host, const char *head, size_t len, char **out,
                       size_t *outlen);
/* Counts, never values: injections made, by any sandbox. */
uint64_t xb_net_injections(void);
