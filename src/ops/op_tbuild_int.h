/* What the template build (op_tbuild.c) shares with its Debian root step
 * (op_tdebian.c): the build in flight and the chain's entry points. */
#pragma once
#include <jansson.h>
#include <stdint.h>

#include "base/ecode.h"
#include "base/err.h"
#include "core/call.h"
#include "core/templates.h"
#include "core/core.h"

#define TAIL_MAX 2048

enum step_kind { STEP_APT, STEP_FILE, STEP_RUN, STEP_ROOTFS };
extern const char *const xb_tb_kind_names[];

struct step {
        enum step_kind kind;
        char *arg;      /* apt: the packages; file: the path; run: the command; rootfs: the suite */
        char *content;  /* file */
};

enum bstate { B_BUILDING, B_FAILED };

struct build {
        struct build *next;
        struct xb_core *core;
        int tenant;
        char name[XB_TEMPLATE_NAME_MAX + 1];
        enum bstate state;
        struct xb_call *client;       /* NULL once it left */
        json_t *spec;                 /* the request (a copy) */
        struct step *steps;
        size_t nsteps, cur;           /* cur: the running step (0-based) */
        char sbx[XB_SANDBOX_ID_LEN + 1];
        char from[XB_TEMPLATE_NAME_MAX + 1];   /* the template the build sandbox starts from */
        char tail[TAIL_MAX + 1];      /* the end of the current step's output */
        size_t ntail;
        uint64_t logged;              /* bytes of the rootfs step's output sent as events */
        json_t *error;                /* {code, message} once failed */
        uint64_t t0_ms;
};

/* The build failed: it says so to its client (if still there), keeps the
 * error for GET, and deletes its build sandbox. */
void xb_tb_fail(struct build *b, enum xb_ecode code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The next link: the build sandbox from b->from, then the steps. */
void xb_tb_create_sandbox(struct build *b);
/* n bytes of the current step's output (valid UTF-8): into the progress
 * tail, and a `log` event to a client that asked for events. */
void xb_tb_log(struct build *b, const char *stream, const char *d, size_t n);

/* op_tdebian.c. "from": "debian:SUITE": 0 when from is something else;
 * 1 with from_name (XB_TEMPLATE_NAME_MAX + 1 bytes) the clean root's
 * template, and *suite the suite to bootstrap (NULL: built already);
 * -EINVAL (err set: an invalid request) or -EEXIST (c failed). */
int xb_tb_debian_from(struct xb_core *s, int tenant, const char *from, char *from_name, const char **suite,
                      struct xb_call *c, struct xb_err *err);
/* The rootfs step: mmdebstrap (its output streamed as log events, bounded),
 * or the cached layer; then the build sandbox. */
void xb_tb_rootfs_step(struct build *b);
