/* Waiting for a human (egress.h's approvals): a connection to an `ask`
 * name holds until the engine answers, then goes on as allowed or is
 * refused with a hint that says a human must approve; and the sandbox's
 * own API on the proxy, GET /_execbox/secrets/NAME, which asks a human
 * for a secret and answers its placeholder once granted (the value stays
 * outside: secret.h). A waiting connection reads nothing more from the
 * client, and the engine's timeout bounds the wait. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/proxy_int.h"
#include "net/secret.h"

#define ASK_HINT "A human must approve this: the user sees it in `execbox approvals` (GET /v1/approvals)."

void
xb_netsys_set_hooks(struct xb_netsys *ns, const struct xb_net_hooks *h)
{
        ns->hooks = *h;
}

void
xb__px_ask_cancel(struct xb_conn *c)
{
        struct xb_netsys *ns = c->loop && c->net ? c->net->ns : NULL;

        c->asking = false;
        if (ns && ns->hooks.cancel)
                ns->hooks.cancel(ns->hooks.ctx, c->ask_id);
}

static void
refuse(struct xb_conn *c, const char *why)
{
        char body[768];

        c->logoff = xb__netlog_add(c->net, c->kind == K_SOCKS ? "socks" : c->kind == K_FORWARD ? "http" : "connect",
                                   c->host, c->port, NULL, false, why);
        c->net->ns->st.denied++;
        if (c->kind == K_SOCKS) {
                xb__px_socks_reply(c, SOCKS_RULESET);
                return;
        }
        snprintf(body, sizeof(body), "execbox: egress to %s:%u waits for a human and was not approved (%s).\n"
                 ASK_HINT " Tell the user what you need and why, then retry.\n", c->host, c->port, why);
        xb__px_http_reply(c, 403, "Forbidden", body);
}

static void
egress_answer(void *arg, bool allow, const char *why, const char *placeholder)
{
        struct xb_conn *c = arg;

        (void)placeholder;
        c->asking = false;
        if (c->dead || !c->net)
                return;
        xb_timer_stop(&c->timer);
        if (!allow) {
                refuse(c, why ? why : "denied");
                return;
        }
        snprintf(c->rule, sizeof(c->rule), "approved by a human (%.96s)", why ? why : "ask");
        c->verdict = XB_V_ALLOW;
        xb__px_lookup(c);
}

static void
ask_timeout(struct xb_timer *t)
{
        xb__px_close(t->data);
}

void
xb__px_ask(struct xb_conn *c)
{
        struct xb_netsys *ns = c->net->ns;
        struct xb_net_ask a = { .kind = XB_ASK_EGRESS, .name = c->host, .port = c->port };
        char why[160] = "this server takes no approvals";

        if (!ns->hooks.ask ||
            ns->hooks.ask(ns->hooks.ctx, c->net->id, &a, egress_answer, c, &c->ask_id, why, sizeof(why)) < 0) {
                refuse(c, why);
                return;
        }
        c->asking = true;
        c->st = C_RESOLVE;
        /* The engine answers by its own timeout; this is a backstop. */
        xb_timer_start(ns->loop, &c->timer, 3700 * 1000, ask_timeout, c);
        xb__px_update(c);
}

/* ---- the sandbox's API ---- */

static void
json_reply(struct xb_conn *c, int status, const char *reason, json_t *j)
{
        char head[256], *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
        int n;

        json_decref(j);
        if (!body) {
                xb__px_close(c);
                return;
        }
        n = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\n"
                     "X-Execbox-Egress: %s\r\nContent-Length: %zu\r\n\r\n", status, reason,
                     status < 300 ? "info" : "denied", strlen(body) + 1);
        xb__px_say(c, head, (size_t)n);
        xb__px_say(c, body, strlen(body));
        xb__px_say(c, "\n", 1);
        free(body);
        xb__px_closing(c);
}

static void
api_error(struct xb_conn *c, int status, const char *reason, const char *code, const char *msg, const char *hint)
{
        json_reply(c, status, reason, json_pack("{s:{s:s,s:s,s:s}}", "error", "code", code, "message", msg,
                                                "hint", hint));
}

static void
secret_answer(void *arg, bool allow, const char *why, const char *placeholder)
{
        struct xb_conn *c = arg;
        char msg[256];

        c->asking = false;
        if (c->dead || !c->net)
                return;
        xb__netlog_add(c->net, "secret", c->host, 0, NULL, allow, allow ? "granted by a human" : why);
        if (!allow) {
                snprintf(msg, sizeof(msg), "the secret %s was not granted (%s)", c->host, why ? why : "denied");
                api_error(c, 403, "Forbidden", "not_approved", msg,
                          ASK_HINT " Tell the user which secret you need and why, then ask again.");
                return;
        }
        json_reply(c, 200, "OK", json_pack("{s:s,s:s,s:s,s:s}", "name", c->host, "env", c->host, "placeholder",
                                           placeholder ? placeholder : "", "note",
                                           "Use the placeholder (or $NAME in new processes) where the secret goes; "
                                           "the proxy puts the value in only on the way to the secret's hosts."));
}

