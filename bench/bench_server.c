/* make bench: `execbox serve` over HTTP, side by side with its peers.
 *
 *  1. warm exec round trip: POST /v1/sandboxes/{id}/exec {"argv":["/bin/true"]}
 *     on one keep-alive connection, interleaved with a bare posix_spawn +
 *     waitpid of /bin/true in this process (the floor);
 *  2. create + first exec, then delete, against a server with --pool 4,
 *     interleaved with a bwrap start of /bin/true;
 *  3. exec throughput: 16 client threads, each its own keep-alive
 *     connection, for 5 s; once with a sandbox per thread, once with 4
 *     sandboxes shared by 4 threads each;
 *  4. the server's resident memory with 1,000 idle sandboxes;
 *  5. the warm Python cell round trip: POST .../sessions/{sid}/run {"code":"1+1"}
 *     in a running IPython session, on one keep-alive connection;
 *  6. a new sandbox to its first Python result (POST /v1/sandboxes, POST
 *     .../sessions {"language":"python"}, POST .../run 1+1) against a
 *     server with --pool 2 --pool-python, whose pooled sandboxes each hold a
 *     pre-started Python session with numpy, pandas and matplotlib imported;
 *     and the same with no pool, for scale.
 *
 * The client is a small HTTP/1.1 implementation on raw sockets: keep-alive,
 * Content-Length and chunked bodies, and it checks every status code and
 * every exec's verdict, so a wrong answer fails the run instead of looking
 * fast. The bench starts its own servers (EXECBOX is argv[1]) in temporary
 * state directories and stops each with SIGTERM to its pid.
 *
 * usage: bench_server EXECBOX [ROUNDS]   (ROUNDS for 1; default 1000)
 * BENCH_ONLY=56 runs parts 5 and 6 only; BENCH_CELLS (500) sets the cells
 * of 5, BENCH_PY_ROUNDS (30) and BENCH_PY_PAUSE_MS (1500) the rounds of 6
 * and the pause after each, which lets the pool start a new session. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define ID_MAX 64

static pid_t running_server;   /* the server to stop if the bench dies */

static void __attribute__((noreturn, format(printf, 1, 2)))
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

static double
now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void
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
static double
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

/* ---- the HTTP/1.1 client ---- */

struct conn {
        int fd;
        int port;
        char *buf;                 /* received, not yet consumed */
        size_t len, cap;
};

struct resp {
        int status;
        char *body;                /* NUL-terminated, owned by the caller's resp */
        size_t body_len;
        bool close;
};

static void
conn_open(struct conn *c)
{
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)c->port),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int one = 1;

        c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c->fd < 0)
                die("socket: %s", strerror(errno));
        setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                die("connect to 127.0.0.1:%d: %s", c->port, strerror(errno));
        c->len = 0;
}

static void
conn_init(struct conn *c, int port)
{
        memset(c, 0, sizeof(*c));
        c->port = port;
        c->cap = 1 << 16;
        c->buf = malloc(c->cap);
        if (!c->buf)
                die("out of memory");
        conn_open(c);
}

static void
conn_close(struct conn *c)
{
        if (c->fd >= 0)
                close(c->fd);
        c->fd = -1;
        free(c->buf);
        c->buf = NULL;
}

