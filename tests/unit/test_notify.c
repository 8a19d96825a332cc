/* Unit tests for daemon/notify.h: $NOTIFY_SOCKET addresses (paths and
 * abstract names, and what is refused), the watchdog period from
 * $WATCHDOG_USEC and $WATCHDOG_PID, and one message through a real socket. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon/notify.h"

Test(notify, path_address)
{
        struct sockaddr_un a;
        socklen_t len = 0;
        struct xb_err err = { 0 };

        cr_assert_eq(xb_notify_parse_addr("/run/systemd/notify", &a, &len, &err), 0);
        cr_assert_eq(a.sun_family, AF_UNIX);
        cr_assert_str_eq(a.sun_path, "/run/systemd/notify");
        cr_assert_eq(len, offsetof(struct sockaddr_un, sun_path) + strlen("/run/systemd/notify") + 1);
}

Test(notify, abstract_address)
{
        struct sockaddr_un a;
        socklen_t len = 0;
        struct xb_err err = { 0 };

        cr_assert_eq(xb_notify_parse_addr("@xb/notify", &a, &len, &err), 0);
        cr_assert_eq(a.sun_path[0], '\0');
        cr_assert_eq(memcmp(a.sun_path + 1, "xb/notify", 9), 0);
        /* No trailing NUL: an abstract name is exactly its bytes. */
        cr_assert_eq(len, offsetof(struct sockaddr_un, sun_path) + 10);
}

Test(notify, refused_addresses)
{
        char longpath[sizeof(((struct sockaddr_un *)0)->sun_path) + 2];
        struct sockaddr_un a;
        socklen_t len = 0;
        struct xb_err err = { 0 };

        cr_assert_eq(xb_notify_parse_addr("relative/notify", &a, &len, &err), -EINVAL);
        cr_assert_eq(xb_notify_parse_addr("vsock:2:1234", &a, &len, &err), -EINVAL);
        cr_assert_eq(xb_notify_parse_addr("@", &a, &len, &err), -EINVAL);
        memset(longpath, 'a', sizeof(longpath) - 1);
        longpath[0] = '/';
        longpath[sizeof(longpath) - 1] = '\0';
        cr_assert_eq(xb_notify_parse_addr(longpath, &a, &len, &err), -ENAMETOOLONG);
        /* A path of exactly sun_path's size has no room for its NUL; an
         * abstract name of that size fits. */
        longpath[sizeof(a.sun_path)] = '\0';
        cr_assert_eq(xb_notify_parse_addr(longpath, &a, &len, &err), -ENAMETOOLONG);
        longpath[0] = '@';
        cr_assert_eq(xb_notify_parse_addr(longpath, &a, &len, &err), 0);
}

Test(notify, watchdog_period)
{
        char pid[32];

        snprintf(pid, sizeof(pid), "%ld", (long)getpid());
        cr_assert_eq(xb_notify_watchdog_ms(NULL, NULL), 0);
        cr_assert_eq(xb_notify_watchdog_ms("", NULL), 0);
        cr_assert_eq(xb_notify_watchdog_ms("60000000", NULL), 30000);
        cr_assert_eq(xb_notify_watchdog_ms("60000000", pid), 30000);
        cr_assert_eq(xb_notify_watchdog_ms("60000000", "1"), 0);
        cr_assert_eq(xb_notify_watchdog_ms("1000", NULL), 1);   /* never a 0 ms period */
        cr_assert_eq(xb_notify_watchdog_ms("0", NULL), 0);
        cr_assert_eq(xb_notify_watchdog_ms("-5", NULL), 0);
        cr_assert_eq(xb_notify_watchdog_ms("12s", NULL), 0);
}

Test(notify, one_message)
{
        struct xb_notify n = { .fd = -1 };
        struct xb_err err = { 0 };
        char name[64], buf[64];
        int rx = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ssize_t got;

        cr_assert_eq(xb_notify_send(&n, "READY=1", 0), 0);   /* no socket: nothing to do */
        snprintf(name, sizeof(name), "@execbox-unit-%ld", (long)getpid());
        cr_assert_eq(xb_notify_parse_addr(name, &n.addr, &n.addrlen, &err), 0);
        cr_assert_eq(bind(rx, (struct sockaddr *)&n.addr, n.addrlen), 0);
        n.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        cr_assert_eq(xb_notify_send(&n, "READY=1\nSTATUS=hi", 0), 0);
        got = recv(rx, buf, sizeof(buf) - 1, 0);
        cr_assert_eq(got, 17);
        buf[got] = '\0';
        cr_assert_str_eq(buf, "READY=1\nSTATUS=hi");
        close(n.fd);
        close(rx);
}
