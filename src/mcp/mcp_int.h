/* Internals shared by the MCP core's files: mcp.c (JSON-RPC, lifecycle,
 * contexts, calls, prompts, completion), mcp_op.c (the operations calls
 * run), hints.c (error texts and hints), mcp_tools.c (tools over
 * operations), mcp_files.c (read_file, edit_file), mcp_resources.c,
 * mcp_plugin.c (the plug-in registry), and for the plug-ins, such as
 * the conformance fixtures of the test build (tests/fixtures/mcp_fixtures.c).
 * Not for the fronts: they use mcp.h. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ops/catalog.h"
#include "ops/tool_result.h"
#include "mcp/mcp.h"

#define MCP_CLIENTS_MAX 1000          /* legacy contexts at once (sessions, stdio) */
#define MCP_CODE_SESSIONS_MAX 32      /* run_code interpreters remembered per context */
#define MCP_EDITS_MAX XB_TOOL_EDITS_MAX          /* undo_edit history per context */
#define MCP_EDIT_BYTES_MAX XB_TOOL_EDIT_BYTES_MAX
#define MCP_SANDBOX_TTL_S 1800        /* the default sandbox's idle time to live */

enum mcp_log_level { LOG_DEBUG, LOG_INFO, LOG_NOTICE, LOG_WARNING, LOG_ERROR, LOG_CRITICAL, LOG_ALERT,
                     LOG_EMERGENCY, LOG_NONE };

struct code_session {
        struct code_session *next;
        char *sandbox, *language, *sid;
};

struct xb_mcp_client {
        struct xb_mcp *m;
        struct xb_mcp_client *next;
        char id[33];
        int tenant;
        bool modern;                  /* a tenant's stateless context */
        char version[16];             /* legacy: agreed at initialize, "" before */
        json_t *caps;                 /* legacy: the client's capabilities */
        enum mcp_log_level log_level; /* legacy: logging/setLevel; LOG_NONE before */
        char *sandbox;                /* the default sandbox, once made */
        bool creating;                /* its sandbox_create is in flight */
        struct mcp_op *op;            /* that operation */
        struct xb_mcp_call *waiters;  /* calls waiting for it */
        struct xb_mcp_call *calls;    /* in flight */
        struct code_session *code;
        unsigned ncode;
        struct xb_edit_hist edits;    /* edit_file's undo history */
        json_t *subs;                 /* legacy resources/subscribe: URIs */
        struct mcp_watch *watches;    /* their directory watches (mcp_watch.c) */
        uint64_t idle_ms, last_ms;
        struct xb_timer idle;
        struct xb_timer pause;        /* o.pause_ms after the last request */
        const struct xb_mcp_client_ops *ops;
        void *ctx;
        void *front;
};

#define MCP_PLUGINS_MAX 8

struct xb_mcp {
        struct xb_mcp_opts o;
        struct xb_mcp_client *clients;
        unsigned nclients;
        struct xb_mcp_client **tenants;
        void *plugin_state[MCP_PLUGINS_MAX];   /* by registration order (mcp_plugin_state) */
        bool closing;
};

struct mcp_op;
struct xb_call;
struct xb_mcp_call;
/* An operation's result (taken) or error; events are borrowed. */
typedef void (*mcp_done_fn)(struct xb_mcp_call *call, json_t *result);
typedef void (*mcp_fail_fn)(struct xb_mcp_call *call, const struct xb_err *err);
typedef void (*mcp_event_fn)(struct xb_mcp_call *call, const char *name, json_t *data);
typedef void (*mcp_cont)(struct xb_mcp_call *call);
typedef void (*mcp_client_done_fn)(struct xb_mcp_client *c, json_t *result);
typedef void (*mcp_client_fail_fn)(struct xb_mcp_client *c, const struct xb_err *err);

struct xb_mcp_call {
        struct xb_mcp *m;
        struct xb_defer defer;        /* call_free */
        struct xb_mcp_client *c;
        struct xb_mcp_call *next;     /* in c->calls */
        struct xb_mcp_call *wait_next;
        mcp_cont wait_cont;           /* run once the default sandbox exists (or failed) */
        json_t *id;
        char method[48];
        json_t *params;               /* always an object */
        bool modern;
        const char *version;          /* the protocol version this call speaks */
        json_t *progress_token;
        enum mcp_log_level log_level;
        json_t *client_caps;
        const struct xb_mcp_out_ops *out;
        void *out_ctx;
        bool in_dispatch, answered, abandoned;
        struct mcp_op *op;            /* the operation in flight */
        struct xb_timer timer;
        /* tool state */
        const struct xb_tool *tool;
        json_t *args;
        char *sandbox;                /* the sandbox the tool acts on */
        bool on_default, retried;
        char *sid;                    /* run_code: the interpreter */
        json_t *acc;                  /* edit state, a resource's path, ... */
        struct xb_tool_edit edit;     /* edit_file's work between read and write */
        uint64_t start_ms, last_progress_ms, bytes;
        unsigned step;
        double progress;
};

