/* libFuzzer target for the egress proxy's request parsers (net/proxy_parse.c):
 * an HTTP request head (CONNECT, an absolute http:// URL to forward, a GET
 * of the proxy) or SOCKS5's greeting and CONNECT, which a sandbox sends and
 * the daemon parses. Whatever it accepts must name a host the policy can
 * judge (a normalised name, or a literal address) and a port, and a
 * rebuilt forward head must fit the buffer it goes into. The rest of the
 * proxy is stubbed. Built by `make fuzz`; `make fuzz-replay` runs the corpus. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/proxy_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

void xb__px_say(struct xb_conn *c, const void *data, size_t len) { (void)c; (void)data; (void)len; }
void xb__px_closing(struct xb_conn *c) { c->st = C_CLOSING; }
void xb__px_http_reply(struct xb_conn *c, int status, const char *reason, const char *body)
{
        (void)status; (void)reason; (void)body;
        c->st = C_CLOSING;
}
void xb__px_socks_reply(struct xb_conn *c, uint8_t code) { if (code) c->st = C_CLOSING; }
void xb__px_close(struct xb_conn *c) { c->dead = true; }
void xb__px_update(struct xb_conn *c) { (void)c; }
void xb__px_resolve(struct xb_conn *c) { c->st = C_RESOLVE; }
/* The sandbox's API (ask.c) waits on the engine: here it only claims its paths. */
bool xb__px_internal(struct xb_conn *c, const char *path, size_t plen)
{
        (void)c;
        return plen >= 10 && !memcmp(path, "/_execbox/", 10);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static uint8_t buf[XB_NET_BUF];
        struct xb_net net = { 0 };
        struct xb_conn c = { 0 };
        struct xb_ip ip;

        if (size == 0 || size > XB_NET_BUF)
                return 0;
        net.pol = xb_netpol_new(XB_NET_OPEN);
        memcpy(buf, data, size);
        c.net = &net;
        c.up = (struct cbuf){ .b = buf, .len = size, .pr = -1, .pw = -1 };
        c.st = C_HEAD;
        xb__px_parse_head(&c);
        if (c.st == C_RESOLVE) {
                if (!c.host[0] || c.port == 0 || c.up.off + c.up.len > XB_NET_BUF)
                        abort();
                if (c.literal != (xb_ip_parse(c.host, &ip) == 0))
                        abort();
                if (!c.literal) {
                        char copy[sizeof(c.host)];

                        memcpy(copy, c.host, sizeof(copy));
                        if (!xb_netname_normalize(copy) || strcmp(copy, c.host))
                                abort();
                }
                if (c.kind == K_FORWARD && (!c.fwd_head || c.fwd_len + c.up.len > XB_NET_BUF ||
                                            memcmp(c.fwd_head + c.fwd_len - 4, "\r\n\r\n", 4)))
                        abort();
        }
        free(c.fwd_head);
        xb_netpol_unref(net.pol);
        return 0;
}
