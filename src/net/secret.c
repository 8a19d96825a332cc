/* Secrets: their grammar, and the swap of placeholders for values in a
 * request head (secret.h has the why). The swap is on the head alone, as
 * the proxy (or the TLS relay, tls.c) hands it over, for the host the
 * policy decided on, never the Host the client wrote. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "net/proxy_int.h"
#include "net/secret.h"

/* A binding: the sandbox's placeholder for the tenant's secret of that
 * name. s is NULL while the daemon has no value for it (a restarted one
 * before the tenant posts it again, or after a delete): nothing is swapped. */
struct xb_netsecret {
        struct xb_secret *s;
        char name[XB_SECRET_NAME_MAX + 1];
        char ph[XB_SECRET_PLACEHOLDER_LEN + 1];
};

static uint64_t injections;

uint64_t
xb_net_injections(void)
{
        return injections;
}

bool
xb_secret_name_ok(const char *name)
{
        size_t n = strlen(name);

        if (n == 0 || n > XB_SECRET_NAME_MAX || (name[0] >= '0' && name[0] <= '9'))
                return false;
        for (size_t i = 0; i < n; i++) {
                char ch = name[i];

                if (!(ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')))
                        return false;
        }
        return true;
}

/* No byte that could end a header line or the head. */
static bool
header_safe(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0')
                        return false;
        return true;
}

static void
secret_free(struct xb_secret *s)
{
        if (s->value) {
                explicit_bzero(s->value, strlen(s->value));
                free(s->value);
        }
        free(s->name);
        free(s->header);
        for (size_t i = 0; i < s->nhosts; i++)
                xb_netrule_free(&s->hosts[i]);
        free(s->hosts);
        free(s);
}

struct xb_secret *
xb_secret_ref(struct xb_secret *s)
{
        if (s)
                s->refs++;
        return s;
}

void
xb_secret_unref(struct xb_secret *s)
{
        if (s && --s->refs == 0)
                secret_free(s);
}

static int
parse_header(const char *h, struct xb_err *err)
{
        const char *colon = strchr(h, ':'), *v;

        if (strlen(h) > XB_SECRET_HEADER_MAX || !header_safe(h, strlen(h)))
                return xb_err_msg(err, EINVAL, "`header` must be one line of at most %d bytes",
                                  XB_SECRET_HEADER_MAX);
        if (!colon || colon == h)
                return xb_err_msg(err, EINVAL, "`header` must be \"Name: text with {value}\", such as "
                                  "\"Authorization: Bearer {value}\"");
        for (const char *p = h; p < colon; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      *p == '-' || *p == '_'))
                        return xb_err_msg(err, EINVAL, "`header`'s name (before the colon) must be a token such "
                                          "as Authorization or X-Api-Key");
        v = strstr(colon, "{value}");
        if (!v || strstr(v + 7, "{value}"))
                return xb_err_msg(err, EINVAL, "`header` must hold `{value}` once, where the value goes");
        return 0;
}

int
xb_secret_parse(json_t *body, int tenant, struct xb_secret **ret, struct xb_err *err)
{
        const char *key, *name, *value, *header = NULL;
        json_t *v, *hosts;
        struct xb_secret *s;
        size_t i;

        if (!json_is_object(body))
                return xb_err_msg(err, EINVAL, "the body must be {\"name\", \"value\", \"hosts\", \"header\"}");
        json_object_foreach(body, key, v)
                if (strcmp(key, "name") && strcmp(key, "value") && strcmp(key, "hosts") && strcmp(key, "header"))
                        return xb_err_msg(err, EINVAL, "unknown field `%.64s`; a secret has name, value, hosts "
                                          "and header", key);
        name = json_string_value(json_object_get(body, "name"));
        if (!name || !xb_secret_name_ok(name))
                return xb_err_msg(err, EINVAL, "`name` must be an environment variable name such as GITHUB_TOKEN "
                                  "(letters, digits, _; at most %d)", XB_SECRET_NAME_MAX);
        /* A placeholder of another secret could then name this one. */
        if (!strncasecmp(name, "EXECBOX", 7))
                return xb_err_msg(err, EINVAL, "`name` must not start with EXECBOX (those are the server's)");
        v = json_object_get(body, "value");
        value = json_string_value(v);
        if (!value || json_string_length(v) == 0 || json_string_length(v) > XB_SECRET_VALUE_MAX ||
            !header_safe(value, json_string_length(v)))
                return xb_err_msg(err, EINVAL, "`value` must be a string of 1 to %d bytes with no line break "
                                  "or NUL", XB_SECRET_VALUE_MAX);
        v = json_object_get(body, "header");
        if (v && !json_is_null(v)) {
                if (!(header = json_string_value(v)))
                        return xb_err_msg(err, EINVAL, "`header` must be a string such as "
                                          "\"Authorization: Bearer {value}\"");
                if (parse_header(header, err) < 0)
                        return -EINVAL;
        }
        hosts = json_object_get(body, "hosts");
        if (!json_is_array(hosts) || json_array_size(hosts) == 0 || json_array_size(hosts) > XB_SECRET_HOSTS_MAX)
                return xb_err_msg(err, EINVAL, "`hosts` must list 1 to %d host names (or *.wildcards) the "
                                  "secret is sent to", XB_SECRET_HOSTS_MAX);
        s = calloc(1, sizeof(*s));
        if (!s || !(s->hosts = calloc(json_array_size(hosts), sizeof(*s->hosts))))
                goto nomem;
        s->refs = 1;
        s->tenant = tenant;
        s->created_ms = (uint64_t)time(NULL) * 1000;
        json_array_foreach(hosts, i, v) {
                const char *h = json_string_value(v);
                struct xb_err e = { 0 };

                if (!h || xb_netrule_parse(h, &s->hosts[s->nhosts], &e) < 0 ||
                    s->hosts[s->nhosts].kind == XB_RULE_CIDR) {
                        if (h && !e.msg[0])
                                xb_netrule_free(&s->hosts[s->nhosts]);
                        secret_free(s);
                        return xb_err_msg(err, EINVAL, "`hosts[%zu]` must be a host name or *.wildcard (the "
                                          "name the sandbox connects to)", i);
                }
                s->nhosts++;
        }
        s->name = strdup(name);
        s->value = strdup(value);
        s->header = header ? strdup(header) : NULL;
        if (!s->name || !s->value || (header && !s->header))
                goto nomem;
        *ret = s;
        return 0;
nomem:
        if (s)
                secret_free(s);
        return xb_err_msg(err, ENOMEM, "out of memory");
}

json_t *
xb_secret_json(const struct xb_secret *s)
{
        json_t *hosts = json_array();

        for (size_t i = 0; i < s->nhosts; i++)
                json_array_append_new(hosts, json_string(s->hosts[i].text));
        return json_pack("{s:s,s:o,s:s?,s:I}", "name", s->name, "hosts", hosts, "header", s->header, "created_ms",
                         (json_int_t)s->created_ms);
}

bool
xb_secret_for_host(const struct xb_secret *s, const char *host)
{
        return !s->revoked && xb_netrules_name(s->hosts, s->nhosts, host) != NULL;
}

static struct xb_netsecret *
binding(struct xb_net *n, const char *name)
{
        for (size_t i = 0; i < n->nsecrets; i++)
                if (!strcmp(n->secrets[i].name, name))
                        return &n->secrets[i];
        return NULL;
}

static bool
placeholder_ok(const char *ph)
{
        size_t pre = strlen("execbox-secret-");

        if (strlen(ph) != XB_SECRET_PLACEHOLDER_LEN || strncmp(ph, "execbox-secret-", pre))
                return false;
        for (size_t i = pre; i < XB_SECRET_PLACEHOLDER_LEN; i++)
                if (ph[i] < 'a' || ph[i] > 'z')
                        return false;
        return true;
}

/* A new binding of name to s (NULL: waiting) with placeholder ph. */
static int
bind_new(struct xb_net *n, const char *name, struct xb_secret *s, const char *ph)
{
        struct xb_netsecret *ns;

        if (n->nsecrets >= XB_NET_SECRETS_MAX)
                return -E2BIG;
        ns = realloc(n->secrets, (n->nsecrets + 1) * sizeof(*ns));
        if (!ns)
                return -ENOMEM;
        n->secrets = ns;
        ns = &n->secrets[n->nsecrets++];
        snprintf(ns->name, sizeof(ns->name), "%s", name);
        memcpy(ns->ph, ph, sizeof(ns->ph));
        ns->s = xb_secret_ref(s);
        return 0;
}

int
xb_net_add_secret(struct xb_net *n, struct xb_secret *s, char ph[XB_SECRET_PLACEHOLDER_LEN + 1])
{
        struct xb_netsecret *ns = binding(n, s->name);
        unsigned char rnd[XB_SECRET_PLACEHOLDER_LEN];
        size_t pre = strlen("execbox-secret-");
        int r;

        /* Bound already (a grant after create): the same placeholder, so
         * what the sandbox holds stays valid. */
        if (ns) {
                xb_net_rebind_secret(n, s->name, s, NULL);
                memcpy(ph, ns->ph, XB_SECRET_PLACEHOLDER_LEN + 1);
                return 0;
        }
        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
                return -EIO;
        memcpy(ph, "execbox-secret-", pre);
        for (size_t i = pre; i < XB_SECRET_PLACEHOLDER_LEN; i++)
                ph[i] = (char)('a' + rnd[i] % 26);
        ph[XB_SECRET_PLACEHOLDER_LEN] = '\0';
        r = bind_new(n, s->name, s, ph);
        if (r < 0)
                explicit_bzero(ph, XB_SECRET_PLACEHOLDER_LEN + 1);
        return r;
}

int
xb_net_restore_secret(struct xb_net *n, const char *name, const char *ph)
{
        if (!xb_secret_name_ok(name) || !placeholder_ok(ph))
                return -EINVAL;
        if (binding(n, name))
                return -EEXIST;
        return bind_new(n, name, NULL, ph);
}

int
xb_net_rebind_secret(struct xb_net *n, const char *name, struct xb_secret *s, bool *was_waiting)
{
        struct xb_netsecret *ns = binding(n, name);

        if (was_waiting)
                *was_waiting = ns && !ns->s;
        if (!ns || ns->s == s)
                return 0;
        xb_secret_unref(ns->s);
        ns->s = xb_secret_ref(s);
        return 1;
}

const char *
xb_net_secret_binding(const struct xb_net *n, size_t i, const char **ph, bool *waiting)
{
        if (i >= n->nsecrets)
                return NULL;
        if (ph)
                *ph = n->secrets[i].ph;
        if (waiting)
                *waiting = !n->secrets[i].s;
        return n->secrets[i].name;
}

void
xb__net_secrets_free(struct xb_net *n)
{
        for (size_t i = 0; i < n->nsecrets; i++)
                xb_secret_unref(n->secrets[i].s);
        free(n->secrets);
        n->secrets = NULL;
        n->nsecrets = 0;
}

bool
xb_net_holds_secret(const struct xb_net *n, const struct xb_secret *s, char *ph)
{
        for (size_t i = n->nsecrets; i-- > 0;)
                if (n->secrets[i].s == s && !s->revoked) {
                        if (ph)
                                memcpy(ph, n->secrets[i].ph, sizeof(n->secrets[i].ph));
                        return true;
                }
        return false;
}

bool
xb_net_secret_host(const struct xb_net *n, const char *host)
{
        for (size_t i = 0; i < n->nsecrets; i++)
                if (n->secrets[i].s && xb_secret_for_host(n->secrets[i].s, host))
                        return true;
        return false;
}

/* Does the header line l (of ll bytes) carry the header s sets? */
static bool
same_header(const struct xb_secret *s, const char *l, size_t ll)
{
        size_t nl = (size_t)(strchr(s->header, ':') - s->header);

        return ll > nl && l[nl] == ':' && !strncasecmp(l, s->header, nl);
}

/* Append src[0, n) to the buffer at *p, with every placeholder of the
 * applying secrets replaced by its value. */
static void
put_swapped(char **p, const char *src, size_t n, struct xb_netsecret *const *on, size_t non)
{
        while (n) {
                size_t i, adv = 1;

                for (i = 0; i < non; i++)
                        if (n >= XB_SECRET_PLACEHOLDER_LEN && !memcmp(src, on[i]->ph, XB_SECRET_PLACEHOLDER_LEN))
                                break;
                if (i < non) {
                        size_t vl = strlen(on[i]->s->value);

                        memcpy(*p, on[i]->s->value, vl);
                        *p += vl;
                        adv = XB_SECRET_PLACEHOLDER_LEN;
                } else
                        *(*p)++ = *src;
                src += adv;
                n -= adv;
        }
}

int
xb_net_inject_head(struct xb_net *n, const char *host, const char *head, size_t len, char **out,
                   size_t *outlen)
{
        struct xb_netsecret *on[XB_NET_SECRETS_MAX];
        size_t non = 0, cap, i;
        const char *line = head, *end = head + len;
        char *o, *p;
        bool first = true;

        *out = NULL;
        for (i = 0; i < n->nsecrets; i++)
                if (n->secrets[i].s && xb_secret_for_host(n->secrets[i].s, host))
                        on[non++] = &n->secrets[i];
        if (!non)
                return 0;
        /* Each placeholder grows to at most its value; the headers added. */
        cap = len + non * (XB_SECRET_HEADER_MAX + XB_SECRET_VALUE_MAX + 4) +
              (len / XB_SECRET_PLACEHOLDER_LEN + 1) * XB_SECRET_VALUE_MAX;
        o = malloc(cap);
        if (!o)
                return -ENOMEM;
        p = o;
        while (line < end) {
                const char *nl = memmem(line, (size_t)(end - line), "\r\n", 2);
                size_t ll = nl ? (size_t)(nl - line) : (size_t)(end - line);
                bool drop = false;

                if (ll == 0) {
                        /* The blank line: the secrets' own headers go before it. */
                        for (i = 0; i < non; i++)
                                if (on[i]->s->header) {
                                        const char *h = on[i]->s->header, *v = strstr(h, "{value}");
                                        size_t vl = strlen(on[i]->s->value);

                                        memcpy(p, h, (size_t)(v - h));
                                        p += v - h;
                                        memcpy(p, on[i]->s->value, vl);
                                        p += vl;
                                        p = stpcpy(p, v + 7);
                                        p = stpcpy(p, "\r\n");
                                }
                        memcpy(p, line, (size_t)(end - line));
                        p += end - line;
                        break;
                }
                for (i = 0; !first && i < non; i++)
                        if (on[i]->s->header && same_header(on[i]->s, line, ll))
                                drop = true;
                if (!drop) {
                        put_swapped(&p, line, ll, on, non);
                        p = stpcpy(p, "\r\n");
                }
                first = false;
                line += ll + (nl ? 2 : 0);
        }
        *out = o;
        *outlen = (size_t)(p - o);
        injections += non;
        return (int)non;
}

int
xb__px_inject(struct xb_conn *c)
{
        char *o;
        size_t ol;
        int r = xb_net_inject_head(c->net, c->host, c->fwd_head, c->fwd_len, &o, &ol);

        if (r <= 0)
                return r;
        free(c->fwd_head);
        c->fwd_head = o;
        c->fwd_len = ol;
        return 0;
}
