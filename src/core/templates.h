/* Templates, snapshots and forks.
 *
 * A template is an ordered stack of read-only layers of the store (top
 * first) plus metadata (env, the default user); "base" is the built-in
 * one, no layers over the host-derived base. A snapshot freezes the
 * sandbox for the instant of a btrfs read-only snapshot of its writable
 * layer, and makes that layer the top of a new template over the
 * sandbox's own layers. A fork freezes the parent for the instant of N
 * writable snapshots, which become the children's writable layers over
 * the parent's lowers. Both are O(1) in the data written. Processes are
 * not carried over: a child starts with a fresh init.
 *
 * Templates persist as state_dir/templates/<name>.json; a layer no
 * template lists is deleted (at start-up and when a template goes). A
 * template in use by a sandbox (made from it, or forked from one that
 * was) cannot be deleted.
 *
 * Layer names: a snapshot's layer gets a random id. Layers imported or
 * built from content (later: OCI, mmdebstrap) are to be named by their
 * digest, so equal content is one layer. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

#define XB_TEMPLATE_NAME_MAX 64

struct xb_core;
struct xb_sbx;

struct xb_template {
        struct xb_template *next;
        char name[XB_TEMPLATE_NAME_MAX + 1];
        char **layers;                /* NULL-terminated, top first */
        size_t nlayers;
        char **env;                   /* "K=V", NULL-terminated or NULL */
        uint32_t uid;                 /* default user of its sandboxes */
        char *workdir;                /* commands' default cwd, or NULL: /home/user */
        char *start_cmd;              /* run at create (background), or NULL */
        uint16_t ready_port;          /* create waits till it listens on this port (0: no) */
        char *ready_file;             /* or till this file exists (NULL: no) */
        unsigned ready_timeout_s;
        bool rootfs;                  /* its layers are a whole root: no host lowers (mmdebstrap, OCI) */     /* how long create waits (0: the default) */
        char parent[32];              /* the sandbox it was taken from */
        uint64_t created_unix_ms;
        int tenant;
        unsigned refs;                /* sandboxes holding it */
};

/* xb_templates_open (core.h) loads the persisted templates and deletes
 * unreferenced layers and the writable layers a crash left; a no-op
 * without a disk store. */
/* A valid template name: [a-zA-Z0-9._-], 1..64, not starting with '.'. */
int xb_template_name_check(const char *name, struct xb_err *err);
struct xb_template *xb_template_find(struct xb_core *s, const char *name, int tenant);
json_t *xb_template_json(const struct xb_template *t);
/* Every template of tenant, "base" first. */
json_t *xb_templates_json(struct xb_core *s, int tenant);
/* Snapshot x as template name. */
int xb_template_snapshot(struct xb_sbx *x, const char *name, struct xb_template **ret, struct xb_err *err);
/* A new template name of tenant over layers (top first), saved. */
int xb_template_create(struct xb_core *s, const char *name, int tenant, char *const *layers, bool rootfs,
                       struct xb_template **ret, struct xb_err *err);
/* Persist t after its metadata changed (a build sets it). */
int xb_template_save(struct xb_core *s, const struct xb_template *t);
/* Delete t: refused (XB_E_TEMPLATE_IN_USE) while a sandbox holds it. */
int xb_template_delete(struct xb_core *s, struct xb_template *t, struct xb_err *err);
/* Make x a sandbox of t (after its creation): a reference, its lowers. */
int xb_template_attach(struct xb_sbx *x, struct xb_template *t);
/* Drop x's reference (its end). */
void xb_template_release(struct xb_sbx *x);
/* What a fork changes; every field zero or NULL keeps the parent's. */
struct xb_fork_spec {
        unsigned n;                   /* how many */
        const struct xb_limits *limits; /* checked against the ceilings by the caller */
        char *const *env;             /* "K=V", on top of the parent's */
        uint64_t ttl_ms;              /* the idle lease */
        json_t *metadata;             /* replaces the parent's */
        struct xb_netpol *network;    /* checked by the caller; the fork takes a reference */
};
/* Fork parent f->n times (ret gets them, registered and leased like
 * created ones) with its limits, env, lease, metadata, user and network
 * policy unless f overrides them. On failure none is left. */
int xb_sbx_fork(struct xb_sbx *parent, const struct xb_fork_spec *f, struct xb_sbx **ret, struct xb_err *err);