/* Percent-decoding of one query value into out (cap bytes); false if bad. */
static bool
query_value(const char *q, size_t qlen, const char *key, char *out, size_t cap)
{
        size_t kl = strlen(key);
        const char *p = q, *end = q + qlen;

        out[0] = '\0';
        while (p < end) {
                const char *amp = memchr(p, '&', (size_t)(end - p));
                const char *e = amp ? amp : end;

                if ((size_t)(e - p) > kl && !strncmp(p, key, kl) && p[kl] == '=') {
                        size_t o = 0;

                        for (p += kl + 1; p < e; p++) {
                                char ch = *p;

                                if (ch == '+')
                                        ch = ' ';
                                else if (ch == '%' && e - p > 2) {
                                        char hex[3] = { p[1], p[2], 0 };
                                        char *x;
                                        long v = strtol(hex, &x, 16);

                                        if (*x)
                                                return false;
                                        ch = (char)v;
                                        p += 2;
                                }
                                if (ch == '\0' || ch == '\r' || ch == '\n' || o + 1 >= cap)
                                        return false;
                                out[o++] = ch;
                        }
                        out[o] = '\0';
                        return true;
                }
                p = e + 1;
        }
        return true;
}

bool
xb__px_internal(struct xb_conn *c, const char *path, size_t plen)
{
        static const char pre[] = XB_NET_API_PREFIX "secrets/";
        struct xb_netsys *ns = c->net->ns;
        const char *q, *name;
        size_t nlen;
        char hosts[1024], header[1100], reason[512], tmo[16], why[160] = "this server takes no approvals";
        struct xb_net_ask a = { .kind = XB_ASK_SECRET };

        if (plen < sizeof(XB_NET_API_PREFIX) - 1 || memcmp(path, XB_NET_API_PREFIX, sizeof(XB_NET_API_PREFIX) - 1))
                return false;
        c->kind = K_FORWARD;
        if (plen <= sizeof(pre) - 1 || memcmp(path, pre, sizeof(pre) - 1)) {
                api_error(c, 404, "Not Found", "not_found", "the sandbox's API has GET " XB_NET_API_PREFIX
                          "secrets/NAME only", "GET $EXECBOX_API/secrets/NAME?hosts=api.example.com&reason=... "
                          "asks a human for the secret NAME");
                return true;
        }
        name = path + sizeof(pre) - 1;
        q = memchr(name, '?', plen - (size_t)(name - path));
        nlen = q ? (size_t)(q - name) : plen - (size_t)(name - path);
        snprintf(c->host, sizeof(c->host), "%.*s", (int)(nlen < XB_SECRET_NAME_MAX ? nlen : XB_SECRET_NAME_MAX + 1),
                 name);
        if (nlen > XB_SECRET_NAME_MAX || !xb_secret_name_ok(c->host)) {
                api_error(c, 400, "Bad Request", "invalid_request", "a secret's name is an environment variable "
                          "name such as GITHUB_TOKEN", "GET $EXECBOX_API/secrets/GITHUB_TOKEN?hosts=api.github.com");
                return true;
        }
        if (q) {
                size_t ql = plen - (size_t)(q + 1 - path);

                if (!query_value(q + 1, ql, "hosts", hosts, sizeof(hosts)) ||
                    !query_value(q + 1, ql, "header", header, sizeof(header)) ||
                    !query_value(q + 1, ql, "reason", reason, sizeof(reason)) ||
                    !query_value(q + 1, ql, "timeout_s", tmo, sizeof(tmo))) {
                        api_error(c, 400, "Bad Request", "invalid_request", "a query value is too long or malformed",
                                  "hosts (comma separated), header, reason and timeout_s, URL-encoded");
                        return true;
                }
                a.hosts = hosts[0] ? hosts : NULL;
                a.header = header[0] ? header : NULL;
                a.reason = reason[0] ? reason : NULL;
                a.timeout_ms = tmo[0] ? strtoull(tmo, NULL, 10) * 1000 : 0;
        }
        a.name = c->host;
        if (!ns->hooks.ask ||
            ns->hooks.ask(ns->hooks.ctx, c->net->id, &a, secret_answer, c, &c->ask_id, why, sizeof(why)) < 0) {
                api_error(c, 503, "Service Unavailable", "not_approved", why, ASK_HINT);
                return true;
        }
        c->asking = true;
        c->st = C_RESOLVE;
        xb_timer_start(ns->loop, &c->timer, 3700 * 1000, ask_timeout, c);
        xb__px_update(c);
        return true;
}
