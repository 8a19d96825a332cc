/* Unit tests for sandbox/limits.h: the size, duration, CPU and integer
 * parsers, the defaults, and every bound xb_limits_validate enforces.
 * Failing parses must leave *ret untouched and fill the error struct. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "sandbox/limits.h"

#define SENTINEL 0x5a5a5a5a5a5a5a5aULL

static uint64_t
size_ok(const char *s)
{
        struct xb_err err = { 0 };
        uint64_t v = SENTINEL;
        int r = xb_parse_size(s, &v, &err);

        cr_assert_eq(r, 0, "xb_parse_size(\"%s\") = %d (%s)", s, r, err.msg);
        return v;
}

static void
size_bad(const char *s)
{
        struct xb_err err = { 0 };
        uint64_t v = SENTINEL;
        int r = xb_parse_size(s, &v, &err);

        cr_assert_lt(r, 0, "xb_parse_size(\"%s\") accepted it as %llu", s ? s : "(null)",
                     (unsigned long long)v);
        cr_assert_eq(err.code, -r, "err.code %d for r %d", err.code, r);
        cr_assert_neq(err.msg[0], '\0', "no message");
        cr_assert_eq(v, SENTINEL, "*ret written on failure");
}

static uint64_t
dur_ok(const char *s)
{
        struct xb_err err = { 0 };
        uint64_t v = SENTINEL;
        int r = xb_parse_duration_ms(s, &v, &err);

        cr_assert_eq(r, 0, "xb_parse_duration_ms(\"%s\") = %d (%s)", s, r, err.msg);
        return v;
}

static void
dur_bad(const char *s)
{
        struct xb_err err = { 0 };
        uint64_t v = SENTINEL;
        int r = xb_parse_duration_ms(s, &v, &err);

        cr_assert_lt(r, 0, "xb_parse_duration_ms(\"%s\") accepted it as %llu ms", s ? s : "(null)",
                     (unsigned long long)v);
        cr_assert_eq(err.code, -r);
        cr_assert_neq(err.msg[0], '\0');
        cr_assert_eq(v, SENTINEL, "*ret written on failure");
}

static uint32_t
cpus_ok(const char *s)
{
        struct xb_err err = { 0 };
        uint32_t v = 0x5a5a5a5a;
        int r = xb_parse_cpus(s, &v, &err);

        cr_assert_eq(r, 0, "xb_parse_cpus(\"%s\") = %d (%s)", s, r, err.msg);
        return v;
}

static void
cpus_bad(const char *s, int want)
{
        struct xb_err err = { 0 };
        uint32_t v = 0x5a5a5a5a;
        int r = xb_parse_cpus(s, &v, &err);

        cr_assert_eq(r, -want, "xb_parse_cpus(\"%s\") = %d (value %u), want %d", s ? s : "(null)", r, v, -want);
        cr_assert_eq(err.code, want);
        cr_assert_neq(err.msg[0], '\0');
        cr_assert_eq(v, 0x5a5a5a5a, "*ret written on failure");
}

static uint64_t
u64_ok(const char *s)
{
        struct xb_err err = { 0 };
        uint64_t v = SENTINEL;
        int r = xb_parse_u64(s, &v, &err);

        cr_assert_eq(r, 0, "xb_parse_u64(\"%s\") = %d (%s)", s, r, err.msg);
        return v;
}

static void
u64_bad(const char *s)
{
        struct xb_err err = { 0 };
        uint64_t v = SENTINEL;
        int r = xb_parse_u64(s, &v, &err);

        cr_assert_lt(r, 0, "xb_parse_u64(\"%s\") accepted it as %llu", s ? s : "(null)", (unsigned long long)v);
        cr_assert_eq(err.code, EINVAL);
        cr_assert_eq(v, SENTINEL, "*ret written on failure");
}

/* ---- sizes ---- */

Test(parse_size, plain_bytes)
{
        cr_assert_eq(size_ok("0"), 0);
        cr_assert_eq(size_ok("1"), 1);
        cr_assert_eq(size_ok("4096"), 4096);
        cr_assert_eq(size_ok("7b"), 7);
        cr_assert_eq(size_ok("7B"), 7);
}

