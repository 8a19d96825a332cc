/* The environment of a sandboxed command: a fixed allowlist of defaults plus
 * what the request sets. Nothing of the caller's own environment is used.
 * Pure code. */
#pragma once
#include <stddef.h>

#include "base/err.h"

#define XB_ENV_MAX_VARS 1024
#define XB_ENV_MAX_BYTES (64 * 1024)

/* Check one "KEY=VALUE": a POSIX name, no NUL, bounded. */
int xb_env_check(const char *kv, struct xb_err *err);

/* A NULL-terminated malloc'd array: defaults for home and uid, then each of
 * set[0..n) ("K=V") replacing a default of the same name. Free with xb_strv_free. */
int xb_env_build(const char *home, unsigned uid, const char *const *set, size_t n,
                 char ***ret, struct xb_err *err);
void xb_strv_free(char **v);