/* Read more into the buffer; false at EOF. */
static bool
fill(struct conn *c)
{
        ssize_t n;

        if (c->len == c->cap) {
                c->cap *= 2;
                c->buf = realloc(c->buf, c->cap);
                if (!c->buf)
                        die("out of memory");
        }
        do
                n = read(c->fd, c->buf + c->len, c->cap - c->len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                die("read: %s", strerror(errno));
        if (n == 0)
                return false;
        c->len += (size_t)n;
        return true;
}

static void
consume(struct conn *c, size_t n)
{
        memmove(c->buf, c->buf + n, c->len - n);
        c->len -= n;
}

static void
write_all(int fd, const char *p, size_t n)
{
        while (n) {
                ssize_t w = write(fd, p, n);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        die("write: %s", w < 0 ? strerror(errno) : "short");
                p += w;
                n -= (size_t)w;
        }
}

/* A header's value in the header block [h, end), or NULL. */
static const char *
header(const char *h, const char *end, const char *name, size_t *vlen)
{
        size_t nl = strlen(name);

        for (const char *line = h; line < end;) {
                const char *eol = memmem(line, (size_t)(end - line), "\r\n", 2);

                if (!eol)
                        eol = end;
                if ((size_t)(eol - line) > nl && strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
                        const char *v = line + nl + 1;

                        while (v < eol && (*v == ' ' || *v == '\t'))
                                v++;
                        *vlen = (size_t)(eol - v);
                        while (*vlen && (v[*vlen - 1] == ' ' || v[*vlen - 1] == '\t'))
                                (*vlen)--;
                        return v;
                }
                line = eol + 2;
        }
        return NULL;
}

/* One response off the connection. Strict: a malformed status line or
 * framing is fatal. */
static void
read_response(struct conn *c, struct resp *r, bool head_only)
{
        char *eoh;
        size_t hlen, vlen;
        const char *v;

        memset(r, 0, sizeof(*r));
        while (!(eoh = memmem(c->buf, c->len, "\r\n\r\n", 4)))
                if (!fill(c))
                        die("the server closed the connection before a response");
        hlen = (size_t)(eoh - c->buf) + 4;
        if (hlen < 12 || memcmp(c->buf, "HTTP/1.1 ", 9) != 0 || !isdigit((unsigned char)c->buf[9]) ||
            !isdigit((unsigned char)c->buf[10]) || !isdigit((unsigned char)c->buf[11]) ||
            (c->buf[12] != ' ' && c->buf[12] != '\r'))
                die("malformed status line: %.40s", c->buf);
        r->status = (c->buf[9] - '0') * 100 + (c->buf[10] - '0') * 10 + (c->buf[11] - '0');
        v = header(c->buf, eoh, "Connection", &vlen);
        r->close = v && vlen == 5 && strncasecmp(v, "close", 5) == 0;
        if (head_only || r->status == 204 || r->status == 304 || r->status / 100 == 1) {
                consume(c, hlen);
                r->body = strdup("");
                return;
        }
        if ((v = header(c->buf, eoh, "Transfer-Encoding", &vlen)) && vlen == 7 && strncasecmp(v, "chunked", 7) == 0) {
                size_t cap = 4096, blen = 0, pos = hlen;
                char *body = malloc(cap);

                for (;;) {
                        char *eol, *end;
                        unsigned long sz;

                        while (!(eol = memmem(c->buf + pos, c->len - pos, "\r\n", 2)))
                                if (!fill(c))
                                        die("EOF inside a chunked body");
                        errno = 0;
                        sz = strtoul(c->buf + pos, &end, 16);
                        if (errno || end == c->buf + pos || (end != eol && *end != ';'))
                                die("bad chunk size");
                        pos = (size_t)(eol - c->buf) + 2;
                        while (c->len < pos + sz + 2)
                                if (!fill(c))
                                        die("EOF inside a chunk");
                        if (sz == 0) {
                                /* no trailers from this server */
                                if (memcmp(c->buf + pos, "\r\n", 2) != 0)
                                        die("chunk trailers are not supported");
                                pos += 2;
                                break;
                        }
                        if (memcmp(c->buf + pos + sz, "\r\n", 2) != 0)
                                die("a chunk does not end in CRLF");
                        while (blen + sz + 1 > cap)
                                body = realloc(body, cap *= 2);
                        memcpy(body + blen, c->buf + pos, sz);
                        blen += sz;
                        pos += sz + 2;
                }
                body[blen] = '\0';
                r->body = body;
                r->body_len = blen;
                consume(c, pos);
                return;
        }
        if ((v = header(c->buf, eoh, "Content-Length", &vlen))) {
                char num[24], *end;
                unsigned long long n;

                if (vlen == 0 || vlen >= sizeof(num))
                        die("bad Content-Length");
                memcpy(num, v, vlen);
                num[vlen] = '\0';
                errno = 0;
                n = strtoull(num, &end, 10);
                if (errno || *end || n > (1ull << 31))
                        die("bad Content-Length: %s", num);
                while (c->len < hlen + n)
                        if (!fill(c))
                                die("EOF inside a body");
                r->body = malloc(n + 1);
                memcpy(r->body, c->buf + hlen, n);
                r->body[n] = '\0';
                r->body_len = n;
                consume(c, hlen + n);
                return;
        }
        die("a response with neither Content-Length nor chunked framing (status %d)", r->status);
}

/* Send one request and read its response; reconnects once if the server
 * closed an idle keep-alive connection. */
static void
request(struct conn *c, const char *method, const char *path, const char *body, struct resp *r)
{
        char head[512];
        size_t blen = body ? strlen(body) : 0;
        int n;

        n = snprintf(head, sizeof(head),
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                     method, path, blen);
        if (n < 0 || (size_t)n >= sizeof(head))
                die("request too long");
        if (c->fd < 0)
                conn_open(c);
        {
                struct iovec iov[2] = { { head, (size_t)n }, { (void *)(body ? body : ""), blen } };
                ssize_t w = writev(c->fd, iov, 2);

                if (w == (ssize_t)(n + blen))
                        goto sent;
                if (w < 0 && (errno == EPIPE || errno == ECONNRESET)) {
                        close(c->fd);
                        conn_open(c);
                        w = 0;
                }
                if (w < 0)
                        die("write: %s", strerror(errno));
                if ((size_t)w < (size_t)n) {
                        write_all(c->fd, head + w, (size_t)n - (size_t)w);
                        write_all(c->fd, body ? body : "", blen);
                } else
                        write_all(c->fd, (body ? body : "") + ((size_t)w - (size_t)n), blen - ((size_t)w - (size_t)n));
        }
sent:
        read_response(c, r, strcmp(method, "HEAD") == 0);
        if (r->close) {
                close(c->fd);
                c->fd = -1;
        }
}

static void
expect_status(const struct resp *r, int want, const char *what)
{
        if (r->status != want)
                die("%s: status %d, expected %d: %.300s", what, r->status, want, r->body ? r->body : "");
}

/* A string field's value from a flat JSON object the server produced; the
 * check is exact on the key and the quoting. */
static bool
json_str(const char *body, const char *key, char *out, size_t cap)
{
        char pat[64];
        const char *p, *q;

        snprintf(pat, sizeof(pat), "\"%s\":\"", key);
        if (!(p = strstr(body, pat)))
                return false;
        p += strlen(pat);
        if (!(q = strchr(p, '"')) || (size_t)(q - p) >= cap)
                return false;
        memcpy(out, p, (size_t)(q - p));
        out[q - p] = '\0';
        return true;
}

static long long
json_int(const char *body, const char *key)
{
        char pat[64];
        const char *p;

        snprintf(pat, sizeof(pat), "\"%s\":", key);
        if (!(p = strstr(body, pat)))
                die("no `%s` in %.200s", key, body);
        return strtoll(p + strlen(pat), NULL, 10);
}

static void
create_sandbox(struct conn *c, char id[ID_MAX])
{
        struct resp r;

        request(c, "POST", "/v1/sandboxes", "{}", &r);
        expect_status(&r, 201, "POST /v1/sandboxes");
        if (!json_str(r.body, "id", id, ID_MAX) || strlen(id) < 26)
                die("no sandbox id in %.200s", r.body);
        for (const char *p = id; *p; p++)
                if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p)))
                        die("bad sandbox id %s", id);
        free(r.body);
}

