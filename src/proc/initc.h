/* The daemon's side of the init protocol: requests to init and validated
 * events from it. Everything from init is untrusted: lengths, numbers and
 * strings are checked before use, and unknown input is an error. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "proto/wire.h"
#include "sandbox/execspec.h"


enum xb_iev {
        XB_IEV_READY = 1,
        XB_IEV_SPAWNED,
        XB_IEV_EXITED,
        XB_IEV_ERROR,
        XB_IEV_FILE,
        XB_IEV_WATCH,             /* msg: the raw event, for core/watch.c to parse */
};

struct xb_init_event {
        enum xb_iev kind;
        uint32_t tag;
        pid_t pid;                /* SPAWNED, READY (init's own, inside) */
        int status;               /* EXITED: a wait status */
        uint64_t utime_us, stime_us, maxrss_kb;
        int errnum;               /* ERROR: 1..4095 */
        char stage[160];          /* ERROR: printable text */
        struct xb_msgr msg;       /* FILE: the raw reply, for fileops to parse */
};

/* A close-on-exec pipe whose ends may be passed into a sandbox. Its inode
 * is made 0666: a process there runs as a uid that does not own it, and
 * reopening it through /proc/self/fd (`echo hi > /dev/stdout`, Node's
 * stdio) checks the pipe's mode. It stays private: only processes holding
 * an end can name it. -errno on failure. */
int xb_sandbox_pipe(int fds[2]);

/* Send a spawn request; the std fds are passed, not closed. */
int xb_initc_spawn(int sock, uint32_t tag, const struct xb_exec_spec *q, struct xb_err *err);
/* Signal a spawned command; flags: XB_SIG_GROUP (its process group),
 * XB_SIG_OTHERS (the rest of its group, until none is left), XB_SIG_TREE
 * (it and every descendant, setsid'd or orphaned, even after it exited). */
int xb_initc_signal(int sock, uint32_t tag, int signo, unsigned flags);
/* Watch a directory (XB_REQ_WATCH) as uid:gid; stop it (XB_REQ_UNWATCH). */
int xb_initc_watch(int sock, uint32_t tag, const char *path, bool recursive, uint32_t uid, uint32_t gid);
int xb_initc_unwatch(int sock, uint32_t tag);
/* Receive and validate one event. -EAGAIN: nothing pending; -EPIPE: init is
 * gone; -EBADMSG: init sent garbage (the caller should kill the sandbox).
 * buf must hold XB_MSG_MAX bytes and outlive a FILE event's use. */
int xb_initc_recv(int sock, void *buf, struct xb_init_event *ev, int *fds, size_t *nfds);
