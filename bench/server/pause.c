/* Part 7 of bench_server: the pause + resume round trip (POST .../pause,
 * then POST .../resume, one keep-alive connection) of a sandbox whose
 * process holds 1 GiB of touched memory, beside an idle sandbox's. The
 * freezer stops tasks without touching their memory, so the two should
 * match. Each pause answers only once the kernel says the group is frozen,
 * and the round trip checks both replies' states. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define HOLD "python3 -c \\\"import time; b = bytearray(b'x') * (1 << 30); open('/tmp/held', 'w').close(); " \
             "time.sleep(3600)\\\""

static void
pause_resume(struct conn *c, const char *id)
{
        char path[128];
        struct resp r;

        snprintf(path, sizeof(path), "/v1/sandboxes/%s/pause", id);
        request(c, "POST", path, "{}", &r);
        expect_status(&r, 200, "POST .../pause");
        if (!strstr(r.body, "\"state\":\"paused\""))
                die("pause did not pause: %.300s", r.body);
        free(r.body);
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/resume", id);
        request(c, "POST", path, "{}", &r);
        expect_status(&r, 200, "POST .../resume");
        if (!strstr(r.body, "\"state\":\"running\""))
                die("resume did not resume: %.300s", r.body);
        free(r.body);
}

static void
rounds(struct conn *c, const char *id, double *v, int n)
{
        for (int i = -20; i < n; i++) {
                double t = now_ms();

                pause_resume(c, id);
                if (i >= 0)
                        v[i] = now_ms() - t;
        }
}

void
bench_pause(const char *execbox, int n)
{
        static const char *const extra[] = { "--pool", "0", "--memory", "2G", NULL };
        struct server s;
        struct conn c;
        char idle[ID_MAX], held[ID_MAX], path[128];
        double *vi = calloc((size_t)n, sizeof(double)), *vh = calloc((size_t)n, sizeof(double));
        struct resp r;

        server_start(&s, execbox, extra);
        conn_init(&c, s.port);
        create_sandbox(&c, idle);
        create_sandbox(&c, held);
        snprintf(path, sizeof(path), "/v1/sandboxes/%s/processes", held);
        request(&c, "POST", path, "{\"cmd\":\"" HOLD "\"}", &r);
        expect_status(&r, 201, "POST .../processes (hold 1 GiB)");
        free(r.body);
        for (int i = 0;; i++) {
                snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", held);
                request(&c, "POST", path, "{\"cmd\":\"test -e /tmp/held\"}", &r);
                expect_status(&r, 200, "POST .../exec");
                if (strstr(r.body, "\"exit_code\":0,")) {
                        free(r.body);
                        break;
                }
                free(r.body);
                if (i > 300)
                        die("the 1 GiB holder never got ready");
                sleep_ms(100);
        }
        printf("\n== 7. pause + resume round trip: %d rounds after 20 warmup, one keep-alive connection ==\n", n);
        rounds(&c, idle, vi, n);
        rounds(&c, held, vh, n);
        delete_sandbox(&c, idle);
        delete_sandbox(&c, held);
        conn_close(&c);
        server_stop(&s);
        table_head();
        row("POST .../pause + .../resume, idle sandbox", vi, n);
        row("POST .../pause + .../resume, 1 GiB held", vh, n);
        printf("p50 %.3f ms with 1 GiB held  (target <= 1 ms)\n", pct(vh, n, 0.5));
        free(vi);
        free(vh);
}