static void
delete_sandbox(struct conn *c, const char *id)
{
        char path[128];
        struct resp r;

        snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
        request(c, "DELETE", path, NULL, &r);
        expect_status(&r, 204, "DELETE /v1/sandboxes/{id}");
        if (r.body_len)
                die("a 204 with a body");
        free(r.body);
}

static const char EXEC_TRUE[] = "{\"argv\":[\"/bin/true\"]}";

static void
exec_true(struct conn *c, const char *id)
{
        char path[128];
        struct resp r;

        snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
        request(c, "POST", path, EXEC_TRUE, &r);
        expect_status(&r, 200, "POST exec");
        if (!strstr(r.body, "\"status\":\"ok\"") || !strstr(r.body, "\"exit_code\":0,"))
                die("exec /bin/true did not succeed: %.300s", r.body);
        free(r.body);
}

static char *
get_text(struct conn *c, const char *path)
{
        struct resp r;

        request(c, "GET", path, NULL, &r);
        expect_status(&r, 200, path);
        return r.body;
}

/* A sample's value from Prometheus text: the line starting with `name `. */
static double
metric(const char *text, const char *name)
{
        size_t n = strlen(name);

        for (const char *line = text; line && *line;) {
                if (strncmp(line, name, n) == 0 && line[n] == ' ')
                        return strtod(line + n + 1, NULL);
                line = strchr(line, '\n');
                if (line)
                        line++;
        }
        die("metric %s not found", name);
}

