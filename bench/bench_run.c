/* make bench: `execbox run -- /bin/true` against bubblewrap with the same
 * view (read-only /usr, /proc, /dev, a tmpfs /tmp, every namespace) and
 * against a bare fork and exec of /bin/true. The three interleave in one
 * process, so machine noise hits each alike; medians and ratios print.
 *
 * usage: bench_run EXECBOX [ROUNDS] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct variant {
        const char *name;
        char **argv;
        double *ms;
};

static double
now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double
run_once(char **argv)
{
        posix_spawn_file_actions_t fa;
        double t0 = now_ms();
        pid_t pid;
        int status;

        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
                perror(argv[0]);
                exit(1);
        }
        posix_spawn_file_actions_destroy(&fa);
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "%s failed (status %d)\n", argv[0], status);
                exit(1);
        }
        return now_ms() - t0;
}

static int
cmp(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

static double
pct(double *v, int n, double p)
{
        qsort(v, (size_t)n, sizeof(*v), cmp);
        return v[(int)(p * (n - 1))];
}

int
main(int argc, char **argv)
{
        char *execbox[] = { argv[1], "run", "--", "/bin/true", NULL };
        char *bwrap[] = { "/usr/bin/bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr",
                          "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink",
                          "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
                          "/bin/true", NULL };
        char *bare[] = { "/bin/true", NULL };
        int rounds = argc > 2 ? atoi(argv[2]) : 300, warm = 20;
        struct variant v[] = {
                { "execbox run -- /bin/true", execbox, NULL },
                { "bwrap --unshare-all /bin/true", bwrap, NULL },
                { "fork+exec /bin/true", bare, NULL },
        };
        int nv = 3;

        if (argc < 2) {
                fputs("usage: bench_run EXECBOX [ROUNDS]\n", stderr);
                return 2;
        }
        for (int i = 0; i < nv; i++)
                v[i].ms = calloc((size_t)rounds, sizeof(double));
        for (int r = -warm; r < rounds; r++)
                for (int i = 0; i < nv; i++) {
                        double ms = run_once(v[i].argv);

                        if (r >= 0)
                                v[i].ms[r] = ms;
                }
        printf("\n== sandbox start: %d interleaved rounds ==\n", rounds);
        printf("%-32s %9s %9s %9s\n", "", "p50 ms", "p90 ms", "min ms");
        double med[3];
        for (int i = 0; i < nv; i++) {
                med[i] = pct(v[i].ms, rounds, 0.5);
                printf("%-32s %9.3f %9.3f %9.3f\n", v[i].name, med[i], pct(v[i].ms, rounds, 0.9),
                       pct(v[i].ms, rounds, 0.0));
        }
        printf("ratio execbox / bwrap (p50):     %.2f  (target <= 1.00)\n", med[0] / med[1]);
        printf("ratio execbox / fork+exec (p50): %.2f\n", med[0] / med[2]);
        return 0;
}
