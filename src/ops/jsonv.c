/* JSON request validation. */
#define _GNU_SOURCE
#include "jsonv.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/env.h"

static const char *
type_name(const json_t *v)
{
        switch (json_typeof(v)) {
        case JSON_OBJECT: return "an object";
        case JSON_ARRAY: return "an array";
        case JSON_STRING: return "a string";
        case JSON_INTEGER: return "an integer";
        case JSON_REAL: return "a number";
        case JSON_TRUE:
        case JSON_FALSE: return "a boolean";
        case JSON_NULL: return "null";
        }
        return "something else";
}

int
xb_jsonv_parse(const char *body, size_t len, json_t **ret, struct xb_err *err)
{
        json_error_t je;
        json_t *v;

        if (len == 0) {
                *ret = json_object();
                return 0;
        }
        v = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
        if (!v)
                return xb_err_msg(err, EINVAL, "the body is not valid JSON: %s (line %d, column %d)", je.text,
                                  je.line, je.column);
        if (!json_is_object(v)) {
                int r = xb_err_msg(err, EINVAL, "the body must be a JSON object, not %s", type_name(v));

                json_decref(v);
                return r;
        }
        *ret = v;
        return 0;
}

int
xb_jsonv_fields(json_t *obj, const char *const *allowed, struct xb_err *err)
{
        const char *key;
        json_t *v;

        json_object_foreach(obj, key, v) {
                bool ok = false;
                char list[512] = "";
                size_t used = 0;

                for (const char *const *a = allowed; *a && !ok; a++)
                        ok = strcmp(*a, key) == 0;
                if (ok)
                        continue;
                for (const char *const *a = allowed; *a && used < sizeof(list) - 40; a++)
                        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", used ? ", " : "", *a);
                return xb_err_msg(err, EINVAL, "unknown field `%.64s`; the fields are: %s", key, list);
        }
        return 0;
}

static json_t *
get(json_t *obj, const char *key)
{
        json_t *v = json_object_get(obj, key);

        return json_is_null(v) ? NULL : v;
}

int
xb_jsonv_str(json_t *obj, const char *key, size_t maxlen, const char **ret, struct xb_err *err)
{
        json_t *v = get(obj, key);
        size_t len;

        if (!v)
                return 0;
        if (!json_is_string(v))
                return xb_err_msg(err, EINVAL, "`%s` must be a string, not %s", key, type_name(v));
        len = json_string_length(v);
        if (len > maxlen)
                return xb_err_msg(err, EINVAL, "`%s` is %zu bytes; the limit is %zu", key, len, maxlen);
        if (memchr(json_string_value(v), '\0', len))
                return xb_err_msg(err, EINVAL, "`%s` contains a NUL byte", key);
        *ret = json_string_value(v);
        return 0;
}

int
xb_jsonv_bool(json_t *obj, const char *key, bool *ret, struct xb_err *err)
{
        json_t *v = get(obj, key);

        if (!v)
                return 0;
        if (!json_is_boolean(v))
                return xb_err_msg(err, EINVAL, "`%s` must be true or false, not %s", key, type_name(v));
        *ret = json_is_true(v);
        return 0;
}

int
xb_jsonv_seconds(json_t *obj, const char *key, double min, double max, uint64_t *ret_ms, struct xb_err *err)
{
        json_t *v = get(obj, key);
        double d;

        if (!v)
                return 0;
        if (!json_is_number(v))
                return xb_err_msg(err, EINVAL, "`%s` must be a number of seconds, not %s", key, type_name(v));
        d = json_number_value(v);
        if (!isfinite(d) || d < min || d > max)
                return xb_err_msg(err, ERANGE, "`%s` must be between %g and %g seconds", key, min, max);
        *ret_ms = (uint64_t)(d * 1000.0 + 0.5);
        return 0;
}

int
xb_jsonv_uint(json_t *obj, const char *key, uint64_t min, uint64_t max, uint64_t *ret, struct xb_err *err)
{
        json_t *v = get(obj, key);
        json_int_t i;

        if (!v)
                return 0;
        if (!json_is_integer(v))
                return xb_err_msg(err, EINVAL, "`%s` must be a whole number, not %s", key, type_name(v));
        i = json_integer_value(v);
        if (i < 0 || (uint64_t)i < min || (uint64_t)i > max)
                return xb_err_msg(err, ERANGE, "`%s` must be between %llu and %llu", key, (unsigned long long)min,
                                  (unsigned long long)max);
        *ret = (uint64_t)i;
        return 0;
}

int
xb_jsonv_strv(json_t *obj, const char *key, size_t maxn, size_t maxlen, const char ***ret, size_t *ret_n,
              struct xb_err *err)
{
        json_t *v = get(obj, key), *e;
        const char **out;
        size_t i;

        if (!v)
                return 0;
        if (!json_is_array(v))
                return xb_err_msg(err, EINVAL, "`%s` must be an array of strings, not %s", key, type_name(v));
        if (json_array_size(v) > maxn)
                return xb_err_msg(err, E2BIG, "`%s` has %zu items; the limit is %zu", key, json_array_size(v), maxn);
        out = calloc(json_array_size(v) + 1, sizeof(*out));
        if (!out)
                return xb_err_set(err, ENOMEM, "%s", key);
        json_array_foreach(v, i, e) {
                if (!json_is_string(e) || json_string_length(e) > maxlen ||
                    memchr(json_string_value(e), '\0', json_string_length(e))) {
                        free(out);
                        return xb_err_msg(err, EINVAL, "`%s[%zu]` must be a string of at most %zu bytes without NUL",
                                          key, i, maxlen);
                }
                out[i] = json_string_value(e);
        }
        *ret = out;
        if (ret_n)
                *ret_n = json_array_size(v);
        return 0;
}

int
xb_jsonv_env(json_t *obj, const char *key, char ***ret, size_t *ret_n, struct xb_err *err)
{
        json_t *v = get(obj, key), *val;
        const char *k;
        char **out;
        size_t n = 0;

        if (!v)
                return 0;
        if (!json_is_object(v))
                return xb_err_msg(err, EINVAL, "`%s` must be an object of strings, e.g. {\"DEBUG\": \"1\"}", key);
        if (json_object_size(v) > XB_ENV_MAX_VARS)
                return xb_err_msg(err, E2BIG, "`%s` has more than %d variables", key, XB_ENV_MAX_VARS);
        out = calloc(json_object_size(v) + 1, sizeof(*out));
        if (!out)
                return xb_err_set(err, ENOMEM, "%s", key);
        json_object_foreach(v, k, val) {
                int r;

                if (!json_is_string(val) || memchr(json_string_value(val), '\0', json_string_length(val))) {
                        xb_strv_free(out);
                        return xb_err_msg(err, EINVAL, "`%s.%.64s` must be a string without NUL", key, k);
                }
                /* "A=B": "C" would set A to "B=C": the key is the whole name. */
                if (strchr(k, '=')) {
                        xb_strv_free(out);
                        return xb_err_msg(err, EINVAL, "environment name `%.64s` may hold only letters, digits and _",
                                          k);
                }
                if (asprintf(&out[n], "%s=%s", k, json_string_value(val)) < 0) {
                        out[n] = NULL;
                        xb_strv_free(out);
                        return xb_err_set(err, ENOMEM, "%s", key);
                }
                r = xb_env_check(out[n++], err);
                if (r < 0) {
                        xb_strv_free(out);
                        return r;
                }
        }
        *ret = out;
        if (ret_n)
                *ret_n = n;
        return 0;
}