/* ---- the server under test ---- */

struct server {
        pid_t pid;
        int port;
        char dir[64];
};

static void
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

static void
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

static long
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
static long
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

/* ---- peers ---- */

static double
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

static void
row(const char *name, const double *v, int n)
{
        printf("%-44s %9.3f %9.3f %9.3f\n", name, pct(v, n, 0.5), pct(v, n, 0.9), pct(v, n, 0.0));
}

static void
table_head(void)
{
        printf("%-44s %9s %9s %9s\n", "", "p50 ms", "p90 ms", "min ms");
}

/* ---- 1. warm exec round trip ---- */

static void
bench_warm_exec(const char *execbox, int rounds)
{
        static const char *const extra[] = { "--pool", "1", NULL };
        char *bare[] = { "/bin/true", NULL };
        struct server s;
        struct conn c;
        char id[ID_MAX];
        double *http = calloc((size_t)rounds, sizeof(double)), *fork_ms = calloc((size_t)rounds, sizeof(double));
        int warm = 50;

        server_start(&s, execbox, extra);
        conn_init(&c, s.port);
        create_sandbox(&c, id);
        for (int r = -warm; r < rounds; r++) {
                double t0 = now_ms(), a, b;

                exec_true(&c, id);
                a = now_ms() - t0;
                b = spawn_wait(bare);
                if (r >= 0) {
                        http[r] = a;
                        fork_ms[r] = b;
                }
        }
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
        free(http);
        free(fork_ms);
}

/* ---- 2. create + first exec + delete ---- */

static void
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

static void
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

/* ---- 4. memory of idle sandboxes ---- */

static void
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

/* ---- 5. warm Python cell round trip ---- */

static int
env_int(const char *name, int def, int min)
{
        const char *v = getenv(name);
        int n = v ? atoi(v) : def;

        return n < min ? min : n;
}

/* POST .../sessions {"language":"python"}; the session id, and whether it
 * was already running (a pooled session is). */
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

static void
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

static void
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

int
main(int argc, char **argv)
{
        int rounds = argc > 2 ? atoi(argv[2]) : 1000;
        const char *only = getenv("BENCH_ONLY");   /* e.g. "13" runs parts 1 and 3 */

        if (argc < 2 || rounds < 10) {
                fputs("usage: bench_server EXECBOX [ROUNDS>=10]\n", stderr);
                return 2;
        }
        if (geteuid() != 0)
                die("execbox serve needs root to create sandboxes");
        signal(SIGPIPE, SIG_IGN);
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (!only || strchr(only, '1'))
                bench_warm_exec(argv[1], rounds);
        if (!only || strchr(only, '2'))
                bench_create(argv[1], rounds / 5 > 50 ? rounds / 5 : 50);
        if (!only || strchr(only, '3'))
                bench_throughput(argv[1], 5.0);
        if (!only || strchr(only, '4'))
                bench_memory(argv[1], 1000);
        if (!only || strchr(only, '5'))
                bench_python_cell(argv[1], env_int("BENCH_CELLS", 500, 10));
        if (!only || strchr(only, '6'))
                bench_python_first(argv[1], env_int("BENCH_PY_ROUNDS", 30, 5), env_int("BENCH_PY_PAUSE_MS", 1500, 0));
        return 0;
}
