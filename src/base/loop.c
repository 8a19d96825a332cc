/* epoll, a timer heap and deferred calls. */
#define _GNU_SOURCE
#include "loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

struct xb_loop {
        int ep;
        bool stop;
        struct xb_timer **heap;
        size_t nheap, capheap;
        struct xb_defer *defer_head, *defer_tail;
        xb_prepare_cb prepare;
        void *prepare_data;
};

uint64_t
xb_now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct xb_loop *
xb_loop_new(void)
{
        struct xb_loop *l = calloc(1, sizeof(*l));

        if (!l)
                return NULL;
        l->ep = epoll_create1(EPOLL_CLOEXEC);
        if (l->ep < 0) {
                free(l);
                return NULL;
        }
        return l;
}

void
xb_loop_free(struct xb_loop *l)
{
        if (!l)
                return;
        close(l->ep);
        free(l->heap);
        free(l);
}

void
xb_loop_stop(struct xb_loop *l)
{
        l->stop = true;
}

void
xb_loop_set_prepare(struct xb_loop *l, xb_prepare_cb fn, void *data)
{
        l->prepare = fn;
        l->prepare_data = data;
}

int
xb_io_start(struct xb_loop *l, struct xb_io *io, int fd, uint32_t events, xb_io_cb cb, void *data)
{
        struct epoll_event ev = { .events = events, .data.ptr = io };

        io->loop = l;
        io->fd = fd;
        io->events = events;
        io->cb = cb;
        io->data = data;
        if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
                return -errno;
        io->active = true;
        return 0;
}

int
xb_io_modify(struct xb_io *io, uint32_t events)
{
        struct epoll_event ev = { .events = events, .data.ptr = io };

        if (!io->active)
                return -EINVAL;
        if (io->events == events)
                return 0;
        if (epoll_ctl(io->loop->ep, EPOLL_CTL_MOD, io->fd, &ev) < 0)
                return -errno;
        io->events = events;
        return 0;
}

void
xb_io_stop(struct xb_io *io)
{
        if (!io->active)
                return;
        epoll_ctl(io->loop->ep, EPOLL_CTL_DEL, io->fd, NULL);
        io->active = false;
}

/* ---- timers: a binary min-heap on due_ms ---- */

static void
heap_swap(struct xb_loop *l, size_t a, size_t b)
{
        struct xb_timer *t = l->heap[a];

        l->heap[a] = l->heap[b];
        l->heap[b] = t;
        l->heap[a]->slot = a;
        l->heap[b]->slot = b;
}

static void
heap_up(struct xb_loop *l, size_t i)
{
        while (i > 0 && l->heap[(i - 1) / 2]->due_ms > l->heap[i]->due_ms) {
                heap_swap(l, i, (i - 1) / 2);
                i = (i - 1) / 2;
        }
}

static void
heap_down(struct xb_loop *l, size_t i)
{
        for (;;) {
                size_t m = i, a = 2 * i + 1, b = a + 1;

                if (a < l->nheap && l->heap[a]->due_ms < l->heap[m]->due_ms)
                        m = a;
                if (b < l->nheap && l->heap[b]->due_ms < l->heap[m]->due_ms)
                        m = b;
                if (m == i)
                        return;
                heap_swap(l, i, m);
                i = m;
        }
}

void
xb_timer_stop(struct xb_timer *t)
{
        struct xb_loop *l = t->loop;
        size_t i = t->slot;

        if (!t->active)
                return;
        t->active = false;
        l->nheap--;
        if (i != l->nheap) {
                l->heap[i] = l->heap[l->nheap];
                l->heap[i]->slot = i;
                heap_down(l, i);
                heap_up(l, i);
        }
}

void
xb_timer_start(struct xb_loop *l, struct xb_timer *t, uint64_t after_ms, xb_timer_cb cb, void *data)
{
        if (t->active)
                xb_timer_stop(t);
        if (l->nheap == l->capheap) {
                size_t cap = l->capheap ? l->capheap * 2 : 64;
                struct xb_timer **h = realloc(l->heap, cap * sizeof(*h));

                if (!h)
                        abort();   /* a lost timer would leak a sandbox; fail loudly */
                l->heap = h;
                l->capheap = cap;
        }
        t->loop = l;
        t->cb = cb;
        t->data = data;
        t->due_ms = xb_now_ms() + after_ms;
        t->slot = l->nheap;
        t->active = true;
        l->heap[l->nheap++] = t;
        heap_up(l, t->slot);
}

void
xb_loop_defer(struct xb_loop *l, struct xb_defer *d, xb_defer_cb fn, void *data)
{
        if (d->pending)
                return;
        d->fn = fn;
        d->data = data;
        d->next = NULL;
        d->pending = true;
        if (l->defer_tail)
                l->defer_tail->next = d;
        else
                l->defer_head = d;
        l->defer_tail = d;
}

static void
run_deferred(struct xb_loop *l)
{
        struct xb_defer *d;

        /* Deferred calls may defer more; run until none is left. d is
         * unlinked first and not touched after fn, which may free it. */
        while ((d = l->defer_head)) {
                l->defer_head = d->next;
                if (!l->defer_head)
                        l->defer_tail = NULL;
                d->pending = false;
                d->fn(d->data);
        }
}

static void
run_timers(struct xb_loop *l)
{
        uint64_t now = xb_now_ms();

        while (l->nheap && l->heap[0]->due_ms <= now) {
                struct xb_timer *t = l->heap[0];

                xb_timer_stop(t);
                t->cb(t);
        }
}

int
xb_loop_run(struct xb_loop *l)
{
        struct epoll_event evs[64];

        l->stop = false;
        while (!l->stop) {
                int timeout = -1, n;

                run_deferred(l);
                if (l->prepare)
                        timeout = l->prepare(l->prepare_data);
                run_deferred(l);
                if (l->stop)
                        break;
                if (l->nheap) {
                        uint64_t now = xb_now_ms(), due = l->heap[0]->due_ms;
                        int t = due <= now ? 0 : (due - now > 60000 ? 60000 : (int)(due - now));

                        if (timeout < 0 || t < timeout)
                                timeout = t;
                }
                n = epoll_wait(l->ep, evs, 64, timeout);
                if (n < 0 && errno != EINTR)
                        return -errno;
                for (int i = 0; i < n; i++) {
                        struct xb_io *io = evs[i].data.ptr;

                        /* Stopped earlier in this batch: its memory is still
                         * valid (frees are deferred) but it wants no events. */
                        if (io->active)
                                io->cb(io, evs[i].events);
                }
                run_timers(l);
        }
        run_deferred(l);
        return 0;
}

uint64_t
xb_unix_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
