/* `execbox run`: one command in a fresh sandbox, like bwrap but safe by
 * default. Streams output live, or prints one JSON result with --json.
 * Exit status (report.h): the command's own, 128+N if it died of signal
 * N, 124 on timeout, 125 when execbox itself fails, 126 and 127 when the
 * command is not executable or not found. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/utf8.h"
#include "cli/cli.h"
#include "cli/opterr.h"
#include "cli/report.h"
#include "proc/env.h"
#include "proc/run.h"

static void
run_usage(FILE *f)
{
        fputs("usage: execbox run [OPTIONS] -- CMD [ARG...]\n"
              "\n"
              "Run CMD in a fresh sandbox: new namespaces, a read-only host /usr, writable\n"
              "/tmp and /home/user (the working directory), no network, seccomp, Landlock.\n"
              "\n"
              "Limits (sizes take K, M, G; durations take ms, s, m):\n"
              "  --timeout DUR        wall-clock limit (default 60s; 0 = none)\n"
              "  --cpu-time DUR       CPU time of the whole process tree\n"
              "  --memory SIZE        memory, no swap (default 1G)\n"
              "  --pids N             processes and threads (default 512)\n"
              "  --cpus N             CPU bandwidth in cores, e.g. 0.5\n"
              "  --output-limit SIZE  bytes of stdout and of stderr kept (default 1M):\n"
              "                       the head and the tail, with a marker between\n"
              "  --output-limit-kill  stop the command when it passes the output limit\n"
              "  --file-size SIZE     largest file a process may write\n"
              "  --disk SIZE          size of /tmp and of /home/user (default 1G)\n"
              "\n"
              "Environment and files:\n"
              "  --env K=V            set a variable (repeatable); nothing is inherited\n"
              "  --cwd PATH           working directory (default /home/user)\n"
              "  --mount HOST:PATH[:ro|:rw]  bind a host directory (read-only by default);\n"
              "                       HOST must be inside an --allow-mount directory\n"
              "  --allow-mount DIR    let --mount use DIR (also EXECBOX_ALLOW_MOUNTS=D1:D2)\n"
              "  --root               run as root inside the sandbox (default: user, uid 1000)\n"
              "\n"
              "Output:\n"
              "  --json               capture output; print one JSON result line\n"
              "  -t, --tty            run on a terminal (a pty of the sandbox): stdout and\n"
              "                       stderr as one, stdin typed into it, yours in raw mode\n"
              "  -h, --help           this help\n"
              "\n"
              "Exit status: the command's; 124 timed out, 125 execbox failed, 126 not\n"
              "executable, 127 not found, 128+N killed by signal N.\n",
              f);
}

enum {
        OPT_TIMEOUT = 256, OPT_CPU, OPT_MEMORY, OPT_PIDS, OPT_CPUS, OPT_OUTPUT, OPT_OUTPUT_KILL,
        OPT_FSIZE, OPT_DISK, OPT_ENV, OPT_CWD, OPT_MOUNT, OPT_ALLOW, OPT_ROOT, OPT_JSON,
        OPT_CGROUP, OPT_CGROUP_PREFIX, OPT_FREEZER,
};

static const struct option options[] = {
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        { "cpu-time", required_argument, NULL, OPT_CPU },
        { "memory", required_argument, NULL, OPT_MEMORY },
        { "pids", required_argument, NULL, OPT_PIDS },
        { "cpus", required_argument, NULL, OPT_CPUS },
        { "output-limit", required_argument, NULL, OPT_OUTPUT },
        { "output-limit-kill", no_argument, NULL, OPT_OUTPUT_KILL },
        { "file-size", required_argument, NULL, OPT_FSIZE },
        { "disk", required_argument, NULL, OPT_DISK },
        { "env", required_argument, NULL, OPT_ENV },
        { "cwd", required_argument, NULL, OPT_CWD },
        { "mount", required_argument, NULL, OPT_MOUNT },
        { "allow-mount", required_argument, NULL, OPT_ALLOW },
        { "root", no_argument, NULL, OPT_ROOT },
        { "json", no_argument, NULL, OPT_JSON },
        { "tty", no_argument, NULL, 't' },
        { "cgroup", required_argument, NULL, OPT_CGROUP },        /* auto, v1, v2 (tests) */
        { "cgroup-prefix", required_argument, NULL, OPT_CGROUP_PREFIX },
        { "kill-via-freezer", no_argument, NULL, OPT_FREEZER },   /* tests */
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
};

