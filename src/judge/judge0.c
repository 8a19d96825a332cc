/* Judge0 CE on execbox: submissions (one, or a batch; waited for or by
 * token), languages and statuses, with Judge0's status ids and its time
 * (cpu seconds), wall_time and memory (KB) from execbox's accounting.
 *
 * Submissions live in this process only: at most SUBS_MAX, the oldest
 * finished ones dropped first, each seen only by the tenant that made it.
 * At most RUNNING_MAX run at once; the rest wait In Queue. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "ops/jsonv.h"
#include "core/core.h"
#include "judge/judge.h"

#define SUBS_MAX 4096
#define RUNNING_MAX 4
#define BATCH_MAX 20
#define SOURCE_MAX (4u << 20)
#define DEFAULT_FIELDS "stdout,time,memory,stderr,token,compile_output,message,status"

void xb_piston_runtimes(struct xb_req *r);
void xb_piston_execute(struct xb_req *r);

enum { ST_QUEUE = 1, ST_PROCESSING, ST_ACCEPTED, ST_WRONG, ST_TLE, ST_COMPILE, ST_SIGSEGV, ST_SIGXFSZ, ST_SIGFPE,
       ST_SIGABRT, ST_NZEC, ST_OTHER, ST_INTERNAL, ST_EXEC_FORMAT };

static const char *const status_names[] = {
        [ST_QUEUE] = "In Queue", [ST_PROCESSING] = "Processing", [ST_ACCEPTED] = "Accepted",
        [ST_WRONG] = "Wrong Answer", [ST_TLE] = "Time Limit Exceeded", [ST_COMPILE] = "Compilation Error",
        [ST_SIGSEGV] = "Runtime Error (SIGSEGV)", [ST_SIGXFSZ] = "Runtime Error (SIGXFSZ)",
        [ST_SIGFPE] = "Runtime Error (SIGFPE)", [ST_SIGABRT] = "Runtime Error (SIGABRT)",
        [ST_NZEC] = "Runtime Error (NZEC)", [ST_OTHER] = "Runtime Error (Other)", [ST_INTERNAL] = "Internal Error",
        [ST_EXEC_FORMAT] = "Exec Format Error",
};

struct sub {
        struct sub *next;             /* newest first */
        char token[37];
        int tenant;
        int status;
        json_t *rec;                  /* every field, in plain text */
        struct xb_judge_spec spec;    /* until it starts */
        double cpu_limit;
        struct xb_core *srv;
        struct xb_req *waiter;        /* a wait=true request, until answered or gone */
        bool b64;                     /* the waiter's base64_encoded */
        char *fields;                 /* the waiter's fields */
};

static struct sub *subs;
static size_t nsubs, nrunning;

static void
sub_free(struct sub *s)
{
        json_decref(s->rec);
        json_decref(s->spec.files);
        json_decref(s->spec.args);
        free(s->spec.stdin_data);
        free(s->fields);
        free(s);
}

static struct sub *
sub_find(const char *token, int tenant)
{
        for (struct sub *s = subs; s; s = s->next)
                if (s->tenant == tenant && !strcmp(s->token, token))
                        return s;
        return NULL;
}

/* Drop the oldest finished submissions past SUBS_MAX. */
static void
subs_trim(void)
{
        struct sub **pp = &subs, **last = NULL;

        if (nsubs < SUBS_MAX)
                return;
        for (; *pp; pp = &(*pp)->next)
                if ((*pp)->status > ST_PROCESSING && !(*pp)->waiter)
                        last = pp;
        if (last) {
                struct sub *s = *last;

                *last = s->next;
                sub_free(s);
                nsubs--;
        }
}

static json_t *
status_json(int id)
{
        return json_pack("{s:i,s:s}", "id", id, "description", status_names[id]);
}

