/* Unit tests for proc/env.h: the defaults, overrides replacing them by
 * name, name and size checks, and that nothing of the test process's own
 * environment reaches a sandbox. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "proc/env.h"

/* The value of name in v, or NULL; fails if the name appears twice. */
static const char *
get(char **v, const char *name)
{
        size_t n = strlen(name);
        const char *found = NULL;

        for (char **p = v; *p; p++)
                if (strncmp(*p, name, n) == 0 && (*p)[n] == '=') {
                        cr_assert_null(found, "%s set twice", name);
                        found = *p + n + 1;
                }
        return found;
}

static size_t
count(char **v)
{
        size_t n = 0;

        while (v[n])
                n++;
        return n;
}

static char **
build(const char *home, unsigned uid, const char *const *set, size_t n)
{
        struct xb_err err = { 0 };
        char **v = NULL;
        int r = xb_env_build(home, uid, set, n, &v, &err);

        cr_assert_eq(r, 0, "xb_env_build: %d %s", r, err.msg);
        cr_assert_not_null(v);
        return v;
}

Test(env, defaults_for_the_user)
{
        char **v = build("/home/user", 1000, NULL, 0);
        const char *path = get(v, "PATH");

        cr_assert_not_null(path);
        cr_assert(strstr(path, "/usr/bin"), "PATH=%s", path);
        cr_assert(strstr(path, "/bin"), "PATH=%s", path);
        cr_assert_null(strstr(path, "::"), "empty PATH entry means the cwd: %s", path);
        cr_assert_neq(path[0], ':');
        cr_assert_neq(path[strlen(path) - 1], ':');
        cr_assert_str_eq(get(v, "HOME"), "/home/user");
        cr_assert_not_null(get(v, "LANG"));
        cr_assert(strstr(get(v, "LANG"), "UTF-8"), "LANG=%s", get(v, "LANG"));
        cr_assert_str_eq(get(v, "USER"), "user");
        cr_assert_str_eq(get(v, "LOGNAME"), "user");
        cr_assert_str_eq(get(v, "TMPDIR"), "/tmp");
        cr_assert_not_null(get(v, "TERM"));
        cr_assert_not_null(get(v, "SHELL"));
        /* Every entry is a well-formed NAME=VALUE. */
        for (char **p = v; *p; p++)
                cr_assert_eq(xb_env_check(*p, NULL), 0, "default `%s` is malformed", *p);
        xb_strv_free(v);
}

Test(env, root_user)
{
        char **v = build("/root", 0, NULL, 0);

        cr_assert_str_eq(get(v, "HOME"), "/root");
        cr_assert_str_eq(get(v, "USER"), "root");
        cr_assert_str_eq(get(v, "LOGNAME"), "root");
        xb_strv_free(v);
        xb_strv_free(NULL);
}

Test(env, overrides_replace_defaults)
{
        const char *set[] = { "PATH=/opt/bin", "HOME=/work", "USER=alice", "LANG=de_DE.UTF-8", "EMPTY=" };
        char **base = build("/home/user", 1000, NULL, 0);
        char **v = build("/home/user", 1000, set, 5);

        cr_assert_str_eq(get(v, "PATH"), "/opt/bin");
        cr_assert_str_eq(get(v, "HOME"), "/work");
        cr_assert_str_eq(get(v, "USER"), "alice");
        cr_assert_str_eq(get(v, "LANG"), "de_DE.UTF-8");
        cr_assert_str_eq(get(v, "EMPTY"), "");
        /* Replaced, not appended: one new variable only. */
        cr_assert_eq(count(v), count(base) + 1);
        xb_strv_free(base);
        xb_strv_free(v);
}

Test(env, override_matches_the_whole_name)
{
        const char *set[] = { "PATHX=1", "PAT=2", "HOMER=simpson" };
        char **v = build("/home/user", 1000, set, 3);

        cr_assert_str_eq(get(v, "PATHX"), "1");
        cr_assert_str_eq(get(v, "PAT"), "2");
        cr_assert_str_eq(get(v, "HOMER"), "simpson");
        cr_assert(strstr(get(v, "PATH"), "/usr/bin"), "PATH was replaced by a longer name");
        cr_assert_str_eq(get(v, "HOME"), "/home/user");
        xb_strv_free(v);
}

Test(env, later_settings_win)
{
        const char *set[] = { "A=1", "B=x", "A=2", "A=3=3" };
        char **v = build("/home/user", 1000, set, 4);

        cr_assert_str_eq(get(v, "A"), "3=3");
        cr_assert_str_eq(get(v, "B"), "x");
        xb_strv_free(v);
}

