/* Validating JSON request bodies: unknown fields, wrong types and values
 * out of range each get a precise message. Every check writes the message
 * into err and returns -EINVAL; handlers turn that into a 400 with a hint. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"

static inline void xb_json_decrefp(json_t **j) { json_decref(*j); }

/* Parse body as a JSON object (an empty body is {}). */
int xb_jsonv_parse(const char *body, size_t len, json_t **ret, struct xb_err *err);
/* Every key of obj must be in allowed (NULL-terminated). */
int xb_jsonv_fields(json_t *obj, const char *const *allowed, struct xb_err *err);
/* Optional typed getters: absent or null leaves *ret untouched and returns 0. */
int xb_jsonv_str(json_t *obj, const char *key, size_t maxlen, const char **ret, struct xb_err *err);
int xb_jsonv_bool(json_t *obj, const char *key, bool *ret, struct xb_err *err);
/* A number of seconds (integer or fraction) in [min, max], as milliseconds. */
int xb_jsonv_seconds(json_t *obj, const char *key, double min, double max, uint64_t *ret_ms, struct xb_err *err);
int xb_jsonv_uint(json_t *obj, const char *key, uint64_t min, uint64_t max, uint64_t *ret, struct xb_err *err);
/* An array of strings (at most maxn, each at most maxlen, no NUL): a
 * malloc'd NULL-terminated vector of pointers into obj (free only the vector). */
int xb_jsonv_strv(json_t *obj, const char *key, size_t maxn, size_t maxlen, const char ***ret, size_t *ret_n,
                  struct xb_err *err);
/* An object of string values {"K": "V"} as "K=V" strings (malloc'd, free with xb_strv_free). */
int xb_jsonv_env(json_t *obj, const char *key, char ***ret, size_t *ret_n, struct xb_err *err);
