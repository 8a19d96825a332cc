/* `execbox shell ID [-- CMD...]`: an interactive shell in a sandbox, on a
 * terminal, in ours.
 *
 * Theory of operation. The REST API has no terminal of its own, so the
 * shell is a background process (POST .../processes) started under
 * script(1), which makes a pty of the sandbox's devpts and runs the shell
 * on it; Debian's bsdutils, which has it, is essential, so every
 * sandbox finds it in the host's /usr. Our terminal goes to raw mode, and three kinds of
 * request run side by side on one libcurl multi handle:
 *   - one long poll of GET .../output at a time, each answered as soon as
 *     there is new output, which is written out as it comes;
 *   - one POST .../stdin at a time, carrying whatever was typed since the
 *     last one (the pty does the echo and the line editing, as with ssh);
 *   - a resize on SIGWINCH: an exec of stty on the shell's pty, found as
 *     fd 0 of script's child; and POST .../keepalive at a third of the
 *     sandbox's timeout, so that it does not expire under an open shell.
 * The shell's end is a finished process: its status is ours (report.h),
 * and its record is deleted. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/utf8.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/report.h"
#include "ops/jsonv.h"

#define POLL_WAIT_S 25
#define KEEPALIVE_MAX_MS 60000
#define INPUT_MAX 65536

enum { O_CWD = 2000, O_ROOT, O_ENV };
enum xfer_kind { X_OUTPUT, X_INPUT, X_MISC, X_NKINDS };

struct xfer {
        CURL *h;
        struct curl_slist *hdrs;
        char *body;
        struct xb_buf resp;
};

struct shell {
        struct xb_client *c;
        CURLM *multi;
        char *base;                     /* /v1/sandboxes/ID */
        long pid;
        bool root;
        struct xfer x[X_NKINDS];        /* h is NULL when idle */
        uint64_t out_off, err_off;
        bool finished, in_eof, eof_sent, resize;
        struct xb_buf in;               /* typed, not yet sent */
        json_t *end;                    /* the last output reply, once finished */
        uint64_t keepalive_ms, next_keepalive;
};

/* For the helpers below, which return -1 after saying why. */
static int
oom(void)
{
        xb_client_error("out of memory");
        return -1;
}

static int
refused(long status)
{
        xb_client_error("the server refused the input (HTTP %ld)", status);
        return -1;
}

static uint64_t
now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static size_t
on_resp(char *p, size_t size, size_t n, void *ctx)
{
        return xb_buf_append(ctx, p, size * n) < 0 ? 0 : size * n;
}

/* Start request kind k; body (JSON text, taken) may be NULL. */
static int
start(struct shell *s, enum xfer_kind k, const char *method, const char *path, char *body)
{
        struct xfer *x = &s->x[k];

        *x = (struct xfer){ .body = body, .resp = { .max = 32u << 20 } };
        if (!(x->h = xb_client_easy(s->c, method, path, &x->hdrs))) {
                free(body);
                return oom();
        }
        x->hdrs = xb_cu.slist_append(x->hdrs, "Content-Type: application/json");
        xb_cu.easy_setopt(x->h, CURLOPT_HTTPHEADER, x->hdrs);
        if (body) {
                xb_cu.easy_setopt(x->h, CURLOPT_POSTFIELDS, body);
                xb_cu.easy_setopt(x->h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
        }
        xb_cu.easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_resp);
        xb_cu.easy_setopt(x->h, CURLOPT_WRITEDATA, &x->resp);
        xb_cu.easy_setopt(x->h, CURLOPT_PRIVATE, (char *)x);
        xb_cu.multi_add_handle(s->multi, x->h);
        return 0;
}

static void
xfer_end(struct shell *s, struct xfer *x)
{
        if (!x->h)
                return;
        xb_cu.multi_remove_handle(s->multi, x->h);
        xb_cu.easy_cleanup(x->h);
        xb_cu.slist_free_all(x->hdrs);
        free(x->body);
        xb_buf_free(&x->resp);
        *x = (struct xfer){ 0 };
}

