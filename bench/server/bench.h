/* Shared by bench_server's files: bench/bench_server.c (what runs, in
 * order) and, here in bench/server/, client.c (the HTTP/1.1 client and
 * the REST calls every part makes), util.c (timing, tables, peers, the
 * server under test), mcp.c (an MCP session over Streamable HTTP) and one
 * file per group of parts: exec.c (1-3), memory.c (4), python.c (5-6),
 * ports.c (7), fair.c (8), layers.c (9), pause.c (10, BENCH_ONLY=a).
 * Every failure is fatal (die). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define ID_MAX 64

/* ---- util.c ---- */

/* Print, stop the running server (it removes its sandboxes), exit 1. */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
double now_ms(void);
void sleep_ms(double ms);
/* Percentile p (0..1) of v, from a sorted copy. */
double pct(const double *v, int n, double p);
/* An integer from the environment, at least min. */
int env_int(const char *name, int def, int min);
/* The table every part prints: a name, p50, p90, min. */
void table_head(void);
void row(const char *name, const double *v, int n);
/* Run argv to its end (stdout to /dev/null); its wall time in ms. */
double spawn_wait(char **argv);

struct server {
        pid_t pid;
        int port;
        char dir[64];
};

/* `execbox serve --no-auth` on a free loopback port with extra options,
 * in a temporary state directory; returns once /healthz answers. */
void server_start(struct server *s, const char *execbox, const char *const *extra);
/* SIGTERM, wait, remove the directory (kept, with a warning, on a bad exit). */
void server_stop(struct server *s);
long vm_rss_kb(pid_t pid);
/* VmRSS summed over the direct children of pid; how many there are. */
long children_rss_kb(pid_t pid, long *total_kb);

/* ---- client.c ---- */

struct conn {
        int fd;
        int port;
        char *buf;                 /* received, not yet consumed */
        size_t len, cap;
};

struct resp {
        int status;
        char *body;                /* NUL-terminated, owned by the caller's resp */
        size_t body_len;
        bool close;
        char *head;                /* the header block, only when asked for (request_h) */
};

/* A keep-alive connection to 127.0.0.1:port. */
void conn_init(struct conn *c, int port);
void conn_close(struct conn *c);
/* Send one request and read its response (reconnecting once if the server
 * closed an idle connection). */
void request(struct conn *c, const char *method, const char *path, const char *body, struct resp *r);
/* The same with extra header lines ("Name: value\r\n" each, or NULL); with
 * keep_head, r->head holds the response's headers (free it). */
void request_h(struct conn *c, const char *method, const char *path, const char *extra, const char *body,
               struct resp *r, bool keep_head);
/* A header of r->head, copied into out; false if absent or too long. */
bool resp_header(const struct resp *r, const char *name, char *out, size_t cap);
void expect_status(const struct resp *r, int want, const char *what);
/* A string or integer field of a flat JSON object the server produced. */
bool json_str(const char *body, const char *key, char *out, size_t cap);
long long json_int(const char *body, const char *key);

void create_sandbox(struct conn *c, char id[ID_MAX]);
/* The same with a request body, such as {"template": "x"}. */
void create_sandbox_body(struct conn *c, const char *body, char id[ID_MAX]);
void delete_sandbox(struct conn *c, const char *id);
/* POST .../exec body; its verdict must be ok with exit code 0 (what names
 * the command if not). */
void exec_ok(struct conn *c, const char *id, const char *body, const char *what);
/* POST .../exec {"argv":["/bin/true"]}. */
void exec_true(struct conn *c, const char *id);
/* GET path: its 200 body (free it). */
char *get_text(struct conn *c, const char *path);
/* A sample's value from Prometheus text. */
double metric(const char *text, const char *name);

/* ---- mcp.c ---- */

struct mcp {
        struct conn c;
        char sid[128];             /* Mcp-Session-Id */
        long next_id;
};

/* initialize and notifications/initialized: a 2025-11-25 session. */
void mcp_open(struct mcp *m, int port);
/* tools/call run_command {"cmd": cmd} in sandbox; it must exit 0. */
void mcp_run_command(struct mcp *m, const char *sandbox, const char *cmd);
/* DELETE /mcp, and the connection. */
void mcp_close(struct mcp *m);

/* ---- the parts ---- */

void bench_warm_exec(const char *execbox, int rounds);
void bench_create(const char *execbox, int rounds);
void bench_throughput(const char *execbox, double seconds);
void bench_memory(const char *execbox, int n);
void bench_python_cell(const char *execbox, int n);
void bench_python_first(const char *execbox, int rounds, int pause_ms);
void bench_ports(const char *execbox, int rounds);
void bench_fair_cpu(const char *execbox, int rounds);
void bench_layers(const char *execbox, int rounds);
void bench_pause(const char *execbox, int rounds);