Test(parse_size, binary_units_any_case)
{
        cr_assert_eq(size_ok("64k"), 64ULL << 10);
        cr_assert_eq(size_ok("64K"), 64ULL << 10);
        cr_assert_eq(size_ok("64KB"), 64ULL << 10);
        cr_assert_eq(size_ok("64KiB"), 64ULL << 10);
        cr_assert_eq(size_ok("512M"), 512ULL << 20);
        cr_assert_eq(size_ok("512mb"), 512ULL << 20);
        cr_assert_eq(size_ok("512MiB"), 512ULL << 20);
        cr_assert_eq(size_ok("3G"), 3ULL << 30);
        cr_assert_eq(size_ok("2GiB"), 2ULL << 30);
        cr_assert_eq(size_ok("2gib"), 2ULL << 30);
        cr_assert_eq(size_ok("1T"), 1ULL << 40);
        cr_assert_eq(size_ok("1TiB"), 1ULL << 40);
}

Test(parse_size, decimals)
{
        cr_assert_eq(size_ok("1.5G"), 3ULL << 29);
        cr_assert_eq(size_ok("0.5k"), 512);
        cr_assert_eq(size_ok("1.25M"), 1310720);
        cr_assert_eq(size_ok("0.25T"), 1ULL << 38);
        /* Fractions of a byte are cut, not rounded. */
        cr_assert_eq(size_ok("1.9"), 1);
        cr_assert_eq(size_ok("1.999k"), 2046);
        /* Digits past nanosecond precision are ignored, not an error. */
        cr_assert_eq(size_ok("1.0000000001G"), 1ULL << 30);
}

Test(parse_size, spaces_between_number_and_unit)
{
        cr_assert_eq(size_ok("1 TB"), 1ULL << 40);
        cr_assert_eq(size_ok("1  G"), 1ULL << 30);
        cr_assert_eq(size_ok("1\tM"), 1ULL << 20);
        cr_assert_eq(size_ok("5 "), 5);
}

Test(parse_size, garbage)
{
        size_bad(NULL);
        size_bad("");
        size_bad("G");
        size_bad("abc");
        size_bad("-1");
        size_bad("-1G");
        size_bad("+1G");
        size_bad(" 1G");
        size_bad("1G ");
        size_bad("1X");
        size_bad("1GG");
        size_bad("1Gb2");
        size_bad("1 G B");
        size_bad("1.G");
        size_bad(".5G");
        size_bad("1..5G");
        size_bad("1.5.G");
        size_bad("1,5G");
        size_bad("1e3");
        size_bad("0x10");
        size_bad("1P");
        size_bad("1 2");
}

Test(parse_size, overflow)
{
        /* The largest whole number of each unit that fits, then one more. */
        cr_assert_eq(size_ok("16777215T"), 16777215ULL << 40);
        size_bad("16777216T");
        cr_assert_eq(size_ok("17179869183G"), 17179869183ULL << 30);
        size_bad("17179869184G");
        size_bad("18446744073709551616");
        size_bad("99999999999999999999");
        size_bad("99999999999999999999999999999999K");
        /* A fraction on top of the largest whole unit still fits. */
        {
                uint64_t v = size_ok("16777215.99999999T");

                cr_assert_gt(v, 16777215ULL << 40);
                cr_assert_lt(v, UINT64_MAX);
        }
}

/* ---- durations ---- */

Test(parse_duration, units)
{
        cr_assert_eq(dur_ok("10"), 10000);
        cr_assert_eq(dur_ok("0"), 0);
        cr_assert_eq(dur_ok("1.5s"), 1500);
        cr_assert_eq(dur_ok("1.5S"), 1500);
        cr_assert_eq(dur_ok("250ms"), 250);
        cr_assert_eq(dur_ok("250 ms"), 250);
        cr_assert_eq(dur_ok("2m"), 120000);
        cr_assert_eq(dur_ok("2min"), 120000);
        cr_assert_eq(dur_ok("1h"), 3600000);
        cr_assert_eq(dur_ok("1.5h"), 5400000);
        cr_assert_eq(dur_ok("0.001s"), 1);
        cr_assert_eq(dur_ok("0.0001s"), 0);
        cr_assert_eq(dur_ok("0.5"), 500);
}

Test(parse_duration, garbage)
{
        dur_bad(NULL);
        dur_bad("");
        dur_bad("s");
        dur_bad("ms");
        dur_bad("-1");
        dur_bad("-1s");
        dur_bad("1d");
        dur_bad("1x");
        dur_bad("1.s");
        dur_bad(".5s");
        dur_bad("1hh");
        dur_bad("1 h m");
        dur_bad("1s ");
        dur_bad(" 1s");
        dur_bad("1e3");
        dur_bad("abc");
        dur_bad("1:30");
}