/* Append the items of b (stolen) to array a. */
static inline void
mcp_extend(json_t *a, json_t *b)
{
        json_array_extend(a, b);
        json_decref(b);
}

/* ---- mcp.c: answering ---- */
json_t *mcp_server_info(void);
enum mcp_log_level mcp_log_level_parse(const char *s);
/* Steals result; adds resultType and serverInfo for modern calls. */
void mcp_result(struct xb_mcp_call *call, json_t *result);
void mcp_fail(struct xb_mcp_call *call, int code, const char *msg, json_t *data, unsigned http_status);
/* A notification about the call (steals params); dropped once answered. */
void mcp_notify(struct xb_mcp_call *call, const char *method, json_t *params);
/* notifications/message if the call's level lets it through. */
void mcp_log(struct xb_mcp_call *call, enum mcp_log_level level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* notifications/progress if the request asked for it; total < 0: unknown. */
void mcp_progress(struct xb_mcp_call *call, double progress, double total, const char *message);
const char *mcp_log_level_name(enum mcp_log_level l);
char *mcp_guide(struct xb_mcp *m);

/* ---- mcp_op.c: operations (ops/ops.h) ---- */
/* Run operation name for the call, as tenant c->tenant, with args
 * (borrowed). Then exactly one of done or fail, perhaps before this
 * returns, unless the call ends first: its operation is cancelled then (a
 * command is killed). fail NULL means mcp_tool_fail; a non-NULL event asks
 * for the operation's events (output as it comes). */
void mcp_op(struct xb_mcp_call *call, const char *name, json_t *args, mcp_done_fn done, mcp_fail_fn fail,
            mcp_event_fn event);
/* An operation for a context rather than a call (making its sandbox);
 * cancelled if the context ends first. */
void mcp_op_client(struct xb_mcp_client *c, const char *name, json_t *args, mcp_client_done_fn done,
                   mcp_client_fail_fn fail);
/* Fire and forget: deleting a sandbox, interrupting a cell. */
void mcp_op_detached(struct xb_mcp *m, int tenant, const char *name, json_t *args);
/* Its call or context is gone: cancel the operation and free op. */
void mcp_op_cancel(struct mcp_op *op);

/* Hints, result texts and the read_file view: ops/tool_result.h. */

/* ---- mcp_methods.c ---- */
#define MCP_ERA_LEGACY 1u
#define MCP_ERA_MODERN 2u

struct mcp_method {
        const char *name;
        unsigned eras;
        void (*fn)(struct xb_mcp_call *call);
};

const struct mcp_method *mcp_method_find(const char *name);

/* ---- mcp_tools.c ---- */
json_t *mcp_tools_list(struct xb_mcp *m);
void mcp_tools_call(struct xb_mcp_call *call);
/* The default sandbox for the call's client, made on first use; cont runs
 * with call->sandbox set, or after the call was answered with an error. */
void mcp_need_sandbox(struct xb_mcp_call *call, mcp_cont cont);
void mcp_forget_sandbox(struct xb_mcp_client *c, const char *id);
/* After sandbox_not_found on the default sandbox: make a fresh one and
 * run cont again (once per call). False if that does not apply. */
bool mcp_retry_expired(struct xb_mcp_call *call, const struct xb_err *err, mcp_cont cont);
/* Tool results: isError with the message and hint; or structured. */
void mcp_tool_error(struct xb_mcp_call *call, const char *text);
void mcp_tool_fail(struct xb_mcp_call *call, const struct xb_err *err);
void mcp_tool_done(struct xb_mcp_call *call, json_t *content, json_t *structured);
json_t *mcp_text_block(const char *text);

/* ---- mcp_files.c ---- */
#define MCP_FILE_MAX XB_TOOL_FILE_MAX  /* bytes read from a file */
void mcp_read_file(struct xb_mcp_call *call);
void mcp_edit_file(struct xb_mcp_call *call);
/* Read up to MCP_FILE_MAX + 1 bytes of path in call->sandbox (read_file). */
void mcp_fetch(struct xb_mcp_call *call, const char *path, mcp_done_fn done, mcp_fail_fn fail);

/* ---- mcp_resources.c ---- */
void mcp_resources_list(struct xb_mcp_call *call);
void mcp_resources_read(struct xb_mcp_call *call, const char *uri);
json_t *mcp_resource_templates(struct xb_mcp *m);
/* A tool changed a file: notifications/resources/updated to a legacy
 * context subscribed to it. */
void mcp_resource_changed(struct xb_mcp_call *call, const char *path);
/* resources/subscribe (sub) or unsubscribe of uri: its watch (mcp_watch.c). */
void mcp_resource_subscribe(struct xb_mcp_call *call, const char *uri, bool sub);

/* ---- mcp_watch.c: subscriptions see every change ---- */
struct mcp_watch;
/* Start (sub) or stop the watch of a subscribed file:/// URI naming path. */
void mcp_watch_subscribe(struct xb_mcp_call *call, const char *uri, const char *path, bool sub);
/* Whether a watch reports uri's changes (so a tool's change is not told twice). */
bool mcp_watch_active(struct xb_mcp_client *c, const char *uri);
void mcp_watch_free_all(struct xb_mcp_client *c);

/* ---- mcp_plugin.c: plug-ins ---- */

/* A plug-in of the MCP core: more tools, resources and prompts, and state
 * of its own per context or per core, so that the core names none of
 * them. Each registers once per process before the first core is made
 * (MCP_PLUGIN does it from a constructor). Every member may be NULL. An
 * opt_in plug-in serves only cores whose xb_mcp_opts.plugins name it; the
 * destructors run on every core and context all the same. */
struct mcp_plugin {
        const char *name;
        bool opt_in;
        /* A new array, listed before the catalog's tools: the conformance
         * suite calls the first tool it finds. */
        json_t *(*tools)(bool modern);
        /* True if name is the plug-in's: then the call is answered, or will be. */
        bool (*call)(struct xb_mcp_call *call, const char *name, json_t *args);
        json_t *(*resources)(void);
        json_t *(*templates)(void);
        bool (*read)(struct xb_mcp_call *call, const char *uri);          /* as call */
        json_t *(*prompts)(bool modern);
        bool (*prompt)(struct xb_mcp_call *call, const char *name, json_t *args);
        void (*client_free)(struct xb_mcp_client *c);
        /* state is what mcp_plugin_state held for the core (maybe NULL). */
        void (*core_free)(struct xb_mcp *m, void *state);
};

/* Aborts past MCP_PLUGINS_MAX: that is a build error, found at start. */
void mcp_plugin_register(const struct mcp_plugin *p);
#define MCP_PLUGIN(p)                                                                                               \
        __attribute__((constructor)) static void mcp_plugin_register_##p(void)                                     \
        {                                                                                                           \
                mcp_plugin_register(&p);                                                                           \
        }
/* Where a registered plug-in keeps its state for core m; core_free gets it. */
void **mcp_plugin_state(struct xb_mcp *m, const struct mcp_plugin *p);
/* The served plug-ins' items, each a new array (maybe empty). */
json_t *mcp_plugin_tools(struct xb_mcp *m, bool modern);
json_t *mcp_plugin_resources(struct xb_mcp *m);
json_t *mcp_plugin_templates(struct xb_mcp *m);
json_t *mcp_plugin_prompts(struct xb_mcp *m, bool modern);
/* True if a served plug-in took the request: it is answered, or will be. */
bool mcp_plugin_call(struct xb_mcp_call *call, const char *name, json_t *args);
bool mcp_plugin_read(struct xb_mcp_call *call, const char *uri);
bool mcp_plugin_prompt(struct xb_mcp_call *call, const char *name, json_t *args);
/* Every plug-in's destructors, for a context or a core going away. */
void mcp_plugins_client_free(struct xb_mcp_client *c);
void mcp_plugins_core_free(struct xb_mcp *m);
/* -ENOENT, with a message, if o->plugins names one not in this binary. */
int mcp_plugins_check(const struct xb_mcp_opts *o, struct xb_err *err);

/* Check a tool's arguments against its input schema (ops/tool_schema.c). */
static inline int
mcp_args_check(json_t *schema, json_t *args, struct xb_err *err)
{
        return xb_tool_args_check(schema, args, err);
}
