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
 * killed and the session reported dead.
 *
 * Answers go to a call (core/call.h). A cell's result is neutral data: an
 * output that displayed an image names it ("image": NAME, served by
 * xb_image_find); adapters turn that into their own links and add their
 * own advice. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/err.h"
#include "core/call.h"

struct xb_sbx;
struct xb_session;

#define XB_SESSIONS_PER_SANDBOX 16
#define XB_IMAGES_PER_SANDBOX 64
#define XB_IMAGE_BYTES_PER_SANDBOX (64u << 20)
#define XB_IMAGE_MAX (16u << 20)
#define XB_CELL_OUTPUT_DEFAULT (1u << 20)

/* Start a session; NULL with err set (err->ecode: a bad language name is
 * XB_E_INVALID_LANGUAGE, too many sessions XB_E_TOO_MANY_SESSIONS). */
struct xb_session *xb_session_start(struct xb_sbx *x, const char *language, bool preload, struct xb_err *err);
/* A session by id; NULL if there is none (warm unclaimed ones are hidden). */
struct xb_session *xb_session_find(struct xb_sbx *x, const char *sid);
const char *xb_session_id(const struct xb_session *ss);
/* A pooled sandbox's pre-started session: hidden until claimed. */
void xb_session_mark_warm(struct xb_session *ss);
/* An idle pre-started session of this language nobody has claimed yet. */
struct xb_session *xb_session_claim_warm(struct xb_sbx *x, const char *language);
/* Whether x holds a warm session nobody claimed yet. */
bool xb_session_has_warm(const struct xb_sbx *x);
/* Whether a session of x runs a cell (it keeps x active). */
bool xb_session_any_busy(const struct xb_sbx *x);
/* The oldest visible session of language that is not dead; or NULL. */
struct xb_session *xb_session_find_live(struct xb_sbx *x, const char *language);
/* {id, language, state, execution_count, pid}; a dead one adds error and stderr. */
json_t *xb_session_json(const struct xb_session *ss);
json_t *xb_session_list_json(struct xb_sbx *x);
/* Finish call with the session; for a Jupyter kernel, once it has started
 * (an unknown kernel name: XB_E_UNKNOWN_LANGUAGE, and the session is gone). */
void xb_session_when_started(struct xb_session *ss, struct xb_call *call);

/* Run a cell; call gets the cell's result ({status, execution_count,
 * duration_ms, outputs, session_id, ...}). With events, each output is an
 * event as it comes and the result leaves outputs out. The status is ok,
 * error, interrupted, timeout (past timeout_ms: interrupted, the state is
 * kept), dead, or running (yield_ms without output: wait for the rest). A
 * client that leaves does not stop the cell. */
/* env ({name: value}, or NULL) is set for this cell only. */
void xb_session_run(struct xb_session *ss, struct xb_call *call, const char *code, json_t *env, uint64_t timeout_ms,
                    uint64_t yield_ms, uint64_t output_limit);
/* Wait for the running cell: the outputs not yet returned. */
void xb_session_wait(struct xb_session *ss, struct xb_call *call, uint64_t timeout_ms);
void xb_session_interrupt(struct xb_session *ss);
/* Type data to the running bash command; err->ecode XB_E_NO_INPUT when not. */
int xb_session_input(struct xb_session *ss, const char *data, struct xb_err *err);
/* Read a variable: {name, type, repr, json}. name is a checked identifier. */
void xb_session_variable(struct xb_session *ss, struct xb_call *call, const char *name);
void xb_session_restart(struct xb_session *ss);
/* Also what the sandbox's death does to each of its sessions. */
void xb_session_delete(struct xb_session *ss);

/* An image a cell displayed, by name; NULL if it is not (or no longer)
 * kept. Images are kept until the sandbox ends. */
const void *xb_image_find(struct xb_sbx *x, const char *name, size_t *len, const char **mime);
/* The sessions an armed sandbox's record lists ([{id, language}]). */
json_t *xb_session_record_json(const struct xb_sbx *x);
