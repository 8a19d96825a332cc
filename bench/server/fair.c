/* Part 7 of bench_server: CPU fairness between sandboxes. B's warm exec
 * round trip while idle, then while 64 processes spin in sandbox A (a
 * background process started there). Every sandbox has an equal CPU
 * weight below the daemon's, so B's median should stay within 2x. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

#define SPIN "{\"cmd\":\"for i in $(seq 64); do sh -c 'while :; do :; done' & done; wait\"}"

static void
measure(struct conn *c, const char *id, double *v, int rounds)
{
        for (int r = -20; r < rounds; r++) {
                double t0 = now_ms();

                exec_true(c, id);
                if (r >= 0)
                        v[r] = now_ms() - t0;
        }
}

void
bench_fair_cpu(const char *execbox, int rounds)
{
        struct server s;
        struct conn c;
        struct resp r = { 0 };
        char a[ID_MAX], b[ID_MAX], path[160];
        double *idle = calloc((size_t)rounds, sizeof(double)), *busy = calloc((size_t)rounds, sizeof(double));

        server_start(&s, execbox, NULL);
        conn_init(&c, s.port);
        create_sandbox(&c, a);
        create_sandbox(&c, b);
        measure(&c, b, idle, rounds);
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes", a);
        request(&c, "POST", path, SPIN, &r);
        expect_status(&r, 201, "start 64 spinners in sandbox A");
        free(r.body);
        sleep_ms(1000);   /* let them all run */
        measure(&c, b, busy, rounds);
        delete_sandbox(&c, a);
        delete_sandbox(&c, b);
        conn_close(&c);
        server_stop(&s);
        printf("\n== 7. CPU fairness: sandbox B's exec {\"argv\":[\"/bin/true\"]}, %d rounds ==\n", rounds);
        table_head();
        row("B, all sandboxes idle", idle, rounds);
        row("B, 64 spinning processes in sandbox A", busy, rounds);
        printf("ratio B busy / B idle (p50):               %.2f  (target <= 2.00)\n",
               pct(busy, rounds, 0.5) / pct(idle, rounds, 0.5));
        free(idle);
        free(busy);
}
