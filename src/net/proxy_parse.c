/* The proxy's request parsers: an HTTP request head (CONNECT, or an
 * absolute http:// URL to forward, whose head is rebuilt here), SOCKS5's
 * greeting and CONNECT (RFC 1928), and the status page a plain GET of the
 * proxy itself gets. Each reads c->up as it fills, and either waits for
 * more, replies, or hands c to xb__px_resolve. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/proxy_int.h"

/* c->host as the policy sees it: a literal address, or a normalised name
 * ("A.Test." is a.test, "10.0.0.1." the address 10.0.0.1); a dotted run of
 * digits that is no address (inet_aton's shorthands) is neither. */
static int
judge_host(struct xb_conn *c)
{
        struct xb_ip ip;

        c->literal = xb_ip_parse(c->host, &ip) == 0;
        if (c->literal)
                return 0;
        if (!xb_netname_normalize(c->host))
                return -EINVAL;
        c->literal = xb_ip_parse(c->host, &ip) == 0;
        if (!c->literal && strspn(c->host, "0123456789.") == strlen(c->host))
                return -EINVAL;
        return 0;
}

/* Split "host:port" or "[v6]:port" into c->host and c->port. */
static int
set_target(struct xb_conn *c, const char *s, size_t len, uint16_t dflt)
{
        const char *colon = NULL, *h = s;
        size_t hl = len;

        if (len == 0 || len > XB_NETNAME_MAX + 8)
                return -EINVAL;
        if (s[0] == '[') {
                const char *rb = memchr(s, ']', len);

                if (!rb)
                        return -EINVAL;
                h = s + 1;
                hl = (size_t)(rb - s - 1);
                if (rb + 1 < s + len) {
                        if (rb[1] != ':')
                                return -EINVAL;
                        colon = rb + 1;
                }
        } else {
                colon = memrchr(s, ':', len);
                if (colon)
                        hl = (size_t)(colon - s);
        }
        if (hl == 0 || hl > XB_NETNAME_MAX)
                return -EINVAL;
        memcpy(c->host, h, hl);
        c->host[hl] = '\0';
        c->port = dflt;
        if (colon) {
                unsigned long p = 0;
                const char *q = colon + 1;

                if (q >= s + len)
                        return -EINVAL;
                for (; q < s + len; q++) {
                        if (*q < '0' || *q > '9')
                                return -EINVAL;
                        p = p * 10 + (unsigned long)(*q - '0');
                        if (p > 65535)
                                return -EINVAL;
                }
                if (p == 0)
                        return -EINVAL;
                c->port = (uint16_t)p;
        }
        return judge_host(c);
}

static bool
hop_header(const char *line, size_t len)
{
        static const char *const drop[] = { "proxy-connection:", "proxy-authorization:", "connection:",
                                            "keep-alive:", NULL };

        for (size_t i = 0; drop[i]; i++)
                if (len >= strlen(drop[i]) && !strncasecmp(line, drop[i], strlen(drop[i])))
                        return true;
        return false;
}

/* The head to send upstream: origin-form request line, hop-by-hop headers
 * dropped, Connection: close (each request opens its own connection, so a
 * kept-alive client cannot reuse it for another host). Host is always the
 * URL's, the host the policy decided on: a different one would let a
 * shared front end (a CDN) serve a host the policy never allowed. Per-host
 * header injection (secrets) goes here. */
static int
forward_head(struct xb_conn *c, const char *method, size_t mlen, const char *path, size_t plen, const char *ver,
             size_t vlen, const char *hdrs, size_t hlen)
{
        size_t cap = mlen + plen + vlen + hlen + XB_NETNAME_MAX + 64;
        char *o = malloc(cap), *p;
        const char *line = hdrs, *end = hdrs + hlen;
        bool v6 = strchr(c->host, ':') != NULL;

        if (!o)
                return -ENOMEM;
        p = o + sprintf(o, "%.*s %.*s %.*s\r\n", (int)mlen, method, (int)plen, path, (int)vlen, ver);
        p += sprintf(p, "Host: %s%s%s", v6 ? "[" : "", c->host, v6 ? "]" : "");
        if (c->port != 80)
                p += sprintf(p, ":%u", c->port);
        p += sprintf(p, "\r\n");
        while (line < end) {
                const char *nl = memmem(line, (size_t)(end - line), "\r\n", 2);
                size_t ll = nl ? (size_t)(nl - line) : (size_t)(end - line);

                if (ll && !hop_header(line, ll) && !(ll >= 5 && !strncasecmp(line, "host:", 5))) {
                        memcpy(p, line, ll);
                        p += ll;
                        *p++ = '\r';
                        *p++ = '\n';
                }
                line += ll + 2;
        }
        p += sprintf(p, "Connection: close\r\n\r\n");
        c->fwd_head = o;
        c->fwd_len = (size_t)(p - o);
        return 0;
}


