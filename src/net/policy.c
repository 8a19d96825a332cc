/* Parsing and matching egress policies; see policy.h. */
#define _GNU_SOURCE
#include "net/policy.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const mode_names[] = { "none", "packages", "allowlist", "open" };

const char *
xb_netmode_name(enum xb_netmode m)
{
        return (unsigned)m < 4 ? mode_names[m] : "none";
}

int
xb_netmode_parse(const char *s, enum xb_netmode *ret)
{
        for (unsigned i = 0; i < 4; i++)
                if (!strcmp(s, mode_names[i])) {
                        *ret = (enum xb_netmode)i;
                        return 0;
                }
        return -EINVAL;
}

bool
xb_netname_normalize(char *name)
{
        size_t n = strlen(name), label = 0;

        if (n && name[n - 1] == '.')
                name[--n] = '\0';
        if (n == 0 || n > XB_NETNAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char)name[i];

                if (ch == '.') {
                        if (label == 0)
                                return false;
                        label = 0;
                        continue;
                }
                if (!isalnum(ch) && ch != '-' && ch != '_')
                        return false;
                name[i] = (char)tolower(ch);
                if (++label > 63)
                        return false;
        }
        return label > 0;
}

void
xb_netrule_free(struct xb_netrule *r)
{
        free(r->text);
        r->text = NULL;
}

int
xb_netrule_parse(const char *s, struct xb_netrule *ret, struct xb_err *err)
{
        struct xb_netrule r = { 0 };
        char *copy;

        if (strlen(s) > XB_NETNAME_MAX + 2)
                return xb_err_msg(err, EINVAL, "`%.40s...` is too long for a rule", s);
        if (strchr(s, ':') || strchr(s, '/') || (s[0] >= '0' && s[0] <= '9' && strspn(s, "0123456789.") == strlen(s))) {
                if (xb_cidr_parse(s, &r.cidr) < 0)
                        return xb_err_msg(err, EINVAL, "`%.64s` is not a CIDR such as 203.0.113.0/24 or an address", s);
                r.kind = XB_RULE_CIDR;
                r.text = strdup(s);
        } else {
                bool wild = s[0] == '*' && s[1] == '.';

                copy = strdup(wild ? s + 2 : s);
                if (!copy)
                        return xb_err_set(err, ENOMEM, "rule");
                if (!xb_netname_normalize(copy)) {
                        free(copy);
                        return xb_err_msg(err, EINVAL, "`%.64s` is not a domain (example.com), a wildcard "
                                          "(*.example.com) or a CIDR (203.0.113.0/24)", s);
                }
                r.kind = wild ? XB_RULE_WILDCARD : XB_RULE_DOMAIN;
                if (wild) {
                        r.text = malloc(strlen(copy) + 3);
                        if (r.text) {
                                r.text[0] = '*';
                                r.text[1] = '.';
                                strcpy(r.text + 2, copy);
                        }
                        free(copy);
                } else
                        r.text = copy;
        }
        if (!r.text)
                return xb_err_set(err, ENOMEM, "rule");
        *ret = r;
        return 0;
}

static int
parse_rules(json_t *v, const char *field, struct xb_netrule **ret, size_t *ret_n, struct xb_err *err)
{
        json_t *e;
        size_t i;
        struct xb_netrule *rules;

        *ret = NULL;
        *ret_n = 0;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_array(v) || json_array_size(v) > XB_NETRULES_MAX)
                return xb_err_msg(err, EINVAL, "network.%s must be an array of at most %d strings (domains, "
                                  "*.wildcards, CIDRs)", field, XB_NETRULES_MAX);
        if (json_array_size(v) == 0)
                return 0;
        rules = calloc(json_array_size(v), sizeof(*rules));
        if (!rules)
                return xb_err_set(err, ENOMEM, "rules");
        json_array_foreach(v, i, e) {
                int r;

                if (!json_is_string(e)) {
                        r = xb_err_msg(err, EINVAL, "network.%s[%zu] must be a string", field, i);
                } else
                        r = xb_netrule_parse(json_string_value(e), &rules[i], err);
                if (r < 0) {
                        if (json_is_string(e))
                                xb_err_wrap(err, "network.%s[%zu]", field, i);
                        for (size_t k = 0; k < i; k++)
                                xb_netrule_free(&rules[k]);
                        free(rules);
                        return r;
                }
        }
        *ret = rules;
        *ret_n = json_array_size(v);
        return 0;
}

