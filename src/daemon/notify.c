/* sd_notify(3) without libsystemd (notify.h). The protocol is one of
 * systemd's documented stable interfaces; linking libsystemd instead would
 * load seven more libraries (libgcrypt, liblzma, libzstd among them) into
 * every `execbox run`, about 0.7 ms of each start, for the few lines here. */
#define _GNU_SOURCE
#include "daemon/notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

int
xb_notify_parse_addr(const char *spec, struct sockaddr_un *addr, socklen_t *ret_len, struct xb_err *err)
{
        size_t n = strlen(spec);

        memset(addr, 0, sizeof(*addr));
        addr->sun_family = AF_UNIX;
        if (spec[0] != '/' && spec[0] != '@')
                return xb_err_msg(err, EINVAL, "NOTIFY_SOCKET=%s is neither an absolute path nor @abstract", spec);
        /* A path needs room for its NUL; an abstract name has none, its
         * '@' becomes the leading NUL byte. */
        if (n < 2 || n + (spec[0] == '/') > sizeof(addr->sun_path))
                return xb_err_msg(err, n < 2 ? EINVAL : ENAMETOOLONG, "NOTIFY_SOCKET=%s has a bad length", spec);
        memcpy(addr->sun_path, spec, n);
        if (spec[0] == '@')
                addr->sun_path[0] = '\0';
        *ret_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (spec[0] == '/'));
        return 0;
}

uint64_t
xb_notify_watchdog_ms(const char *usec, const char *pid)
{
        unsigned long long v;
        char *end;

        if (!usec || !*usec)
                return 0;
        if (pid && *pid) {
                errno = 0;
                v = strtoull(pid, &end, 10);
                if (errno || *end || v != (unsigned long long)getpid())
                        return 0;
        }
        errno = 0;
        v = strtoull(usec, &end, 10);
        if (errno || *end || v == 0 || usec[0] == '-')
                return 0;
        return v / 2000 ? v / 2000 : 1;
}

int
xb_notify_send(const struct xb_notify *n, const char *msg, int flags)
{
        if (n->fd < 0)
                return 0;
        if (sendto(n->fd, msg, strlen(msg), flags | MSG_NOSIGNAL, (const struct sockaddr *)&n->addr,
                   n->addrlen) < 0)
                return -errno;
        return 0;
}

static void
watchdog_ping(struct xb_timer *t)
{
        struct xb_notify *n = t->data;
        int r;

        /* Never block the loop on a full socket: a lost ping is followed
         * by another one before the manager's timeout. */
        if ((r = xb_notify_send(n, "WATCHDOG=1", MSG_DONTWAIT)) < 0 && r != -EAGAIN)
                xb_debug("watchdog ping: %s", strerror(-r));
        xb_timer_start(t->loop, t, n->watchdog_ms, watchdog_ping, n);
}

void
xb_notify_ready(struct xb_notify *n, struct xb_loop *l, const char *status)
{
        const char *spec = getenv("NOTIFY_SOCKET");
        struct xb_err err = { 0 };
        char msg[512];
        int r;

        *n = (struct xb_notify){ .fd = -1 };
        if (!spec || !*spec)
                return;
        n->watchdog_ms = xb_notify_watchdog_ms(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"));
        r = xb_notify_parse_addr(spec, &n->addr, &n->addrlen, &err);
        if (r == 0) {
                n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                if (n->fd < 0)
                        r = xb_err_set(&err, errno, "notify socket");
        }
        unsetenv("NOTIFY_SOCKET");
        unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
        if (r < 0) {
                xb_warn("not telling the service manager we are ready: %s", err.msg);
                return;
        }
        snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s", status);
        if ((r = xb_notify_send(n, msg, 0)) < 0) {
                xb_warn("cannot notify %s: %s", spec[0] == '@' ? "an abstract socket" : spec, strerror(-r));
                close(n->fd);
                n->fd = -1;
                return;
        }
        if (n->watchdog_ms)
                xb_timer_start(l, &n->timer, n->watchdog_ms, watchdog_ping, n);
}

void
xb_notify_stopping(struct xb_notify *n)
{
        xb_timer_stop(&n->timer);
        if (n->fd < 0)
                return;
        xb_notify_send(n, "STOPPING=1\nSTATUS=stopping: removing every sandbox", 0);
        close(n->fd);
        n->fd = -1;
}
