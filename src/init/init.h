/* The sandbox init: pid 1 of every sandbox, a small static program the
 * setup child execs once the sandbox is confined (seccomp and Landlock
 * apply to init as to every command).
 *
 * Theory of operation. fd 3 is a SOCK_SEQPACKET socket to the daemon; it is
 * the only fd init inherits besides /dev/null on 0-2. Init announces itself
 * with XB_EV_READY, then serves requests one at a time: SPAWN forks a
 * command (its std fds arrive with the request, as write ends of pipes the
 * daemon owns, so nothing here can block the daemon), SIGNAL signals a
 * command or its process group, FILE does a file operation as the sandbox
 * user (init_files.c). SIGCHLD comes through a signalfd; init reaps
 * every zombie in the namespace and reports the exit of the commands it
 * spawned (through their keepers, init_spawn.c). WATCH adds an inotify
 * watch whose fd joins the poll set (init_watch.c). A one-shot run's command may already be running when init
 * starts: the setup child forked it (argv "--first=PID:TAG:LAST") and init
 * adopts it. When the socket closes, init exits and the kernel kills the rest
 * of the pid namespace, unless the daemon armed it to outlive the daemon
 * (init_keep.c): then it waits, for a grace period, for the next one. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/wire.h"

#define XB_INIT_SOCK 3
#define XB_INIT_MAX_CHILDREN 1024

struct xb_init_child {
        pid_t pid;            /* the command */
        pid_t keeper;         /* its keeper (init_spawn.c), or 0: init reaps the command itself */
        uint32_t tag;
        int last;             /* XB_SPAWN_LAST: init exits after reporting it */
};

/* Send one message to the daemon (blocking); errors end init. */
void xb_init_send(const struct xb_msgw *w, const int *fds, size_t nfds);
/* Reply XB_EV_ERROR for a request. */
void xb_init_error(uint32_t tag, int errnum, const char *stage);

/* init_spawn.c */
void xb_init_spawn(const struct xb_msgr *r, int *fds, size_t nfds);
void xb_init_signal(const struct xb_msgr *r);
void xb_init_reap(void);
/* Track a child init did not fork itself: a one-shot run's command, which
 * the setup child started before exec'ing init (argv --first). */
void xb_init_adopt(pid_t pid, uint32_t tag, bool last);

/* init_watch.c: directory watches. */
struct pollfd;
void xb_init_watch(const struct xb_msgr *r);
void xb_init_unwatch(const struct xb_msgr *r);
/* Fill pfd with the watches' inotify fds (idx: which watch each is). */
size_t xb_init_watch_fds(struct pollfd *pfd, size_t max, int *idx);
/* Read and forward watch idx's events. */
void xb_init_watch_read(int idx);

/* The highest tag init still uses (children, watches): a new daemon's
 * tags start above it. */
uint32_t xb_init_max_tag(void);
uint32_t xb_init_watch_max_tag(void);
/* Whether tag is a live watch; free every watch kept() says no to. */
bool xb_init_watch_live(uint32_t tag);
void xb_init_watch_keep_only(bool (*kept)(uint32_t tag));
/* init_keep.c: outliving the daemon (KEEP, HOLD, UNHOLD; HELLO on the
 * listening socket). */
void xb_init_keep(const struct xb_msgr *r, int *fds, size_t nfds);
void xb_init_hold(const struct xb_msgr *r, int *fds, size_t nfds);
void xb_init_unhold(const struct xb_msgr *r);
/* Drop what is held with tag, if anything (a watch ended). */
void xb_init_unhold_tag(uint32_t tag);
/* fd 3 closed: true if armed (init waits alone), false to exit. */
bool xb_init_detach(void);
bool xb_init_alone(void);
/* While alone: the listening socket and how long to wait; -1 once the
 * grace period is over. */
int xb_init_wait_fd(int *timeout_ms);
/* A peer connects: on the secret, it becomes fd 3. */
void xb_init_accept(void);
/* While alone, an event to send later (true: taken or dropped). */
bool xb_init_queue(const void *buf, size_t len);

/* init_files.c: one XB_REQ_FILE, answered with XB_EV_FILE; closes fds. */
void xb_init_file(const struct xb_msgr *r, int *fds, size_t nfds);
