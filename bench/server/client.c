/* bench_server's HTTP/1.1 client on raw sockets: keep-alive, Content-Length
 * and chunked bodies, strict about framing (a malformed response is
 * fatal), and the REST calls every part makes, each checking its status
 * and verdict so that a wrong answer fails the run instead of looking
 * fast. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bench.h"

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

void
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

void
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
read_response(struct conn *c, struct resp *r, bool head_only, bool keep_head)
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
        if (keep_head && !(r->head = strndup(c->buf, hlen)))
                die("out of memory");
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

/* Reconnects once if the server closed an idle keep-alive connection. */
void
request_h(struct conn *c, const char *method, const char *path, const char *extra, const char *body, struct resp *r,
          bool keep_head)
{
        char head[1024];
        size_t blen = body ? strlen(body) : 0;
        int n;

        n = snprintf(head, sizeof(head),
                     "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n%sContent-Length: %zu\r\n\r\n",
                     method, path, extra ? extra : "", blen);
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
        read_response(c, r, strcmp(method, "HEAD") == 0, keep_head);
        if (r->close) {
                close(c->fd);
                c->fd = -1;
        }
}

void
request(struct conn *c, const char *method, const char *path, const char *body, struct resp *r)
{
        request_h(c, method, path, NULL, body, r, false);
}

bool
resp_header(const struct resp *r, const char *name, char *out, size_t cap)
{
        size_t vlen;
        const char *v = r->head ? header(r->head, r->head + strlen(r->head), name, &vlen) : NULL;

        if (!v || vlen >= cap)
                return false;
        memcpy(out, v, vlen);
        out[vlen] = '\0';
        return true;
}

void
expect_status(const struct resp *r, int want, const char *what)
{
        if (r->status != want)
                die("%s: status %d, expected %d: %.300s", what, r->status, want, r->body ? r->body : "");
}

/* A string field's value from a flat JSON object the server produced; the
 * check is exact on the key and the quoting. */
bool
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

long long
json_int(const char *body, const char *key)
{
        char pat[64];
        const char *p;

        snprintf(pat, sizeof(pat), "\"%s\":", key);
        if (!(p = strstr(body, pat)))
                die("no `%s` in %.200s", key, body);
        return strtoll(p + strlen(pat), NULL, 10);
}

void
create_sandbox(struct conn *c, char id[ID_MAX])
{
        create_sandbox_body(c, "{}", id);
}

void
create_sandbox_body(struct conn *c, const char *body, char id[ID_MAX])
{
        struct resp r;

        request(c, "POST", "/v1/sandboxes", body, &r);
        expect_status(&r, 201, "POST /v1/sandboxes");
        if (!json_str(r.body, "id", id, ID_MAX) || strlen(id) < 26)
                die("no sandbox id in %.200s", r.body);
        for (const char *p = id; *p; p++)
                if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p)))
                        die("bad sandbox id %s", id);
        free(r.body);
}

void
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

void
exec_ok(struct conn *c, const char *id, const char *body, const char *what)
{
        char path[128];
        struct resp r;

        snprintf(path, sizeof(path), "/v1/sandboxes/%s/exec", id);
        request(c, "POST", path, body, &r);
        expect_status(&r, 200, "POST exec");
        if (!strstr(r.body, "\"status\":\"ok\"") || !strstr(r.body, "\"exit_code\":0,"))
                die("exec %s did not succeed: %.300s", what, r.body);
        free(r.body);
}

void
exec_true(struct conn *c, const char *id)
{
        exec_ok(c, id, EXEC_TRUE, "/bin/true");
}

char *
get_text(struct conn *c, const char *path)
{
        struct resp r;

        request(c, "GET", path, NULL, &r);
        expect_status(&r, 200, path);
        return r.body;
}

/* A sample's value from Prometheus text: the line starting with `name `. */
double
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
