/* Internals shared by the session files: sessions.c (lifecycle, variables,
 * init events), session_io.c (the driver's pipes and protocol), cells.c
 * (running, queueing, timing out and answering cells) and images.c. Not
 * for other modules: they use sessions.h. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/loop.h"
#include "core/call.h"

struct xb_sbx;
struct xb_pending_ops;

#define XB__LINE_MAX_BYTES (32u << 20)
#define XB__STDERR_TAIL 8192
/* A cell's rich outputs (display and result bundles of every MIME type,
 * images, errors) are bounded apart from its text: at most its
 * output_limit or this, whichever is more. And its events, of any kind. */
#define XB__CELL_RICH_DEFAULT (8u << 20)
#define XB__CELL_EVENTS_MAX 100000

enum xb__ss_state { SS_STARTING, SS_IDLE, SS_BUSY, SS_DEAD };

struct xb__cell {
        struct xb__cell *next;         /* queue */
        struct xb_session *ss;
        uint64_t id;
        char *code;
        json_t *env;                   /* {name: value} for this cell only, or NULL */
        struct xb_call *call;          /* who gets the next answer; NULL once answered or gone */
        bool stream;                   /* call takes outputs as events as they come */
        json_t *outputs;
        size_t returned;               /* outputs already sent by a soft-timeout reply */
        uint64_t start_ms, end_ms, timeout_ms, yield_ms, output_limit;
        uint64_t stream_bytes, dropped;
        uint64_t rich_bytes, rich_dropped;   /* display, result and error outputs (xb__cell_charge_rich) */
        unsigned events, events_dropped;     /* the driver's events for it (XB__CELL_EVENTS_MAX) */
        struct xb_buf merge;           /* the text of outputs[merge_at - 1], growing: O(bytes), not O(n^2) */
        size_t merge_at;
        bool merge_dirty;              /* merge has text that output's JSON lacks */
        unsigned images;
        bool timed_out, done;
        bool yielded;                  /* answered "running" once: keep the end for a wait */
        json_t *exit_code, *cwd;       /* bash sessions */
        char status[16];
        struct xb_timer hard, soft, grace, wait, escalate;
};

struct xb__var_req {
        struct xb__var_req *next;      /* call is NULL once its client left */
        struct xb_session *ss;
        uint64_t id;
        struct xb_call *call;
};

struct xb_session {
        struct xb_session *next;
        struct xb_defer defer;        /* session_free */
        struct xb_sbx *sbx;
        char id[17];
        char language[64];
        char mode[16];                 /* python, jupyter, bash, javascript */
        enum xb__ss_state state;
        bool warm, claimed, preload;
        uint32_t tag;                  /* the driver's pending tag (0 before the first spawn) */
        pid_t pid;
        int in_fd, out_fd, err_fd;
        struct xb_io in_io, out_io, err_io;
        struct xb_buf inbuf, line, errtail;
        bool skip_line;                /* the rest of a big line the cell has no room for is dropped as read */
        uint64_t skipped;              /* that line's bytes so far */
        uint64_t next_id;
        int exec_count;
        struct xb__cell *cell, *queue;
        struct xb__cell *finished;     /* ended after a "running" reply, unseen: for the next wait */
        unsigned nqueue;
        struct xb__var_req *vars;
        struct xb_call *start_call;    /* a create that waits for a kernel to start */
        struct xb_timer start_timer;
        char death[240];
        bool gone;                     /* being deleted (or its sandbox is): no restart can help */
        bool lost;                     /* dead since a server restart could not re-attach it (adopt.c) */
        uint64_t started_ms;
};

/* Charge n bytes of rich output to c: false (and counted as dropped) when
 * its rich-output budget would be passed. */
bool xb__cell_charge_rich(struct xb__cell *c, uint64_t n);
/* Whether c has no room left for the rich event that line starts (the
 * driver writes "type" first; a line that lies about it harms only its cell),
 * and count n bytes of an event dropped unread. */
bool xb__cell_full(const struct xb__cell *c, const char *line, size_t len);
void xb__cell_drop(struct xb__cell *c, uint64_t n);

/* ---- session_io.c ---- */
/* Watch the driver's pipes (ss's fds, made non-blocking). */
void xb__session_watch(struct xb_session *ss);

/* ---- session_adopt.c ---- */
#define XB__SESSION_LOST "lost in a restart of the server: its interpreter could not be re-attached (its " \
        "variables are gone); restart the session (POST .../restart) or start a new one"

/* ---- sessions.c ---- */
/* A driver's tag's callbacks (ctx: its session): init's events, and the
 * sandbox's death, which deletes the session. */
extern const struct xb_pending_ops xb__session_pending;
/* Mark ss dead for why: kill the driver, close its pipes, answer everyone waiting. */
void xb__session_died(struct xb_session *ss, const char *why);
/* The driver said "ready". */
void xb__session_ready(struct xb_session *ss);
/* The driver answered variable request id (ev is its event, borrowed). */
void xb__session_variable_event(struct xb_session *ss, uint64_t id, json_t *ev);

/* ---- session_io.c ---- */
/* Queue one request line to the driver (takes req); -errno when it cannot be queued. */
int xb__session_send(struct xb_session *ss, json_t *req);
/* Spawn the driver through init with fresh pipes; ss is STARTING after. */
int xb__session_spawn(struct xb_session *ss, struct xb_err *err);
/* Stop watching and close the driver's pipes. */
void xb__session_close_pipes(struct xb_session *ss);
/* python, bash, javascript, or jupyter for any other name. */
const char *xb__driver_mode(const char *language);
/* Whether v is a string of at most max bytes. */
bool xb__valid_text(json_t *v, size_t max);

/* ---- cells.c ---- */
void xb__cell_free(struct xb__cell *c);
/* Answer whoever waits on the cell with what it has not seen. */
void xb__cell_reply(struct xb__cell *c, const char *status);
/* The cell ended with status: answer, keep it for a wait if someone saw
 * "running", and start the next queued cell. */
void xb__cell_finish(struct xb__cell *c, const char *status);
/* Append one output (taken) to the cell, within its caps. */
void xb__cell_add_output(struct xb__cell *c, json_t *o);
/* Begin the next queued cell if the session is idle. */
void xb__cell_start_next(struct xb_session *ss);

/* ---- images.c ---- */
/* Decode and keep an image for sandbox x; returns its name (valid until
 * evicted) or NULL when it is not a valid image. Oldest go first. */
const char *xb__image_store(struct xb_sbx *x, const char *mime, const char *b64, const char *hint_name);
