/* A sandbox's network namespace from the setup child's side: loopback up,
 * and the egress sockets bound inside and handed to the daemon
 * (xb_sandbox_take_net). */
#define _GNU_SOURCE
#include "sandbox.h"

#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "proto/wire.h"
#include "sandbox/sandbox_int.h"

int
xb__loopback_up(void)
{
        _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        struct ifreq ifr = { 0 };

        if (fd < 0)
                return -errno;
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                return -errno;
        ifr.ifr_flags |= IFF_UP;
        return ioctl(fd, SIOCSIFFLAGS, &ifr) < 0 ? -errno : 0;
}

static int
bound_socket(int type, uint16_t port)
{
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int one = 1, fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

        if (fd < 0)
                return -errno;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || (type == SOCK_STREAM && listen(fd, 128) < 0)) {
                int e = -errno;

                close(fd);
                return e;
        }
        return fd;
}

/* The egress sockets, bound here (in the sandbox's network namespace, with
 * our capabilities there: port 53 is privileged) and served by the
 * daemon. Nothing inside holds them, so nothing inside can close them, and
 * the ports are taken before any process runs. */
int
xb__send_net_sockets(int sock)
{
        int fds[3] = { -1, -1, -1 }, r = 0;
        uint8_t buf[16];
        struct xb_msgw w;

        static const struct { int type; uint16_t port; } want[3] = {
                { SOCK_STREAM, 3128 }, { SOCK_DGRAM, 53 }, { SOCK_STREAM, 53 },
        };

        for (int i = 0; i < 3 && r == 0; i++)
                if ((fds[i] = bound_socket(want[i].type, want[i].port)) < 0)
                        r = fds[i];
        if (r == 0) {
                xb_msgw_init(&w, buf, sizeof(buf), XB_SETUP_GO, 0);
                r = xb_msg_send(sock, w.buf, w.len, fds, 3);
        }
        for (int i = 0; i < 3; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        close(sock);
        return r < 0 ? r : 0;
}

int
xb_sandbox_take_net(struct xb_sandbox *sb, int fds[3])
{
        uint8_t buf[64];
        int got[XB_MSG_MAXFDS];
        size_t n = 0;
        ssize_t r;

        if (sb->net_sock < 0)
                return -ENOENT;
        r = xb_msg_recv(sb->net_sock, buf, sizeof(buf), got, &n, true);
        if (r == -EAGAIN)
                return -EAGAIN;
        close(sb->net_sock);
        sb->net_sock = -1;
        if (r <= 0 || n != 3) {
                for (size_t i = 0; i < n; i++)
                        close(got[i]);
                return -EPROTO;
        }
        memcpy(fds, got, 3 * sizeof(int));
        return 0;
}