/* peers: sandbox ids (lowercase letters and digits), at most XB_NETPEERS_MAX. */
static int
parse_peers(json_t *v, struct xb_netpol *p, struct xb_err *err)
{
        json_t *e;
        size_t i;

        if (!v || json_is_null(v))
                return 0;
        if (!json_is_array(v) || json_array_size(v) > XB_NETPEERS_MAX)
                return xb_err_msg(err, EINVAL, "network.peers must be an array of at most %d sandbox ids",
                                  XB_NETPEERS_MAX);
        if (json_array_size(v) == 0)
                return 0;
        p->peers = calloc(json_array_size(v), sizeof(*p->peers));
        if (!p->peers)
                return xb_err_set(err, ENOMEM, "peers");
        json_array_foreach(v, i, e) {
                const char *id = json_string_value(e);
                size_t n = id ? strlen(id) : 0;

                if (!id || n == 0 || n > XB_NETPEER_ID_MAX || strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789") != n)
                        return xb_err_msg(err, EINVAL, "network.peers[%zu] must be a sandbox id (lowercase letters "
                                          "and digits)", i);
                if (xb_netpol_has_peer(p, id))
                        continue;
                if (!(p->peers[p->npeers] = strdup(id)))
                        return xb_err_set(err, ENOMEM, "peers");
                p->npeers++;
        }
        return 0;
}

bool
xb_netpol_has_peer(const struct xb_netpol *p, const char *id)
{
        for (size_t i = 0; p && i < p->npeers; i++)
                if (!strcmp(p->peers[i], id))
                        return true;
        return false;
}

struct xb_netpol *
xb_netpol_new(enum xb_netmode m)
{
        struct xb_netpol *p = calloc(1, sizeof(*p));

        if (p) {
                p->refs = 1;
                p->mode = m;
        }
        return p;
}

int
xb_netpol_parse(json_t *v, struct xb_netpol **ret, struct xb_err *err)
{
        static const char *const hint = "`network` must be \"none\", \"packages\", \"open\", or "
                                        "{\"mode\": \"allowlist\", \"allow\": [\"example.com\", \"*.example.org\", "
                                        "\"203.0.113.0/24\"], \"deny\": [...]}";
        enum xb_netmode m;
        struct xb_netpol *p;
        json_t *mode;
        const char *key;
        json_t *val;
        int r;

        if (json_is_string(v)) {
                if (xb_netmode_parse(json_string_value(v), &m) < 0)
                        return xb_err_msg(err, EINVAL, "%s; not `%.32s`", hint, json_string_value(v));
                p = xb_netpol_new(m);
                if (!p)
                        return xb_err_set(err, ENOMEM, "policy");
                *ret = p;
                return 0;
        }
        if (!json_is_object(v))
                return xb_err_msg(err, EINVAL, "%s", hint);
        json_object_foreach(v, key, val)
                if (strcmp(key, "mode") && strcmp(key, "allow") && strcmp(key, "deny") && strcmp(key, "ask") &&
                    strcmp(key, "peers"))
                        return xb_err_msg(err, EINVAL, "network: unknown field `%.32s`; it takes mode, allow, "
                                          "deny, ask and peers", key);
        mode = json_object_get(v, "mode");
        if (!mode) {
                /* {"allow": [...]} alone means an allowlist. */
                m = json_object_get(v, "allow") || json_object_get(v, "ask") ? XB_NET_ALLOWLIST : XB_NET_NONE;
        } else if (!json_is_string(mode) || xb_netmode_parse(json_string_value(mode), &m) < 0)
                return xb_err_msg(err, EINVAL, "network.mode must be none, packages, allowlist or open");
        p = xb_netpol_new(m);
        if (!p)
                return xb_err_set(err, ENOMEM, "policy");
        if ((r = parse_rules(json_object_get(v, "allow"), "allow", &p->allow, &p->nallow, err)) < 0 ||
            (r = parse_rules(json_object_get(v, "deny"), "deny", &p->deny, &p->ndeny, err)) < 0 ||
            (r = parse_rules(json_object_get(v, "ask"), "ask", &p->ask, &p->nask, err)) < 0 ||
            (r = parse_peers(json_object_get(v, "peers"), p, err)) < 0) {
                xb_netpol_unref(p);
                return r;
        }
        /* ask: a human decides each connection to these names (approvals). */
        for (size_t i = 0; i < p->nask; i++)
                if (p->ask[i].kind == XB_RULE_CIDR) {
                        xb_netpol_unref(p);
                        return xb_err_msg(err, EINVAL, "network.ask[%zu] must be a domain or *.wildcard", i);
                }
        if (p->nask && m != XB_NET_ALLOWLIST) {
                xb_netpol_unref(p);
                return xb_err_msg(err, EINVAL, "network.ask needs mode allowlist");
        }
        if (p->nallow && m != XB_NET_ALLOWLIST) {
                xb_netpol_unref(p);
                return xb_err_msg(err, EINVAL, "network.allow needs mode allowlist (mode %s allows %s)",
                                  xb_netmode_name(m), m == XB_NET_OPEN ? "everything public" :
                                  m == XB_NET_NONE ? "nothing" : "the package sources");
        }
        *ret = p;
        return 0;
}

static json_t *
rules_json(const struct xb_netrule *r, size_t n)
{
        json_t *a = json_array();

        for (size_t i = 0; a && i < n; i++)
                json_array_append_new(a, json_string(r[i].text));
        return a;
}

json_t *
xb_netpol_json(const struct xb_netpol *p)
{
        json_t *j = json_pack("{s:s,s:o,s:o}", "mode", xb_netmode_name(p->mode), "allow",
                              rules_json(p->allow, p->nallow), "deny", rules_json(p->deny, p->ndeny));

        if (j && p->nask)
                json_object_set_new(j, "ask", rules_json(p->ask, p->nask));
        if (j && p->npeers) {
                json_t *a = json_array();

                for (size_t i = 0; a && i < p->npeers; i++)
                        json_array_append_new(a, json_string(p->peers[i]));
                json_object_set_new(j, "peers", a);
        }
        return j;
}

struct xb_netpol *
xb_netpol_ref(struct xb_netpol *p)
{
        if (p)
                p->refs++;
        return p;
}

void
xb_netpol_unref(struct xb_netpol *p)
{
        if (!p || --p->refs)
                return;
        for (size_t i = 0; i < p->nallow; i++)
                xb_netrule_free(&p->allow[i]);
        for (size_t i = 0; i < p->ndeny; i++)
                xb_netrule_free(&p->deny[i]);
        for (size_t i = 0; i < p->nask; i++)
                xb_netrule_free(&p->ask[i]);
        for (size_t i = 0; i < p->npeers; i++)
                free(p->peers[i]);
        free(p->peers);
        free(p->ask);
        free(p->allow);
        free(p->deny);
        free(p);
}

const struct xb_netrule *
xb_netrules_name(const struct xb_netrule *r, size_t n, const char *name)
{
        size_t nl = strlen(name);

        for (size_t i = 0; i < n; i++) {
                if (r[i].kind == XB_RULE_DOMAIN && !strcmp(r[i].text, name))
                        return &r[i];
                if (r[i].kind == XB_RULE_WILDCARD) {
                        const char *suffix = r[i].text + 1;   /* ".b.test" */
                        size_t sl = strlen(suffix);

                        /* Subdomains only: *.b.test matches x.b.test, not b.test. */
                        if (nl > sl && !strcmp(name + nl - sl, suffix))
                                return &r[i];
                }
        }
        return NULL;
}

const struct xb_netrule *
xb_netrules_ip(const struct xb_netrule *r, size_t n, const struct xb_ip *ip)
{
        for (size_t i = 0; i < n; i++)
                if (r[i].kind == XB_RULE_CIDR && xb_cidr_match(&r[i].cidr, ip))
                        return &r[i];
        return NULL;
}

bool
xb_netrules_have_cidr(const struct xb_netrule *r, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (r[i].kind == XB_RULE_CIDR)
                        return true;
        return false;
}