/* The record, filtered by fields ("*" is all), base64 where Judge0 encodes. */
static json_t *
sub_view(const struct sub *s, const char *fields, bool b64)
{
        static const char *const encoded[] = { "source_code", "stdin", "expected_output", "stdout", "stderr",
                                               "compile_output", "message", NULL };
        json_t *out = json_object(), *v;
        const char *key;

        json_object_foreach(s->rec, key, v) {
                bool want = !fields || !strcmp(fields, "*");
                size_t kl = strlen(key);

                for (const char *p = fields; !want && p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
                        want = !strncmp(p, key, kl) && (p[kl] == ',' || !p[kl]);
                if (!want)
                        continue;
                if (b64 && json_is_string(v))
                        for (const char *const *e = encoded; *e; e++)
                                if (!strcmp(*e, key)) {
                                        json_object_set_new(out, key, xb_judge_b64(json_string_value(v), json_string_length(v)));
                                        goto next;
                                }
                json_object_set(out, key, v);
next:;
        }
        return out;
}

static void
answer_waiter(struct sub *s)
{
        struct xb_req *r = s->waiter;

        if (!r)
                return;
        s->waiter = NULL;
        xb_reply_json(r, 201, sub_view(s, s->fields ? s->fields : DEFAULT_FIELDS, s->b64));
}

static void
waiter_gone(struct xb_req *r, void *owner)
{
        struct sub *s = owner;

        (void)r;
        s->waiter = NULL;
}

/* Judge0 compares after dropping trailing blanks of each line and trailing newlines. */
static bool
same_output(const char *a, const char *b)
{
        for (;;) {
                size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n"), ta = la, tb = lb;

                while (ta && strchr(" \t\r", a[ta - 1]))
                        ta--;
                while (tb && strchr(" \t\r", b[tb - 1]))
                        tb--;
                if (ta != tb || memcmp(a, b, ta))
                        return false;
                a += la + !!a[la];
                b += lb + !!b[lb];
                if (!a[strspn(a, " \t\r\n")] && !b[strspn(b, " \t\r\n")])
                        return true;
        }
}

static char *
fmt_seconds(json_int_t ms)
{
        char *s = NULL;

        return asprintf(&s, "%.3f", (double)ms / 1000.0) < 0 ? NULL : s;
}

static void start_queued(void);

static void
set_text(json_t *rec, const char *key, json_t *v)
{
        json_object_set(rec, key, json_string_length(v) ? v : json_null());
}

static void
sub_done(void *ctx, const struct xb_judge_outcome *o)
{
        struct sub *s = ctx;
        json_t *res = o->run ? o->run : o->compile, *sig = json_object_get(o->run, "signal");
        const char *st = json_string_value(json_object_get(o->run, "status")) ?: "";
        const char *expected = json_string_value(json_object_get(s->rec, "expected_output"));
        int id = ST_ACCEPTED;
        char now[32];
        time_t t = time(NULL);

        nrunning--;
        if (o->err) {
                id = ST_INTERNAL;
                json_object_set_new(s->rec, "message", json_string(o->err->msg));
        } else if (o->compile_failed) {
                const char *co = json_string_value(json_object_get(o->compile, "stdout")) ?: "";
                const char *ce = json_string_value(json_object_get(o->compile, "stderr")) ?: "";
                _cleanup_free_ char *both = NULL;

                id = ST_COMPILE;
                if (asprintf(&both, "%s%s", co, ce) >= 0)
                        json_object_set_new(s->rec, "compile_output", json_string(both));
                if (!strcmp(json_string_value(json_object_get(o->compile, "status")) ?: "", "timeout"))
                        json_object_set_new(s->rec, "message", json_string("Compilation time limit exceeded"));
        } else {
                json_int_t cpu = json_integer_value(json_object_get(o->run, "cpu_ms"));

                if (!strcmp(st, "timeout") || !strcmp(st, "cpu_limit") || (double)cpu > s->cpu_limit * 1000.0) {
                        id = ST_TLE;
                        json_object_set_new(s->rec, "message", json_string("Time limit exceeded"));
                } else if (o->mem_exceeded) {
                        id = ST_OTHER;
                        json_object_set_new(s->rec, "message", json_string("Memory limit exceeded"));
                } else if (!strcmp(st, "output_limit")) {
                        id = ST_SIGXFSZ;
                        json_object_set_new(s->rec, "message", json_string("Output limit exceeded"));
                } else if (json_is_integer(sig)) {
                        json_int_t n = json_integer_value(sig);

                        id = n == 11 ? ST_SIGSEGV : n == 25 ? ST_SIGXFSZ : n == 8 ? ST_SIGFPE : n == 6 ? ST_SIGABRT : ST_OTHER;
                        json_object_set(s->rec, "exit_signal", sig);
                        json_object_set_new(s->rec, "message", json_sprintf("Exited with signal %d", (int)n));
                } else if (json_integer_value(json_object_get(o->run, "exit_code")) != 0) {
                        id = ST_NZEC;
                        json_object_set_new(s->rec, "message",
                                            json_sprintf("Exited with error status %d",
                                                         (int)json_integer_value(json_object_get(o->run, "exit_code"))));
                } else if (expected && !same_output(expected, json_string_value(json_object_get(o->run, "stdout")) ?: "")) {
                        id = ST_WRONG;
                }
                /* Judge0 says null, not "", for a stream that stayed empty */
                set_text(s->rec, "stdout", json_object_get(o->run, "stdout"));
                set_text(s->rec, "stderr", json_object_get(o->run, "stderr"));
                json_object_set(s->rec, "exit_code", json_object_get(o->run, "exit_code"));
        }
        if (res) {
                json_object_set_new(s->rec, "time", json_string(fmt_seconds(json_integer_value(json_object_get(res, "cpu_ms")))));
                json_object_set_new(s->rec, "wall_time",
                                    json_string(fmt_seconds(json_integer_value(json_object_get(res, "duration_ms")))));
                json_object_set_new(s->rec, "memory", json_integer(json_integer_value(json_object_get(res, "peak_memory")) / 1024));
        }
        s->status = id;
        json_object_set_new(s->rec, "status", status_json(id));
        json_object_set_new(s->rec, "status_id", json_integer(id));
        strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%S.000Z", gmtime(&t));
        json_object_set_new(s->rec, "finished_at", json_string(now));
        answer_waiter(s);
        start_queued();
}

/* Start the oldest queued submissions while there is room. */
static void
start_queued(void)
{
        while (nrunning < RUNNING_MAX) {
                struct sub *oldest = NULL;
                struct xb_judge_spec spec;

                for (struct sub *s = subs; s; s = s->next)
                        if (s->status == ST_QUEUE)
                                oldest = s;
                if (!oldest)
                        return;
                oldest->status = ST_PROCESSING;
                json_object_set_new(oldest->rec, "status", status_json(ST_PROCESSING));
                json_object_set_new(oldest->rec, "status_id", json_integer(ST_PROCESSING));
                spec = oldest->spec;
                memset(&oldest->spec, 0, sizeof(oldest->spec));
                nrunning++;
                xb_judge_run(oldest->srv, oldest->tenant, &spec, sub_done, oldest);
        }
}

/* ---- requests ---- */

static bool
query_true(struct xb_req *r, const char *name)
{
        int e = 0;
        const char *v = xb_req_query(r, name, &e);

        return v && (!strcmp(v, "true") || !strcmp(v, "1"));
}

static const char *
query_fields(struct xb_req *r)
{
        int e = 0;
        const char *v = xb_req_query(r, "fields", &e);

        return v && *v ? v : DEFAULT_FIELDS;
}

static void
judge0_error(struct xb_req *r, unsigned status, const char *field, const char *msg)
{
        if (field)
                xb_reply_json(r, status, json_pack("{s:[s]}", field, msg));
        else
                xb_reply_json(r, status, json_pack("{s:s}", "error", msg));
}

/* A text field of the submission, decoded from base64 when asked; NULL
 * for absent or null (*ok stays true), else a new string. */
static char *
text_field(json_t *body, const char *key, bool b64, bool *ok)
{
        json_t *v = json_object_get(body, key);
        void *out = NULL;
        size_t n;

        if (!v || json_is_null(v))
                return NULL;
        if (!json_is_string(v) || json_string_length(v) > SOURCE_MAX) {
                *ok = false;
                return NULL;
        }
        if (!b64)
                return strdup(json_string_value(v));
        if (xb_base64_decode_alloc(json_string_value(v), json_string_length(v), SOURCE_MAX, XB_BASE64_NEWLINES, &out,
                                   &n) < 0 || memchr(out, '\0', n)) {
                free(out);
                *ok = false;
                return NULL;
        }
        return out;
}

static int
num_field(json_t *body, const char *key, double def, double max, double *ret)
{
        json_t *v = json_object_get(body, key);

        *ret = def;
        if (!v || json_is_null(v))
                return 0;
        if (json_is_string(v))
                *ret = strtod(json_string_value(v), NULL);
        else if (json_is_number(v))
                *ret = json_number_value(v);
        else
                return -1;
        return *ret > 0 && *ret <= max ? 0 : -1;
}

static void
new_token(char out[37])
{
        unsigned char b[16] = { 0 };

        if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
                for (size_t i = 0; i < sizeof(b); i++)
                        b[i] = (unsigned char)rand();
        b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
        b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
        snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
                 b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* A queued submission from one JSON object, or NULL and a 422 body in *ret_err. */
static struct sub *
sub_parse(struct xb_req *r, json_t *body, bool b64, json_t **ret_err)
{
        _cleanup_free_ char *src = NULL, *in = NULL, *expected = NULL, *argline = NULL;
        const struct xb_judge_lang *l;
        json_t *lid = json_object_get(body, "language_id");
        double cpu, wall, mem;
        bool ok = true;
        struct sub *s;
        char name[96], now[32];
        time_t t = time(NULL);

#define FAIL(field, ...) do { *ret_err = json_pack("{s:[s]}", field, __VA_ARGS__); return NULL; } while (0)
        if (!json_is_object(body))
                FAIL("submission", "must be a JSON object");
        src = text_field(body, "source_code", b64, &ok);
        if (!ok || !src)
                FAIL("source_code", b64 ? "can't be blank, and must be base64" : "can't be blank");
        if (!json_is_integer(lid))
                FAIL("language_id", "can't be blank");
        if (!(l = xb_judge_lang_judge0((int)json_integer_value(lid))))
                FAIL("language_id", "language with this id doesn't exist on this server; see GET /languages");
        in = text_field(body, "stdin", b64, &ok);
        expected = text_field(body, "expected_output", b64, &ok);
        argline = text_field(body, "command_line_arguments", false, &ok);
        if (!ok)
                FAIL("stdin", "stdin and expected_output must be strings (base64 with base64_encoded=true)");
        if (num_field(body, "cpu_time_limit", 5, 60, &cpu) < 0)
                FAIL("cpu_time_limit", "must be a number of seconds, more than 0 and at most 60");
        if (num_field(body, "wall_time_limit", 10, 150, &wall) < 0)
                FAIL("wall_time_limit", "must be a number of seconds, more than 0 and at most 150");
        if (num_field(body, "memory_limit", 128000, 16 * 1024 * 1024, &mem) < 0 || mem < 2048)
                FAIL("memory_limit", "must be a number of kilobytes, at least 2048");
#undef FAIL
        if (!(s = calloc(1, sizeof(*s))))
                return NULL;
        new_token(s->token);
        s->tenant = xb_req_tenant(r);
        s->srv = (struct xb_core *)xb_req_route_data(r);
        s->status = ST_QUEUE;
        s->cpu_limit = cpu;
        strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%S.000Z", gmtime(&t));
        s->rec = json_pack("{s:s,s:s,s:I,s:s?,s:s?,s:n,s:n,s:n,s:n,s:n,s:n,s:o,s:i,s:s,s:n,s:n,s:n,s:n,s:f,s:f,s:I,"
                           "s:{s:i,s:s},s:s?}",
                           "token", s->token, "source_code", src, "language_id", (json_int_t)l->judge0_id, "stdin", in,
                           "expected_output", expected, "stdout", "stderr", "compile_output", "message", "exit_code",
                           "exit_signal", "status", status_json(ST_QUEUE), "status_id", ST_QUEUE, "created_at", now,
                           "finished_at", "time", "wall_time", "memory", "cpu_time_limit", cpu, "wall_time_limit", wall,
                           "memory_limit", (json_int_t)mem, "language", "id", l->judge0_id, "name",
                           xb_judge0_lang_name(l, name, sizeof(name)), "command_line_arguments", argline);
        s->spec.lang = l;
        s->spec.files = json_pack("[{s:s,s:s,s:s}]", "name", l->main, "content", src, "encoding", "utf-8");
        s->spec.stdin_data = TAKE_PTR(in);
        s->spec.compile_timeout_ms = 30000;
        s->spec.run_timeout_ms = (uint64_t)(wall * 1000);
        s->spec.run_cpu_ms = (uint64_t)(cpu * 1000 + 0.5);
        s->spec.memory = (uint64_t)mem * 1024;
        if (argline) {
                s->spec.args = json_array();
                for (char *save = NULL, *w = strtok_r(argline, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save))
                        json_array_append_new(s->spec.args, json_string(w));
        }
        if (!s->rec || !s->spec.files) {
                sub_free(s);
                return NULL;
        }
        subs_trim();
        s->next = subs;
        subs = s;
        nsubs++;
        return s;
}

/* A draining server (SIGTERM) takes no new submissions: 503, as creates. */
static bool
refuse_draining(struct xb_req *r)
{
        if (!((struct xb_core *)xb_req_route_data(r))->draining)
                return false;
        judge0_error(r, 503, NULL, "the server is stopping (it drains the requests in flight) and takes no new "
                     "submissions; retry against another instance");
        return true;
}

static void
submissions_post(struct xb_req *r)
{
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        json_t *bad = NULL;
        struct xb_err err = { 0 };
        bool b64 = query_true(r, "base64_encoded");
        size_t len;
        const char *b = xb_req_body(r, &len);
        struct sub *s;

        if (refuse_draining(r))
                return;
        if (xb_jsonv_parse(b, len, &body, &err) < 0) {
                judge0_error(r, 400, NULL, err.msg);
                return;
        }
        if (!(s = sub_parse(r, body, b64, &bad))) {
                if (bad)
                        xb_reply_json(r, 422, bad);
                else
                        judge0_error(r, 503, NULL, "out of memory");
                return;
        }
        if (!query_true(r, "wait")) {
                xb_reply_json(r, 201, json_pack("{s:s}", "token", s->token));
                start_queued();
                return;
        }
        s->b64 = b64;
        s->fields = strdup(query_fields(r));
        s->waiter = r;
        xb_req_suspend(r, waiter_gone, s);
        start_queued();
}

static void
submission_get(struct xb_req *r)
{
        struct sub *s = sub_find(xb_req_param(r, 0), xb_req_tenant(r));

        if (!s) {
                judge0_error(r, 404, NULL, "Not Found");
                return;
        }
        xb_reply_json(r, 200, sub_view(s, query_fields(r), query_true(r, "base64_encoded")));
}

static void
batch_post(struct xb_req *r)
{
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        struct xb_err err = { 0 };
        bool b64 = query_true(r, "base64_encoded");
        size_t len, i;
        const char *b = xb_req_body(r, &len);
        json_t *list, *one, *out;

        if (refuse_draining(r))
                return;
        if (xb_jsonv_parse(b, len, &body, &err) < 0) {
                judge0_error(r, 400, NULL, err.msg);
                return;
        }
        list = json_object_get(body, "submissions");
        if (!json_is_array(list) || !json_array_size(list) || json_array_size(list) > BATCH_MAX) {
                judge0_error(r, 422, "submissions", "must be an array of 1 to 20 submissions");
                return;
        }
        out = json_array();
        json_array_foreach(list, i, one) {
                json_t *bad = NULL;
                struct sub *s = sub_parse(r, one, b64, &bad);

                json_array_append_new(out, s ? json_pack("{s:s}", "token", s->token)
                                             : bad ? bad : json_pack("{s:s}", "error", "out of memory"));
        }
        xb_reply_json(r, 201, out);
        start_queued();
}

static void
batch_get(struct xb_req *r)
{
        int e = 0;
        const char *tokens = xb_req_query(r, "tokens", &e);
        const char *fields = query_fields(r);
        bool b64 = query_true(r, "base64_encoded");
        _cleanup_free_ char *copy = tokens ? strdup(tokens) : NULL;
        json_t *out;

        if (!copy || !*copy) {
                judge0_error(r, 400, "tokens", "give ?tokens=TOKEN1,TOKEN2");
                return;
        }
        out = json_array();
        for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                struct sub *s = sub_find(t, xb_req_tenant(r));

                json_array_append_new(out, s ? sub_view(s, fields, b64) : json_null());
        }
        xb_reply_json(r, 200, json_pack("{s:o}", "submissions", out));
}

static void
languages_get(struct xb_req *r)
{
        size_t n;
        const struct xb_judge_lang *l = xb_judge_langs(&n);
        json_t *out = json_array();
        char name[96];

        for (size_t i = 0; i < n; i++)
                if (l[i].present)
                        json_array_append_new(out, json_pack("{s:i,s:s}", "id", l[i].judge0_id, "name",
                                                             xb_judge0_lang_name(&l[i], name, sizeof(name))));
        xb_reply_json(r, 200, out);
}

static void
language_get(struct xb_req *r)
{
        const struct xb_judge_lang *l = xb_judge_lang_judge0(atoi(xb_req_param(r, 0)));
        char name[96];

        if (!l) {
                judge0_error(r, 404, NULL, "Not Found");
                return;
        }
        xb_reply_json(r, 200, json_pack("{s:i,s:s,s:b,s:s,s:s?,s:s}", "id", l->judge0_id, "name",
                                        xb_judge0_lang_name(l, name, sizeof(name)), "is_archived", 0, "source_file",
                                        l->main, "compile_cmd", l->compile, "run_cmd", l->run[0]));
}

static void
statuses_get(struct xb_req *r)
{
        json_t *out = json_array();

        for (int i = ST_QUEUE; i <= ST_EXEC_FORMAT; i++)
                json_array_append_new(out, status_json(i));
        xb_reply_json(r, 200, out);
}

/* batch before {}: the router takes the first match */
const struct xb_route xb_judge_routes[] = {
        { "GET", "/api/v2/runtimes", xb_piston_runtimes, XB_ROUTE_XAUTH },
        { "POST", "/api/v2/execute", xb_piston_execute, XB_ROUTE_XAUTH | XB_ROUTE_PLAINJSON },
        { "POST", "/submissions/batch", batch_post, XB_ROUTE_XAUTH },
        { "GET", "/submissions/batch", batch_get, XB_ROUTE_XAUTH },
        { "POST", "/submissions", submissions_post, XB_ROUTE_XAUTH },
        { "GET", "/submissions/{}", submission_get, XB_ROUTE_XAUTH },
        { "GET", "/languages", languages_get, XB_ROUTE_XAUTH },
        { "GET", "/languages/{}", language_get, XB_ROUTE_XAUTH },
        { "GET", "/statuses", statuses_get, XB_ROUTE_XAUTH },
};
const size_t xb_judge_nroutes = sizeof(xb_judge_routes) / sizeof(xb_judge_routes[0]);
