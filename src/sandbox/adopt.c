/* A sandbox that outlives its daemon: arming its init, and a later
 * daemon's re-attach (sandbox.h; init's side is src/init/init_keep.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "proto/wire.h"
#include "sandbox/sandbox.h"

/* A state dir's path may pass sun_path's 108 bytes: the socket is named
 * through the directory's fd. */
static int
unix_addr(const char *path, struct sockaddr_un *sa, int *dirfd)
{
        const char *slash = strrchr(path, '/');
        _cleanup_free_ char *dir = slash ? strndup(path, (size_t)(slash - path)) : NULL;

        *sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
        if (!dir)
                return -EINVAL;
        *dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (*dirfd < 0)
                return -errno;
        if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", *dirfd, slash + 1) >=
            sizeof(sa->sun_path)) {
                close(*dirfd);
                return -ENAMETOOLONG;
        }
        return 0;
}

int
xb_sandbox_arm(struct xb_sandbox *sb, const char *path, const char *secret, uint64_t grace_ms, const int *net,
               size_t nnet, struct xb_err *err)
{
        struct sockaddr_un sa;
        _cleanup_close_ int ls = -EBADF, dirfd = -EBADF;
        uint8_t buf[256];
        struct xb_msgw w;
        int fds[2 + 3], r;

        if (nnet > 3 || (r = unix_addr(path, &sa, &dirfd)) < 0)
                return xb_err_set(err, nnet > 3 ? EINVAL : -r, "keep socket %s", path);
        ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (ls < 0)
                return xb_err_set(err, errno, "keep socket");
        unlink(path);
        if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0600) < 0 || listen(ls, 4) < 0) {
                r = xb_err_set(err, errno, "bind %s", path);
                unlink(path);
                return r;
        }
        if (sb->slot_fd < 0) {
                r = xb_uidpool_handoff(&sb->eng->uids, sb->uid_slot);
                if (r < 0) {
                        unlink(path);
                        return xb_err_set(err, -r, "the uid slot's lock");
                }
                sb->slot_fd = r;
        }
        fds[0] = ls;
        fds[1] = sb->slot_fd;
        for (size_t i = 0; i < nnet; i++)
                fds[2 + i] = net[i];
        xb_msgw_init(&w, buf, sizeof(buf), XB_REQ_KEEP, 0);
        xb_msgw_put(&w, XB_K_DATA, secret, XB_KEEP_SECRET_LEN);
        xb_msgw_u64(&w, XB_K_TIMEOUT_MS, grace_ms);
        if ((r = xb_msg_send(sb->sock, w.buf, w.len, fds, 2 + nnet)) < 0) {
                unlink(path);
                return xb_err_set(err, -r, "arm init");
        }
        return 0;
}

/* The record's pid is init's: it is alive (it answered on its socket),
 * and a live pid is never reused. Its cgroup must be the slot's too. */
static int
check_pid(struct xb_engine *e, pid_t pid, uint32_t slot, struct xb_err *err)
{
        char path[64], want[64];
        _cleanup_free_ char *text = NULL;

        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
        if (xb_read_file_at(AT_FDCWD, path, 1 << 16, &text, NULL) < 0)
                return xb_err_set(err, errno, "read %s", path);
        (void)e;
        snprintf(want, sizeof(want), "-u%u\n", slot);
        if (!strstr(text, want))
                return xb_err_msg(err, EPERM, "pid %d is not in the cgroup of uid slot %u", (int)pid, slot);
        return 0;
}

int
xb_sandbox_adopt(struct xb_engine *e, struct xb_adopt_spec *a, int net[3], size_t *nnet,
                 struct xb_sandbox **ret, struct xb_err *err)
{
        _cleanup_free_ struct xb_sandbox *sb = calloc(1, sizeof(*sb));
        struct timeval tv = { .tv_sec = 2 };
        struct sockaddr_un sa;
        _cleanup_close_ int dirfd = -EBADF;
        uint8_t buf[256];
        struct xb_msgw w;
        struct xb_msgr r;
        int fds[XB_MSG_MAXFDS];
        size_t nfds = 0;
        uint64_t count = 0;
        ssize_t n;
        int rr;
        char name[32];

