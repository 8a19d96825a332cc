/* Tool arguments against their input schema, before anything runs: the
 * JSON Schema keywords the catalog's strict subset uses (type, enum,
 * properties, required, additionalProperties: false, items, minItems,
 * maxItems, minimum, maximum, anyOf) plus minLength and maxLength. A
 * keyword it does not know is ignored, never an error. A required
 * argument whose schema allows null may be left out: it means null, as in
 * OpenAI's strict mode. Bounded: at most 32 levels deep. For every
 * adapter that runs tool calls (MCP, the REST bridge). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "ops/tool_result.h"

#define DEPTH_MAX 32

static bool
type_is(json_t *v, const char *t)
{
        if (!strcmp(t, "null"))
                return json_is_null(v);
        if (!strcmp(t, "boolean"))
                return json_is_boolean(v);
        if (!strcmp(t, "integer"))
                return json_is_integer(v) || (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v));
        if (!strcmp(t, "number"))
                return json_is_number(v);
        if (!strcmp(t, "string"))
                return json_is_string(v);
        if (!strcmp(t, "array"))
                return json_is_array(v);
        if (!strcmp(t, "object"))
                return json_is_object(v);
        return true;
}

static bool
allows_null(json_t *s)
{
        json_t *t = json_object_get(s, "type"), *x;
        size_t i;

        if (json_is_string(t))
                return !strcmp(json_string_value(t), "null");
        json_array_foreach(t, i, x)
                if (!strcmp(json_string_value(x) ?: "", "null"))
                        return true;
        json_array_foreach(json_object_get(s, "anyOf"), i, x)
                if (allows_null(x))
                        return true;
        return !t && !json_object_get(s, "anyOf");
}

static const char *
type_text(json_t *t, char *buf, size_t cap)
{
        json_t *x;
        size_t i, n = 0;

        if (json_is_string(t))
                return json_string_value(t);
        buf[0] = '\0';
        json_array_foreach(t, i, x)
                n += (size_t)snprintf(buf + XB_MIN(n, cap - 1), cap - XB_MIN(n, cap - 1), "%s%s", i ? " or " : "",
                                      json_string_value(x) ?: "?");
        return buf;
}

static int
check(json_t *s, json_t *v, const char *where, unsigned depth, struct xb_err *err)
{
        json_t *t = json_object_get(s, "type"), *x;
        size_t i;
        char types[96];

        if (depth > DEPTH_MAX)
                return xb_err_msg(err, EINVAL, "`%s` is nested too deeply", where);
        if (json_is_array(json_object_get(s, "anyOf"))) {
                struct xb_err best = { 0 };
                bool typed = false;

                /* Report the branch of v's own type: its message is the useful one. */
                json_array_foreach(json_object_get(s, "anyOf"), i, x) {
                        struct xb_err e = { 0 };
                        json_t *bt = json_object_get(x, "type");
                        bool mine = json_is_string(bt) && type_is(v, json_string_value(bt));

                        if (check(x, v, where, depth + 1, &e) == 0)
                                return 0;
                        if (!best.code || (mine && !typed)) {
                                best = e;
                                typed = mine;
                        }
                }
                if (best.code) {
                        *err = best;
                        return -EINVAL;
                }
        }
        if (t) {
                bool ok = json_is_string(t) && type_is(v, json_string_value(t));

                json_array_foreach(t, i, x)
                        ok |= type_is(v, json_string_value(x) ?: "");
                if (!ok)
                        return xb_err_msg(err, EINVAL, "`%s` must be %s", where, type_text(t, types, sizeof(types)));
        }
        if (json_is_array(json_object_get(s, "enum"))) {
                bool ok = false;
                char list[200] = "";
                size_t n = 0;

                json_array_foreach(json_object_get(s, "enum"), i, x) {
                        ok |= json_equal(x, v);
                        if (json_is_string(x) && n < sizeof(list) - 1)
                                n += (size_t)snprintf(list + n, sizeof(list) - n, "%s\"%s\"", n ? ", " : "",
                                                      json_string_value(x));
                }
                if (!ok)
                        return xb_err_msg(err, EINVAL, "`%s` must be one of %s", where, list);
        }
        if (json_is_number(v)) {
                json_t *mn = json_object_get(s, "minimum"), *mx = json_object_get(s, "maximum");

                if (json_is_number(mn) && json_number_value(v) < json_number_value(mn))
                        return xb_err_msg(err, EINVAL, "`%s` must be at least %g", where, json_number_value(mn));
                if (json_is_number(mx) && json_number_value(v) > json_number_value(mx))
                        return xb_err_msg(err, EINVAL, "`%s` must be at most %g", where, json_number_value(mx));
        }
        if (json_is_string(v)) {
                json_t *mn = json_object_get(s, "minLength"), *mx = json_object_get(s, "maxLength");

                if (json_is_integer(mn) && json_string_length(v) < (size_t)json_integer_value(mn))
                        return xb_err_msg(err, EINVAL, "`%s` is too short", where);
                if (json_is_integer(mx) && json_string_length(v) > (size_t)json_integer_value(mx))
                        return xb_err_msg(err, EINVAL, "`%s` is too long", where);
        }
        if (json_is_array(v)) {
                json_t *mn = json_object_get(s, "minItems"), *mx = json_object_get(s, "maxItems");
                json_t *items = json_object_get(s, "items");
                char sub[160];

                if (json_is_integer(mn) && json_array_size(v) < (size_t)json_integer_value(mn))
                        return xb_err_msg(err, EINVAL, "`%s` needs at least %lld items", where,
                                          (long long)json_integer_value(mn));
                if (json_is_integer(mx) && json_array_size(v) > (size_t)json_integer_value(mx))
                        return xb_err_msg(err, EINVAL, "`%s` takes at most %lld items", where,
                                          (long long)json_integer_value(mx));
                json_array_foreach(v, i, x) {
                        snprintf(sub, sizeof(sub), "%s[%zu]", where, i);
                        if (json_is_object(items) && check(items, x, sub, depth + 1, err) < 0)
                                return -EINVAL;
                }
        }
        if (json_is_object(v)) {
                json_t *props = json_object_get(s, "properties"), *ps;
                const char *k;
                char sub[160];

                json_object_foreach(v, k, x) {
                        snprintf(sub, sizeof(sub), "%s%s%.64s", where, *where ? "." : "", k);
                        ps = json_object_get(props, k);
                        if (!ps) {
                                if (json_is_false(json_object_get(s, "additionalProperties")))
                                        return xb_err_msg(err, EINVAL, "`%s` is not an argument it takes", sub);
                                continue;
                        }
                        if (check(ps, x, sub, depth + 1, err) < 0)
                                return -EINVAL;
                }
                json_array_foreach(json_object_get(s, "required"), i, x) {
                        k = json_string_value(x);
                        if (k && !json_object_get(v, k) && !allows_null(json_object_get(props, k))) {
                                snprintf(sub, sizeof(sub), "%s%s%.64s", where, *where ? "." : "", k);
                                return xb_err_msg(err, EINVAL, "`%s` is required", sub);
                        }
                }
        }
        return 0;
}

int
xb_tool_args_check(json_t *schema, json_t *args, struct xb_err *err)
{
        return check(schema, args ? args : json_null(), "", 0, err);
}
