/* Naming options as typed (opterr.h). GNU getopt_long leaves the element
 * it consumed just before optind: the option at optind-1, or, when its
 * value was a separate element, at optind-2. Short options inside a
 * cluster ("-th") are named by their letter. */
#define _GNU_SOURCE
#include "cli/opterr.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Whether el ("--mem", "--memory=1G") names the long option with value opt. */
static bool
names(const char *el, int opt, const struct option *longopts)
{
        size_t n;

        if (strncmp(el, "--", 2) != 0)
                return false;
        el += 2;
        n = strcspn(el, "=");
        for (const struct option *o = longopts; o && o->name; o++)
                if (o->val == opt && !o->flag && n && strncmp(o->name, el, n) == 0)
                        return true;
        return false;
}

static const char *
long_typed(const char *el, char *buf, size_t size)
{
        snprintf(buf, size, "%.*s", (int)strcspn(el, "="), el);
        return buf;
}

const char *
xb_opt_typed(int opt, char **argv, const struct option *longopts, char *buf, size_t size)
{
        const char *el = NULL;

        if (optind >= 1)
                el = argv[optind - 1];
        /* A value given as the next element (optarg is that element, not a
         * point inside "--name=value"): the option is the one before. */
        if (optarg && el && !(optarg > el && optarg <= el + strlen(el)) && optind >= 2)
                el = argv[optind - 2];
        if (el && names(el, opt, longopts))
                return long_typed(el, buf, size);
        if (opt > 0 && opt < 128)
                snprintf(buf, size, "-%c", opt);
        else
                snprintf(buf, size, "%s", el ? el : "?");
        return buf;
}

const char *
xb_opt_problem(int opt, char **argv, const struct option *longopts, char *buf, size_t size)
{
        const char *el = optind >= 1 ? argv[optind - 1] : "";
        char typed[128];

        if (opt == ':') {
                if (optopt > 0 && optopt < 128)
                        snprintf(typed, sizeof(typed), "-%c", optopt);
                else
                        long_typed(el, typed, sizeof(typed));
                snprintf(buf, size, "%s needs a value", typed);
                return buf;
        }
        if (optopt > 0 && optopt < 128) {
                snprintf(buf, size, "unknown option `-%c`", optopt);
                return buf;
        }
        long_typed(el, typed, sizeof(typed));
        if (strncmp(typed, "--", 2) == 0 && typed[2]) {
                size_t n = strlen(typed + 2), len = 0, matches = 0;

                for (const struct option *o = longopts; o && o->name; o++)
                        if (strncmp(o->name, typed + 2, n) == 0)
                                matches++;
                if (matches > 1) {
                        size_t i = 0;

                        len = (size_t)snprintf(buf, size, "`%s` is ambiguous:", typed);
                        for (const struct option *o = longopts; o && o->name && len < size; o++)
                                if (strncmp(o->name, typed + 2, n) == 0)
                                        len += (size_t)snprintf(buf + len, size - len, "%s --%s",
                                                                i++ == 0 ? "" : i == matches ? " or" : ",",
                                                                o->name);
                        return buf;
                }
        }
        snprintf(buf, size, "unknown option `%s`", typed);
        return buf;
}
