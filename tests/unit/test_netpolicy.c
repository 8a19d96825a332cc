/* Unit tests for net/addr.h and net/policy.h: the always-refused ranges
 * (every IPv6 form that embeds a refused IPv4 address included), CIDR
 * parsing and matching, rule and policy parsing, and name matching
 * (wildcards cover subdomains only). */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <sys/socket.h>
#include <string.h>

#include "net/addr.h"
#include "net/policy.h"

static const char *
blocked(const char *s)
{
        struct xb_ip ip;

        cr_assert_eq(xb_ip_parse(s, &ip), 0, "parse %s", s);
        return xb_ip_blocked(&ip);
}

Test(netaddr, refused_ranges)
{
        static const char *const refused[] = {
                "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.255", "127.0.0.1",
                "127.255.0.1", "169.254.169.254", "169.254.1.1", "172.16.0.1", "172.31.255.255", "192.168.1.1",
                "192.0.0.8", "198.18.0.1", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
                "::", "::1", "fe80::1", "fc00::1", "fd00:ec2::254", "fdff::1", "ff02::1", "fec0::1",
                /* IPv4 inside IPv6 */
                "::ffff:127.0.0.1", "::ffff:10.1.2.3", "::ffff:169.254.169.254", "::ffff:a9fe:a9fe",
                "::ffff:0:10.0.0.1", "64:ff9b::10.0.0.1", "::10.0.0.1", "2002:0a00:0001::1", "[::ffff:7f00:1]",
        };
        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
                cr_expect_not_null(blocked(refused[i]), "%s must be refused", refused[i]);
        cr_expect_str_eq(blocked("169.254.169.254"), "cloud metadata");
        cr_expect_str_eq(blocked("fd00:ec2::254"), "cloud metadata");
}

Test(netaddr, public_addresses_pass)
{
        static const char *const ok[] = { "1.1.1.1", "8.8.8.8", "100.63.255.255", "100.128.0.1", "172.15.255.255",
                                          "172.32.0.1", "198.51.100.7", "203.0.113.9", "2606:4700:4700::1111",
                                          "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:0808:0808::1" };

        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
                cr_expect_null(blocked(ok[i]), "%s must pass", ok[i]);
}

Test(netaddr, cidrs)
{
        struct xb_cidr c;
        struct xb_ip ip;

        cr_assert_eq(xb_cidr_parse("203.0.113.0/24", &c), 0);
        xb_ip_parse("203.0.113.77", &ip);
        cr_expect(xb_cidr_match(&c, &ip));
        xb_ip_parse("::ffff:203.0.113.77", &ip);   /* the mapped form is the same host */
        cr_expect(xb_cidr_match(&c, &ip));
        xb_ip_parse("203.0.114.1", &ip);
        cr_expect_not(xb_cidr_match(&c, &ip));
        cr_assert_eq(xb_cidr_parse("::ffff:10.0.0.0/104", &c), 0);
        cr_expect_eq(c.ip.family, AF_INET);
        cr_expect_eq(c.prefix, 8);
        cr_expect_eq(xb_cidr_parse("10.0.0.1/8", &c), -EINVAL, "host bits set");
        cr_expect_eq(xb_cidr_parse("10.0.0.0/33", &c), -EINVAL);
        cr_expect_eq(xb_cidr_parse("10.0.0.0/", &c), -EINVAL);
        cr_expect_eq(xb_cidr_parse("/8", &c), -EINVAL);
        cr_expect_eq(xb_cidr_parse("2001:db8::/129", &c), -EINVAL);
        cr_assert_eq(xb_cidr_parse("1.2.3.4", &c), 0);
        cr_expect_eq(c.prefix, 32);
}

static struct xb_netpol *
pol(const char *js)
{
        json_error_t je;
        json_t *v = json_loads(js, JSON_DECODE_ANY, &je);
        struct xb_netpol *p = NULL;
        struct xb_err err = { 0 };

        cr_assert_not_null(v, "%s", js);
        if (xb_netpol_parse(v, &p, &err) < 0)
                p = NULL;
        json_decref(v);
        return p;
}