static int
poll_output(struct shell *s)
{
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/processes/%ld/output?stdout_offset=%llu&stderr_offset=%llu&wait_s=%d", s->base,
                     s->pid, (unsigned long long)s->out_off, (unsigned long long)s->err_off,
                     s->finished ? 0 : POLL_WAIT_S) < 0)
                return oom();
        return start(s, X_OUTPUT, "GET", path, NULL);
}

/* The longest prefix of the typed bytes that ends on a character. */
static size_t
whole_chars(const char *p, size_t n)
{
        size_t i = n;

        for (size_t back = 0; back < 4 && i > 0; back++) {
                unsigned char b = (unsigned char)p[i - 1];

                if (b < 0x80)
                        return n;
                if (b >= 0xc0) {
                        size_t want = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;

                        return back + 1 >= want ? n : i - 1;
                }
                i--;
        }
        return n;
}

static int
send_input(struct shell *s)
{
        _cleanup_free_ char *path = NULL, *clean = NULL;
        size_t n = whole_chars(s->in.data ? s->in.data : "", s->in.len), clean_len = 0;
        json_t *o;
        char *body;

        if (s->x[X_INPUT].h || s->finished || (!n && !(s->in_eof && !s->eof_sent)))
                return 0;
        clean = xb_utf8_sanitize(s->in.data ? s->in.data : "", n, &clean_len);
        o = clean ? json_pack("{s:s%}", "data", clean, clean_len) : NULL;
        /* At the end of input, with nothing left to send: close the shell's stdin. */
        if (o && s->in_eof && n == s->in.len) {
                json_object_set_new(o, "eof", json_true());
                s->eof_sent = true;
        }
        body = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (!body || asprintf(&path, "%s/processes/%ld/stdin", s->base, s->pid) < 0) {
                free(body);
                return oom();
        }
        if (n) {
                memmove(s->in.data, s->in.data + n, s->in.len - n);
                s->in.len -= n;
        }
        return start(s, X_INPUT, "POST", path, body);
}

static int
send_resize(struct shell *s)
{
        struct winsize ws;
        _cleanup_free_ char *path = NULL, *cmd = NULL;
        json_t *o;
        char *body;

        if (s->x[X_MISC].h || !s->resize || s->finished)
                return 0;
        s->resize = false;
        if (ioctl(isatty(STDIN_FILENO) ? STDIN_FILENO : STDOUT_FILENO, TIOCGWINSZ, &ws) < 0)
                return 0;
        /* script's child holds the pty as its fd 0; setting its size signals its foreground. */
        if (asprintf(&cmd, "c=$(cut -d' ' -f1 /proc/%ld/task/%ld/children) && stty -F \"$(readlink /proc/$c/fd/0)\" "
                     "rows %u cols %u", s->pid, s->pid, ws.ws_row, ws.ws_col) < 0 ||
            asprintf(&path, "%s/exec", s->base) < 0)
                return oom();
        o = json_pack("{s:s,s:s,s:i}", "cmd", cmd, "user", s->root ? "root" : "user", "timeout_s", 10);
        body = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        return body ? start(s, X_MISC, "POST", path, body) : oom();
}

static int
send_keepalive(struct shell *s)
{
        _cleanup_free_ char *path = NULL;

        if (s->x[X_MISC].h || s->finished || now_ms() < s->next_keepalive)
                return 0;
        s->next_keepalive = now_ms() + s->keepalive_ms;
        if (asprintf(&path, "%s/keepalive", s->base) < 0)
                return oom();
        return start(s, X_MISC, "POST", path, strdup("{}"));
}

