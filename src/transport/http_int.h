/* Internals shared by the HTTP front's files: http.c (libmicrohttpd glue,
 * connections, the request life cycle), listen.c (sockets), route.c (the
 * router and what it checks), reply.c (immediate and fd replies), sse.c
 * (streamed replies) and form.c (multipart bodies parsed as they come).
 * Not for users of the front: they use transport/http.h. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/loop.h"
#include "transport/http.h"
#include "transport/mhd.h"

#define MAX_PARAMS 4
#define MAX_REPLY_HEADERS 12
#define COUNT_SLOTS 12                /* statuses counted per route */

struct http_count {
        unsigned status;
        uint64_t n;
};
/* A body sent with a request refused at its headers is read and dropped up
 * to this much, so the client reads the error instead of a reset. */
#define DRAIN_MAX ((16u << 20) + (256u << 10))

struct xb_http {
        struct xb_loop *loop;
        struct MHD_Daemon *mhd;
        struct xb_io mhd_io;
        struct xb_timer mhd_timer;
        struct xb_req *suspended;     /* connections MHD holds suspended (it must not stop with any) */
        struct xb_proxy *tunnels;     /* upgraded connections (proxy.c), closed before MHD stops */
        bool need_run;
        const struct xb_route *routes;
        size_t nroutes;
        struct xb_http_opts o;
        int listen_fd;
        struct xb_io listen_io;       /* conn.c accepts, MHD serves */
        struct xb_timer accept_timer; /* the back-off after EMFILE */
        int reserve_fd;               /* given up to answer 503 when out of fds */
        bool fd_warned;
        uint64_t shed;                /* connections answered 503 for want of fds */
        char url[300];
        char unix_path[108];
        bool loopback;                /* the bound address is loopback (or a unix socket) */
        struct http_count (*counts)[COUNT_SLOTS];   /* per route, then one for unmatched requests */
        uint64_t auth_missing, auth_invalid;
        uint32_t boot_tag;            /* request ids: this start's tag, then a count */
        uint64_t nrequests;
        unsigned inflight;            /* requests begun and not yet completed (the drain waits for them) */
};

struct xb_req {
        struct xb_http *http;
        struct xb_defer free_defer, continue_defer;
        struct MHD_Connection *conn;
        const struct xb_route *route;
        char *path;
        char method[16];
        char *params[MAX_PARAMS];
        char *scratch;                /* the matched {} segments live here */
        struct xb_buf body;
        enum xb_req_phase phase;
        int tenant;
        bool suspended, replied, dispatched, complete;
        bool listener;                /* xb_req_set_listener: not counted in flight */
        bool too_large;               /* the body passed body_max: 413 at the end */
        bool may_hold;                /* a body follows, no Expect: 100-continue, within DRAIN_MAX */
        struct MHD_Response *held;    /* an early reply, queued once the body is drained */
        unsigned held_status;
        enum { HOLD_WAIT = 1, HOLD_DRAIN, HOLD_NOW } hold;   /* does the body come? */
        bool hold_replay;             /* the resumed first call is still to come */
        struct xb_timer hold_timer;
        uint64_t drained;
        struct xb_req *susp_next, **susp_pprev;   /* in http->suspended while MHD holds it suspended */
        void *data;
        /* deferred replies */
        xb_gone_cb on_gone;
        void *owner;
        struct xb_io watch;           /* the client's socket while suspended */
        /* XB_ROUTE_SINK */
        int sink_fd;
        struct xb_io sink_io;         /* a full sink (a pipe): wait until it takes more */
        bool sink_buffered;           /* xb_req_buffer_body: this one's body is buffered after all */
        bool begin_replay;            /* MHD repeats the first call after a resume */
        uint64_t sink_bytes;
        int sink_err;
        int (*sink_gate)(void *arg, size_t n);
        void *sink_gate_arg;
        struct xb_form *form;         /* xb_req_form: a multipart body parsed as it comes (form.c) */
        /* reply headers */
        char *hdr_name[MAX_REPLY_HEADERS], *hdr_value[MAX_REPLY_HEADERS];
        int nhdr;
        struct xb_stream *stream;
        char *raw_uri;                /* the request target as sent (path and query, undecoded) */
        bool host_routed;             /* a host route put a prefix before both */
        struct xb_proxy *proxy;       /* XB_ROUTE_PROXY: the upstream it is forwarded to (proxy.c) */
        /* the access log */
        char id[20];
        uint64_t start_us, bytes;     /* bytes: the reply's body, as queued or streamed */
        unsigned status;              /* 0 until replied */
};

/* A large event's JSON, generated as it is sent (sse.c), then the bytes
 * written after it. */
struct xb_stream_part {
        struct xb_stream_part *next;
        struct xb_jgen *gen;          /* NULL once written */
        size_t left;                  /* an estimate of its bytes still to come */
        struct xb_buf after;
};

