/* Between the reverse proxy's files (see proxy.c for the theory of
 * operation): proxy.c (life, the upstream socket, the request),
 * proxy_reply.c (the reply: its head, its body, chunks decoded) and
 * tunnel.c (the byte tunnel after a 101). Not for other users of the
 * front: they use xb_proxy_start in transport/http.h. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "transport/chunked.h"
#include "transport/http_int.h"

#define BUF_CAP (64u << 10)         /* each way: 128 KiB a request at most */
#define HEAD_MAX (48u << 10)
#define UNPARK_ROOM (16u << 10)

enum framing { BODY_NONE, BODY_LENGTH, BODY_CHUNKED, BODY_EOF };

struct xb_proxy {
        struct xb_loop *loop;
        struct xb_http *http;
        struct xb_req *req;           /* NULL once it is freed */
        struct xb_defer defer;
        unsigned refs;                /* the request, the response, the tunnel */
        int fd;                       /* upstream; -1 once closed */
        struct xb_io io;
        bool connected, failed, refused;
        /* to the upstream */
        char *out;
        size_t out_off, out_len;
        bool chunked_up, body_done, parked_up;
        /* from the upstream */
        char *in;
        size_t in_off, in_len;
        bool up_eof;
        bool head_done, queued, parked_down, waiting_head;
        struct MHD_Response *resp;    /* built from the head, until queued */
        unsigned status;
        enum framing framing;
        struct xb_dechunk dechunk;    /* BODY_CHUNKED */
        uint64_t remaining;           /* BODY_LENGTH: bytes left */
        bool is_head, upgrade;
        char *set_cookie, *refused_msg, *refused_hint;
        /* the tunnel after a 101 */
        bool tunnel;
        struct xb_proxy *t_next, **t_pprev;   /* in http->tunnels while a tunnel */
        struct MHD_UpgradeResponseHandle *urh;
        int csock;
        struct xb_io cio;
        bool c_eof;
};

/* proxy.c */
void proxy_unref(struct xb_proxy *p);
void proxy_close_upstream(struct xb_proxy *p);
int proxy_client_fd(struct xb_req *r);
/* Wait for the upstream: the connection suspended, the client watched. */
void proxy_park(struct xb_proxy *p);
void proxy_unpark(struct xb_proxy *p);
/* The upstream failed: a 502 if nothing was sent yet, else an early end. */
void proxy_fail(struct xb_proxy *p, const char *msg);
/* The client left a parked request (an xb_gone_cb). */
void proxy_gone(struct xb_req *r, void *owner);
/* Free room at the end of a buffer, compacting it when that is short. */
size_t proxy_room(char *buf, size_t *off, size_t *len);
/* Watch fd for ev (none: stop). */
void proxy_io_want(struct xb_proxy *p, struct xb_io *io, int fd, uint32_t ev, xb_io_cb cb);
/* What the upstream socket waits for, from the buffers' state. */
void proxy_update_io(struct xb_proxy *p);
bool proxy_hop_by_hop(const char *name, bool upgrade);

/* proxy_reply.c */
/* Parse the reply's head in p->in: 1 parsed, 0 more needed, -1 failed. */
int proxy_parse_head(struct xb_proxy *p);
/* Queue the reply once its head and the whole request are in. */
void proxy_try_reply(struct xb_proxy *p);

/* tunnel.c */
/* The 101 went out: bytes both ways between the client's sock and the upstream. */
void proxy_tunnel_start(struct xb_proxy *p, const char *extra, size_t n, int sock,
                        struct MHD_UpgradeResponseHandle *urh);