/* An output reply: write it out, and read on. */
static int
on_output(struct shell *s, const struct xb_buf *resp, long status)
{
        _cleanup_(xb_json_decrefp) json_t *o = resp->len ? json_loadb(resp->data, resp->len, 0, NULL) : NULL;
        json_t *out = json_object_get(o, "stdout"), *err = json_object_get(o, "stderr");

        if (status != 200 || !json_is_string(out) || !json_is_string(err)) {
                struct xb_reply r = { status, json_incref(o) };

                xb_client_fail(&r);
                xb_reply_free(&r);
                return -1;
        }
        if (xb_write_all(STDOUT_FILENO, json_string_value(out), json_string_length(out)) < 0 ||
            xb_write_all(STDERR_FILENO, json_string_value(err), json_string_length(err)) < 0)
                return -1;
        s->out_off = (uint64_t)json_integer_value(json_object_get(o, "stdout_offset"));
        s->err_off = (uint64_t)json_integer_value(json_object_get(o, "stderr_offset"));
        if (json_is_false(json_object_get(o, "running"))) {
                /* Done once a read after the end comes back empty. */
                bool drained = !json_string_length(out) && !json_string_length(err);

                s->finished = true;
                if (drained) {
                        json_decref(s->end);
                        s->end = json_incref(o);
                        return 0;
                }
        }
        return poll_output(s);
}

static int
on_done(struct shell *s, struct xfer *x, CURLcode rc)
{
        struct xb_buf resp = x->resp;
        long status = 0;
        int r = 0;

        /* The reply is ours: the slot is free for the next request. */
        xb_cu.easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
        x->resp = (struct xb_buf){ 0 };
        xfer_end(s, x);
        if (xb_client_check(s->c, rc) < 0)
                r = -1;
        else if (x == &s->x[X_OUTPUT])
                r = on_output(s, &resp, status);
        /* 409 on stdin: the shell has just ended; the output poll says how. */
        else if (x == &s->x[X_INPUT] && status != 200 && status != 409)
                r = refused(status);
        xb_buf_free(&resp);
        return r;
}

/* One read when poll says there is input: it never blocks, so stdin
 * (and the stdout it may share a file description with) stay blocking. */
static void
read_input(struct shell *s)
{
        char buf[4096];
        ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

        if (n > 0)
                xb_buf_append(&s->in, buf, (size_t)n);
        else if (n == 0 || errno != EINTR)
                s->in_eof = true;
}

/* The shell under script(1), sized like our terminal, in the sandbox. */
static char *
shell_command(char **cmd, int ncmd, const struct winsize *ws)
{
        struct xb_buf b = { 0 };

        xb_buf_printf(&b, "stty rows %u cols %u 2>/dev/null; ", ws->ws_row, ws->ws_col);
        if (!ncmd)
                xb_buf_puts(&b, "if [ -x /bin/bash ]; then exec /bin/bash -il; fi; exec /bin/sh -i");
        else
                xb_buf_puts(&b, "exec");
        /* Each argument in single quotes, a quote inside as '\'' (POSIX sh). */
        for (int i = 0; i < ncmd; i++) {
                xb_buf_puts(&b, " '");
                for (const char *p = cmd[i]; *p; p++)
                        if (*p == '\'')
                                xb_buf_puts(&b, "'\\''");
                        else
                                xb_buf_append(&b, p, 1);
                xb_buf_puts(&b, "'");
        }
        return xb_buf_steal(&b);
}

/* The sandbox exists, and is kept alive at a third of its timeout (at
 * most each minute). -1 after printing why not. */
static int
look_up(struct shell *s)
{
        struct xb_reply r;
        int64_t t;

        if (xb_client_json(s->c, "GET", s->base, NULL, &r) < 0)
                return -1;
        if (r.status != 200) {
                xb_client_fail(&r);
                xb_reply_free(&r);
                return -1;
        }
        t = json_integer_value(json_object_get(r.json, "timeout_s"));
        s->keepalive_ms = t > 0 && t < 180 ? (uint64_t)t * 1000 / 3 : KEEPALIVE_MAX_MS;
        xb_reply_free(&r);
        return 0;
}