struct xb_stream {
        struct xb_req *req;
        struct xb_buf pending;
        size_t off;                   /* sent part of pending */
        struct xb_stream_part *parts, *last;   /* queued after pending, in order */
        size_t queued;                /* bytes in the parts' after buffers */
        size_t deferred;              /* the parts' estimated JSON bytes still to come */
        bool ended, waiting, failed;
        size_t drain_low;             /* xb_stream_on_drain */
        void (*drain_fn)(void *arg);
        void *drain_arg;
};

/* http.c */
/* MHD has work: run it before the loop sleeps. */
void http_mark_run(struct xb_http *h);
/* Suspend and resume a real connection, keeping the list xb_http_stop needs. */
void http_conn_suspend(struct xb_req *r);
void http_conn_resume(struct xb_req *r);
/* Watch the client's socket for hang-up (on_gone), once. */
void http_watch_start(struct xb_req *r);
void http_watch_stop(struct xb_req *r);
/* Free a request and what it owns; a stream still sending is detached. */
void http_req_free(struct xb_req *r);

/* form.c */
/* Body bytes for r's form: *upload_size is left at what waits (the
 * request suspended until the consumer wakes it). */
void http_form_body(struct xb_req *r, const char *upload, size_t *upload_size);
/* At the body's end: true when nothing is held; else suspended until then. */
bool http_form_idle(struct xb_req *r);
void http_form_free(struct xb_req *r);

/* listen.c */
/* Bind and listen on spec ("HOST:PORT" or "unix:PATH"); fills h's url,
 * unix_path and loopback. The fd, or -errno with err filled. */
int http_listen_on(struct xb_http *h, const char *spec, struct xb_err *err);

/* conn.c */
/* Watch the listen socket on the loop and hand connections to MHD. */
int http_accept_start(struct xb_http *h);
void http_accept_stop(struct xb_http *h);

/* route.c */
/* Set r->route and r->params to the first route for method and r's path. */
void http_route_find(struct xb_req *r, const char *method);
/* Route a connection's request once its headers are in, and check it: the
 * path, the method, Origin and Host, the token, the declared length.
 * false when it has been answered with an error. */
bool http_route_admit(struct xb_req *r, const char *method);
/* MHD's MHD_OPTION_UNESCAPE_CALLBACK. */
size_t http_unescape(void *cls, struct MHD_Connection *conn, char *s);

/* guard.c */
/* Origin (403) and Host (421), for what a web page can make a browser
 * send; false when r has been answered. r->route may be NULL. */
bool http_guard_origin(struct xb_req *r);
bool http_guard_host(struct xb_req *r, const char *method);
/* A state-changing request's Content-Type (415); false when answered. */
bool http_guard_content_type(struct xb_req *r, const char *method);
/* The body's cap: upload_max or large_upload_max for a sink, else body_max. */
uint64_t http_body_max(const struct xb_req *r);
/* Its Content-Length within http_body_max, or a 413 and false. */
bool http_length_ok(struct xb_req *r);

/* proxy.c */
/* A proxied request's body bytes (*size: left unconsumed when the
 * upstream is behind; the connection is then parked), or its end (*size
 * 0). */
void http_proxy_body(struct xb_req *r, const char *data, size_t *size);
/* The request is freed: let go of it. */
void http_proxy_req_gone(struct xb_req *r);
/* Close every tunnel, while libmicrohttpd can still take the sockets back. */
void http_proxy_close_tunnels(struct xb_http *h);

/* route.c: host routing */
/* Offer r to the host routes (xb_http_opts.host_routes): the first that
 * claims it has its prefix put before r's path and raw target. */
void http_host_route(struct xb_req *r);

/* stats.c */
/* Count r's reply (its route's template and status). */
void http_count_reply(struct xb_req *r, unsigned status);
/* access.c */
/* Give r its id and start time. */
void http_access_begin(struct xb_req *r);
/* r is complete: its access log line, when the log is on. */
void http_access_end(struct xb_req *r, int toe);

/* reply.c */
/* Send resp (consumed) as r's one reply, with r's extra headers. */
void http_queue(struct xb_req *r, unsigned status, struct MHD_Response *resp);
/* json_stream.c: a response for body (taken): a buffer when it is small,
 * else generated as it is sent; *ret_size its size (an estimate when
 * streamed). NULL when out of memory. */
struct MHD_Response *http_json_response(json_t *body, size_t *ret_size);
/* Queue the early reply held while the body drained. */
void http_queue_held(struct xb_req *r);
/* An early reply was held: drain the body if it is coming, else (nothing
 * within a moment: a client that waits, or sent headers only) reply now. */
void http_hold(struct xb_req *r);

