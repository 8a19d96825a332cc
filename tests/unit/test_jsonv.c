/* Request validation (ops/jsonv.h): the cases its fuzz target
 * (tests/fuzz/fuzz_jsonv.c) found or pins. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "ops/jsonv.h"
#include "proc/env.h"

static json_t *
parse(const char *text)
{
        struct xb_err err = { 0 };
        json_t *o = NULL;

        cr_assert_eq(xb_jsonv_parse(text, strlen(text), &o, &err), 0, "%s", err.msg);
        return o;
}

/* {"A=B": "C"} used to pass as A="B=C": the key is the whole name. */
Test(jsonv, env_key_with_equals_is_refused)
{
        json_t *o = parse("{\"env\":{\"A=B\":\"C\"}}");
        struct xb_err err = { 0 };
        char **env = NULL;

        cr_assert_eq(xb_jsonv_env(o, "env", &env, NULL, &err), -EINVAL);
        cr_assert_null(env);
        cr_assert(strstr(err.msg, "may hold only letters, digits and _"), "%s", err.msg);
        json_decref(o);
}

Test(jsonv, env_is_key_equals_value)
{
        json_t *o = parse("{\"env\":{\"DEBUG\":\"a=b\",\"_X\":\"\"}}");
        struct xb_err err = { 0 };
        char **env = NULL;
        size_t n = 0;

        cr_assert_eq(xb_jsonv_env(o, "env", &env, &n, &err), 0, "%s", err.msg);
        cr_assert_eq(n, 2);
        cr_assert_str_eq(env[0], "DEBUG=a=b");
        cr_assert_str_eq(env[1], "_X=");
        xb_strv_free(env);
        json_decref(o);
}
