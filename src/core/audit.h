/* The audit log: per sandbox, an append-only record of what was done in
 * it (created, commands run, files written and deleted, sessions and
 * cells, limits hit, deleted), kept in memory in a bounded ring (oldest
 * dropped, and counted) and readable by offset or followed live. A
 * deleted sandbox's log stays readable by its tenant for keep_ms, then
 * goes. Events carry no secrets: callers log env names, never values, and
 * never stdin or file contents. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/loop.h"

#define XB_AUDIT_BYTES (1u << 20)   /* serialized events kept per sandbox */

struct xb_audits;                   /* every sandbox's log */
struct xb_audit;                    /* one sandbox's */

/* NULL when out of memory. */
struct xb_audits *xb_audits_new(struct xb_loop *l, uint64_t keep_ms, unsigned max_events, size_t max_bytes);
/* Free every log; followers are forgotten, not told. */
void xb_audits_free(struct xb_audits *a);

/* A new log for sandbox id of tenant; NULL when out of memory (nothing is
 * logged then: every function below takes a NULL log). */
struct xb_audit *xb_audit_open(struct xb_audits *a, const char *id, int tenant);
/* The sandbox is gone: no more events; followers end; the log is dropped
 * keep_ms from now. */
void xb_audit_close(struct xb_audit *log);
/* The tenant's log for sandbox id, open or closed and still kept; NULL if none. */
struct xb_audit *xb_audit_find(struct xb_audits *a, const char *id, int tenant);
/* Append {"offset", "time_ms", "type", ...fields}; takes fields (may be NULL). */
void xb_audit_add(struct xb_audit *log, const char *type, json_t *fields);

struct xb_audit_info {
        uint64_t first;                 /* the oldest offset still kept */
        uint64_t next;                  /* the offset the next event gets */
        uint64_t dropped;               /* events dropped to stay in bounds */
        bool closed;                    /* the sandbox was deleted */
};
void xb_audit_info(const struct xb_audit *log, struct xb_audit_info *ret);
/* The event at offset as one JSON text (borrowed until the next add), or
 * NULL when it was dropped or is not there yet. */
const char *xb_audit_get(const struct xb_audit *log, uint64_t offset, size_t *len);

/* A live reader. event hears each new event (line borrowed); end runs
 * once, when the log closes or goes, and f is unlinked before it. */
struct xb_audit_follower {
        void (*event)(struct xb_audit_follower *f, const char *line, size_t len);
        void (*end)(struct xb_audit_follower *f);
        struct xb_audit *log;
        struct xb_audit_follower *next, **pprev;
};
/* log must be open. */
void xb_audit_follow(struct xb_audit *log, struct xb_audit_follower *f);
/* Harmless after end. */
void xb_audit_unfollow(struct xb_audit_follower *f);

/* Helpers for events. */
/* The names of "K=V" strings, at most 256 of them: never the values. */
json_t *xb_audit_env_names(char *const *env);
/* At most max strings of v, each cut to 256 bytes and made valid UTF-8,
 * then "..." when some were left out. */
json_t *xb_audit_strv(char *const *v, size_t max);
/* s as valid UTF-8, cut to 1024 bytes. */
json_t *xb_audit_str(const char *s);