struct run_cli {
        struct xb_limits limits;
        const char *envs[XB_ENV_MAX_VARS];
        size_t nenv;
        struct xb_bind binds[32];
        size_t nbinds;
        const char *allow[64];
        size_t nallow;
        char *allow_env;
        const char *cwd;
        bool root, json, output_kill, freezer, tty;
        enum xb_cgroup_mode cgroup;
        const char *cgroup_prefix;
};

static int
fail(bool json, const char *msg)
{
        fprintf(stderr, "execbox: error: %s\n", msg);
        if (json) {
                json_t *o = json_pack("{s:{s:s,s:s}}", "error", "code", "execbox_error", "message", msg);

                if (o) {
                        json_dumpf(o, stdout, JSON_COMPACT);
                        fputc('\n', stdout);
                        json_decref(o);
                }
        }
        return XB_EXIT_OWN_ERROR;
}

/* What the sandbox's start would refuse in the --mount options, found
 * now so that the message names the option (mount, typed as the user did). */
static int
check_mounts(const struct run_cli *c, const char *mount, struct xb_err *err)
{
        char *real[ARRAY_SIZE(c->allow)];
        size_t n = 0;
        int r = xb_binds_validate(c->binds, c->nbinds, err);

        for (size_t i = 0; i < c->nallow; i++)
                if ((real[n] = realpath(c->allow[i], NULL)))
                        n++;
        for (size_t i = 0; i < c->nbinds && r == 0; i++) {
                struct xb_bind b = { strdup(c->binds[i].host), strdup(c->binds[i].dest), c->binds[i].rw };

                r = b.host && b.dest ? xb_bind_resolve(&b, (const char *const *)real, n, err)
                                     : xb_err_set(err, ENOMEM, "mount");
                xb_bind_free(&b);
        }
        for (size_t i = 0; i < n; i++)
                free(real[i]);
        return r < 0 ? xb_err_wrap(err, "%s", mount) : 0;
}

