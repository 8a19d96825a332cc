/* Piston v2 on execbox: GET /api/v2/runtimes and POST /api/v2/execute,
 * with Piston's request and result shapes and its error shape
 * ({"message": ...} with 400). Each execute is one judge job (job.c). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "ops/jsonv.h"
#include "judge/judge.h"

#define SOURCE_MAX (4u << 20)
#define STDIN_MAX (4u << 20)
#define FILES_MAX 64
#define ARGS_MAX 256
#define COMPILE_TIMEOUT_DEFAULT 10000
#define RUN_TIMEOUT_DEFAULT 3000
#define TIMEOUT_MAX 300000

static void
piston_error(struct xb_req *r, unsigned status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
piston_error(struct xb_req *r, unsigned status, const char *fmt, ...)
{
        char msg[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        xb_reply_json(r, status, json_pack("{s:s}", "message", msg));
}

void xb_piston_runtimes(struct xb_req *r);
void xb_piston_execute(struct xb_req *r);

void
xb_piston_runtimes(struct xb_req *r)
{
        size_t n;
        const struct xb_judge_lang *l = xb_judge_langs(&n);
        json_t *out = json_array();

        for (size_t i = 0; i < n; i++) {
                json_t *al = json_array(), *o;

                if (!l[i].present)
                        continue;
                for (size_t a = 0; a < XB_JUDGE_ALIASES && l[i].aliases[a]; a++)
                        json_array_append_new(al, json_string(l[i].aliases[a]));
                o = json_pack("{s:s,s:s,s:o}", "language", l[i].piston, "version", l[i].version, "aliases", al);
                if (l[i].runtime)
                        json_object_set_new(o, "runtime", json_string(l[i].runtime));
                json_array_append_new(out, o);
        }
        xb_reply_json(r, 200, out);
}

/* A name a file may have: relative, no "..", no NUL (jansson strings have none). */
static bool
name_ok(const char *s)
{
        if (!*s || *s == '/' || strlen(s) > 255)
                return false;
        for (const char *p = s; *p; p = strchr(p, '/') ? strchr(p, '/') + 1 : p + strlen(p))
                if (!strncmp(p, "..", 2) && (p[2] == '/' || !p[2]))
                        return false;
        return true;
}

/* files -> [{name, content, encoding}] for write_file; a message on error. */
static json_t *
parse_files(json_t *files, const struct xb_judge_lang *l, const char **why)
{
        _cleanup_(xb_json_decrefp) json_t *out = json_array();
        json_t *f;
        size_t i;

        if (!json_is_array(files) || !json_array_size(files) || json_array_size(files) > FILES_MAX) {
                *why = "files must be a non-empty array of at most 64 objects {\"name\", \"content\"}";
                return NULL;
        }
        json_array_foreach(files, i, f) {
                const char *name = json_string_value(json_object_get(f, "name"));
                const char *enc = json_string_value(json_object_get(f, "encoding"));
                json_t *content = json_object_get(f, "content");
                char defname[32];
                _cleanup_free_ char *b64 = NULL;
                const char *data;
                size_t len;

                if (!json_is_object(f) || !json_is_string(content)) {
                        *why = "files[].content must be a string";
                        return NULL;
                }
                if (!name) {
                        if (i)
                                snprintf(defname, sizeof(defname), "file%zu%s", i, l->ext);
                        name = i ? defname : l->main;
                }
                if (!name_ok(name)) {
                        *why = "files[].name must be a relative path without `..`";
                        return NULL;
                }
                data = json_string_value(content);
                len = json_string_length(content);
                if (len > SOURCE_MAX) {
                        *why = "a file is larger than 4 MiB";
                        return NULL;
                }
                if (!enc || !strcmp(enc, "utf8") || !strcmp(enc, "utf-8")) {
                        enc = "utf-8";
                } else if (!strcmp(enc, "base64")) {
                        enc = "base64";
                } else if (!strcmp(enc, "hex")) {
                        _cleanup_free_ char *raw = malloc(len / 2 + 1);

                        if (!raw || len % 2) {
                                *why = "files[].content is not valid hex";
                                return NULL;
                        }
                        for (size_t k = 0; k < len / 2; k++) {
                                unsigned v;

                                if (sscanf(data + 2 * k, "%2x", &v) != 1) {
                                        *why = "files[].content is not valid hex";
                                        return NULL;
                                }
                                raw[k] = (char)v;
                        }
                        if (xb_base64_encode_alloc(raw, len / 2, &b64) < 0) {
                                *why = "out of memory";
                                return NULL;
                        }
                        data = b64;
                        len = strlen(b64);
                        enc = "base64";
                } else {
                        *why = "files[].encoding must be utf8, base64 or hex";
                        return NULL;
                }
                json_array_append_new(out, json_pack("{s:s,s:s%,s:s}", "name", name, "content", data, len, "encoding", enc));
        }
        return json_incref(out);
}

