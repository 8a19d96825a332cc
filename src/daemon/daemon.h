/* The daemon: the one place that knows every part. It reads the
 * options, loads the tenants' tokens, opens the engine (core) on its loop,
 * wires the adapters (REST and the seeds' plugin routes, MCP) to it, starts
 * the HTTP front, handles signals, and shuts everything down in order. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/loop.h"
#include "core/core.h"
#include "rest/rest.h"
#include "transport/http.h"

struct xb_server_opts {
        const char *listen;           /* default 127.0.0.1:8000 */
        const char *state_dir;
        const char *token_file;
        bool no_auth;
        bool require_guide;           /* Pandora: exec needs guideFollowed */
        bool conformance_fixtures;    /* MCP conformance suite tools */
        size_t body_max, upload_max;
        unsigned max_sandboxes;
        unsigned pool_size;
        struct xb_limits defaults;    /* sandbox limits when a request sets none */
        struct xb_limits ceiling;     /* --max-*: the most a request may set; 0 the host's */
        struct xb_quota quota_default;   /* --tenant-quota: tokens without their own */
        const char *const *allow_mounts;
        size_t nallow;
        enum xb_cgroup_mode cgroup_mode;
        bool quiet;
        bool pool_python;             /* pooled sandboxes start a warm Python session */
        const char *const *mcp_hosts; /* --mcp-allowed-host: /mcp's Host and Origin besides loopback */
        size_t nmcp_hosts;
        uint64_t mcp_pause_ms;        /* --mcp-pause-after: freeze an idle MCP sandbox; 0 never */
        const char *const *allow_origins;   /* --allow-origin: CORS for browsers on these */
        size_t nallow_origins;
        const char *public_url;       /* --public-url: absolute, signed image links */
        bool access_log;              /* one line per HTTP request on stderr */
        uint64_t audit_keep_ms;       /* a deleted sandbox's audit log stays readable this long */
        unsigned audit_max;           /* events kept per sandbox (and at most XB_AUDIT_BYTES) */
};

struct xb_server {
        struct xb_server_opts o;
        struct xb_core *core;
        struct xb_loop *loop;
        struct xb_http *http;
        struct xb_rest rest;          /* the REST and plugin routes' context */
        struct xb_mcp *mcp;           /* the MCP core (mcp.h), for /mcp and stdio */
        char **tokens;
        size_t ntokens;
        bool *token_admin;            /* per token (daemon/tokens.h) */
        char **token_name;            /* per token, or NULL */
        struct xb_quota *token_quota; /* per token: its own fields over --tenant-quota */
        int sigfd;
        struct xb_io sig_io;
        bool stopping;
        bool token_generated;         /* the token was made and saved at this start */
};

/* Everything but the banner: the loop, tokens, the engine, signals, MCP
 * and (when o->listen is set) the HTTP front. -errno after logging why. */
int xb_server_open(const struct xb_server_opts *o, struct xb_server **ret);
/* Run the loop until a signal or a front stops it. */
int xb_server_run(struct xb_server *s);
/* Stop the fronts, kill every sandbox, wait for them (at most 5 s) and
 * free everything. */
void xb_server_close(struct xb_server *s);
/* execbox serve: open with the HTTP front, print the banner, run, close. */
int xb_server_main(const struct xb_server_opts *o);
/* Every route of every adapter, in match order, copied into out (at most
 * cap); returns how many. The OpenAPI document and its test use it. */
size_t xb_server_routes(struct xb_route *out, size_t cap);