/* POST .../processes: the shell's pid, or -1 after printing why. */
static long
start_shell(struct shell *s, char **cmd, int ncmd, json_t *env, const char *cwd)
{
        struct winsize ws = { 0 };
        _cleanup_free_ char *inner = NULL, *path = NULL;
        _cleanup_(xb_json_decrefp) json_t *body = NULL;
        const char *term = getenv("TERM");
        struct xb_reply r;
        long pid = -1;

        if (ioctl(isatty(STDIN_FILENO) ? STDIN_FILENO : STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 || !ws.ws_row)
                ws = (struct winsize){ .ws_row = 24, .ws_col = 80 };
        if (!(inner = shell_command(cmd, ncmd, &ws)) || asprintf(&path, "%s/processes", s->base) < 0)
                return oom();
        json_object_set_new(env, "TERM", json_string(term && *term ? term : "xterm"));
        body = json_pack("{s:[s,s,s,s],s:O,s:s}", "argv", "script", "-qfec", inner, "/dev/null", "env", env, "user",
                         s->root ? "root" : "user");
        if (body && cwd)
                json_object_set_new(body, "cwd", json_string(cwd));
        if (!body || xb_client_json(s->c, "POST", path, body, &r) < 0)
                return -1;
        if (r.status == 201 && json_is_integer(json_object_get(r.json, "pid")))
                pid = (long)json_integer_value(json_object_get(r.json, "pid"));
        else if (json_is_string(json_object_get(json_object_get(r.json, "error"), "code")) &&
                 !strcmp(json_string_value(json_object_get(json_object_get(r.json, "error"), "code")),
                         "command_not_found"))
                xb_client_error("the sandbox has no script(1) (util-linux), which gives the shell its terminal");
        else
                xb_client_fail(&r);
        xb_reply_free(&r);
        return pid;
}

/* The shell's end as an exit status; its record is deleted. */
static int
shell_status(struct shell *s)
{
        _cleanup_free_ char *path = NULL;
        struct xb_cli_end e = { json_string_value(json_object_get(s->end, "status")),
                                json_is_integer(json_object_get(s->end, "exit_code")),
                                (int)json_integer_value(json_object_get(s->end, "exit_code")), 0 };
        struct xb_reply r;

        if (asprintf(&path, "%s/processes/%ld", s->base, s->pid) < 0)
                return XB_EXIT_OWN_ERROR;
        if (!e.exited && xb_client_json(s->c, "GET", path, NULL, &r) == 0) {
                e.signal = (int)json_integer_value(json_object_get(r.json, "signal"));
                xb_reply_free(&r);
        }
        if (xb_client_json(s->c, "DELETE", path, NULL, &r) == 0)
                xb_reply_free(&r);
        return xb_cli_exit_status(&e);
}

static int
loop(struct shell *s, int sfd)
{
        if (poll_output(s) < 0)
                return -1;
        s->next_keepalive = now_ms() + s->keepalive_ms;
        while (!s->end) {
                struct curl_waitfd w[2] = { { .fd = sfd, .events = CURL_WAIT_POLLIN },
                                            { .fd = STDIN_FILENO, .events = CURL_WAIT_POLLIN } };
                unsigned nw = s->in_eof || s->in.len >= INPUT_MAX ? 1 : 2;
                struct signalfd_siginfo si;
                int running, left, nfds;
                CURLMsg *m;

                xb_cu.multi_poll(s->multi, w, nw, 1000, &nfds);
                while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                        if (si.ssi_signo == SIGWINCH) {
                                s->resize = true;
                                continue;
                        }
                        return (int)si.ssi_signo;   /* the caller ends the shell */
                }
                if (nw == 2 && w[1].revents)
                        read_input(s);
                xb_cu.multi_perform(s->multi, &running);
                while ((m = xb_cu.multi_info_read(s->multi, &left))) {
                        struct xfer *x = NULL;

                        if (m->msg != CURLMSG_DONE)
                                continue;
                        xb_cu.easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
                        if (on_done(s, x, m->data.result) < 0)
                                return -1;
                }
                if (send_input(s) < 0 || send_resize(s) < 0 || send_keepalive(s) < 0)
                        return -1;
        }
        return 0;
}

/* We were told to stop: kill script, which hangs up the shell's terminal
 * (the kernel then sends the shell SIGHUP), and forget the process. */
static void
end_shell(struct shell *s)
{
        _cleanup_free_ char *path = NULL, *sig = NULL;
        _cleanup_(xb_json_decrefp) json_t *body = json_pack("{s:s}", "signal", "KILL");
        struct xb_reply r;

        if (!body || asprintf(&path, "%s/processes/%ld", s->base, s->pid) < 0 ||
            asprintf(&sig, "%s/signal", path) < 0)
                return;
        if (xb_client_json(s->c, "POST", sig, body, &r) == 0)
                xb_reply_free(&r);
        if (xb_client_json(s->c, "DELETE", path, NULL, &r) == 0)
                xb_reply_free(&r);
}