/* A timeout or limit in the body: absent or -1 gives def; else a number in [0, max]. */
static int
opt_num(json_t *body, const char *key, double def, double max, double *ret)
{
        json_t *v = json_object_get(body, key);

        *ret = def;
        if (!v || json_is_null(v) || (json_is_number(v) && json_number_value(v) == -1))
                return 0;
        if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > max)
                return -1;
        *ret = json_number_value(v);
        return 0;
}

struct pending {
        struct xb_req *r;   /* NULL once the client left */
        const struct xb_judge_lang *lang;
};

static void
client_gone(struct xb_req *r, void *owner)
{
        struct pending *p = owner;

        (void)r;
        p->r = NULL;   /* the job runs out; its outcome is dropped */
}

static const char *
signame(int sig)
{
        static char buf[16];
        const char *a = sigabbrev_np(sig);

        snprintf(buf, sizeof(buf), "SIG%s", a ? a : "UNKNOWN");
        return buf;
}

/* One stage in Piston's shape, from an exec result. */
static json_t *
stage_json(json_t *res, bool mem_exceeded)
{
        const char *out = json_string_value(json_object_get(res, "stdout")) ?: "";
        const char *err = json_string_value(json_object_get(res, "stderr")) ?: "";
        const char *st = json_string_value(json_object_get(res, "status")) ?: "";
        json_t *code = json_object_get(res, "exit_code"), *sig = json_object_get(res, "signal");
        _cleanup_free_ char *both = NULL;
        json_t *o;

        if (asprintf(&both, "%s%s", out, err) < 0)
                both = NULL;
        o = json_pack("{s:s,s:s,s:s,s:O,s:n,s:n,s:n,s:I,s:I,s:I}", "stdout", out, "stderr", err, "output",
                      both ? both : "", "code", code ? code : json_null(), "signal", "message", "status", "cpu_time",
                      json_integer_value(json_object_get(res, "cpu_ms")), "wall_time",
                      json_integer_value(json_object_get(res, "duration_ms")), "memory",
                      json_integer_value(json_object_get(res, "peak_memory")));
        if (json_is_integer(sig))
                json_object_set_new(o, "signal", json_string(signame((int)json_integer_value(sig))));
        if (!strcmp(st, "timeout") || !strcmp(st, "cpu_limit")) {
                json_object_set_new(o, "status", json_string("TO"));
                json_object_set_new(o, "message", json_string("Time limit exceeded"));
                json_object_set_new(o, "signal", json_string("SIGKILL"));
        } else if (mem_exceeded) {
                json_object_set_new(o, "status", json_string("SG"));
                json_object_set_new(o, "message", json_string("Memory limit exceeded"));
                json_object_set_new(o, "signal", json_string("SIGKILL"));
        } else if (!strcmp(st, "output_limit")) {
                json_object_set_new(o, "status", json_string("OL"));
                json_object_set_new(o, "message", json_string("Output limit exceeded"));
        } else if (json_is_integer(sig)) {
                json_object_set_new(o, "status", json_string("SG"));
        } else if (json_integer_value(code) != 0) {
                json_object_set_new(o, "status", json_string("RE"));
        }
        return o;
}

static void
execute_done(void *ctx, const struct xb_judge_outcome *o)
{
        struct pending *p = ctx;
        json_t *out;

        if (!p->r) {
                free(p);
                return;
        }
        if (o->err) {
                /* The server short of something, or draining: 503, retry. */
                bool later = o->err->ecode == XB_E_SHUTTING_DOWN || o->err->ecode == XB_E_SANDBOX_UNAVAILABLE ||
                             o->err->ecode == XB_E_NOMEM;

                xb_reply_json(p->r, later ? 503 : 500, json_pack("{s:s}", "message", o->err->msg));
                free(p);
                return;
        }
        out = json_pack("{s:s,s:s}", "language", p->lang->piston, "version", p->lang->version);
        if (o->compile)
                json_object_set_new(out, "compile", stage_json(o->compile, false));
        if (o->run)
                json_object_set_new(out, "run", stage_json(o->run, o->mem_exceeded));
        else /* Piston answers a failed compile with an empty run stage */
                json_object_set_new(out, "run", json_pack("{s:s,s:s,s:s,s:n,s:n,s:n,s:s}", "stdout", "", "stderr", "",
                                                          "output", "", "code", "signal", "message", "status",
                                                          "compile_failed"));
        xb_reply_json(p->r, 200, out);
        free(p);
}

