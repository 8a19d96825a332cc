/* Parts 5 and 6 of bench_server: the warm Python cell round trip, and a
 * new sandbox to its first Python result with and without a pool of
 * pre-started sessions. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* ---- 5. warm Python cell round trip ---- */

static bool
create_python_session(struct conn *c, const char *sbx, char sid[ID_MAX])
{
        char path[160], state[32];
        struct resp r;
        bool idle;

        snprintf(path, sizeof(path), "/v1/sandboxes/%s/sessions", sbx);
        request(c, "POST", path, "{\"language\":\"python\"}", &r);
        expect_status(&r, 201, "POST .../sessions");
        if (!json_str(r.body, "id", sid, ID_MAX) || strlen(sid) != 16)
                die("no session id in %.200s", r.body);
        if (!json_str(r.body, "state", state, sizeof(state)))
                die("no session state in %.200s", r.body);
        idle = strcmp(state, "idle") == 0;
        free(r.body);
        return idle;
}

/* Run a cell whose value must be `want` (the text/plain of its result). */
static void
run_cell(struct conn *c, const char *sbx, const char *sid, const char *code_json, const char *want)
{
        char path[200], expect[80];
        struct resp r;

        snprintf(path, sizeof(path), "/v1/sandboxes/%s/sessions/%s/run", sbx, sid);
        request(c, "POST", path, code_json, &r);
        expect_status(&r, 200, "POST .../run");
        snprintf(expect, sizeof(expect), "\"text/plain\":\"%s\"", want);
        if (!strstr(r.body, "\"status\":\"ok\"") || !strstr(r.body, expect))
                die("cell %s did not give %s: %.300s", code_json, want, r.body);
        free(r.body);
}

void
bench_python_cell(const char *execbox, int n)
{
        static const char *const extra[] = { "--pool", "0", NULL };
        struct server s;
        struct conn c;
        char id[ID_MAX], sid[ID_MAX];
        double *v = calloc((size_t)n, sizeof(double)), t0;
        int warm = 50;

        server_start(&s, execbox, extra);
        conn_init(&c, s.port);
        create_sandbox(&c, id);
        create_python_session(&c, id, sid);
        t0 = now_ms();
        run_cell(&c, id, sid, "{\"code\":\"1+1\"}", "2");   /* waits for the interpreter */
        printf("\n== 5. warm Python cell round trip: %d cells after %d warmup, one keep-alive connection ==\n", n,
               warm);
        printf("(the session's cold start, to its first result: %.0f ms)\n", now_ms() - t0);
        for (int i = -warm; i < n; i++) {
                double t = now_ms();

                run_cell(&c, id, sid, "{\"code\":\"1+1\"}", "2");
                if (i >= 0)
                        v[i] = now_ms() - t;
        }
        delete_sandbox(&c, id);
        conn_close(&c);
        server_stop(&s);
        table_head();
        row("HTTP POST .../run {\"code\":\"1+1\"}", v, n);
        printf("p50 %.3f ms  (target <= 2 ms)\n", pct(v, n, 0.5));
        free(v);
}

/* ---- 6. a new sandbox to its first Python result ---- */

struct first_cell {
        double total, create, session, cell;
        bool pooled, idle, preloaded;
};

static void
first_python_result(struct conn *c, struct first_cell *f)
{
        char id[ID_MAX], sid[ID_MAX], path[200];
        double t0 = now_ms(), t1, t2;
        struct resp r;

        create_sandbox(c, id);
        t1 = now_ms();
        f->idle = create_python_session(c, id, sid);
        t2 = now_ms();
        run_cell(c, id, sid, "{\"code\":\"1+1\"}", "2");
        f->total = now_ms() - t0;
        f->create = t1 - t0;
        f->session = t2 - t1;
        f->cell = now_ms() - t2;
        /* Untimed: did it get the pre-started session (numpy and friends
         * imported before the first cell)? */
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/sessions/%s/run", id, sid);
        request(c, "POST", path, "{\"code\":\"'np' in dir() and 'pd' in dir() and 'plt' in dir()\"}", &r);
        expect_status(&r, 200, "POST .../run");
        f->preloaded = strstr(r.body, "\"text/plain\":\"True\"") != NULL;
        free(r.body);
        delete_sandbox(c, id);
}

static double
pool_hits(struct conn *c)
{
        char *m = get_text(c, "/metrics");
        double h = metric(m, "execbox_pool_claims_total{result=\"hit\"}");

        free(m);
        return h;
}

void
bench_python_first(const char *execbox, int rounds, int pause_ms)
{
        static const char *const pooled[] = { "--pool", "2", "--pool-python", NULL };
        static const char *const cold[] = { "--pool", "0", NULL };
        struct server s;
        struct conn c;
        struct first_cell f;
        double *tot = calloc((size_t)rounds, sizeof(double)), *cr = calloc((size_t)rounds, sizeof(double));
        double *se = calloc((size_t)rounds, sizeof(double)), *ce = calloc((size_t)rounds, sizeof(double));
        double cold_v[5];
        int warm = 2, hits = 0, sbx_hits = 0, ncold = 5;

        server_start(&s, execbox, pooled);
        conn_init(&c, s.port);
        for (double deadline = now_ms() + 20000; now_ms() < deadline; sleep_ms(20)) {
                char *rz = get_text(&c, "/readyz");
                long long ready = json_int(rz, "pool_ready");

                free(rz);
                if (ready >= 2)
                        break;
        }
        sleep_ms(pause_ms);   /* the pooled sessions import numpy, pandas and matplotlib */
        for (int r = -warm; r < rounds; r++) {
                double h0 = pool_hits(&c);

                first_python_result(&c, &f);
                if (r >= 0) {
                        bool sbx_hit = pool_hits(&c) > h0;

                        tot[r] = f.total;
                        cr[r] = f.create;
                        se[r] = f.session;
                        ce[r] = f.cell;
                        sbx_hits += sbx_hit;
                        hits += sbx_hit && f.idle && f.preloaded;
                }
                sleep_ms(pause_ms);
        }
        conn_close(&c);
        server_stop(&s);

        server_start(&s, execbox, cold);
        conn_init(&c, s.port);
        for (int r = 0; r < ncold; r++) {
                first_python_result(&c, &f);
                if (f.preloaded)
                        die("a session on a server without --pool-python had numpy imported");
                cold_v[r] = f.total;
        }
        conn_close(&c);
        server_stop(&s);

        printf("\n== 6. new sandbox to its first Python result: %d rounds, server --pool 2 --pool-python, %d ms pause "
               "between rounds ==\n", rounds, pause_ms);
        table_head();
        row("POST sandbox + POST session + run 1+1", tot, rounds);
        row("  of which: POST /v1/sandboxes", cr, rounds);
        row("  of which: POST .../sessions {python}", se, rounds);
        row("  of which: first cell 1+1", ce, rounds);
        row("the same, server --pool 0 (cold; 5 rounds)", cold_v, ncold);
        printf("p50 %.1f ms  (target <= 100 ms)\n", pct(tot, rounds, 0.5));
        printf("pool hit rate:                             %.1f%% (%d of %d got a pooled sandbox with its pre-started "
               "session ready, numpy/pandas/matplotlib imported; %d got a pooled sandbox)\n",
               100.0 * hits / rounds, hits, rounds, sbx_hits);
        printf("for scale: E2B quotes ~150 ms just to create a sandbox; Debian's ipykernel takes ~1.3 s to start "
               "cold\n");
        free(tot);
        free(cr);
        free(se);
        free(ce);
}

