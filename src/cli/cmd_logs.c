/* execbox logs ID: a sandbox's audit log (GET /v1/sandboxes/{id}/events),
 * one JSON event a line on stdout, page by page; --follow keeps printing
 * new events (server-sent events) until the sandbox is deleted. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "cli/cli.h"
#include "cli/client.h"

static int
print_event(json_t *ev)
{
        _cleanup_free_ char *s = json_dumps(ev, JSON_COMPACT);

        if (!s || printf("%s\n", s) < 0 || fflush(stdout) == EOF)
                return -1;
        return 0;
}

/* Every event from offset, a page at a time. */
static int
logs_pages(struct xb_client *c, const char *id, unsigned long long offset)
{
        for (;;) {
                char tail[64];
                _cleanup_free_ char *path = NULL;
                struct xb_reply r;
                json_t *events, *ev;
                size_t i;
                int rc = 0;

                snprintf(tail, sizeof(tail), "/events?offset=%llu", offset);
                if (!(path = xb_client_sandbox_path(id, tail)))
                        return XB_EXIT_OWN_ERROR;
                if (xb_client_json(c, "GET", path, NULL, &r) < 0)
                        return XB_EXIT_OWN_ERROR;
                if (r.status != 200) {
                        rc = xb_client_fail(&r);
                        xb_reply_free(&r);
                        return rc;
                }
                events = json_object_get(r.json, "events");
                json_array_foreach(events, i, ev)
                        if (print_event(ev) < 0)
                                rc = 128 + 13;
                offset = (unsigned long long)json_integer_value(json_object_get(r.json, "next_offset"));
                i = json_array_size(events);
                xb_reply_free(&r);
                if (rc || i == 0)
                        return rc;
        }
}

struct follow_state {
        struct xb_sse sse;
        struct xb_buf other;    /* a JSON error before the stream */
        CURL *h;
        bool broken, ended;
        char error[300];
};

static void
follow_event(void *ctx, const char *name, json_t *data)
{
        struct follow_state *f = ctx;

        if (!strcmp(name, "event")) {
                if (!f->broken && print_event(data) < 0)
                        f->broken = true;
        } else if (!strcmp(name, "result")) {
                f->ended = true;
        } else if (!strcmp(name, "error")) {
                const char *m = json_string_value(json_object_get(data, "message"));

                snprintf(f->error, sizeof(f->error), "%s", m ? m : "the log could not be followed");
        }
}

static size_t
follow_body(char *p, size_t size, size_t n, void *ctx)
{
        struct follow_state *f = ctx;
        long status = 0;

        xb_cu.easy_getinfo(f->h, CURLINFO_RESPONSE_CODE, &status);
        if (status == 200)
                return xb_sse_feed(&f->sse, p, size * n) < 0 || f->broken ? 0 : size * n;
        return xb_buf_append(&f->other, p, size * n) < 0 ? 0 : size * n;
}

static int
logs_follow(struct xb_client *c, const char *id, unsigned long long offset)
{
        struct follow_state f = { .other = { .max = 1u << 20 } };
        struct curl_slist *hdrs = NULL;
        _cleanup_free_ char *path = NULL;
        char tail[64];
        long status = 0;
        CURLcode cr;
        int rc = 0;

        f.sse.on_event = follow_event;
        f.sse.ctx = &f;
        snprintf(tail, sizeof(tail), "/events?offset=%llu", offset);
        if (!(path = xb_client_sandbox_path(id, tail)))
                return XB_EXIT_OWN_ERROR;
        if (!(f.h = xb_client_easy(c, "GET", path, &hdrs)))
                return xb_client_error("out of memory");
        hdrs = xb_cu.slist_append(hdrs, "Accept: text/event-stream");
        xb_cu.easy_setopt(f.h, CURLOPT_HTTPHEADER, hdrs);
        xb_cu.easy_setopt(f.h, CURLOPT_WRITEFUNCTION, follow_body);
        xb_cu.easy_setopt(f.h, CURLOPT_WRITEDATA, &f);
        cr = xb_cu.easy_perform(f.h);
        xb_cu.easy_getinfo(f.h, CURLINFO_RESPONSE_CODE, &status);
        xb_cu.easy_cleanup(f.h);
        xb_cu.slist_free_all(hdrs);
        if (f.broken)
                rc = 128 + 13;
        else if (status != 200 && status) {
                struct xb_reply r = { .status = status, .json = json_loadb(f.other.data ? f.other.data : "",
                                                                           f.other.len, 0, NULL) };

                rc = xb_client_fail(&r);
                xb_reply_free(&r);
        } else if (xb_client_check(c, cr) < 0)
                rc = XB_EXIT_OWN_ERROR;
        else if (f.error[0])
                rc = xb_client_error("%s", f.error);
        xb_sse_free(&f.sse);
        xb_buf_free(&f.other);
        return rc;
}

int
xb_cmd_logs(int argc, char **argv)
{
        static const struct option opts[] = {
                XB_CLIENT_LONGOPTS,
                { "follow", no_argument, NULL, 'f' },
                { "offset", required_argument, NULL, 'o' },
                { 0 },
        };
        struct xb_client c = { 0 };
        unsigned long long offset = 0;
        bool follow = false;
        char *end;
        int opt;

        opterr = 0;
        while ((opt = getopt_long(argc, argv, ":hf", opts, NULL)) != -1) {
                switch (opt) {
                case XB_CLIENT_OPT_SERVER:
                case XB_CLIENT_OPT_TOKEN_FILE: xb_client_option(&c, opt, optarg); break;
                case 'f': follow = true; break;
                case 'o':
                        errno = 0;
                        offset = strtoull(optarg, &end, 10);
                        if (*optarg < '0' || *optarg > '9' || *end || errno)
                                return xb_client_error("--offset: `%s` is not a whole number", optarg);
                        break;
                case 'h':
                        printf("usage: execbox logs [OPTIONS] ID\n\n"
                               "Print a sandbox's audit log, one JSON event a line (still readable for a while\n"
                               "after the sandbox is deleted).\n\n"
                               "  -f, --follow       keep printing new events until the sandbox is deleted\n"
                               "  --offset N         start at event N (default 0)\n" XB_CLIENT_USAGE);
                        return 0;
                default: return xb_client_bad_option(opt, argv, opts, "logs");
                }
        }
        if (optind >= argc)
                return xb_client_error("no sandbox given; usage: execbox logs ID");
        if (optind + 1 < argc)
                return xb_client_error("unexpected argument `%s`; usage: execbox logs ID", argv[optind + 1]);
        if (xb_client_open(&c) < 0)
                return XB_EXIT_OWN_ERROR;
        return follow ? logs_follow(&c, argv[optind], offset) : logs_pages(&c, argv[optind], offset);
}
