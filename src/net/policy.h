/* A sandbox's egress policy: a mode, and for `allowlist` the allow and
 * deny rules (domains, *.wildcards, CIDRs; deny wins), and in any mode
 * the peers it opts in to talk with (egress.h). Policies are
 * immutable and reference counted: a change replaces the sandbox's policy,
 * and a connection already decided keeps the one it was decided by.
 * Matching is pure; the always-refused ranges are addr.h's. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "net/addr.h"

#define XB_NETRULES_MAX 256
#define XB_NETNAME_MAX 253
#define XB_NETPEERS_MAX 64
#define XB_NETPEER_ID_MAX 31

enum xb_netmode { XB_NET_NONE, XB_NET_PACKAGES, XB_NET_ALLOWLIST, XB_NET_OPEN };

enum xb_netrule_kind { XB_RULE_DOMAIN, XB_RULE_WILDCARD, XB_RULE_CIDR };

struct xb_netrule {
        enum xb_netrule_kind kind;
        char *text;                   /* as normalised: "a.test", "*.b.test", "10.0.0.0/8" */
        struct xb_cidr cidr;          /* XB_RULE_CIDR */
};

struct xb_netpol {
        unsigned refs;
        enum xb_netmode mode;
        struct xb_netrule *allow, *deny, *ask;   /* ask: names a human approves per connection */
        size_t nallow, ndeny, nask;
        /* peers: sandbox ids this one opts in to talk with, both ways (peer.c) */
        char **peers;
        size_t npeers;
};

const char *xb_netmode_name(enum xb_netmode m);
/* -EINVAL for an unknown name. */
int xb_netmode_parse(const char *s, enum xb_netmode *ret);

/* A policy of mode m and no rules; NULL when out of memory. */
struct xb_netpol *xb_netpol_new(enum xb_netmode m);
/* "none" | "packages" | "open" | "allowlist" (with no rules), or an object
 * {"mode", "allow": [...], "deny": [...], "ask": [...], "peers": [...]}.
 * err names the bad field. */
int xb_netpol_parse(json_t *v, struct xb_netpol **ret, struct xb_err *err);
/* {"mode", "allow", "deny"} (and "ask", "peers" when set): new reference. */
json_t *xb_netpol_json(const struct xb_netpol *p);
struct xb_netpol *xb_netpol_ref(struct xb_netpol *p);
void xb_netpol_unref(struct xb_netpol *p);

/* One rule ("a.test", "*.a.test", "10.1.0.0/16", "1.2.3.4"); what = where it
 * came from, for the message. */
int xb_netrule_parse(const char *s, struct xb_netrule *ret, struct xb_err *err);
void xb_netrule_free(struct xb_netrule *r);
/* Lowercase name in place and drop one trailing dot; false when it is not a
 * host name (letters, digits, '-', '_', '.'; labels of 1-63). */
bool xb_netname_normalize(char *name);
/* The first domain or wildcard rule that matches name, or NULL. */
const struct xb_netrule *xb_netrules_name(const struct xb_netrule *r, size_t n, const char *name);
/* The first CIDR rule that holds ip, or NULL. */
const struct xb_netrule *xb_netrules_ip(const struct xb_netrule *r, size_t n, const struct xb_ip *ip);
bool xb_netrules_have_cidr(const struct xb_netrule *r, size_t n);
/* Whether p lists sandbox id in its peers. */
bool xb_netpol_has_peer(const struct xb_netpol *p, const char *id);
