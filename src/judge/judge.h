/* The code-judge adapters (Piston v2 and Judge0 CE) and what they share:
 * one language table, detected on the host, and one compile-then-run job
 * that drives execbox's engine through the operation table (ops/ops.h):
 * sandbox_create, write_file, run_command (compile, then run),
 * sandbox_delete. The job knows no protocol; piston.c and judge0.c turn
 * requests into jobs and results into their projects' JSON. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/err.h"
#include "transport/http.h"

struct xb_core;

#define XB_JUDGE_ALIASES 4

struct xb_judge_lang {
        const char *piston;       /* Piston's language name: "c", "c++", "python", ... */
        const char *aliases[XB_JUDGE_ALIASES];
        const char *runtime;      /* Piston's runtime, when it names one: "gcc", "node" */
        int judge0_id;            /* Judge0 CE's language id */
        const char *judge0_name;  /* "C (GCC %s)": %s is the version */
        const char *bin;          /* the program whose presence and version decide */
        const char *ext;          /* source files: ".c" */
        const char *main;         /* the first file's name when it has none */
        const char *compile;      /* a shell line before the sources, or NULL: "gcc -O2 -o a.out" */
        const char *compile_tail; /* after the sources: " -lm" */
        const char *run[4];       /* argv before the arguments; "%m" is the main file, "%c" its class */
        /* detected at first use */
        bool present;
        char version[32];
};

/* The languages the host has, in table order (n in *ret_n); detection
 * runs once, on first use. */
const struct xb_judge_lang *xb_judge_langs(size_t *ret_n);
/* A present language by Piston name or alias (and version: NULL or "*" for
 * any, else the same or a prefix of the detected one); NULL if none. */
const struct xb_judge_lang *xb_judge_lang_piston(const char *name, const char *version);
/* A present language by Judge0 id; NULL if none. */
const struct xb_judge_lang *xb_judge_lang_judge0(int id);
/* Judge0's name with the host's version: "C (GCC 12.2.0)", into buf. */
const char *xb_judge0_lang_name(const struct xb_judge_lang *l, char *buf, size_t n);

/* One compile-then-run. Strings and files are the job's once started. */
struct xb_judge_spec {
        const struct xb_judge_lang *lang;
        json_t *files;               /* [{"name", "content", "encoding": "utf-8"|"base64"}], first is main */
        char *stdin_data;            /* NULL: none */
        json_t *args;                /* array of strings, or NULL */
        uint64_t compile_timeout_ms, run_timeout_ms;
        uint64_t run_cpu_ms;         /* the run's CPU time limit; 0 = none (the wall timeout only) */
        uint64_t memory;             /* the run's memory limit in bytes; 0 = the server's */
        uint64_t output_limit;       /* per stream; 0 = the engine's default */
};

/* The outcome: the compile step's exec result (NULL when there is none),
 * the run's (NULL when compiling failed, or the job failed; its status is
 * "cpu_limit" when it went past spec.run_cpu_ms), or err when
 * the engine could not run it at all. mem_exceeded says the run went past
 * spec.memory by execbox's accounting (peak memory) or its OOM kill. All
 * borrowed, for the call only. */
struct xb_judge_outcome {
        json_t *compile, *run;
        const struct xb_err *err;
        bool compile_failed, mem_exceeded;
};
typedef void (*xb_judge_done_fn)(void *ctx, const struct xb_judge_outcome *o);

/* Start a job for tenant; done runs once, perhaps before this returns.
 * spec's pointers are taken (freed by the job) whatever happens. */
void xb_judge_run(struct xb_core *srv, int tenant, struct xb_judge_spec *spec, xb_judge_done_fn done, void *ctx);

/* Base64 of a string into a new JSON string (NULL stays null). */
json_t *xb_judge_b64(const char *s, size_t n);

extern const struct xb_route xb_judge_routes[];
extern const size_t xb_judge_nroutes;
