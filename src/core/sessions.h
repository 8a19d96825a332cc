/* Stateful code sessions: a driver program inside the sandbox (IPython,
 * any Jupyter kernel, bash on a pty, or Node) that keeps its state between
 * cells, and the images its cells produce.
 *
 * Theory of operation. A session is a process init spawns as the sandbox
 * user, with three pipes the server made: requests go down stdin as JSON
 * lines, events come back on stdout as JSON lines, stderr is kept as a
 * short diagnostic tail. The protocol is in src/drivers/README.md. Every
 * line from the driver is untrusted: bounded in size, parsed with jansson,
 * checked for type and id, and counted against the cell's output and image
 * caps. One cell runs at a time; a cell past its timeout is interrupted
 * (SIGINT, or Ctrl-C for bash), and if it does not stop the driver is
 * killed and the session reported dead. */
#pragma once
#include <jansson.h>
#include <stdbool.h>

#include "transport/http.h"

struct xb_sbx;
struct xb_session;

#define XB_SESSIONS_PER_SANDBOX 16
#define XB_IMAGES_PER_SANDBOX 64
#define XB_IMAGE_BYTES_PER_SANDBOX (64u << 20)
#define XB_IMAGE_MAX (16u << 20)
#define XB_CELL_OUTPUT_DEFAULT (1u << 20)

/* Start a session; NULL with err set (unknown language: EINVAL). */
struct xb_session *xb_session_start(struct xb_sbx *x, const char *language, bool preload, struct xb_err *err);
struct xb_session *xb_session_find(struct xb_sbx *x, const char *sid);
/* A pooled sandbox's pre-started session: hidden until claimed. */
void xb_session_mark_warm(struct xb_session *ss);
/* An idle pre-started session of this language nobody has claimed yet. */
struct xb_session *xb_session_claim_warm(struct xb_sbx *x, const char *language);
/* Whether x holds a warm session nobody claimed yet. */
bool xb_session_has_warm(const struct xb_sbx *x);
json_t *xb_session_json(const struct xb_session *ss);
/* Reply 201 with a new session; for a Jupyter kernel, once it has started
 * (an unknown kernel name: 400 unknown_language, and the session is gone). */
void xb_session_reply_started(struct xb_session *ss, struct xb_req *req);
json_t *xb_session_list_json(struct xb_sbx *x);
enum xb_cell_reply { XB_CELL_JSON, XB_CELL_SSE, XB_CELL_DANGERMODE };

/* Run a cell; replies on req in the given shape. */
void xb_session_run(struct xb_session *ss, struct xb_req *req, const char *code, uint64_t timeout_ms,
                    uint64_t yield_ms, uint64_t output_limit, enum xb_cell_reply shape);
/* Wait for the running cell: the outputs not yet returned. */
void xb_session_wait(struct xb_session *ss, struct xb_req *req, uint64_t timeout_ms);
void xb_session_interrupt(struct xb_session *ss);
int xb_session_input(struct xb_session *ss, const char *data, struct xb_err *err);
void xb_session_variable(struct xb_session *ss, struct xb_req *req, const char *name);
void xb_session_restart(struct xb_session *ss);
void xb_session_delete(struct xb_session *ss);
void xb_sessions_sandbox_died(struct xb_sbx *x);
/* Init events for session drivers (a spawn tag of theirs). */
bool xb_session_on_spawned(struct xb_sbx *x, uint32_t tag, pid_t pid);
bool xb_session_on_exited(struct xb_sbx *x, uint32_t tag, int status);
bool xb_session_on_error(struct xb_sbx *x, uint32_t tag, int errnum, const char *stage);

/* Images that cells displayed, served back by name. */
void xb_images_free(struct xb_sbx *x);
/* An image by name; NULL if it is not (or no longer) kept. */
const void *xb_image_find(struct xb_sbx *x, const char *name, size_t *len, const char **mime);
/* dangermode's shape, for the plugin API. */
json_t *xb_session_dangermode_json(json_t *run_result);
