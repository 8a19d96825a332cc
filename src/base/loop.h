/* The daemon's one event loop: epoll for fds, a min-heap of timers, and
 * deferred calls that run after the current batch of events (the only
 * place objects are freed, so a callback never frees something a later
 * event of the same batch still points to). A deferral lives in the object
 * it frees, so deferring needs no memory and cannot fail. Single-threaded. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xb_loop;
struct xb_io;
struct xb_timer;

typedef void (*xb_io_cb)(struct xb_io *io, uint32_t events);
typedef void (*xb_timer_cb)(struct xb_timer *t);
typedef void (*xb_defer_cb)(void *data);

struct xb_io {
        struct xb_loop *loop;
        int fd;
        uint32_t events;
        xb_io_cb cb;
        void *data;
        bool active;
};

struct xb_timer {
        struct xb_loop *loop;
        uint64_t due_ms;
        xb_timer_cb cb;
        void *data;
        size_t slot;          /* index in the heap while active */
        bool active;
};

/* A deferred call, embedded in the object it is about (zeroed = idle). */
struct xb_defer {
        struct xb_defer *next;
        xb_defer_cb fn;
        void *data;
        bool pending;
};

struct xb_loop *xb_loop_new(void);
void xb_loop_free(struct xb_loop *l);
/* Run until xb_loop_stop; returns -errno on a failure of epoll itself. */
int xb_loop_run(struct xb_loop *l);
void xb_loop_stop(struct xb_loop *l);
uint64_t xb_now_ms(void);
/* The wall clock in ms since the epoch: for what outlives this process. */
uint64_t xb_unix_ms(void);

/* Watch fd for events (EPOLLIN, EPOLLOUT, ...); io is owned by the caller
 * and must stay valid until xb_io_stop. */
int xb_io_start(struct xb_loop *l, struct xb_io *io, int fd, uint32_t events, xb_io_cb cb, void *data);
int xb_io_modify(struct xb_io *io, uint32_t events);
void xb_io_stop(struct xb_io *io);

/* One-shot timer; restarting an active timer moves it. */
void xb_timer_start(struct xb_loop *l, struct xb_timer *t, uint64_t after_ms, xb_timer_cb cb, void *data);
void xb_timer_stop(struct xb_timer *t);

/* Call fn(data) once after the current batch of events, in the order
 * deferred. d is the caller's and must stay valid until fn is called (fn
 * may free it); deferring a pending d again does nothing. Cannot fail. */
void xb_loop_defer(struct xb_loop *l, struct xb_defer *d, xb_defer_cb fn, void *data);

/* A hook run before every sleep; it may lower the sleep (ms, -1 = none). */
typedef int (*xb_prepare_cb)(void *data);
void xb_loop_set_prepare(struct xb_loop *l, xb_prepare_cb fn, void *data);
