/* The client plumbing of client.h: libcurl loaded at run time, the server
 * address and token, JSON requests, REST errors as one line, and a small
 * SSE reader. */
#define _GNU_SOURCE
#include "cli/client.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "cli/cli.h"
#include "cli/opterr.h"

#define CURL_SONAME "libcurl.so.4"
#define BODY_MAX ((size_t)64 << 20)

struct xb_curl_api xb_cu;

static void
verror(const char *fmt, va_list ap)
{
        fputs("execbox: error: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
}

int
xb_client_error(const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        verror(fmt, ap);
        va_end(ap);
        return XB_EXIT_OWN_ERROR;
}

/* The same, for functions that return -1. */
static int __attribute__((format(printf, 1, 2)))
say(const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        verror(fmt, ap);
        va_end(ap);
        return -1;
}

static int
curl_load(void)
{
        static bool loaded;
        void *h;

        if (loaded)
                return 0;
        h = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h)
                return say("cannot load %s (%s); install libcurl4", CURL_SONAME, dlerror());
#define XB_CURL_API_LOAD(name)                                                                  \
        *(void **)&xb_cu.name = dlsym(h, "curl_" #name);                                        \
        if (!xb_cu.name)                                                                        \
                return say("%s lacks curl_%s; it is too old", CURL_SONAME, #name);
        XB_CURL_API(XB_CURL_API_LOAD)
#undef XB_CURL_API_LOAD
        if (xb_cu.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return say("libcurl would not start");
        loaded = true;
        return 0;
}

void
xb_client_option(struct xb_client *c, int opt, const char *arg)
{
        if (opt == XB_CLIENT_OPT_SERVER)
                c->server = arg;
        else if (opt == XB_CLIENT_OPT_TOKEN_FILE)
                c->token_file = arg;
}

/* The first line of the token file, without its newline. */
static int
read_token(const char *file, char *buf, size_t size)
{
        _cleanup_fclose_ FILE *f = fopen(file, "re");

        if (!f)
                return say("--token-file: %s: %s", file, strerror(errno));
        if (!fgets(buf, (int)size, f))
                buf[0] = '\0';
        buf[strcspn(buf, "\r\n")] = '\0';
        return buf[0] ? 0 : say("--token-file: %s is empty; it holds the bearer token on its first line", file);
}

int
xb_client_open(struct xb_client *c)
{
        const char *url = c->server ? c->server : getenv("EXECBOX_URL");
        const char *from = c->server ? "--server" : "EXECBOX_URL";
        char token[1024] = "";
        size_t n;

        if (!url || !*url)
                url = XB_CLIENT_URL_DEFAULT;
        if (strncmp(url, "unix:", 5) == 0) {
                if (snprintf(c->unix_path, sizeof(c->unix_path), "%s", url + 5) >= (int)sizeof(c->unix_path))
                        return say("%s: the socket path is too long", from);
                snprintf(c->base, sizeof(c->base), "http://localhost");
        } else if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) {
                return say("%s takes http://HOST:PORT, https://... or unix:/PATH, not `%.200s`", from, url);
        } else {
                n = strlen(url);
                while (n && url[n - 1] == '/')
                        n--;
                if (n >= sizeof(c->base))
                        return say("%s is too long", from);
                snprintf(c->base, sizeof(c->base), "%.*s", (int)n, url);
        }
        if (c->token_file) {
                if (read_token(c->token_file, token, sizeof(token)) < 0)
                        return -1;
        } else if (getenv("EXECBOX_TOKEN")) {
                snprintf(token, sizeof(token), "%s", getenv("EXECBOX_TOKEN"));
        }
        for (const char *p = token; *p; p++)
                if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
                        return say("the token has a space or a control character; check %s",
                                   c->token_file ? "--token-file" : "EXECBOX_TOKEN");
        c->auth[0] = '\0';
        if (token[0])
                snprintf(c->auth, sizeof(c->auth), "Authorization: Bearer %s", token);
        return curl_load();
}

CURL *
xb_client_easy(struct xb_client *c, const char *method, const char *path, struct curl_slist **hdrs)
{
        _cleanup_free_ char *url = NULL;
        CURL *h;

        if (asprintf(&url, "%s%s", c->base, path) < 0 || !(h = xb_cu.easy_init()))
                return NULL;
        xb_cu.easy_setopt(h, CURLOPT_URL, url);
        if (c->unix_path[0])
                xb_cu.easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->unix_path);
        if (strcmp(method, "GET") != 0)
                xb_cu.easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        xb_cu.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        xb_cu.easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
        if (c->auth[0])
                *hdrs = xb_cu.slist_append(*hdrs, c->auth);
        return h;
}

char *
xb_client_path(const char *path, const char *s)
{
        char *e = xb_cu.easy_escape(NULL, s, 0), *out = NULL;

        if (e && asprintf(&out, "%s%s", path, e) < 0)
                out = NULL;
        xb_cu.free(e);
        return out;
}

int
xb_client_check(struct xb_client *c, CURLcode rc)
{
        if (rc == CURLE_OK)
                return 0;
        return say("cannot reach the execbox server at %s%s: %s; start one with `execbox serve`, or point "
                   "--server (or EXECBOX_URL) at it", c->unix_path[0] ? "unix:" : "",
                   c->unix_path[0] ? c->unix_path : c->base, xb_cu.easy_strerror(rc));
}

static size_t
on_body(char *p, size_t size, size_t n, void *ctx)
{
        struct xb_buf *b = ctx;

        return xb_buf_append(b, p, size * n) < 0 ? 0 : size * n;
}

int
xb_client_json(struct xb_client *c, const char *method, const char *path, json_t *body, struct xb_reply *ret)
{
        struct xb_buf resp = { .max = BODY_MAX };
        struct curl_slist *hdrs = NULL;
        _cleanup_free_ char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        CURL *h = xb_client_easy(c, method, path, &hdrs);
        CURLcode rc;

        *ret = (struct xb_reply){ 0 };
        if (!h || (body && !text)) {
                if (h)
                        xb_cu.easy_cleanup(h);
                xb_cu.slist_free_all(hdrs);
                return say("out of memory");
        }
        hdrs = xb_cu.slist_append(hdrs, "Accept: application/json");
        if (text) {
                hdrs = xb_cu.slist_append(hdrs, "Content-Type: application/json");
                xb_cu.easy_setopt(h, CURLOPT_POSTFIELDS, text);
                xb_cu.easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
        }
        xb_cu.easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
        xb_cu.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        xb_cu.easy_setopt(h, CURLOPT_WRITEDATA, &resp);
        rc = xb_cu.easy_perform(h);
        xb_cu.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &ret->status);
        xb_cu.easy_cleanup(h);
        xb_cu.slist_free_all(hdrs);
        if (rc == CURLE_OK && resp.len)
                ret->json = json_loadb(resp.data, resp.len, 0, NULL);
        xb_buf_free(&resp);
        return xb_client_check(c, rc);
}

