/* The always-refused ranges and CIDR matching; see addr.h. */
#define _GNU_SOURCE
#include "net/addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool
prefix_match(const uint8_t *a, const uint8_t *b, unsigned bits)
{
        unsigned whole = bits / 8, rest = bits % 8;

        if (memcmp(a, b, whole) != 0)
                return false;
        if (rest == 0)
                return true;
        return ((a[whole] ^ b[whole]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

/* The IPv4 address inside an IPv6 form that carries one, if any. */
static bool
embedded_v4(const uint8_t *b, uint8_t out[4])
{
        static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        static const uint8_t translated[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0 };
        static const uint8_t compat[12] = { 0 };
        static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };

        if (!memcmp(b, mapped, 12) || !memcmp(b, translated, 12) || !memcmp(b, nat64, 12) ||
            (!memcmp(b, compat, 12) && (b[12] | b[13] | b[14]) != 0)) {
                memcpy(out, b + 12, 4);
                return true;
        }
        if (b[0] == 0x20 && b[1] == 0x02) {   /* 6to4: 2002:V4ADDR::/48 */
                memcpy(out, b + 2, 4);
                return true;
        }
        return false;
}

static void
normalize(struct xb_ip *ip)
{
        uint8_t v4[4];

        if (ip->family == AF_INET6 && embedded_v4(ip->b, v4)) {
                memset(ip->b, 0, sizeof(ip->b));
                memcpy(ip->b, v4, 4);
                ip->family = AF_INET;
        }
}

int
xb_ip_from_sockaddr(const struct sockaddr *sa, struct xb_ip *ret)
{
        memset(ret, 0, sizeof(*ret));
        if (sa->sa_family == AF_INET) {
                ret->family = AF_INET;
                memcpy(ret->b, &((const struct sockaddr_in *)sa)->sin_addr, 4);
                return 0;
        }
        if (sa->sa_family == AF_INET6) {
                ret->family = AF_INET6;
                memcpy(ret->b, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
                normalize(ret);
                return 0;
        }
        return -EAFNOSUPPORT;
}

int
xb_ip_parse(const char *s, struct xb_ip *ret)
{
        char buf[INET6_ADDRSTRLEN + 2];
        size_t n = strlen(s);

        memset(ret, 0, sizeof(*ret));
        if (n >= sizeof(buf))
                return -EINVAL;
        if (n > 2 && s[0] == '[' && s[n - 1] == ']') {
                memcpy(buf, s + 1, n - 2);
                buf[n - 2] = '\0';
        } else
                memcpy(buf, s, n + 1);
        if (inet_pton(AF_INET, buf, ret->b) == 1) {
                ret->family = AF_INET;
                return 0;
        }
        if (inet_pton(AF_INET6, buf, ret->b) == 1) {
                ret->family = AF_INET6;
                normalize(ret);
                return 0;
        }
        return -EINVAL;
}

int
xb_cidr_parse(const char *s, struct xb_cidr *ret)
{
        char buf[INET6_ADDRSTRLEN + 8];
        const char *slash = strchr(s, '/');
        size_t alen = slash ? (size_t)(slash - s) : strlen(s);
        unsigned max;
        struct xb_cidr c = { 0 };

        if (alen == 0 || alen >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, s, alen);
        buf[alen] = '\0';
        /* Parsed as written (no IPv4 reduction): ::ffff:0:0/96 means what it says. */
        if (inet_pton(AF_INET, buf, c.ip.b) == 1)
                c.ip.family = AF_INET;
        else if (inet_pton(AF_INET6, buf, c.ip.b) == 1)
                c.ip.family = AF_INET6;
        else
                return -EINVAL;
        max = c.ip.family == AF_INET ? 32 : 128;
        c.prefix = max;
        if (slash) {
                char *end;
                unsigned long p;

                if (!slash[1] || slash[1] < '0' || slash[1] > '9')
                        return -EINVAL;
                p = strtoul(slash + 1, &end, 10);
                if (*end || p > max)
                        return -EINVAL;
                c.prefix = (unsigned)p;
        }
        for (unsigned bit = c.prefix; bit < max; bit++)
                if (c.ip.b[bit / 8] & (0x80 >> (bit % 8)))
                        return -EINVAL;
        if (c.ip.family == AF_INET6 && c.prefix >= 96) {
                /* A rule on a mapped form is a rule on the IPv4 range it covers. */
                uint8_t v4[4];

                if (embedded_v4(c.ip.b, v4) && c.ip.b[0] != 0x20) {
                        memset(c.ip.b, 0, sizeof(c.ip.b));
                        memcpy(c.ip.b, v4, 4);
                        c.ip.family = AF_INET;
                        c.prefix -= 96;
                }
        }
        *ret = c;
        return 0;
}

bool
xb_cidr_match(const struct xb_cidr *c, const struct xb_ip *ip)
{
        return c->ip.family == ip->family && prefix_match(c->ip.b, ip->b, c->prefix);
}

struct range {
        int family;
        uint8_t b[16];
        unsigned prefix;
        const char *why;
};

#define V4(a, b_, c, d, p, w) { AF_INET, { a, b_, c, d }, p, w }
static const struct range blocked[] = {
        V4(0, 0, 0, 0, 8, "this-network (0.0.0.0/8)"),
        V4(10, 0, 0, 0, 8, "private (RFC 1918)"),
        V4(100, 64, 0, 0, 10, "carrier-grade NAT (100.64.0.0/10)"),
        V4(127, 0, 0, 0, 8, "loopback"),
        V4(169, 254, 169, 254, 32, "cloud metadata"),
        V4(169, 254, 0, 0, 16, "link-local"),
        V4(172, 16, 0, 0, 12, "private (RFC 1918)"),
        V4(192, 0, 0, 0, 24, "IETF protocol assignments"),
        V4(192, 168, 0, 0, 16, "private (RFC 1918)"),
        V4(198, 18, 0, 0, 15, "benchmarking (198.18.0.0/15)"),
        V4(224, 0, 0, 0, 4, "multicast"),
        V4(240, 0, 0, 0, 4, "reserved (240.0.0.0/4)"),
        { AF_INET6, { 0 }, 128, "unspecified" },
        { AF_INET6, { [15] = 1 }, 128, "loopback" },
        { AF_INET6, { 0xfd, 0x00, 0x0e, 0xc2, [15] = 0x54, [14] = 0x02 }, 128, "cloud metadata" },
        { AF_INET6, { 0xfc }, 7, "unique local (fc00::/7)" },
        { AF_INET6, { 0xfe, 0x80 }, 10, "link-local" },
        { AF_INET6, { 0xfe, 0xc0 }, 10, "site-local" },
        { AF_INET6, { 0xff }, 8, "multicast" },
        { AF_INET6, { 0x01, 0x00 }, 64, "discard (100::/64)" },
        /* Any other IPv4-shaped IPv6 form not reduced above (::/96 with zeros). */
        { AF_INET6, { 0 }, 96, "IPv4-compatible" },
};

const char *
xb_ip_blocked(const struct xb_ip *ip)
{
        for (size_t i = 0; i < sizeof(blocked) / sizeof(blocked[0]); i++)
                if (blocked[i].family == ip->family && prefix_match(blocked[i].b, ip->b, blocked[i].prefix))
                        return blocked[i].why;
        return NULL;
}

void
xb_ip_str(const struct xb_ip *ip, char *buf, size_t len)
{
        if (!inet_ntop(ip->family, ip->b, buf, (socklen_t)len))
                snprintf(buf, len, "?");
}

bool
xb_ip_equal(const struct xb_ip *a, const struct xb_ip *b)
{
        return a->family == b->family && !memcmp(a->b, b->b, a->family == AF_INET ? 4 : 16);
}
