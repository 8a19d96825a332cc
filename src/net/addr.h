/* Addresses for the egress policy: CIDR rules, and the ranges no policy
 * may open (loopback, private, link-local, CGNAT, ULA, multicast, the
 * metadata addresses, reserved space), checked on the address a connection
 * is about to use. IPv6 forms that embed an IPv4 address (mapped,
 * compatible, translated, NAT64's well-known prefix, 6to4) are judged by
 * the IPv4 address they carry. Pure functions; no allocation. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* An address reduced to what it reaches: family AF_INET (4 bytes) or AF_INET6. */
struct xb_ip {
        int family;
        uint8_t b[16];
};

struct xb_cidr {
        struct xb_ip ip;
        unsigned prefix;
};

/* "10.0.0.0/8", "2001:db8::/32", or a bare address (a host route).
 * 0 or -EINVAL; bits beyond the prefix must be zero. */
int xb_cidr_parse(const char *s, struct xb_cidr *ret);
bool xb_cidr_match(const struct xb_cidr *c, const struct xb_ip *ip);
/* Reduce sa (AF_INET or AF_INET6) to the IPv4 address an IPv6 form
 * embeds, or keep it; -EAFNOSUPPORT for other families. */
int xb_ip_from_sockaddr(const struct sockaddr *sa, struct xb_ip *ret);
/* Parse a literal address ("1.2.3.4", "::1", "[::1]"): 0 or -EINVAL. */
int xb_ip_parse(const char *s, struct xb_ip *ret);
/* Why ip may never be reached ("loopback", "private", ...), or NULL. */
const char *xb_ip_blocked(const struct xb_ip *ip);
void xb_ip_str(const struct xb_ip *ip, char *buf, size_t len);
bool xb_ip_equal(const struct xb_ip *a, const struct xb_ip *b);