static bool
tchar(unsigned char ch)
{
        return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
               (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

bool
xb__px_head_ok(const char *h, size_t hl)
{
        const char *line = h, *end = h + hl;

        if (hl < 4 || memcmp(end - 4, "\r\n\r\n", 4))
                return false;
        for (size_t i = 0; i < hl; i++)
                if (!h[i] || (h[i] == '\r' && (i + 1 == hl || h[i + 1] != '\n')) ||
                    (h[i] == '\n' && (i == 0 || h[i - 1] != '\r')))
                        return false;
        for (bool first = true; line < end - 2; first = false) {
                const char *nl = memmem(line, (size_t)(end - line), "\r\n", 2);
                const char *q = line;

                if (!first) {
                        while (q < nl && tchar((unsigned char)*q))
                                q++;
                        if (q == line || q == nl || *q != ':')
                                return false;   /* no name, a fold, or a space before the colon */
                }
                line = nl + 2;
        }
        return true;
}

static void
status_page(struct xb_conn *c)
{
        char body[1024];
        json_t *j = xb_netpol_json(c->net->pol);
        char *rules = j ? json_dumps(j, JSON_COMPACT) : NULL;

        json_decref(j);

        snprintf(body, sizeof(body),
                 "execbox egress proxy. This sandbox's network policy: %s\n"
                 "HTTP(S)_PROXY and ALL_PROXY point here; DNS at 127.0.0.1 answers the names it allows.\n"
                 "To reach more, ask the user to change the policy (PATCH /v1/sandboxes/{id}/network).\n",
                 rules ? rules : "?");
        free(rules);
        xb__px_http_reply(c, 200, "OK", body);
}

static void
parse_http(struct xb_conn *c)
{
        char *b = (char *)c->up.b + c->up.off;
        char *end = memmem(b, c->up.len, "\r\n\r\n", 4);
        char *sp1, *sp2, *eol;
        size_t headlen;

        if (!end) {
                if (c->up.len >= XB_NET_HEAD_MAX)
                        xb__px_http_reply(c, 431, "Request Header Fields Too Large", "execbox: request head too large\n");
                return;
        }
        headlen = (size_t)(end - b) + 4;
        if (!xb__px_head_ok(b, headlen)) {
                xb__px_http_reply(c, 400, "Bad Request",
                                  "execbox: malformed request head (every line must end in CRLF; no folded lines)\n");
                return;
        }
        eol = memmem(b, headlen, "\r\n", 2);
        sp1 = memchr(b, ' ', (size_t)(eol - b));
        sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
        if (!sp1 || !sp2) {
                xb__px_http_reply(c, 400, "Bad Request", "execbox: not an HTTP proxy request\n");
                return;
        }
        if ((size_t)(sp1 - b) == 7 && !memcmp(b, "CONNECT", 7)) {
                c->kind = K_CONNECT;
                if (set_target(c, sp1 + 1, (size_t)(sp2 - sp1 - 1), 443) < 0) {
                        xb__px_http_reply(c, 400, "Bad Request", "execbox: CONNECT needs host:port\n");
                        return;
                }
                /* Bytes after the head (a client that did not wait) go up after the 200. */
                c->up.off += headlen;
                c->up.len -= headlen;
        } else if ((size_t)(sp2 - sp1 - 1) > 7 && !strncasecmp(sp1 + 1, "http://", 7)) {
                char *t = sp1 + 8, *slash = memchr(t, '/', (size_t)(sp2 - t));
                char *auth_end = slash ? slash : sp2;
                char *at = memchr(t, '@', (size_t)(auth_end - t));

                c->kind = K_FORWARD;
                if (at)   /* user:pass@host: userinfo is not forwarded */
                        t = at + 1;
                if (set_target(c, t, (size_t)(auth_end - t), 80) < 0) {
                        xb__px_http_reply(c, 400, "Bad Request", "execbox: bad host in the request URL\n");
                        return;
                }
                if (forward_head(c, b, (size_t)(sp1 - b), slash ? slash : "/", slash ? (size_t)(sp2 - slash) : 1,
                                 sp2 + 1, (size_t)(eol - sp2 - 1), eol + 2, headlen - (size_t)(eol + 2 - b) - 2) < 0 ||
                    xb__px_inject(c) < 0) {
                        xb__px_close(c);
                        return;
                }
                c->up.off += headlen;
                c->up.len -= headlen;
        } else if (sp1[1] == '/') {
                if (xb__px_internal(c, sp1 + 1, (size_t)(sp2 - sp1 - 1)))
                        return;
                status_page(c);
                return;
        } else {
                xb__px_http_reply(c, 400, "Bad Request", "execbox: use CONNECT for https, or an absolute http:// URL\n");
                return;
        }
        xb__px_resolve(c);
}

/* SOCKS5: greeting, then one CONNECT request (RFC 1928). */
static void
parse_socks(struct xb_conn *c)
{
        uint8_t *b = c->up.b + c->up.off;
        size_t n = c->up.len, need;
        char tmp[INET6_ADDRSTRLEN + 8];

        c->kind = K_SOCKS;
        if (!c->socks_greeted) {
                if (n < 2 || n < 2u + b[1])
                        return;
                if (!memchr(b + 2, 0, b[1])) {
                        uint8_t r[2] = { 5, 0xff };

                        xb__px_say(c, r, 2);
                        xb__px_closing(c);
                        return;
                }
                c->up.off += 2u + b[1];
                c->up.len -= 2u + b[1];
                c->socks_greeted = true;
                xb__px_say(c, "\x05\x00", 2);
                xb__px_update(c);
                b = c->up.b + c->up.off;
                n = c->up.len;
        }
        if (n < 5)
                return;
        if (b[0] != 5) {
                xb__px_close(c);
                return;
        }
        need = b[3] == 1 ? 10 : b[3] == 4 ? 22 : b[3] == 3 ? 7u + b[4] : 0;
        if (!need) {
                xb__px_socks_reply(c, SOCKS_BADATYP);
                return;
        }
        if (n < need)
                return;
        if (b[1] != 1) {
                xb__px_socks_reply(c, SOCKS_BADCMD);   /* BIND and UDP ASSOCIATE: no */
                return;
        }
        if (b[3] == 1)
                inet_ntop(AF_INET, b + 4, tmp, sizeof(tmp));
        else if (b[3] == 4)
                inet_ntop(AF_INET6, b + 4, tmp, sizeof(tmp));
        if (b[3] == 3) {
                if (b[4] == 0 || b[4] > XB_NETNAME_MAX) {
                        xb__px_socks_reply(c, SOCKS_BADATYP);
                        return;
                }
                memcpy(c->host, b + 5, b[4]);
                c->host[b[4]] = '\0';
                if (judge_host(c) < 0) {
                        xb__px_socks_reply(c, SOCKS_BADATYP);
                        return;
                }
        } else {
                snprintf(c->host, sizeof(c->host), "%s", tmp);
                c->literal = true;
        }
        c->port = (uint16_t)(b[need - 2] << 8 | b[need - 1]);
        if (c->port == 0) {
                xb__px_socks_reply(c, SOCKS_FAIL);   /* found by tests/fuzz/fuzz_proxy.c */
                return;
        }
        c->up.off += need;
        c->up.len -= need;
        xb__px_resolve(c);
}

void
xb__px_parse_head(struct xb_conn *c)
{
        uint8_t first = c->up.b[c->up.off];

        if (first == 5)
                parse_socks(c);
        else if (first == 4) {
                uint8_t r[8] = { 0, 91 };   /* SOCKS4: request rejected */

                xb__px_say(c, r, sizeof(r));
                xb__px_closing(c);
        } else
                parse_http(c);
}