Test(env, own_environment_does_not_leak)
{
        const char *set[] = { "MINE=1" };
        char **v;

        cr_assert_eq(setenv("XB_UNIT_LEAK_CANARY_8c1f", "secret-token", 1), 0);
        cr_assert_eq(setenv("LD_PRELOAD", "/tmp/evil.so", 1), 0);
        cr_assert_eq(setenv("PATH", "/leaked/path", 1), 0);
        cr_assert_eq(setenv("HOME", "/leaked/home", 1), 0);
        v = build("/home/user", 1000, set, 1);
        for (char **p = v; *p; p++) {
                cr_assert_null(strstr(*p, "XB_UNIT_LEAK_CANARY"), "leaked: %s", *p);
                cr_assert_null(strstr(*p, "secret-token"), "leaked: %s", *p);
                cr_assert_null(strstr(*p, "leaked"), "leaked: %s", *p);
        }
        cr_assert_null(get(v, "LD_PRELOAD"));
        cr_assert_str_eq(get(v, "HOME"), "/home/user");
        cr_assert_str_eq(get(v, "MINE"), "1");
        xb_strv_free(v);
        unsetenv("XB_UNIT_LEAK_CANARY_8c1f");
        unsetenv("LD_PRELOAD");
}

Test(env, strings_are_copies)
{
        char kv[] = "K=v";
        const char *set[] = { kv };
        char **v = build("/home/user", 1000, set, 1);

        kv[2] = 'X';
        cr_assert_str_eq(get(v, "K"), "v");
        xb_strv_free(v);
}

static void
check_ok(const char *kv)
{
        struct xb_err err = { 0 };

        cr_assert_eq(xb_env_check(kv, &err), 0, "`%s` refused: %s", kv, err.msg);
}

static void
check_bad(const char *kv)
{
        struct xb_err err = { 0 };
        int r = xb_env_check(kv, &err);

        cr_assert_eq(r, -EINVAL, "`%s`: %d", kv, r);
        cr_assert_eq(err.code, EINVAL);
        cr_assert_neq(err.msg[0], '\0');
}

Test(env, names)
{
        check_ok("A=1");
        check_ok("_=1");
        check_ok("_A1_b2=");
        check_ok("lower=x");
        check_ok("K=a=b=c");
        check_ok("K=with spaces and\nnewline");
        check_bad("");
        check_bad("=");
        check_bad("=value");
        check_bad("NOEQUALS");
        check_bad("1A=x");
        check_bad("A-B=x");
        check_bad("A.B=x");
        check_bad("A B=x");
        check_bad(" A=x");
        check_bad("A =x");
        check_bad("A\tB=x");
        check_bad("\xc3\xa9=x");
        check_bad("A\xc3\xa9=x");
}

Test(env, invalid_names_refused_by_build)
{
        const char *set[] = { "OK=1", "BAD-NAME=2" };
        struct xb_err err = { 0 };
        char **v = (char **)0x1;

        cr_assert_eq(xb_env_build("/home/user", 1000, set, 2, &v, &err), -EINVAL);
        cr_assert_eq(v, (char **)0x1, "*ret written on failure");
        cr_assert(strstr(err.msg, "BAD-NAME"), "message `%s` does not name the variable", err.msg);
}

Test(env, size_bounds)
{
        struct xb_err err = { 0 };
        size_t big = XB_ENV_MAX_BYTES;
        char *kv = malloc(big + 2);
        const char *set[2];
        char **v = NULL;

        cr_assert_not_null(kv);
        /* One entry of exactly the limit is fine, one byte more is not. */
        memset(kv, 'v', big + 1);
        memcpy(kv, "K=", 2);
        kv[big] = '\0';
        check_ok(kv);
        set[0] = kv;
        cr_assert_eq(xb_env_build("/home/user", 1000, set, 1, &v, &err), 0, "%s", err.msg);
        xb_strv_free(v);
        kv[big] = 'v';
        kv[big + 1] = '\0';
        cr_assert_eq(xb_env_check(kv, &err), -E2BIG);
        v = NULL;
        cr_assert_eq(xb_env_build("/home/user", 1000, set, 1, &v, &err), -E2BIG);
        cr_assert_null(v);
        /* Two entries that fit alone but not together. */
        kv[big / 2 + 10] = '\0';
        set[1] = kv;
        cr_assert_eq(xb_env_build("/home/user", 1000, set, 2, &v, &err), -E2BIG);
        cr_assert_null(v);
        free(kv);
}

Test(env, count_bound)
{
        static char names[XB_ENV_MAX_VARS + 1][16];
        static const char *set[XB_ENV_MAX_VARS + 1];
        struct xb_err err = { 0 };
        char **v = NULL;

        for (int i = 0; i <= XB_ENV_MAX_VARS; i++) {
                snprintf(names[i], sizeof(names[i]), "V%d=%d", i, i);
                set[i] = names[i];
        }
        cr_assert_eq(xb_env_build("/home/user", 1000, set, XB_ENV_MAX_VARS, &v, &err), 0, "%s", err.msg);
        cr_assert_str_eq(get(v, "V1023"), "1023");
        cr_assert_str_eq(get(v, "V0"), "0");
        cr_assert_not_null(get(v, "PATH"));
        xb_strv_free(v);
        v = NULL;
        cr_assert_eq(xb_env_build("/home/user", 1000, set, XB_ENV_MAX_VARS + 1, &v, &err), -E2BIG);
        cr_assert_null(v);
}
