/* Part 7 of bench_server: requests per second through a published port
 * (GET /v1/sandboxes/{id}/ports/8080/ on keep-alive connections to the
 * daemon) against the same server inside reached directly (a socket made
 * in the sandbox's network namespace, connected to its 127.0.0.1:8080).
 * The server is `python3 -m http.server` (HTTP/1.0: one connection per
 * request, which the daemon opens per request too). Sequential requests,
 * interleaved one by one, then 8 threads for 2 s per side, three rounds
 * each, alternating; medians quoted. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"

#define MARKER "xbbenchports"
#define THREADS 8

static char page_path[160];
static int net_fd = -1;          /* the sandbox's network namespace */
static int daemon_port;
static size_t want_len;

/* The host pid of the process whose command line holds MARKER. */
static pid_t
find_marked(void)
{
        DIR *d = opendir("/proc");
        struct dirent *e;
        pid_t found = 0;

        while (d && (e = readdir(d)) && !found) {
                char path[64], buf[512];
                ssize_t n;
                int fd;

                if (e->d_name[0] < '1' || e->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
                if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
                        continue;
                n = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                for (ssize_t i = 0; i < n; i++)
                        if (!buf[i])
                                buf[i] = ' ';
                if (n > 0 && (buf[n] = '\0', strstr(buf, MARKER)) && strstr(buf, "http.server") && !strstr(buf, "bash"))
                        found = atoi(e->d_name);
        }
        if (d)
                closedir(d);
        return found;
}

/* One GET straight to the server inside; this thread must be in its netns.
 * The body's length (the server closes after it). */
static size_t
direct_get(void)
{
        struct sockaddr_in a = { .sin_family = AF_INET,
                                 .sin_port = htons(8080),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        static const char req[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
        char buf[16384];
        size_t got = 0;
        char *body = NULL;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ssize_t n;
        char acc[65536];

        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
                die("cannot connect to the server inside directly");
        if (write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1)
                die("write");
        while ((n = read(fd, buf, sizeof(buf))) > 0) {
                if (got + (size_t)n > sizeof(acc))
                        die("the page is larger than expected");
                memcpy(acc + got, buf, (size_t)n);
                got += (size_t)n;
        }
        close(fd);
        body = memmem(acc, got, "\r\n\r\n", 4);
        if (!body || strncmp(acc, "HTTP/1.0 200", 12))
                die("the server inside did not answer 200");
        return got - (size_t)(body + 4 - acc);
}

static void
proxied_get(struct conn *c)
{
        struct resp r;

        request(c, "GET", page_path, NULL, &r);
        expect_status(&r, 200, "GET through the published port");
        if (r.body_len != want_len)
                die("the page through the port has %zu bytes, not %zu", r.body_len, want_len);
        free(r.body);
}

struct worker {
        pthread_t t;
        bool direct;
        double until;
        long n;
};

static void *
work(void *data)
{
        struct worker *w = data;
        struct conn c;

        if (w->direct && setns(net_fd, CLONE_NEWNET) < 0)
                die("setns into the sandbox's network");
        if (!w->direct)
                conn_init(&c, daemon_port);
        while (now_ms() < w->until) {
                if (w->direct)
                        direct_get();
                else
                        proxied_get(&c);
                w->n++;
        }
        if (!w->direct)
                conn_close(&c);
        return NULL;
}

static double
throughput(bool direct, double seconds)
{
        struct worker w[THREADS];
        double t0 = now_ms();
        long n = 0;

        for (int i = 0; i < THREADS; i++) {
                w[i] = (struct worker){ .direct = direct, .until = t0 + seconds * 1000 };
                if (pthread_create(&w[i].t, NULL, work, &w[i]))
                        die("pthread_create");
        }
        for (int i = 0; i < THREADS; i++) {
                pthread_join(w[i].t, NULL);
                n += w[i].n;
        }
        return n / ((now_ms() - t0) / 1000.0);
}

void
bench_ports(const char *execbox, int rounds)
{
        static const char *const extra[] = { "--pool", "1", NULL };
        int host_net = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        double *lp = calloc((size_t)rounds, sizeof(double)), *ld = calloc((size_t)rounds, sizeof(double));
        double tp[3], td[3], sum_p = 0, sum_d = 0;
        struct server s;
        struct conn c;
        char id[ID_MAX], body[512];
        pid_t pid = 0;

        if (host_net < 0 || !lp || !ld)
                die("setup");
        server_start(&s, execbox, extra);
        daemon_port = s.port;
        conn_init(&c, s.port);
        create_sandbox(&c, id);
        exec_ok(&c, id,
                "{\"cmd\": \"mkdir -p /tmp/" MARKER " && head -c 2000 /dev/zero | tr '\\\\0' x > /tmp/" MARKER
                "/index.html\"}",
                "write the page");
        {
                struct resp r;

                snprintf(body, sizeof(body),
                         "{\"cmd\": \"exec python3 -m http.server 8080 --bind 127.0.0.1 "
                         "--directory /tmp/%s\"}",
                         MARKER);
                snprintf(page_path, sizeof(page_path), "/v1/sandboxes/%s/processes", id);
                request(&c, "POST", page_path, body, &r);
                expect_status(&r, 201, "start the server inside");
                free(r.body);
        }
        snprintf(page_path, sizeof(page_path), "/v1/sandboxes/%s/ports/8080/", id);
        for (double deadline = now_ms() + 15000;; sleep_ms(50)) {
                struct resp r;

                request(&c, "GET", page_path, NULL, &r);
                free(r.body);
                if (r.status == 200)
                        break;
                if (now_ms() > deadline)
                        die("the server inside never answered through the port (%d)", r.status);
        }
        /* The server's command line names the directory, and so MARKER. */
        for (double deadline = now_ms() + 5000; !(pid = find_marked()) && now_ms() < deadline; sleep_ms(50))
                ;
        if (!pid)
                die("cannot find the server's process on the host");
        {
                char p[64];

                snprintf(p, sizeof(p), "/proc/%d/ns/net", pid);
                if ((net_fd = open(p, O_RDONLY | O_CLOEXEC)) < 0)
                        die("open %s", p);
        }
        if (setns(net_fd, CLONE_NEWNET) < 0)
                die("setns");
        want_len = direct_get();
        if (setns(host_net, CLONE_NEWNET) < 0)
                die("setns back");
        if (want_len != 2000)
                die("the page has %zu bytes, not 2000", want_len);
        /* sequential, interleaved */
        for (int i = 0; i < rounds; i++) {
                double t0 = now_ms();

                proxied_get(&c);
                lp[i] = now_ms() - t0;
                if (setns(net_fd, CLONE_NEWNET) < 0)
                        die("setns");
                t0 = now_ms();
                direct_get();
                ld[i] = now_ms() - t0;
                if (setns(host_net, CLONE_NEWNET) < 0)
                        die("setns back");
                sum_p += lp[i];
                sum_d += ld[i];
        }
        for (int i = 0; i < 3; i++) {
                tp[i] = throughput(false, 2.0);
                td[i] = throughput(true, 2.0);
        }
        delete_sandbox(&c, id);
        conn_close(&c);
        server_stop(&s);
        close(net_fd);
        close(host_net);
        printf("\n== 7. a published port: GET of a 2000-byte page from python3 -m http.server ==\n");
        table_head();
        row("through /v1/sandboxes/{id}/ports/8080/", lp, rounds);
        row("directly (a socket in the sandbox's netns)", ld, rounds);
        printf("sequential: %.0f req/s through the port, %.0f req/s directly: %.2fx (p50 ratio %.2fx)\n",
               rounds / (sum_p / 1000), rounds / (sum_d / 1000), sum_d / sum_p,
               pct(ld, rounds, 0.5) / pct(lp, rounds, 0.5));
        {
                double mp = pct(tp, 3, 0.5), md = pct(td, 3, 0.5);

                printf("%d threads, median of 3 x 2 s: %.0f req/s through the port, %.0f req/s directly: %.2fx "
                       "(target >= 0.7x)\n",
                       THREADS, mp, md, mp / md);
        }
        free(lp);
        free(ld);
}
