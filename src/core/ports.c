/* Published ports (ports.h): sockets made in a sandbox's network
 * namespace, what listens there, and signed links to a port.
 *
 * The loop's thread enters the sandbox's namespace only to create sockets
 * and open two /proc files, then returns to the daemon's own at once: a
 * socket keeps the namespace it was made in (socket(7)), and a /proc/net
 * file the one of the task that opened it. Nothing else happens between
 * the two setns(2) calls, and failing to return aborts, since any later
 * socket of the daemon's would be made in a sandbox. */
#define _GNU_SOURCE
#include "core/ports.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "core/core.h"

#define LISTED_MAX 256
#define PROC_NET_MAX (1u << 20)     /* of /proc/net/tcp read per family */

/* The daemon's own network namespace, opened on first use (by the loop's thread). */
static int host_netns = -1;

int
xb_ports_parse(const char *s, unsigned *port, struct xb_err *err)
{
        unsigned long v = 0;

        if (!s || !*s || strlen(s) > 5 || strspn(s, "0123456789") != strlen(s) || (v = strtoul(s, NULL, 10)) < 1 ||
            v > 65535)
                return xb_err_code(err, XB_E_INVALID_PORT, EINVAL, NULL,
                                   "`%.32s` is not a port: give a number from 1 to 65535", s ? s : "");
        *port = (unsigned)v;
        return 0;
}

static int
enter(struct xb_sbx *x, struct xb_err *err)
{
        if (host_netns < 0) {
                host_netns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
                if (host_netns < 0)
                        return xb_err_code(err, XB_E_INTERNAL, errno, NULL,
                                           "cannot open the daemon's network namespace: %s", strerror(errno));
        }
        if (x->state != XB_SBX_READY || !x->sb || x->sb->pidfd < 0)
                return xb_err_code(err, XB_E_SANDBOX_BUSY, EAGAIN, NULL, "the sandbox is not running yet");
        /* A pidfd names init's namespaces with no pid-reuse race (Linux 5.8). */
        if (setns(x->sb->pidfd, CLONE_NEWNET) < 0)
                return xb_err_code(err, XB_E_INTERNAL, errno, NULL, "cannot enter the sandbox's network: %s",
                                   strerror(errno));
        return 0;
}

static void
leave(void)
{
        if (setns(host_netns, CLONE_NEWNET) < 0)
                abort();
}

static int
try_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
        int one = 1;

        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, sa, len) == 0 || errno == EINPROGRESS)
                return 0;
        return -errno;
}

