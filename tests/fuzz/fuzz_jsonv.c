/* libFuzzer target for request validation (ops/jsonv.h), which every
 * operation runs on its flat JSON arguments, from any client. The input is
 * a body: whatever xb_jsonv_parse accepts is an object, and every key of
 * it goes through every getter with the bounds the ops use. Each getter
 * either fails with a message or returns a value inside its bounds; an
 * accepted environment entry is exactly KEY=VALUE for a valid NAME.
 * Built by `make fuzz`; `make fuzz-replay` runs the saved corpus. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/jsonv.h"
#include "proc/env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int cond)
{
        if (!cond)
                abort();
}

/* A failed check leaves a message and a positive errno. */
static void
check_fail(int r, const struct xb_err *err)
{
        check(r < 0 && err->code > 0 && err->msg[0] && -r == err->code);
}

static void
one_key(json_t *obj, const char *key)
{
        struct xb_err err = { 0 };
        const char *s = NULL, **sv = NULL;
        char **env = NULL;
        uint64_t u = 7, ms = 7;
        size_t n = 0;
        bool b = false;
        int r;

        if ((r = xb_jsonv_str(obj, key, 64, &s, &err)) == 0)
                check(!s || (strlen(s) <= 64 && strlen(s) == json_string_length(json_object_get(obj, key))));
        else
                check_fail(r, &err);
        memset(&err, 0, sizeof(err));
        if ((r = xb_jsonv_bool(obj, key, &b, &err)) < 0)
                check_fail(r, &err);
        memset(&err, 0, sizeof(err));
        if ((r = xb_jsonv_uint(obj, key, 1, 1 << 20, &u, &err)) == 0)
                check(u == 7 || (u >= 1 && u <= 1 << 20));
        else
                check_fail(r, &err);
        memset(&err, 0, sizeof(err));
        if ((r = xb_jsonv_seconds(obj, key, 0.001, 86400, &ms, &err)) == 0)
                check(ms == 7 || ms <= 86400000);
        else
                check_fail(r, &err);
        memset(&err, 0, sizeof(err));
        if ((r = xb_jsonv_strv(obj, key, 16, 256, &sv, &n, &err)) == 0 && sv) {
                check(n <= 16 && !sv[n]);
                for (size_t i = 0; i < n; i++)
                        check(strlen(sv[i]) <= 256 && strlen(sv[i]) == json_string_length(json_array_get(json_object_get(obj, key), i)));
                free(sv);
        } else if (r)
                check_fail(r, &err);
        memset(&err, 0, sizeof(err));
        n = 0;
        if ((r = xb_jsonv_env(obj, key, &env, &n, &err)) == 0 && env) {
                json_t *o = json_object_get(obj, key);
                size_t i = 0;
                const char *k;
                json_t *v;

                check(n == json_object_size(o) && !env[n]);
                json_object_foreach(o, k, v) {
                        size_t kl = strlen(k);
                        struct xb_err e2 = { 0 };

                        /* The name is the key, all of it: no '=' may move the split. */
                        check(!strncmp(env[i], k, kl) && env[i][kl] == '=' && !strchr(k, '='));
                        check(!strcmp(env[i] + kl + 1, json_string_value(v)));
                        check(xb_env_check(env[i], &e2) == 0);
                        i++;
                }
                xb_strv_free(env);
        } else if (r)
                check_fail(r, &err);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const char *const allowed[] = { "cmd", "env", "cwd", "timeout", "background", NULL };
        struct xb_err err = { 0 };
        json_t *obj = NULL, *v;
        const char *key;
        int r;

        r = xb_jsonv_parse((const char *)data, size, &obj, &err);
        if (r < 0) {
                check_fail(r, &err);
                return 0;
        }
        check(json_is_object(obj));
        memset(&err, 0, sizeof(err));
        if ((r = xb_jsonv_fields(obj, allowed, &err)) == 0) {
                json_object_foreach(obj, key, v) {
                        bool found = false;

                        for (const char *const *a = allowed; *a; a++)
                                found |= !strcmp(*a, key);
                        check(found);
                }
        } else
                check_fail(r, &err);
        json_object_foreach(obj, key, v)
                one_key(obj, key);
        one_key(obj, "absent");
        json_decref(obj);
        return 0;
}
