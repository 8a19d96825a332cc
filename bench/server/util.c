/* bench_server's utilities: fatal errors, time, percentiles and the
 * result table, the peers it measures against (a bare posix_spawn, bwrap),
 * and the server under test, started in a temporary state directory and
 * stopped with SIGTERM to its pid. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

extern char **environ;

static pid_t running_server;   /* the server to stop if the bench dies */

void
die(const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        fputs("bench_server: ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        if (running_server > 0 && kill(running_server, SIGTERM) == 0)
                waitpid(running_server, NULL, 0);   /* it removes its sandboxes */
        exit(1);
}

double
now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void
sleep_ms(double ms)
{
        struct timespec ts = { (time_t)(ms / 1000), (long)((ms - (time_t)(ms / 1000) * 1000) * 1e6) };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static int
cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

/* Percentile of a sorted copy. */
double
pct(const double *v, int n, double p)
{
        double *s = malloc((size_t)n * sizeof(*s)), r;

        if (!s)
                die("out of memory");
        memcpy(s, v, (size_t)n * sizeof(*s));
        qsort(s, (size_t)n, sizeof(*s), cmp_double);
        r = s[(int)(p * (n - 1) + 0.5)];
        free(s);
        return r;
}
int
env_int(const char *name, int def, int min)
{
        const char *v = getenv(name);
        int n = v ? atoi(v) : def;

        return n < min ? min : n;
}

/* POST .../sessions {"language":"python"}; the session id, and whether it
 * was already running (a pooled session is). */
/* ---- peers ---- */

double
spawn_wait(char **argv)
{
        posix_spawn_file_actions_t fa;
        double t0 = now_ms();
        pid_t pid;
        int status;

        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0)
                die("cannot run %s", argv[0]);
        posix_spawn_file_actions_destroy(&fa);
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                die("%s failed (status %#x)", argv[0], status);
        return now_ms() - t0;
}

void
row(const char *name, const double *v, int n)
{
        printf("%-44s %9.3f %9.3f %9.3f\n", name, pct(v, n, 0.5), pct(v, n, 0.9), pct(v, n, 0.0));
}

void
table_head(void)
{
        printf("%-44s %9s %9s %9s\n", "", "p50 ms", "p90 ms", "min ms");
}

/* ---- the server under test ---- */

void
server_start(struct server *s, const char *execbox, const char *const *extra)
{
        char state[128], out[128], err[128], line[512] = "";
        const char *argv[32];
        int n = 0, fdo, fde;
        posix_spawn_file_actions_t fa;
        double deadline;

        snprintf(s->dir, sizeof(s->dir), "/tmp/xbbench.XXXXXX");
        if (!mkdtemp(s->dir))
                die("mkdtemp: %s", strerror(errno));
        snprintf(state, sizeof(state), "%s/state", s->dir);
        snprintf(out, sizeof(out), "%s/stdout", s->dir);
        snprintf(err, sizeof(err), "%s/stderr", s->dir);
        argv[n++] = execbox;
        argv[n++] = "serve";
        argv[n++] = "--listen";
        argv[n++] = "127.0.0.1:0";
        argv[n++] = "--state-dir";
        argv[n++] = state;
        argv[n++] = "--no-auth";
        for (; extra && *extra && n < 30; extra++)
                argv[n++] = *extra;
        argv[n] = NULL;
        fdo = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        fde = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fdo < 0 || fde < 0)
                die("open %s: %s", out, strerror(errno));
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, fdo, 1);
        posix_spawn_file_actions_adddup2(&fa, fde, 2);
        if (posix_spawn(&s->pid, execbox, &fa, NULL, (char **)argv, environ) != 0)
                die("cannot start %s", execbox);
        running_server = s->pid;
        posix_spawn_file_actions_destroy(&fa);
        close(fdo);
        close(fde);
        deadline = now_ms() + 20000;
        for (;;) {
                FILE *f = fopen(out, "r");
                const char *p;

                if (f) {
                        if (!fgets(line, sizeof(line), f))
                                line[0] = '\0';
                        fclose(f);
                }
                if ((p = strstr(line, "listening on http://127.0.0.1:"))) {
                        s->port = atoi(p + strlen("listening on http://127.0.0.1:"));
                        break;
                }
                if (waitpid(s->pid, NULL, WNOHANG) == s->pid)
                        die("execbox serve exited at start; see %s", err);
                if (now_ms() > deadline)
                        die("execbox serve did not start in 20 s; see %s", err);
                sleep_ms(5);
        }
        /* Ready when /healthz answers. */
        {
                struct conn c;
                struct resp r;

                conn_init(&c, s->port);
                request(&c, "GET", "/healthz", NULL, &r);
                expect_status(&r, 200, "/healthz");
                free(r.body);
                conn_close(&c);
        }
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

void
server_stop(struct server *s)
{
        int status = 0;
        double deadline = now_ms() + 15000;
        pid_t r;

        running_server = 0;
        if (kill(s->pid, SIGTERM) < 0)
                die("kill %d: %s", (int)s->pid, strerror(errno));
        while ((r = waitpid(s->pid, &status, WNOHANG)) == 0) {
                if (now_ms() > deadline) {
                        kill(s->pid, SIGKILL);
                        waitpid(s->pid, &status, 0);
                        die("execbox serve (pid %d) did not stop within 15 s of SIGTERM", (int)s->pid);
                }
                sleep_ms(10);
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                char err[128];

                snprintf(err, sizeof(err), "%s/stderr", s->dir);
                fprintf(stderr, "bench_server: warning: execbox serve exited with status %#x; its log: %s\n", status,
                        err);
                return;   /* keep the directory for the log */
        }
        nftw(s->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

long
vm_rss_kb(pid_t pid)
{
        char path[64], line[256];
        FILE *f;
        long kb = -1;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        if (!(f = fopen(path, "r")))
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
                        break;
        fclose(f);
        return kb;
}

/* VmRSS summed over the direct children of pid (the sandboxes' inits). */
long
children_rss_kb(pid_t pid, long *total_kb)
{
        DIR *d = opendir("/proc");
        struct dirent *de;
        long n = 0;

        *total_kb = 0;
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                char path[300], line[256];
                FILE *f;
                long ppid = -1, kb = 0;

                if (!isdigit((unsigned char)de->d_name[0]))
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
                if (!(f = fopen(path, "r")))
                        continue;
                while (fgets(line, sizeof(line), f)) {
                        sscanf(line, "PPid: %ld", &ppid);
                        sscanf(line, "VmRSS: %ld kB", &kb);
                }
                fclose(f);
                if (ppid == pid) {
                        n++;
                        *total_kb += kb;
                }
        }
        closedir(d);
        return n;
}