Test(parse_duration, overflow)
{
        /* UINT64_MAX / 3600000 = 5124095576030 hours fit, one more does not. */
        cr_assert_eq(dur_ok("5124095576030h"), 5124095576030ULL * 3600000ULL);
        dur_bad("5124095576031h");
        dur_bad("18446744073709552s");
        /* 18446744073709551.615 s is exactly UINT64_MAX ms... */
        cr_assert_eq(dur_ok("18446744073709551.615"), UINT64_MAX);
        /* ...and one millisecond more must not wrap around to 0 or to a
         * small value (whole * 1000 fits, adding the fraction overflows). */
        dur_bad("18446744073709551.616");
        dur_bad("18446744073709551.999");
}

/* ---- CPUs ---- */

Test(parse_cpus, values)
{
        cr_assert_eq(cpus_ok("1"), 1000);
        cr_assert_eq(cpus_ok("0.5"), 500);
        cr_assert_eq(cpus_ok("2.25"), 2250);
        cr_assert_eq(cpus_ok("0.001"), 1);
        cr_assert_eq(cpus_ok("1024"), XB_CPUS_MAX_MILLI);
        cr_assert_eq(cpus_ok("1 "), 1000);
}

Test(parse_cpus, bounds)
{
        cpus_bad("0", ERANGE);
        cpus_bad("0.0", ERANGE);
        cpus_bad("0.0009", ERANGE);
        cpus_bad("1024.001", ERANGE);
        cpus_bad("4294968", ERANGE);   /* wraps uint32 milli if unchecked */
}

Test(parse_cpus, garbage)
{
        cpus_bad(NULL, EINVAL);
        cpus_bad("", EINVAL);
        cpus_bad("-1", EINVAL);
        cpus_bad(" 1", EINVAL);
        cpus_bad("1c", EINVAL);
        cpus_bad("1.", EINVAL);
        cpus_bad("abc", EINVAL);
        cpus_bad("1/2", EINVAL);
}

Test(parse_cpus, overflow_does_not_wrap)
{
        /* whole * 1000 fits in 64 bits, the fraction pushes it over: the
         * sum must be refused, not wrap to a tiny share of a core. */
        struct xb_err err = { 0 };
        uint32_t v = 0x5a5a5a5a;
        int r = xb_parse_cpus("18446744073709551.999", &v, &err);

        cr_assert_lt(r, 0, "accepted as %u thousandths of a core", v);
        cr_assert_eq(v, 0x5a5a5a5a);
}

/* ---- plain integers ---- */

Test(parse_u64, values)
{
        cr_assert_eq(u64_ok("0"), 0);
        cr_assert_eq(u64_ok("42"), 42);
        cr_assert_eq(u64_ok("007"), 7);
        cr_assert_eq(u64_ok("9999999999999999999"), 9999999999999999999ULL);
}

Test(parse_u64, largest_value)
{
        cr_assert_eq(u64_ok("18446744073709551609"), 18446744073709551609ULL);
        cr_assert_eq(u64_ok("18446744073709551615"), UINT64_MAX);
}

Test(parse_u64, garbage)
{
        u64_bad(NULL);
        u64_bad("");
        u64_bad("-1");
        u64_bad("+1");
        u64_bad(" 1");
        u64_bad("1 ");
        u64_bad("1k");
        u64_bad("0x1");
        u64_bad("18446744073709551616");
        u64_bad("99999999999999999999");
}

Test(parse_u64, rejects_decimals)
{
        /* "A plain non-negative integer": a fraction is not one, and must
         * not be silently cut to 1 or 3. */
        u64_bad("1.5");
        u64_bad("3.99");
        u64_bad("1.0");
}

/* ---- defaults and validation ---- */

Test(limits, default_sets_every_field_and_validates)
{
        struct xb_limits l;
        struct xb_err err = { 0 };

        memset(&l, 0xff, sizeof(l));
        xb_limits_default(&l);
        cr_assert_eq(xb_limits_validate(&l, &err), 0, "defaults invalid: %s", err.msg);
        /* A one-shot run is bounded in time, memory and tasks by default. */
        cr_assert_gt(l.wall_ms, 0);
        cr_assert_leq(l.wall_ms, XB_WALL_MAX_MS);
        cr_assert_geq(l.memory, XB_MEMORY_MIN);
        cr_assert_leq(l.memory, XB_MEMORY_MAX);
        cr_assert_geq(l.pids, 2);
        cr_assert_leq(l.pids, 100000);
        cr_assert_geq(l.output, XB_OUTPUT_MIN);
        cr_assert_geq(l.disk, XB_DISK_MIN);
        cr_assert_leq(l.cpus_milli, XB_CPUS_MAX_MILLI);
        cr_assert_leq(l.cpu_ms, XB_WALL_MAX_MS);
        cr_assert_leq(l.fsize, XB_DISK_MAX);
}

