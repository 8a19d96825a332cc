/* Part 4 of bench_server: the server's resident memory with 1,000 idle
 * sandboxes, and what their inits take. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* ---- 4. memory of idle sandboxes ---- */

void
bench_memory(const char *execbox, int n)
{
        static const char *const extra[] = { "--pool", "0", "--max-sandboxes", "1100", NULL };
        struct server s;
        struct conn c;
        char (*ids)[ID_MAX] = calloc((size_t)n, ID_MAX);
        long rss0, rss1, rss2, kids_kb, nkids;
        double t0, t_create, t_delete, *each = calloc((size_t)n, sizeof(double));
        char *rz;

        server_start(&s, execbox, extra);
        conn_init(&c, s.port);
        {
                char id[ID_MAX];

                create_sandbox(&c, id);   /* warm the code paths before the baseline */
                exec_true(&c, id);
                delete_sandbox(&c, id);
        }
        sleep_ms(200);
        rss0 = vm_rss_kb(s.pid);
        t0 = now_ms();
        for (int i = 0; i < n; i++) {
                double tc = now_ms();

                create_sandbox(&c, ids[i]);
                each[i] = now_ms() - tc;
        }
        t_create = now_ms() - t0;
        rz = get_text(&c, "/readyz");
        if (json_int(rz, "sandboxes") != n)
                die("/readyz says %lld sandboxes, expected %d", json_int(rz, "sandboxes"), n);
        free(rz);
        exec_true(&c, ids[n - 1]);
        exec_true(&c, ids[0]);
        sleep_ms(200);
        rss1 = vm_rss_kb(s.pid);
        nkids = children_rss_kb(s.pid, &kids_kb);
        t0 = now_ms();
        for (int i = 0; i < n; i++)
                delete_sandbox(&c, ids[i]);
        t_delete = now_ms() - t0;
        for (double deadline = now_ms() + 10000;; sleep_ms(50)) {
                long long left;

                rz = get_text(&c, "/readyz");
                left = json_int(rz, "sandboxes");
                free(rz);
                if (left == 0)
                        break;
                if (now_ms() > deadline)
                        die("%lld sandboxes remain after deleting all", left);
        }
        {
                char *m = get_text(&c, "/metrics");

                if (metric(m, "execbox_sandboxes") != 0)
                        die("execbox_sandboxes is not 0 after deleting all");
                free(m);
        }
        sleep_ms(500);
        rss2 = vm_rss_kb(s.pid);
        conn_close(&c);
        server_stop(&s);
        printf("\n== 4. server memory with %d idle sandboxes (--pool 0) ==\n", n);
        printf("VmRSS before:                              %8.1f MiB\n", rss0 / 1024.0);
        printf("VmRSS with %d sandboxes:                 %8.1f MiB  (target < 64)\n", n, rss1 / 1024.0);
        printf("VmRSS after deleting them all:             %8.1f MiB\n", rss2 / 1024.0);
        printf("per sandbox, in the server:                %8.1f KiB\n", (rss1 - rss0) / (double)n);
        printf("the sandboxes' own inits (%ld processes):   %8.1f MiB VmRSS in all, %.1f KiB each\n", nkids,
               kids_kb / 1024.0, nkids ? kids_kb / (double)nkids : 0.0);
        printf("created %d in %.0f ms (cold, p50 %.2f ms: first 100 %.2f ms, last 100 %.2f ms); deleted in %.0f ms; "
               "count back to 0\n", n, t_create, pct(each, n, 0.5), pct(each, 100, 0.5), pct(each + n - 100, 100, 0.5),
               t_delete);
        free(each);
        free(ids);
}

