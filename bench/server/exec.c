/* Parts 1-3 of bench_server: the warm exec round trip (REST and MCP) and
 * its floor, sandbox start against bwrap, and exec throughput from 16
 * client threads. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* ---- 1. warm exec round trip ---- */

void
bench_warm_exec(const char *execbox, int rounds)
{
        static const char *const extra[] = { "--pool", "1", NULL };
        char *bare[] = { "/bin/true", NULL };
        struct server s;
        struct conn c;
        struct mcp m;
        char id[ID_MAX];
        double *http = calloc((size_t)rounds, sizeof(double)), *fork_ms = calloc((size_t)rounds, sizeof(double));
        double *cmd = calloc((size_t)rounds, sizeof(double)), *tool = calloc((size_t)rounds, sizeof(double));
        int warm = 50;

        server_start(&s, execbox, extra);
        conn_init(&c, s.port);
        create_sandbox(&c, id);
        mcp_open(&m, s.port);
        for (int r = -warm; r < rounds; r++) {
                double t0 = now_ms(), a, b, t1, d, t2, e;

                exec_true(&c, id);
                a = now_ms() - t0;
                b = spawn_wait(bare);
                /* What run_command does, over REST and over MCP: bash -c true. */
                t1 = now_ms();
                exec_ok(&c, id, "{\"cmd\":\"true\"}", "true");
                d = now_ms() - t1;
                t2 = now_ms();
                mcp_run_command(&m, id, "true");
                e = now_ms() - t2;
                if (r >= 0) {
                        http[r] = a;
                        fork_ms[r] = b;
                        cmd[r] = d;
                        tool[r] = e;
                }
        }
        mcp_close(&m);
        delete_sandbox(&c, id);
        conn_close(&c);
        server_stop(&s);
        printf("\n== 1. warm exec round trip: %d interleaved rounds, one keep-alive connection ==\n", rounds);
        table_head();
        row("HTTP POST exec {\"argv\":[\"/bin/true\"]}", http, rounds);
        row("posix_spawn+waitpid /bin/true", fork_ms, rounds);
        printf("ratio exec over HTTP / fork+exec (p50):    %.2f  (target <= 1.50)\n",
               pct(http, rounds, 0.5) / pct(fork_ms, rounds, 0.5));
        printf("ratio exec over HTTP / fork+exec (p90):    %.2f\n", pct(http, rounds, 0.9) / pct(fork_ms, rounds, 0.9));
        printf("run_command's command (bash -c true) by REST and by MCP (one Streamable HTTP session, "
               "its own connection):\n");
        table_head();
        row("HTTP POST exec {\"cmd\":\"true\"}", cmd, rounds);
        row("MCP tools/call run_command {\"cmd\":\"true\"}", tool, rounds);
        printf("ratio MCP run_command / REST exec cmd (p50): %.2f\n", pct(tool, rounds, 0.5) / pct(cmd, rounds, 0.5));
        printf("ratio MCP run_command / REST exec cmd (p90): %.2f\n", pct(tool, rounds, 0.9) / pct(cmd, rounds, 0.9));
        free(http);
        free(fork_ms);
        free(cmd);
        free(tool);
}

/* ---- 2. create + first exec + delete ---- */