        *nnet = 0;
        if (!sb)
                return xb_err_set(err, ENOMEM, "sandbox");
        sb->eng = e;
        sb->pidfd = sb->sock = sb->net_sock = sb->slot_fd = -1;
        sb->adopted = true;
        sb->uid_slot = a->slot;
        sb->host_uid_base = xb_uidpool_host_base(a->slot);
        sb->pid = a->pid;
        sb->disk = a->disk;
        snprintf(sb->id, sizeof(sb->id), "%s", a->id);
        if ((rr = unix_addr(a->path, &sa, &dirfd)) < 0)
                return xb_err_set(err, -rr, "keep socket %s", a->path);
        sb->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (sb->sock < 0)
                return xb_err_set(err, errno, "socket");
        setsockopt(sb->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(sb->sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        /* A paused sandbox's init is frozen and could not answer: thaw
         * the slot's group first (the caller pauses it again). */
        snprintf(name, sizeof(name), "u%u", a->slot);
        if ((rr = xb_cgroup_open(e->cgroups, name, &a->limits, &sb->cg, err)) < 0)
                goto fail;
        xb_cgroup_freeze(sb->cg, false);
        if (connect(sb->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                rr = xb_err_set(err, errno, "its init does not answer");
                goto fail;
        }
        xb_msgw_init(&w, buf, sizeof(buf), XB_REQ_HELLO, 0);
        xb_msgw_put(&w, XB_K_DATA, a->secret, XB_KEEP_SECRET_LEN);
        if ((rr = xb_msg_send(sb->sock, w.buf, w.len, NULL, 0)) < 0) {
                xb_err_set(err, -rr, "its init does not answer");
                goto fail;
        }
        n = xb_msg_recv(sb->sock, buf, sizeof(buf), fds, &nfds, false);
        if (n <= 0 || xb_msgr_init(&r, buf, (size_t)n) < 0 || r.type != XB_EV_KEPT ||
            xb_msgr_u64(&r, XB_K_COUNT, &count) < 0 || count > 3 || nfds != 1 + count) {
                for (size_t i = 0; i < nfds; i++)
                        close(fds[i]);
                rr = xb_err_msg(err, EPROTO, "its init refused us or did not answer (%zd)", n);
                goto fail;
        }
        {
                uint64_t m = 0;

                xb_msgr_u64(&r, XB_K_TARGET, &m);
                a->max_tag = m <= UINT32_MAX ? (uint32_t)m : 0;
        }
        sb->slot_fd = fds[0];
        for (size_t i = 0; i < count; i++)
                net[i] = fds[1 + i];
        *nnet = count;
        if ((rr = check_pid(e, a->pid, a->slot, err)) < 0)
                goto fail_net;
        sb->pidfd = (int)syscall(SYS_pidfd_open, a->pid, 0);
        if (sb->pidfd < 0) {
                rr = xb_err_set(err, errno, "pidfd_open %d", (int)a->pid);
                goto fail_net;
        }
        if ((rr = xb_uidpool_adopt(&e->uids, a->slot, sb->slot_fd)) < 0) {
                xb_err_set(err, -rr, "uid slot %u", a->slot);
                goto fail_net;
        }
        sb->has_layer = e->store && xb_store_has(e->store, "sbx", a->id);
        *ret = TAKE_PTR(sb);
        return 0;
fail_net:
        for (size_t i = 0; i < *nnet; i++)
                close(net[i]);
        *nnet = 0;
fail:
        xb_cgroup_close(sb->cg);
        if (sb->pidfd >= 0)
                close(sb->pidfd);
        if (sb->slot_fd >= 0)
                close(sb->slot_fd);
        close(sb->sock);
        return rr < 0 ? rr : -EPROTO;
}