static int
parse(struct run_cli *c, int argc, char **argv, struct xb_err *err)
{
        char typed[128], problem[256], mount[128] = "--mount";
        struct stat st;
        int opt, r;

        xb_limits_default(&c->limits);
        c->cgroup = XB_CG_AUTO;
        /* As for serve: a flag over EXECBOX_CGROUP_PREFIX. */
        if ((c->cgroup_prefix = getenv("EXECBOX_CGROUP_PREFIX")) && *c->cgroup_prefix &&
            (r = xb_cgroup_prefix_check(c->cgroup_prefix, err)) < 0)
                return xb_err_wrap(err, "EXECBOX_CGROUP_PREFIX");
        if (c->cgroup_prefix && !*c->cgroup_prefix)
                c->cgroup_prefix = NULL;
        opterr = 0;   /* our messages, not getopt's */
        /* "+": stop at the first non-option, so `execbox run ls -la` works too. */
        while ((opt = getopt_long(argc, argv, "+:ht", options, NULL)) != -1) {
                switch (opt) {
                case OPT_TIMEOUT:
                        r = xb_parse_duration_ms(optarg, &c->limits.wall_ms, err);
                        break;
                case OPT_CPU:
                        r = xb_parse_duration_ms(optarg, &c->limits.cpu_ms, err);
                        break;
                case OPT_MEMORY:
                        r = xb_parse_size(optarg, &c->limits.memory, err);
                        break;
                case OPT_PIDS:
                        r = xb_parse_u64(optarg, &c->limits.pids, err);
                        break;
                case OPT_CPUS:
                        r = xb_parse_cpus(optarg, &c->limits.cpus_milli, err);
                        break;
                case OPT_OUTPUT:
                        r = xb_parse_size(optarg, &c->limits.output, err);
                        break;
                case OPT_OUTPUT_KILL:
                        c->output_kill = true;
                        r = 0;
                        break;
                case OPT_FSIZE:
                        r = xb_parse_size(optarg, &c->limits.fsize, err);
                        break;
                case OPT_DISK:
                        r = xb_parse_size(optarg, &c->limits.disk, err);
                        break;
                case OPT_ENV:
                        if (c->nenv == XB_ENV_MAX_VARS)
                                return xb_err_msg(err, E2BIG, "too many --env options");
                        c->envs[c->nenv++] = optarg;
                        r = xb_env_check(optarg, err);
                        break;
                case OPT_CWD:
                        c->cwd = optarg;
                        r = optarg[0] == '/' ? 0
                                             : xb_err_msg(err, EINVAL, "must be an absolute path inside the sandbox, e.g. /home/user");
                        break;
                case OPT_MOUNT:
                        if (c->nbinds == ARRAY_SIZE(c->binds))
                                return xb_err_msg(err, E2BIG, "at most 32 --mount options");
                        r = xb_bind_parse(optarg, &c->binds[c->nbinds], err);
                        if (r == 0)
                                c->nbinds++;
                        xb_opt_typed(opt, argv, options, mount, sizeof(mount));
                        break;
                case OPT_ALLOW:
                        if (c->nallow == ARRAY_SIZE(c->allow))
                                return xb_err_msg(err, E2BIG, "too many --allow-mount options");
                        c->allow[c->nallow++] = optarg;
                        r = stat(optarg, &st) < 0 ? xb_err_set(err, errno, "%s", optarg)
                            : !S_ISDIR(st.st_mode) ? xb_err_msg(err, ENOTDIR, "%s is not a directory", optarg) : 0;
                        break;
                case OPT_ROOT:
                        c->root = true;
                        r = 0;
                        break;
                case OPT_JSON:
                        c->json = true;
                        r = 0;
                        break;
                case OPT_CGROUP:
                        r = xb_cgroup_mode_parse(optarg, &c->cgroup, err);
                        break;
                case OPT_CGROUP_PREFIX:
                        c->cgroup_prefix = optarg;
                        r = xb_cgroup_prefix_check(optarg, err);
                        break;
                case OPT_FREEZER:
                        c->freezer = true;
                        r = 0;
                        break;
                case 't':
                        c->tty = true;
                        r = 0;
                        break;
                case 'h':
                        run_usage(stdout);
                        exit(0);
                default:
                        return xb_err_msg(err, EINVAL, "%s; see `execbox run --help`",
                                          xb_opt_problem(opt, argv, options, problem, sizeof(problem)));
                }
                /* The bounds too, now, so that the message names this option. */
                if (r == 0)
                        r = xb_limits_validate(&c->limits, err);
                if (r < 0)
                        return xb_err_wrap(err, "%s", xb_opt_typed(opt, argv, options, typed, sizeof(typed)));
        }
        if (optind >= argc)
                return xb_err_msg(err, EINVAL, "no command given; usage: execbox run [OPTIONS] -- CMD [ARG...]");
        {
                const char *env_allow = getenv("EXECBOX_ALLOW_MOUNTS");

                if (env_allow && *env_allow) {
                        c->allow_env = strdup(env_allow);
                        for (char *save = NULL, *t = strtok_r(c->allow_env, ":", &save);
                             t && c->nallow < ARRAY_SIZE(c->allow); t = strtok_r(NULL, ":", &save))
                                c->allow[c->nallow++] = t;
                }
        }
        if (c->nbinds && (r = check_mounts(c, mount, err)) < 0)
                return r;
        return xb_limits_validate(&c->limits, err);
}

static json_t *
text(const struct xb_outbuf *b, const char *what)
{
        size_t len, clean_len;
        _cleanup_free_ char *raw = xb_outbuf_render(b, what, &len);
        _cleanup_free_ char *clean = raw ? xb_utf8_sanitize(raw, len, &clean_len) : NULL;

        return clean ? json_stringn(clean, clean_len) : json_string("");
}

static void
print_json(const struct xb_result *res)
{
        json_t *o = json_object();

        json_object_set_new(o, "status", json_string(xb_status_name(res->status)));
        json_object_set_new(o, "exit_code", res->exited ? json_integer(res->exit_code) : json_null());
        json_object_set_new(o, "signal", res->exited ? json_null() : json_integer(res->signal));
        json_object_set_new(o, "stdout", text(&res->out, "stdout"));
        json_object_set_new(o, "stderr", text(&res->err, "stderr"));
        json_object_set_new(o, "stdout_truncated", json_boolean(xb_outbuf_truncated(&res->out)));
        json_object_set_new(o, "stderr_truncated", json_boolean(xb_outbuf_truncated(&res->err)));
        json_object_set_new(o, "stdout_bytes", json_integer((json_int_t)res->out.total));
        json_object_set_new(o, "stderr_bytes", json_integer((json_int_t)res->err.total));
        json_object_set_new(o, "wall_ms", json_integer((json_int_t)res->wall_ms));
        json_object_set_new(o, "cpu_ms", json_integer((json_int_t)res->cpu_ms));
        json_object_set_new(o, "peak_memory", json_integer((json_int_t)res->peak_memory));
        json_dumpf(o, stdout, JSON_COMPACT);
        fputc('\n', stdout);
        json_decref(o);
}