void
bench_create(const char *execbox, int rounds)
{
        static const char *const extra[] = { "--pool", "4", NULL };
        char *bwrap[] = { "/usr/bin/bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
                          "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink",
                          "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
                          "/bin/true", NULL };
        struct server s;
        struct conn c;
        double *ce = calloc((size_t)rounds, sizeof(double)), *del = calloc((size_t)rounds, sizeof(double));
        double *bw = calloc((size_t)rounds, sizeof(double)), hits0, miss0, hits, miss;
        double *cr = calloc((size_t)rounds, sizeof(double)), *fe = calloc((size_t)rounds, sizeof(double));
        char *m;
        int warm = 10, pause_ms = getenv("BENCH_PAUSE_MS") ? atoi(getenv("BENCH_PAUSE_MS")) : 25;

        server_start(&s, execbox, extra);
        conn_init(&c, s.port);
        /* Let the pool fill before the first round. */
        for (double deadline = now_ms() + 5000; now_ms() < deadline; sleep_ms(10)) {
                char *rz = get_text(&c, "/readyz");
                long long ready = json_int(rz, "pool_ready");

                free(rz);
                if (ready >= 4)
                        break;
        }
        m = get_text(&c, "/metrics");
        hits0 = metric(m, "execbox_pool_claims_total{result=\"hit\"}");
        miss0 = metric(m, "execbox_pool_claims_total{result=\"miss\"}");
        free(m);
        for (int r = -warm; r < rounds; r++) {
                char id[ID_MAX];
                double t0 = now_ms(), tc, t1, t2, b;

                create_sandbox(&c, id);
                tc = now_ms();
                exec_true(&c, id);
                t1 = now_ms();
                delete_sandbox(&c, id);
                t2 = now_ms();
                b = spawn_wait(bwrap);
                if (r >= 0) {
                        ce[r] = t1 - t0;
                        cr[r] = tc - t0;
                        fe[r] = t1 - tc;
                        del[r] = t2 - t1;
                        bw[r] = b;
                }
                sleep_ms(pause_ms);   /* the pool refills one sandbox per loop turn */
        }
        m = get_text(&c, "/metrics");
        hits = metric(m, "execbox_pool_claims_total{result=\"hit\"}") - hits0;
        miss = metric(m, "execbox_pool_claims_total{result=\"miss\"}") - miss0;
        free(m);
        conn_close(&c);
        server_stop(&s);
        printf("\n== 2. sandbox start: %d interleaved rounds, server --pool 4, %d ms pause between rounds ==\n",
               rounds, pause_ms);
        table_head();
        row("HTTP create + first exec /bin/true", ce, rounds);
        row("  of which: create (POST /v1/sandboxes)", cr, rounds);
        row("  of which: first exec", fe, rounds);
        row("HTTP delete", del, rounds);
        row("bwrap --unshare-all ... /bin/true", bw, rounds);
        printf("ratio create+first exec / bwrap (p50):     %.2f  (target <= 0.50)\n",
               pct(ce, rounds, 0.5) / pct(bw, rounds, 0.5));
        printf("pool hit rate:                             %.1f%% (%.0f hits, %.0f misses, warmup included)\n",
               hits + miss > 0 ? 100.0 * hits / (hits + miss) : 0.0, hits, miss);
        free(ce);
        free(cr);
        free(fe);
        free(del);
        free(bw);
}

/* ---- 3. throughput ---- */

struct worker {
        int port;
        char id[ID_MAX];
        double until;
        long count;
        pthread_t th;
};

static void *
worker_main(void *arg)
{
        struct worker *w = arg;
        struct conn c;

        conn_init(&c, w->port);
        while (now_ms() < w->until) {
                exec_true(&c, w->id);
                w->count++;
        }
        conn_close(&c);
        return NULL;
}

static double
throughput(int port, char ids[][ID_MAX], int nthreads, int nsandboxes, double seconds)
{
        struct worker *w = calloc((size_t)nthreads, sizeof(*w));
        double t0, until;
        long total = 0;

        /* A short warmup on every sandbox. */
        {
                struct conn c;

                conn_init(&c, port);
                for (int i = 0; i < nsandboxes; i++)
                        for (int k = 0; k < 5; k++)
                                exec_true(&c, ids[i]);
                conn_close(&c);
        }
        t0 = now_ms();
        until = t0 + seconds * 1000;
        for (int i = 0; i < nthreads; i++) {
                w[i].port = port;
                w[i].until = until;
                snprintf(w[i].id, sizeof(w[i].id), "%s", ids[i % nsandboxes]);
                if (pthread_create(&w[i].th, NULL, worker_main, &w[i]) != 0)
                        die("pthread_create");
        }
        for (int i = 0; i < nthreads; i++) {
                pthread_join(w[i].th, NULL);
                total += w[i].count;
        }
        {
                double rate = total / ((now_ms() - t0) / 1000.0);

                free(w);
                return rate;
        }
}

void
bench_throughput(const char *execbox, double seconds)
{
        static const char *const extra[] = { "--pool", "0", NULL };
        enum { NT = 16 };
        struct server s;
        struct conn c;
        char ids[NT][ID_MAX];
        double own, shared;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

        server_start(&s, execbox, extra);
        conn_init(&c, s.port);
        for (int i = 0; i < NT; i++)
                create_sandbox(&c, ids[i]);
        own = throughput(s.port, ids, NT, NT, seconds);
        shared = throughput(s.port, ids, NT, 4, seconds);
        {
                char *m = get_text(&c, "/metrics");
                double ok = metric(m, "execbox_execs_total{status=\"ok\"}");

                free(m);
                for (int i = 0; i < NT; i++)
                        delete_sandbox(&c, ids[i]);
                conn_close(&c);
                server_stop(&s);
                printf("\n== 3. exec throughput: %d client threads, each its own keep-alive connection, %.0f s, "
                       "%ld CPUs ==\n", NT, seconds, ncpu);
                printf("16 sandboxes, one per thread:              %8.0f execs/s  (target >= 1500)\n", own);
                printf("4 sandboxes, each shared by 4 threads:     %8.0f execs/s\n", shared);
                printf("(the server counted %.0f ok execs in all)\n", ok);
        }
}