int
xb_cmd_shell(int argc, char **argv)
{
        static const struct option opts[] = {
                { "cwd", required_argument, NULL, O_CWD }, { "root", no_argument, NULL, O_ROOT },
                { "env", required_argument, NULL, O_ENV }, XB_CLIENT_LONGOPTS, { 0 },
        };
        _cleanup_(xb_json_decrefp) json_t *env = json_object();
        struct xb_client c = { 0 };
        struct shell s = { .c = &c, .pid = -1 };
        struct termios saved, raw;
        bool restore = false;
        const char *id = NULL, *cwd = NULL;
        sigset_t mask;
        int opt, sfd, rc;

        if (!env)
                return xb_client_error("out of memory");
        opterr = 0;
        for (;;) {
                while ((opt = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
                        switch (opt) {
                        case O_CWD:
                                if (optarg[0] != '/')
                                        return xb_client_error("--cwd: must be an absolute path inside the "
                                                               "sandbox, e.g. /home/user");
                                cwd = optarg;
                                break;
                        case O_ROOT: s.root = true; break;
                        case O_ENV: {
                                const char *eq = strchr(optarg, '=');
                                char name[256];

                                if (!eq || eq == optarg || (size_t)(eq - optarg) >= sizeof(name))
                                        return xb_client_error("--env: use NAME=VALUE, not `%.100s`", optarg);
                                snprintf(name, sizeof(name), "%.*s", (int)(eq - optarg), optarg);
                                json_object_set_new(env, name, json_string(eq + 1));
                                break;
                        }
                        case XB_CLIENT_OPT_SERVER:
                        case XB_CLIENT_OPT_TOKEN_FILE: xb_client_option(&c, opt, optarg); break;
                        case 'h':
                                printf("usage: execbox shell [OPTIONS] ID [-- CMD [ARG...]]\n\n"
                                       "An interactive shell (or CMD) in sandbox ID, on a terminal of the\n"
                                       "sandbox, in yours. Its exit status is the shell's.\n\n"
                                       "  --cwd DIR          where it starts (default /home/user)\n"
                                       "  --root             as root inside the sandbox\n"
                                       "  --env K=V          set a variable (repeatable)\n" XB_CLIENT_USAGE);
                                return 0;
                        default: return xb_client_bad_option(opt, argv, opts, "shell");
                        }
                }
                if (id || optind >= argc || strcmp(argv[optind - 1], "--") == 0)
                        break;
                id = argv[optind++];
        }
        if (!id)
                return xb_client_error("no sandbox given; usage: execbox shell ID [-- CMD [ARG...]]");
        if (!(s.base = xb_client_sandbox_path(id, "")) || xb_client_open(&c) < 0)
                return XB_EXIT_OWN_ERROR;
        if (!(s.multi = xb_cu.multi_init()))
                return xb_client_error("libcurl would not start");
        if (look_up(&s) < 0 || (s.pid = start_shell(&s, argv + optind, argc - optind, env, cwd)) < 0) {
                rc = XB_EXIT_OWN_ERROR;
                goto out;
        }
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGWINCH);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);
        sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0) {
                raw = saved;
                cfmakeraw(&raw);
                restore = tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0;
        }
        rc = loop(&s, sfd);
        if (restore)
                tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
        for (int k = 0; k < X_NKINDS; k++)
                xfer_end(&s, &s.x[k]);
        if (rc > 0) {
                /* A signal to us: end the shell, and exit as the signal would have. */
                end_shell(&s);
                rc = 128 + rc;
        } else {
                rc = rc < 0 ? XB_EXIT_OWN_ERROR : shell_status(&s);
        }
        close(sfd);
out:
        json_decref(s.end);
        xb_buf_free(&s.in);
        xb_cu.multi_cleanup(s.multi);
        free(s.base);
        return rc;
}
