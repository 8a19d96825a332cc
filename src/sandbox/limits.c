/* Limit parsing and validation. No syscalls: this is the pure part the
 * unit tests pin down. */
#include "limits.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

void
xb_limits_default(struct xb_limits *l)
{
        *l = (struct xb_limits){
                .wall_ms = 60 * 1000,
                .cpu_ms = 0,
                .memory = (uint64_t)1 << 30,
                .pids = 512,
                .cpus_milli = 0,
                .output = (uint64_t)1 << 20,
                .fsize = 0,
                .disk = (uint64_t)1 << 30,
        };
}

/* Parse "123" or "1.25" into an integer scaled by `scale`, with at most
 * 9 decimals; returns the pointer after the number, or NULL. */
static const char *
parse_decimal(const char *s, uint64_t scale, uint64_t *ret)
{
        uint64_t whole = 0, frac = 0, frac_div = 1;
        const char *p = s;

        if (!isdigit((unsigned char)*p))
                return NULL;
        for (; isdigit((unsigned char)*p); p++) {
                uint64_t digit = (uint64_t)(*p - '0');

                if (whole > (UINT64_MAX - digit) / 10)
                        return NULL;
                whole = whole * 10 + digit;
        }
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char)*p))
                        return NULL;
                for (; isdigit((unsigned char)*p); p++) {
                        if (frac_div >= 1000000000ULL)
                                continue; /* ignore digits past nano precision */
                        frac = frac * 10 + (uint64_t)(*p - '0');
                        frac_div *= 10;
                }
        }
        if (scale && whole > UINT64_MAX / scale)
                return NULL;
        whole *= scale;
        {
                /* frac < frac_div <= 1e9 and scale <= 2^40: the product fits in 128 bits. */
                uint64_t part = (uint64_t)((__uint128_t)frac * scale / frac_div);

                if (part > UINT64_MAX - whole)
                        return NULL;
                whole += part;
        }
        *ret = whole;
        return p;
}

static const char *
skip_space(const char *p)
{
        while (*p == ' ' || *p == '\t')
                p++;
        return p;
}

int
xb_parse_size(const char *s, uint64_t *ret, struct xb_err *err)
{
        static const struct { const char *suffix; int shift; } units[] = {
                { "", 0 }, { "b", 0 },
                { "k", 10 }, { "kb", 10 }, { "kib", 10 },
                { "m", 20 }, { "mb", 20 }, { "mib", 20 },
                { "g", 30 }, { "gb", 30 }, { "gib", 30 },
                { "t", 40 }, { "tb", 40 }, { "tib", 40 },
        };
        const char *p;
        uint64_t v;

        if (!s || !*s)
                return xb_err_msg(err, EINVAL, "empty size; use bytes or a unit, e.g. 512M or 2G");
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                p = parse_decimal(s, 1ULL << units[i].shift, &v);
                if (!p)
                        break;
                p = skip_space(p);
                if (strcasecmp(p, units[i].suffix) == 0) {
                        *ret = v;
                        return 0;
                }
        }
        return xb_err_msg(err, EINVAL,
                          "`%.64s` is not a size; use bytes or a unit K, M, G or T, e.g. 512M", s);
}

int
xb_parse_duration_ms(const char *s, uint64_t *ret, struct xb_err *err)
{
        static const struct { const char *suffix; uint64_t ms; } units[] = {
                { "", 1000 }, { "s", 1000 }, { "ms", 1 }, { "m", 60000 },
                { "min", 60000 }, { "h", 3600000 },
        };
        const char *p;
        uint64_t v;

        if (!s || !*s)
                return xb_err_msg(err, EINVAL, "empty duration; use seconds, e.g. 10, 1.5s or 250ms");
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                p = parse_decimal(s, units[i].ms, &v);
                if (!p)
                        break;
                p = skip_space(p);
                if (strcasecmp(p, units[i].suffix) == 0) {
                        *ret = v;
                        return 0;
                }
        }
        return xb_err_msg(err, EINVAL,
                          "`%.64s` is not a duration; use seconds, e.g. 10, 1.5s, 250ms or 2m", s);
}

int
xb_parse_cpus(const char *s, uint32_t *ret, struct xb_err *err)
{
        uint64_t v;
        const char *p = s ? parse_decimal(s, 1000, &v) : NULL;

        if (!p || *skip_space(p) != '\0')
                return xb_err_msg(err, EINVAL, "`%.64s` is not a CPU count; use e.g. 1, 0.5 or 2", s ? s : "");
        if (v == 0 || v > XB_CPUS_MAX_MILLI)
                return xb_err_msg(err, ERANGE, "cpus must be between 0.001 and %u", XB_CPUS_MAX_MILLI / 1000);
        *ret = (uint32_t)v;
        return 0;
}

int
xb_parse_u64(const char *s, uint64_t *ret, struct xb_err *err)
{
        uint64_t v;
        const char *p = s && !strchr(s, '.') ? parse_decimal(s, 1, &v) : NULL;

        if (!p || *p != '\0')
                return xb_err_msg(err, EINVAL, "`%.64s` is not a whole number", s ? s : "");
        *ret = v;
        return 0;
}

int
xb_limits_validate(const struct xb_limits *l, struct xb_err *err)
{
        if (l->wall_ms > XB_WALL_MAX_MS)
                return xb_err_msg(err, ERANGE, "timeout must be at most 7 days");
        if (l->cpu_ms > XB_WALL_MAX_MS)
                return xb_err_msg(err, ERANGE, "cpu time must be at most 7 days");
        if (l->memory && (l->memory < XB_MEMORY_MIN || l->memory > XB_MEMORY_MAX))
                return xb_err_msg(err, ERANGE, "memory must be between 8M and 1T (or 0 for no limit)");
        if (l->pids > XB_PIDS_MAX)
                return xb_err_msg(err, ERANGE, "pids must be at most %llu", XB_PIDS_MAX);
        if (l->pids && l->pids < 2)
                return xb_err_msg(err, ERANGE, "pids must be at least 2: the sandbox init needs one");
        if (l->cpus_milli > XB_CPUS_MAX_MILLI)
                return xb_err_msg(err, ERANGE, "cpus must be at most %u", XB_CPUS_MAX_MILLI / 1000);
        if (l->output < XB_OUTPUT_MIN || l->output > XB_OUTPUT_MAX)
                return xb_err_msg(err, ERANGE, "output limit must be between 64 bytes and 1G");
        if (l->disk < XB_DISK_MIN || l->disk > XB_DISK_MAX)
                return xb_err_msg(err, ERANGE, "disk must be between 1M and 1T");
        if (l->fsize > XB_DISK_MAX)
                return xb_err_msg(err, ERANGE, "file size limit must be at most 1T");
        return 0;
}