/* The terminal whose size the command's pty follows, and which is put in
 * raw mode for it (keys go through as they are typed, ^C included, and
 * the sandbox's pty does the echo and the line editing, as with ssh -t). */
struct term {
        int fd;                 /* -1: none */
        bool raw;
        struct termios saved;
};

static void
term_open(struct term *t)
{
        struct termios raw;

        t->fd = isatty(STDIN_FILENO) ? STDIN_FILENO : isatty(STDOUT_FILENO) ? STDOUT_FILENO : -1;
        t->raw = false;
        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &t->saved) < 0)
                return;
        raw = t->saved;
        cfmakeraw(&raw);
        t->raw = tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0;
}

static void
term_restore(struct term *t)
{
        if (t->raw)
                tcsetattr(STDIN_FILENO, TCSADRAIN, &t->saved);
        t->raw = false;
}

static void
report(const struct run_cli *c, const struct xb_result *res)
{
        struct xb_cli_end e = { xb_status_name(res->status), res->exited, res->exit_code, res->signal };
        struct xb_cli_limits l = { c->limits.memory, c->limits.output, c->limits.wall_ms, c->limits.cpu_ms };

        if (!res->interrupted_by)
                xb_cli_report_kill(&e, &l);
}

int
xb_cmd_run(int argc, char **argv)
{
        struct run_cli *c = calloc(1, sizeof(*c));
        struct xb_err err = { 0 };
        struct xb_engine *eng = NULL;
        struct xb_engine_opts eo = { 0 };
        struct xb_run_opts ro = { 0 };
        struct xb_result res;
        struct term term = { .fd = -1 };
        char **env = NULL;
        _cleanup_close_ int sfd = -EBADF;
        sigset_t mask;
        int rc, r;

        if (!c)
                return fail(false, "out of memory");
        if (parse(c, argc, argv, &err) < 0) {
                rc = fail(c->json, err.msg);
                goto out;
        }
        if (xb_env_build("/home/user", c->root ? 0 : XB_USER_UID, c->envs, c->nenv, &env, &err) < 0) {
                rc = fail(c->json, err.msg);
                goto out;
        }
        eo = (struct xb_engine_opts){ .cgroup_mode = c->cgroup, .cgroup_parent = c->cgroup_prefix,
                                      .allow_mounts = c->allow, .nallow = c->nallow };
        if (xb_engine_open(&eo, &eng, &err) < 0) {
                rc = fail(c->json, err.msg);
                goto out;
        }
        /* SIGINT, SIGTERM and SIGHUP end the run cleanly instead of killing us. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGPIPE);
        if (c->tty)
                sigaddset(&mask, SIGWINCH);   /* the pty follows our terminal's size */
        sigprocmask(SIG_BLOCK, &mask, NULL);
        sigdelset(&mask, SIGPIPE);
        sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (c->tty)
                term_open(&term);

        ro = (struct xb_run_opts){
                .sandbox = { .limits = c->limits, .binds = c->binds, .nbinds = c->nbinds, .oom_group = true },
                .argv = argv + optind, .env = env, .cwd = c->cwd ? c->cwd : "/home/user",
                .uid = c->root ? 0 : XB_USER_UID, .capture = c->json, .out_fd = STDOUT_FILENO,
                .err_fd = STDERR_FILENO, .stdin_fd = STDIN_FILENO, .kill_on_output_limit = c->output_kill,
                .signal_fd = sfd, .force_freezer = c->freezer, .tty = c->tty, .tty_size_fd = term.fd,
        };
        r = xb_run(eng, &ro, &res, &err);
        term_restore(&term);
        if (r < 0) {
                rc = fail(c->json, err.msg);
                if (res.exec_errno)
                        rc = xb_cli_exec_failed_status(res.exec_errno);
                goto out;
        }
        if (c->json)
                print_json(&res);
        report(c, &res);
        /* A signal to execbox itself is reported as the shell would: 128+N. */
        if (res.interrupted_by)
                rc = 128 + res.interrupted_by;
        else
                rc = xb_cli_exit_status(&(struct xb_cli_end){ xb_status_name(res.status), res.exited,
                                                             res.exit_code, res.signal });
        xb_result_free(&res);
out:
        xb_engine_close(eng);
        xb_strv_free(env);
        for (size_t i = 0; i < c->nbinds; i++)
                xb_bind_free(&c->binds[i]);
        free(c->allow_env);
        free(c);
        fflush(stdout);
        return rc;
}
