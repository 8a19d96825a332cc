/* Part 7 of bench_server: layered roots. Create + first exec + delete
 * with no pool, layered (--layers disk, the default) against the tmpfs
 * image (--layers none), interleaved round by round on two servers; then
 * snapshot and fork of a sandbox that wrote 200 MB (each followed by the
 * deletion of what it made, not timed). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static double
create_exec_delete_body(struct conn *c, const char *body)
{
        char id[ID_MAX];
        double t0 = now_ms(), t;

        create_sandbox_body(c, body, id);
        exec_true(c, id);
        t = now_ms() - t0;
        delete_sandbox(c, id);
        return t;
}

static double
create_exec_delete(struct conn *c)
{
        return create_exec_delete_body(c, "{}");
}

/* A template of about mb MiB built from steps, against base, interleaved
 * on one server: overlay mounting must not depend on the template's size. */
static void
bench_big_template(struct conn *c, int rounds, int warm)
{
        int mb = env_int("BENCH_TEMPLATE_MB", 1024, 1);
        double *lt = calloc((size_t)rounds, sizeof(double)), *lb = calloc((size_t)rounds, sizeof(double));
        char body[512];
        struct resp r;
        double t0 = now_ms(), build_ms;

        /* Many files and one big one: what an install leaves, roughly. */
        snprintf(body, sizeof(body), "{\"name\":\"bench-big\",\"run\":[\"mkdir -p /opt/big && cd /opt/big && "
                 "for i in $(seq 1 2000); do echo $i > f$i; done && head -c %dM /dev/urandom > blob && sync\"],"
                 "\"timeout_s\":900,\"limits\":{\"disk\":%llu}}", mb, ((unsigned long long)mb + 512) << 20);
        request(c, "POST", "/v1/templates", body, &r);
        expect_status(&r, 201, "POST /v1/templates (a big template)");
        free(r.body);
        build_ms = now_ms() - t0;
        for (int i = -warm; i < rounds; i++) {
                double a = create_exec_delete_body(c, "{\"template\":\"bench-big\"}");
                double b = create_exec_delete(c);

                if (i >= 0) {
                        lt[i] = a;
                        lb[i] = b;
                }
        }
        for (int k = 0; k < 100; k++) {
                request(c, "DELETE", "/v1/templates/bench-big", NULL, &r);
                free(r.body);
                if (r.status == 204)
                        break;
                sleep_ms(100);   /* its last sandbox's end is under way */
        }
        printf("\n== 7a. create + first exec from a %d MiB template (built in %.1f s) against base, "
               "%d interleaved rounds, --pool 0 ==\n", mb, build_ms / 1000, rounds);
        table_head();
        row("create + first exec + delete, the big template", lt, rounds);
        row("create + first exec + delete, base", lb, rounds);
        printf("median template %.1f ms, base %.1f ms: ratio %.2f  (target <= 1.2)\n", pct(lt, rounds, 0.5),
               pct(lb, rounds, 0.5), pct(lt, rounds, 0.5) / pct(lb, rounds, 0.5));
        free(lt);
        free(lb);
}

void
bench_layers(const char *execbox, int rounds)
{
        static const char *const disk[] = { "--pool", "0", "--layers", "disk", NULL };
        static const char *const none[] = { "--pool", "0", "--layers", "none", NULL };
        double *ld = calloc((size_t)rounds, sizeof(double)), *ln = calloc((size_t)rounds, sizeof(double));
        double *snap = calloc((size_t)rounds, sizeof(double)), *fork_ms = calloc((size_t)rounds, sizeof(double));
        struct server sd, sn;
        struct conn cd, cn;
        char id[ID_MAX], path[256], body[128];
        struct resp r;
        int warm = 5;

        server_start(&sd, execbox, disk);
        server_start(&sn, execbox, none);
        conn_init(&cd, sd.port);
        conn_init(&cn, sn.port);
        for (int i = -warm; i < rounds; i++) {
                double a = create_exec_delete(&cd), b = create_exec_delete(&cn);

                if (i >= 0) {
                        ld[i] = a;
                        ln[i] = b;
                }
        }
        conn_close(&cn);
        server_stop(&sn);
        bench_big_template(&cd, rounds, warm);

        create_sandbox(&cd, id);
        exec_ok(&cd, id, "{\"cmd\":\"head -c 200M /dev/urandom > /home/user/big && sync\",\"timeout_s\":300}",
                "write 200 MB");
        for (int i = -warm; i < rounds; i++) {
                double t0;
                char kid[ID_MAX] = "", *p;

                snprintf(path, sizeof(path), "/v1/sandboxes/%s/snapshot", id);
                snprintf(body, sizeof(body), "{\"name\":\"bench-%d\"}", i + warm);
                t0 = now_ms();
                request(&cd, "POST", path, body, &r);
                if (i >= 0)
                        snap[i] = now_ms() - t0;
                expect_status(&r, 201, "snapshot");
                free(r.body);
                snprintf(path, sizeof(path), "/v1/templates/bench-%d", i + warm);
                request(&cd, "DELETE", path, NULL, &r);
                expect_status(&r, 204, "delete template");
                free(r.body);

                snprintf(path, sizeof(path), "/v1/sandboxes/%s/fork", id);
                t0 = now_ms();
                request(&cd, "POST", path, "{\"count\":1}", &r);
                if (i >= 0)
                        fork_ms[i] = now_ms() - t0;
                expect_status(&r, 201, "fork");
                /* {"sandboxes":[{"id":"..." */
                p = strstr(r.body, "\"id\":\"");
                if (!p || sscanf(p + 6, "%63[a-z0-9]", kid) != 1)
                        die("fork: no child id in %s", r.body);
                free(r.body);
                delete_sandbox(&cd, kid);
        }
        delete_sandbox(&cd, id);
        conn_close(&cd);
        server_stop(&sd);

        printf("\n== 7. layered roots: %d interleaved rounds, servers with --pool 0 ==\n", rounds);
        table_head();
        row("create + first exec + delete, --layers disk", ld, rounds);
        row("create + first exec + delete, --layers none", ln, rounds);
        printf("ratio layered / tmpfs image (p50):          %.2f\n", pct(ld, rounds, 0.5) / pct(ln, rounds, 0.5));
        printf("a sandbox that wrote 200 MB (synced):\n");
        table_head();
        row("POST .../snapshot (freeze included)", snap, rounds);
        row("POST .../fork {\"count\":1}", fork_ms, rounds);
        printf("snapshot p50 %.1f ms, fork p50 %.1f ms  (target <= 50 ms each)\n", pct(snap, rounds, 0.5),
               pct(fork_ms, rounds, 0.5));
        free(ld);
        free(ln);
        free(snap);
        free(fork_ms);
}