int
xb_ports_connect(struct xb_sbx *x, unsigned port, int *ret_fd, struct xb_err *err)
{
        struct sockaddr_in a4 = { .sin_family = AF_INET,
                                  .sin_port = htons((uint16_t)port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
                                   .sin6_port = htons((uint16_t)port),
                                   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
        _cleanup_close_ int fd4 = -EBADF, fd6 = -EBADF;
        int r;

        if (port < 1 || port > 65535)
                return xb_err_code(err, XB_E_INVALID_PORT, EINVAL, NULL, "port %u is not 1 to 65535", port);
        if ((r = enter(x, err)) < 0)
                return r;
        fd4 = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        r = -errno;
        fd6 = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        leave();
        if (fd4 < 0)
                return xb_err_code(err, XB_E_INTERNAL, -r, NULL, "cannot make a socket in the sandbox: %s",
                                   strerror(-r));
        /* Loopback answers a connect at once, refusals included. A request
         * to its server is use of the sandbox: its idle clock restarts. */
        if ((r = try_connect(fd4, (struct sockaddr *)&a4, sizeof(a4))) == 0) {
                *ret_fd = TAKE_FD(fd4);
                xb_sbx_used(x);
                return 0;
        }
        if (r == -ECONNREFUSED && fd6 >= 0 && try_connect(fd6, (struct sockaddr *)&a6, sizeof(a6)) == 0) {
                *ret_fd = TAKE_FD(fd6);
                xb_sbx_used(x);
                return 0;
        }
        if (r == -ECONNREFUSED)
                return xb_err_code(err, XB_E_PORT_CLOSED, ECONNREFUSED, NULL,
                                   "nothing listens on port %u in the sandbox", port);
        return xb_err_code(err, XB_E_INTERNAL, -r, NULL, "cannot connect to port %u in the sandbox: %s", port,
                           strerror(-r));
}

/* ---- listing ---- */

struct listener {
        unsigned port;
        char addr[INET6_ADDRSTRLEN];
};

static int
read_all(int fd, char *buf, size_t cap)
{
        size_t got = 0;
        ssize_t n;

        while (got < cap - 1 && (n = read(fd, buf + got, cap - 1 - got)) > 0)
                got += (size_t)n;
        buf[got] = '\0';
        return (int)got;
}

static int
cmp_listener(const void *a, const void *b)
{
        const struct listener *x = a, *y = b;

        return x->port != y->port ? (x->port < y->port ? -1 : 1) : strcmp(x->addr, y->addr);
}

/* The LISTEN (state 0A) lines of one /proc/net/tcp{,6} text. */
static void
parse_tcp(char *text, int family, struct listener *out, size_t *n)
{
        char *save = NULL;

        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char local[64], remote[64], st[8];
                unsigned char raw[16];
                char *colon;
                unsigned port;

                if (*n == LISTED_MAX)
                        return;
                if (sscanf(line, " %*[0-9]: %63s %63s %7s", local, remote, st) != 3 || strcmp(st, "0A"))
                        continue;
                colon = strchr(local, ':');
                if (!colon || sscanf(colon + 1, "%x", &port) != 1 || port == 0 || port > 65535)
                        continue;
                *colon = '\0';
                /* The address is the kernel's 32-bit words in host order. */
                if (strlen(local) != (family == AF_INET ? 8u : 32u))
                        continue;
                for (size_t w = 0; w < strlen(local) / 8; w++) {
                        unsigned v;
                        char word[9];

                        memcpy(word, local + 8 * w, 8);
                        word[8] = '\0';
                        sscanf(word, "%x", &v);
                        memcpy(raw + 4 * w, &v, 4);
                }
                out[*n].port = port;
                if (!inet_ntop(family, raw, out[*n].addr, sizeof(out[*n].addr)))
                        continue;
                (*n)++;
        }
}

int
xb_ports_list(struct xb_sbx *x, json_t **ret, struct xb_err *err)
{
        _cleanup_close_ int f4 = -EBADF, f6 = -EBADF;
        _cleanup_free_ struct listener *l = NULL;
        _cleanup_free_ char *buf = NULL;
        json_t *arr;
        size_t n = 0;
        int r;

        if ((r = enter(x, err)) < 0)
                return r;
        f4 = open("/proc/thread-self/net/tcp", O_RDONLY | O_CLOEXEC);
        f6 = open("/proc/thread-self/net/tcp6", O_RDONLY | O_CLOEXEC);
        leave();
        l = calloc(LISTED_MAX, sizeof(*l));
        buf = malloc(PROC_NET_MAX);
        if (!l || !buf)
                return xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
        if (f4 >= 0) {
                read_all(f4, buf, PROC_NET_MAX);
                parse_tcp(buf, AF_INET, l, &n);
        }
        if (f6 >= 0) {
                read_all(f6, buf, PROC_NET_MAX);
                parse_tcp(buf, AF_INET6, l, &n);
        }
        qsort(l, n, sizeof(*l), cmp_listener);
        arr = json_array();
        for (size_t i = 0; arr && i < n; i++)
                json_array_append_new(arr, json_pack("{s:i,s:s}", "port", (json_int_t)l[i].port, "address", l[i].addr));
        if (!arr)
                return xb_err_code(err, XB_E_NOMEM, ENOMEM, NULL, "out of memory");
        *ret = arr;
        return 0;
}

/* ---- shared links ---- */

static int
share_msg(char *buf, size_t cap, const char *id, unsigned port, unsigned long long exp)
{
        return snprintf(buf, cap, "port\n%s\n%u\n%llu", id, port, exp);
}

int
xb_ports_share(struct xb_core *c, const char *id, unsigned port, uint64_t ttl_s, char *token, uint64_t *exp,
               struct xb_err *err)
{
        unsigned long long e = (unsigned long long)time(NULL) + ttl_s;
        char msg[128], sig[65];
        int n = share_msg(msg, sizeof(msg), id, port, e);

        if (!c->o.sign || n < 0 || (size_t)n >= sizeof(msg) || c->o.sign(msg, (size_t)n, sig) < 0)
                return xb_err_code(err, XB_E_INTERNAL, ENOSYS, NULL, "links cannot be signed here (GnuTLS missing)");
        snprintf(token, XB_SHARE_TOKEN_MAX, "%llu.%s", e, sig);
        *exp = e;
        return 0;
}

int
xb_ports_share_check(struct xb_core *c, const char *id, unsigned port, const char *token, struct xb_err *err)
{
        const char *dot = token ? strchr(token, '.') : NULL;
        char msg[128], want[65], *end = NULL;
        unsigned long long e = token ? strtoull(token, &end, 10) : 0;
        unsigned char diff = 0;
        int n;

        n = share_msg(msg, sizeof(msg), id ? id : "", port, e);
        if (!dot || end != dot || strlen(dot + 1) != 64 || !c->o.sign || n < 0 || (size_t)n >= sizeof(msg) ||
            c->o.sign(msg, (size_t)n, want) < 0)
                return xb_err_code(err, XB_E_BAD_SHARE, EACCES, NULL, "the shared link's signature is not valid");
        for (size_t i = 0; i < 64; i++)
                diff |= (unsigned char)(want[i] ^ dot[1 + i]);
        if (diff)
                return xb_err_code(err, XB_E_BAD_SHARE, EACCES, NULL, "the shared link's signature is not valid");
        if (e < (unsigned long long)time(NULL))
                return xb_err_code(err, XB_E_SHARE_EXPIRED, EKEYEXPIRED, NULL, "the shared link expired");
        return 0;
}
