/* The client side of a running `execbox serve`, shared by the client
 * commands (cmd_client.c, cmd_shell.c): where the server is (--server,
 * else EXECBOX_URL, else http://127.0.0.1:8000; unix:/PATH for a socket),
 * its token (--token-file, else EXECBOX_TOKEN), and REST requests over
 * libcurl. libcurl is loaded with dlopen(3) on first use, as
 * mcp_bridge.c does, so that no other command needs it. */
#pragma once
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define XB_CLIENT_URL_DEFAULT "http://127.0.0.1:8000"

#define XB_CURL_API(X)                                                                          \
        X(global_init) X(easy_init) X(easy_setopt) X(easy_cleanup) X(easy_getinfo) X(easy_perform) \
        X(easy_strerror) X(easy_escape) X(free) X(slist_append) X(slist_free_all) X(multi_init) \
        X(multi_cleanup) X(multi_add_handle) X(multi_remove_handle) X(multi_perform)            \
        X(multi_poll) X(multi_info_read)

/* libcurl's functions, once xb_client_open has loaded it. */
extern struct xb_curl_api {
#define XB_CURL_API_FIELD(name) __typeof__(&curl_##name) name;
        XB_CURL_API(XB_CURL_API_FIELD)
#undef XB_CURL_API_FIELD
} xb_cu;

/* The options every client command takes, for its getopt_long table. */
enum { XB_CLIENT_OPT_SERVER = 1000, XB_CLIENT_OPT_TOKEN_FILE };
#define XB_CLIENT_LONGOPTS                                                      \
        { "server", required_argument, NULL, XB_CLIENT_OPT_SERVER },            \
        { "token-file", required_argument, NULL, XB_CLIENT_OPT_TOKEN_FILE },    \
        { "help", no_argument, NULL, 'h' }
#define XB_CLIENT_USAGE                                                                 \
        "  --server URL       the server (default EXECBOX_URL, else " XB_CLIENT_URL_DEFAULT ")\n" \
        "  --token-file FILE  its bearer token (default EXECBOX_TOKEN)\n"

struct xb_client {
        char base[2048];        /* scheme://host:port, no trailing slash */
        char unix_path[1024];   /* for unix:/PATH */
        char auth[1100];        /* "Authorization: Bearer ..." or "" */
        const char *server, *token_file;
};

/* A reply: the HTTP status, and the body parsed when it was JSON. */
struct xb_reply {
        long status;
        json_t *json;
};

/* Take XB_CLIENT_OPT_SERVER and XB_CLIENT_OPT_TOKEN_FILE into c. */
void xb_client_option(struct xb_client *c, int opt, const char *arg);
/* Load libcurl, find the server and read the token. -1 after printing why. */
int xb_client_open(struct xb_client *c);

/* A handle for METHOD base+path with the token set; NULL on ENOMEM.
 * hdrs (freed by the caller) gets the headers. */
CURL *xb_client_easy(struct xb_client *c, const char *method, const char *path, struct curl_slist **hdrs);
/* path with s appended, %-escaped for a query value; NULL on ENOMEM. */
char *xb_client_path(const char *path, const char *s);

/* One JSON request (body may be NULL). Returns 0 when the server
 * answered (any status), -1 after printing that it could not be reached. */
int xb_client_json(struct xb_client *c, const char *method, const char *path, json_t *body,
                   struct xb_reply *ret);
void xb_reply_free(struct xb_reply *r);
/* After curl_easy_perform: -1 after printing why when it failed. */
int xb_client_check(struct xb_client *c, CURLcode rc);

/* Print the server's error of a non-2xx reply as one line; returns 125. */
int xb_client_fail(const struct xb_reply *r);
/* Print "execbox: error: ..." and return 125. */
int xb_client_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* SSE: each complete event's name and data (parsed) is given to on_event;
 * the stream is fed by xb_sse_feed as bytes arrive. */
struct xb_sse {
        char *buf;
        size_t len, cap;
        void (*on_event)(void *ctx, const char *name, json_t *data);
        void *ctx;
};
int xb_sse_feed(struct xb_sse *s, const char *p, size_t n);
void xb_sse_free(struct xb_sse *s);

/* A sandbox id as it may appear in a path: letters, digits, - and _. */
bool xb_client_id_ok(const char *id);
/* "/v1/sandboxes/ID" + tail (malloc'd), or NULL after printing why. */
char *xb_client_sandbox_path(const char *id, const char *tail);
/* getopt_long's '?' or ':' for command cmd, as one line; returns 125. */
int xb_client_bad_option(int opt, char **argv, const struct option *opts, const char *cmd);
