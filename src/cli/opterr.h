/* Option errors that name the option as the user typed it: `--mem` when
 * --memory was abbreviated, never its value, never getopt's own wording.
 * For getopt_long loops run with opterr = 0 and an optstring that starts
 * with ':' (or "+:"). */
#pragma once
#include <getopt.h>
#include <stddef.h>

/* The option getopt_long just returned as opt (optarg and optind as it
 * left them), as typed, without "=VALUE"; written into buf. */
const char *xb_opt_typed(int opt, char **argv, const struct option *longopts, char *buf, size_t size);

/* The message for getopt_long's '?' (unknown or ambiguous) or ':' (no
 * value), into buf, e.g. "unknown option `--bogus`", "`--po` is
 * ambiguous: --pool or --pool-python", "--memory needs a value". */
const char *xb_opt_problem(int opt, char **argv, const struct option *longopts, char *buf, size_t size);
