/* The service manager's notification protocol (sd_notify(3)), spoken
 * directly: one datagram of "KEY=VALUE" lines to the AF_UNIX socket named
 * by $NOTIFY_SOCKET, a path or "@name" in the abstract namespace. The
 * daemon sends READY=1 once its HTTP front listens, WATCHDOG=1 every half
 * of $WATCHDOG_USEC from its event loop, and STOPPING=1 at shutdown.
 * Without $NOTIFY_SOCKET every call does nothing. */
#pragma once
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "base/err.h"
#include "base/loop.h"

struct xb_notify {
        int fd;                       /* -1: no manager to tell */
        struct sockaddr_un addr;
        socklen_t addrlen;
        uint64_t watchdog_ms;         /* ping period, 0 = none */
        struct xb_timer timer;
};

/* Parse a $NOTIFY_SOCKET value into addr; -EINVAL (err set) for a relative
 * path or an unsupported kind, -ENAMETOOLONG past sun_path. */
int xb_notify_parse_addr(const char *spec, struct sockaddr_un *addr, socklen_t *ret_len, struct xb_err *err);

/* The ping period for $WATCHDOG_USEC and $WATCHDOG_PID (either may be
 * NULL): half the timeout in ms, or 0 when unset, bad, or another pid's. */
uint64_t xb_notify_watchdog_ms(const char *usec, const char *pid);

/* Read and unset $NOTIFY_SOCKET, $WATCHDOG_USEC and $WATCHDOG_PID (the
 * sandboxes and their helpers must not inherit them), send READY=1 with
 * status as STATUS=, and start the pings on l. It cannot fail the daemon:
 * a bad socket is logged once and then ignored. */
void xb_notify_ready(struct xb_notify *n, struct xb_loop *l, const char *status);

/* Send STOPPING=1, stop the pings and close the socket. */
void xb_notify_stopping(struct xb_notify *n);

/* Send one message (lines without a trailing NUL); 0 when sent or when
 * there is no socket, else -errno. */
int xb_notify_send(const struct xb_notify *n, const char *msg, int flags);