void
xb_piston_execute(struct xb_req *r)
{
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_err err = { 0 };
        struct xb_judge_spec spec = { 0 };
        const char *lang, *version, *why = NULL, *in;
        json_t *args;
        double ct, rt, rc, cm, rm;
        size_t len;
        const char *b = xb_req_body(r, &len);
        struct pending *p;

        if (xb_jsonv_parse(b, len, &body, &err) < 0 || !json_is_object(body)) {
                piston_error(r, 400, "the body must be a JSON object: %s", err.msg);
                return;
        }
        lang = json_string_value(json_object_get(body, "language"));
        version = json_string_value(json_object_get(body, "version"));
        if (!lang) {
                piston_error(r, 400, "language is required as a string");
                return;
        }
        if (!(spec.lang = xb_judge_lang_piston(lang, version))) {
                piston_error(r, 400, "%.64s-%.32s runtime is unknown", lang, version ? version : "*");
                return;
        }
        if (opt_num(body, "compile_timeout", COMPILE_TIMEOUT_DEFAULT, TIMEOUT_MAX, &ct) < 0 ||
            opt_num(body, "run_timeout", RUN_TIMEOUT_DEFAULT, TIMEOUT_MAX, &rt) < 0 ||
            opt_num(body, "compile_memory_limit", 0, (double)(64ull << 30), &cm) < 0 ||
            opt_num(body, "run_memory_limit", 0, (double)(64ull << 30), &rm) < 0) {
                piston_error(r, 400, "compile_timeout and run_timeout (ms, at most %u) and the memory limits (bytes) "
                             "must be numbers, or -1 for the default", TIMEOUT_MAX);
                return;
        }
        if (opt_num(body, "run_cpu_time", 0, TIMEOUT_MAX, &rc) < 0) {
                piston_error(r, 400, "run_cpu_time (ms, at most %u) must be a number, or -1 for none", TIMEOUT_MAX);
                return;
        }
        in = json_string_value(json_object_get(body, "stdin"));
        if (json_object_get(body, "stdin") && !json_is_null(json_object_get(body, "stdin")) &&
            (!in || strlen(in) > STDIN_MAX)) {
                piston_error(r, 400, "stdin must be a string of at most 4 MiB");
                return;
        }
        args = json_object_get(body, "args");
        if (args && !json_is_null(args)) {
                json_t *a;
                size_t i;

                if (!json_is_array(args) || json_array_size(args) > ARGS_MAX) {
                        piston_error(r, 400, "args must be an array of strings");
                        return;
                }
                json_array_foreach(args, i, a)
                        if (!json_is_string(a)) {
                                piston_error(r, 400, "args must be an array of strings");
                                return;
                        }
        } else
                args = NULL;
        if (!(spec.files = parse_files(json_object_get(body, "files"), spec.lang, &why))) {
                piston_error(r, 400, "%s", why);
                return;
        }
        p = calloc(1, sizeof(*p));
        spec.stdin_data = in && *in ? strdup(in) : NULL;
        if (!p || (in && *in && !spec.stdin_data)) {
                free(p);
                json_decref(spec.files);
                free(spec.stdin_data);
                piston_error(r, 503, "out of memory");
                return;
        }
        spec.args = json_incref(args);
        spec.compile_timeout_ms = (uint64_t)ct;
        spec.run_timeout_ms = (uint64_t)rt;
        spec.run_cpu_ms = (uint64_t)rc;
        /* one sandbox holds both stages: the larger limit bounds it, the run's is checked */
        spec.memory = (uint64_t)(rm ? rm : cm);
        p->r = r;
        p->lang = spec.lang;
        xb_req_suspend(r, client_gone, p);
        xb_judge_run((struct xb_core *)xb_req_route_data(r), xb_req_tenant(r), &spec, execute_done, p);
}