Test(netpolicy, parse)
{
        struct xb_netpol *p = pol("{\"mode\": \"allowlist\", \"allow\": [\"A.Test.\", \"*.w.test\", \"10.0.0.0/8\"], "
                                  "\"deny\": [\"x.w.test\"]}");

        cr_assert_not_null(p);
        cr_expect_eq(p->mode, XB_NET_ALLOWLIST);
        cr_expect_str_eq(p->allow[0].text, "a.test");
        cr_expect_eq(p->allow[1].kind, XB_RULE_WILDCARD);
        cr_expect_eq(p->allow[2].kind, XB_RULE_CIDR);
        cr_expect_not_null(xb_netrules_name(p->allow, p->nallow, "a.test"));
        cr_expect_not_null(xb_netrules_name(p->allow, p->nallow, "deep.x.w.test"));
        cr_expect_null(xb_netrules_name(p->allow, p->nallow, "w.test"), "a wildcard is subdomains only");
        cr_expect_null(xb_netrules_name(p->allow, p->nallow, "aa.test"));
        cr_expect_null(xb_netrules_name(p->allow, p->nallow, "xw.test"));
        cr_expect_not_null(xb_netrules_name(p->deny, p->ndeny, "x.w.test"));
        xb_netpol_unref(p);
        p = pol("\"open\"");
        cr_assert_not_null(p);
        cr_expect_eq(p->mode, XB_NET_OPEN);
        xb_netpol_unref(p);
        p = pol("{\"allow\": [\"a.test\"]}");
        cr_assert_not_null(p);
        cr_expect_eq(p->mode, XB_NET_ALLOWLIST);
        xb_netpol_unref(p);
}

Test(netpolicy, peers)
{
        struct xb_netpol *p = pol("{\"mode\": \"none\", \"peers\": [\"abc234\", \"def567\", \"abc234\"]}");
        json_t *j;

        cr_assert_not_null(p);
        cr_expect_eq(p->mode, XB_NET_NONE, "peers alone open no internet");
        cr_expect_eq(p->npeers, 2, "a repeated id counts once");
        cr_expect(xb_netpol_has_peer(p, "def567"));
        cr_expect_not(xb_netpol_has_peer(p, "def56"));
        j = xb_netpol_json(p);
        cr_expect_eq(json_array_size(json_object_get(j, "peers")), 2);
        json_decref(j);
        xb_netpol_unref(p);
        p = pol("{\"peers\": [\"abc234\"]}");
        cr_assert_not_null(p);
        cr_expect_eq(p->mode, XB_NET_NONE);
        xb_netpol_unref(p);
        p = pol("\"open\"");
        j = xb_netpol_json(p);
        cr_expect_null(json_object_get(j, "peers"), "no peers, no field");
        json_decref(j);
        xb_netpol_unref(p);
        cr_expect_null(pol("{\"peers\": [\"Upper\"]}"));
        cr_expect_null(pol("{\"peers\": [\"a.b\"]}"));
        cr_expect_null(pol("{\"peers\": \"abc\"}"));
        cr_expect_null(pol("{\"peers\": [\"abc\", 1]}"), "freed cleanly after a good one");
        cr_expect_null(pol("{\"peers\": [\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]}"));
}

Test(netpolicy, refused)
{
        static const char *const bad[] = {
                "\"everything\"", "5", "[]", "{\"mode\": \"open\", \"allow\": [\"a.test\"]}",
                "{\"mode\": \"allowlist\", \"allow\": [\"bad host\"]}", "{\"mode\": \"allowlist\", \"allow\": \"a\"}",
                "{\"mode\": \"allowlist\", \"allow\": [1]}", "{\"mode\": \"allowlist\", \"other\": 1}",
                "{\"mode\": \"allowlist\", \"allow\": [\"10.0.0.0/40\"]}", "{\"mode\": 3}",
                "{\"mode\": \"allowlist\", \"allow\": [\"*.\"]}", "{\"mode\": \"allowlist\", \"allow\": [\"a..b\"]}",
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_expect_null(pol(bad[i]), "%s must be refused", bad[i]);
}

Test(netpolicy, names)
{
        char n1[] = "Example.COM.", n2[] = "a_b-c.d", n3[] = "bad!", n4[] = ".x", n5[] = "";

        cr_expect(xb_netname_normalize(n1));
        cr_expect_str_eq(n1, "example.com");
        cr_expect(xb_netname_normalize(n2));
        cr_expect_not(xb_netname_normalize(n3));
        cr_expect_not(xb_netname_normalize(n4));
        cr_expect_not(xb_netname_normalize(n5));
}