void
xb_reply_free(struct xb_reply *r)
{
        json_decref(r->json);
        r->json = NULL;
}

int
xb_client_fail(const struct xb_reply *r)
{
        json_t *e = json_object_get(r->json, "error");
        const char *msg = json_string_value(json_object_get(e, "message"));
        const char *hint = json_string_value(json_object_get(e, "hint"));
        const char *code = json_string_value(json_object_get(e, "code"));

        if (!msg)
                return xb_client_error("the server answered HTTP %ld", r->status);
        if (r->status == 401)
                return xb_client_error("%s; set EXECBOX_TOKEN or --token-file to the server's token "
                                       "(`execbox serve` prints it, and keeps it in its state directory)", msg);
        return xb_client_error("%s (%s)%s%s", msg, code ? code : "error", hint ? "; " : "", hint ? hint : "");
}

int
xb_client_bad_option(int opt, char **argv, const struct option *opts, const char *cmd)
{
        char buf[256];

        return xb_client_error("%s; see `execbox %s --help`", xb_opt_problem(opt, argv, opts, buf, sizeof(buf)), cmd);
}

char *
xb_client_sandbox_path(const char *id, const char *tail)
{
        char *p = NULL;

        if (!xb_client_id_ok(id)) {
                xb_client_error("`%.64s` is not a sandbox id; list them with `execbox ls`", id);
                return NULL;
        }
        if (asprintf(&p, "/v1/sandboxes/%s%s", id, tail) < 0) {
                xb_client_error("out of memory");
                return NULL;
        }
        return p;
}

bool
xb_client_id_ok(const char *id)
{
        if (!*id || strlen(id) > 128)
                return false;
        for (const char *p = id; *p; p++)
                if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
                        return false;
        return true;
}

/* ---- SSE ---- */

static void
sse_event(struct xb_sse *s, char *ev)
{
        char name[64] = "message";
        struct xb_buf data = { .max = BODY_MAX };

        for (char *line = ev, *next; line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                line[strcspn(line, "\r")] = '\0';
                if (strncmp(line, "event:", 6) == 0)
                        snprintf(name, sizeof(name), "%s", line + 6 + (line[6] == ' '));
                else if (strncmp(line, "data:", 5) == 0)
                        xb_buf_printf(&data, "%s%s", data.len ? "\n" : "", line + 5 + (line[5] == ' '));
        }
        if (data.len) {
                json_t *j = json_loadb(data.data, data.len, 0, NULL);

                s->on_event(s->ctx, name, j);
                json_decref(j);
        }
        xb_buf_free(&data);
}

int
xb_sse_feed(struct xb_sse *s, const char *p, size_t n)
{
        size_t start = 0;

        if (s->len + n + 1 > s->cap) {
                size_t cap = (s->len + n + 1) * 2;
                char *b;

                if (cap > BODY_MAX || !(b = realloc(s->buf, cap)))
                        return -ENOMEM;
                s->buf = b;
                s->cap = cap;
        }
        /* Drop CRs, so that events split on a blank line. */
        for (size_t i = 0; i < n; i++)
                if (p[i] != '\r')
                        s->buf[s->len++] = p[i];
        s->buf[s->len] = '\0';
        for (char *end; (end = strstr(s->buf + start, "\n\n")); start = (size_t)(end - s->buf) + 2) {
                *end = '\0';
                sse_event(s, s->buf + start);
        }
        memmove(s->buf, s->buf + start, s->len - start + 1);
        s->len -= start;
        return 0;
}

void
xb_sse_free(struct xb_sse *s)
{
        free(s->buf);
        *s = (struct xb_sse){ 0 };
}
