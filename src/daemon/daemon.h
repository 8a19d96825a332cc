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

struct xb_notify;

struct xb_server_opts {
        const char *listen;           /* default 127.0.0.1:8000 */
        const char *state_dir;
        const char *token_file;
        bool no_auth;
        bool require_guide;           /* Pandora: exec needs guideFollowed */
        bool conformance_fixtures;    /* MCP conformance suite tools */
        size_t body_max, upload_max;
        uint64_t template_upload_max;  /* an image archive POSTed to /v1/templates */
        uint64_t output_budget;       /* --output-budget: command output the daemon keeps, in all; 0 default */
        unsigned max_sandboxes;
        unsigned pool_size;
        struct xb_limits defaults;    /* sandbox limits when a request sets none */
        struct xb_limits ceiling;     /* --max-*: the most a request may set; 0 the host's */
        struct xb_quota quota_default;   /* --tenant-quota: tokens without their own */
        const char *const *allow_mounts;
        size_t nallow;
        enum xb_cgroup_mode cgroup_mode;
        const char *cgroup_prefix;    /* --cgroup-prefix: group names; NULL "execbox" */
        bool quiet;
        bool pool_python;             /* pooled sandboxes start a warm Python session */
        const char *const *mcp_hosts; /* --mcp-allowed-host: /mcp's Host and Origin besides loopback */
        size_t nmcp_hosts;
        const char *const *allow_hosts;   /* --allow-host: Host names besides loopback, every route */
        size_t nallow_hosts;
        uint64_t mcp_pause_ms;        /* --mcp-pause-after: freeze an idle MCP sandbox; 0 never */
        const char *const *allow_origins;   /* --allow-origin: CORS for browsers on these */
        size_t nallow_origins;
        const char *public_url;       /* --public-url: absolute, signed image links */
        const char *sandbox_domain;   /* --sandbox-domain: ports at {port}-{id}.DOMAIN */
        bool access_log;              /* one line per HTTP request on stderr */
        uint64_t audit_keep_ms;       /* a deleted sandbox's audit log stays readable this long */
        unsigned audit_max;           /* events kept per sandbox (and at most XB_AUDIT_BYTES) */
        enum xb_netmode network_max;  /* --network-max: the most a sandbox may ask for */
        const char *const *network_deny;   /* --network-deny: refused whatever a policy says */
        size_t nnetwork_deny;
        const char *const *package_sources;   /* --package-source; none: the host's apt and npm */
        size_t npackage_sources;
        const char *dns_server;       /* --dns-server: the resolver egress asks (default: the host's) */
        unsigned network_conns;       /* --network-connections per sandbox */
        uint64_t network_rate;        /* --network-rate: bytes per second per sandbox; 0 unbounded */
        uint64_t package_cache_size;  /* --package-cache-size: the shared package cache; 0 none */
        uint64_t install_cache_size;  /* --install-cache-size: the shared install cache; 0 none */
        const char *upstream_ca;      /* --upstream-ca: trusted beside the system's for intercepted TLS */
        uint64_t approval_timeout_ms; /* --approval-timeout: a pending approval is denied after this */
        int layers;                   /* XB_LAYERS_*: --layers disk, memory or none */
        uint64_t store_size;          /* --store-size: the layer store's image */
        bool mount_owner_set;         /* --mount-owner UID:GID */
        uint32_t mount_uid, mount_gid;
        uint64_t paused_ttl_ms;       /* --paused-ttl: default and most of a sandbox's paused_ttl_s */
        uint64_t max_lifetime_ms;     /* --max-lifetime: default and most of its max_lifetime_s */
        uint64_t drain_timeout_ms;    /* --drain-timeout: SIGTERM waits this long for requests in flight */
        bool stop_sandboxes;          /* --stop-sandboxes: delete every sandbox at exit */
        uint64_t adopt_grace_ms;      /* --adopt-grace: a sandbox waits this long for the next daemon; 0: not */
};

/* SIGTERM waits this long for the requests in flight, streams included. */
#define XB_DRAIN_TIMEOUT_DEFAULT_MS 30000
#define XB_ADOPT_GRACE_DEFAULT_MS (10 * 60 * 1000)

struct xb_server {
        struct xb_server_opts o;
        struct xb_core *core;
        struct xb_loop *loop;
        struct xb_http *http;
        struct xb_rest rest;          /* the REST and plugin routes' context */
        struct xb_host_route host_routes[4];   /* Host-based routing (transport/http.h) */
        size_t nhost_routes;
        struct xb_mcp *mcp;           /* the MCP core (mcp.h), for /mcp and stdio */
        struct xb_e2b *e2b;           /* the E2B adapter (e2b.h): its routes' data */
        char **tokens;
        size_t ntokens;
        bool *token_admin;            /* per token (daemon/tokens.h) */
        char **token_name;            /* per token, or NULL */
        struct xb_quota *token_quota; /* per token: its own fields over --tenant-quota */
        int sigfd;
        struct xb_io sig_io;
        bool stopping;
        bool draining;                /* a first SIGTERM: requests in flight finish, creates get 503 */
        uint64_t drain_deadline_ms;
        struct xb_timer drain_timer;
        struct xb_notify *notify;     /* the service manager, while xb_server_main runs */
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
