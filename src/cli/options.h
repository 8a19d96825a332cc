/* The server options that `execbox serve` and `execbox mcp` share, parsed
 * by one table: each option names the commands that take it, and every
 * value is checked with a message that says what to write instead. The
 * usage texts stay with their commands. */
#pragma once
#include "daemon/daemon.h"

enum xb_server_cmd {
        XB_CMD_SERVE,
        XB_CMD_MCP,
};

struct xb_server_args {
        struct xb_server_opts o;      /* o.allow_mounts points into allow */
        const char *allow[64];
        const char *mcp_hosts[16];    /* o.mcp_hosts points here */
        const char *origins[32];      /* o.allow_origins points here */
        const char *hosts[16];        /* o.allow_hosts points here */
        const char *net_deny[64];     /* o.network_deny points here */
        const char *sources[32];      /* o.package_sources points here */
        const char *server, *token;   /* execbox mcp --server URL --token TOKEN */
};

#define XB_SERVER_ARGS_HELP 1

/* Fill a with cmd's defaults (and set the log level), then parse argv and
 * check the result. Returns 0 to go on, XB_SERVER_ARGS_HELP when --help was
 * given (the caller prints its usage), or -1 after printing the error on
 * stderr. a must not be copied: a->o points into it. */
int xb_server_args_parse(struct xb_server_args *a, enum xb_server_cmd cmd, int argc, char **argv);