/* Check one field at a value: accepted or refused with ERANGE and a message
 * that names the field. */
#define CHECK(field, value, ok, name)                                                            \
        do {                                                                                     \
                struct xb_limits l_;                                                             \
                struct xb_err e_ = { 0 };                                                        \
                int r_;                                                                          \
                xb_limits_default(&l_);                                                          \
                l_.field = (value);                                                              \
                r_ = xb_limits_validate(&l_, &e_);                                               \
                if (ok)                                                                          \
                        cr_assert_eq(r_, 0, #field " = %llu refused: %s",                        \
                                     (unsigned long long)(value), e_.msg);                       \
                else {                                                                           \
                        cr_assert_eq(r_, -ERANGE, #field " = %llu: r = %d",                      \
                                     (unsigned long long)(value), r_);                           \
                        cr_assert_eq(e_.code, ERANGE);                                           \
                        cr_assert(strstr(e_.msg, name), "message `%s` does not name " name,      \
                                  e_.msg);                                                       \
                }                                                                                \
        } while (0)

Test(limits, wall_bounds)
{
        CHECK(wall_ms, 0, true, "timeout");
        CHECK(wall_ms, XB_WALL_MAX_MS, true, "timeout");
        CHECK(wall_ms, XB_WALL_MAX_MS + 1, false, "timeout");
        CHECK(wall_ms, UINT64_MAX, false, "timeout");
}

Test(limits, cpu_time_bounds)
{
        CHECK(cpu_ms, 0, true, "cpu time");
        CHECK(cpu_ms, XB_WALL_MAX_MS, true, "cpu time");
        CHECK(cpu_ms, XB_WALL_MAX_MS + 1, false, "cpu time");
}

Test(limits, memory_bounds)
{
        CHECK(memory, 0, true, "memory");
        CHECK(memory, 1, false, "memory");
        CHECK(memory, XB_MEMORY_MIN - 1, false, "memory");
        CHECK(memory, XB_MEMORY_MIN, true, "memory");
        CHECK(memory, XB_MEMORY_MAX, true, "memory");
        CHECK(memory, XB_MEMORY_MAX + 1, false, "memory");
}

Test(limits, pids_bounds)
{
        CHECK(pids, 0, true, "pids");
        CHECK(pids, 1, false, "pids");
        CHECK(pids, 2, true, "pids");
        CHECK(pids, XB_PIDS_MAX, true, "pids");
        CHECK(pids, XB_PIDS_MAX + 1, false, "pids");
}

Test(limits, cpus_bounds)
{
        CHECK(cpus_milli, 0, true, "cpus");
        CHECK(cpus_milli, 1, true, "cpus");
        CHECK(cpus_milli, XB_CPUS_MAX_MILLI, true, "cpus");
        CHECK(cpus_milli, XB_CPUS_MAX_MILLI + 1, false, "cpus");
}

Test(limits, output_bounds)
{
        CHECK(output, 0, false, "output");
        CHECK(output, XB_OUTPUT_MIN - 1, false, "output");
        CHECK(output, XB_OUTPUT_MIN, true, "output");
        CHECK(output, XB_OUTPUT_MAX, true, "output");
        CHECK(output, XB_OUTPUT_MAX + 1, false, "output");
}

Test(limits, disk_bounds)
{
        CHECK(disk, 0, false, "disk");
        CHECK(disk, XB_DISK_MIN - 1, false, "disk");
        CHECK(disk, XB_DISK_MIN, true, "disk");
        CHECK(disk, XB_DISK_MAX, true, "disk");
        CHECK(disk, XB_DISK_MAX + 1, false, "disk");
}

Test(limits, fsize_bounds)
{
        CHECK(fsize, 0, true, "file size");
        CHECK(fsize, 1, true, "file size");
        CHECK(fsize, XB_DISK_MAX, true, "file size");
        CHECK(fsize, XB_DISK_MAX + 1, false, "file size");
}

Test(limits, validate_without_err_struct)
{
        struct xb_limits l;

        xb_limits_default(&l);
        l.pids = 1;
        cr_assert_eq(xb_limits_validate(&l, NULL), -ERANGE);
}
