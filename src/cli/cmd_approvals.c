/* execbox approvals: what waits for a human on a running server (a secret
 * a sandbox asked for, a connection to a host its policy marks ask), and
 * the decision. A secret's value is read from the terminal (not echoed)
 * or from stdin, never from argv, where ps(1) and shell history see it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "cli/cli.h"
#include "cli/client.h"

#define VALUE_MAX 4096

enum { O_JSON = 1, O_REMEMBER, O_HOSTS, O_HEADER, O_EXISTING };

static int
list(struct xb_client *c, bool json)
{
        struct xb_reply r;
        json_t *a, *v;
        size_t i;

        if (xb_client_json(c, "GET", "/v1/approvals", NULL, &r) < 0)
                return XB_EXIT_OWN_ERROR;
        if (r.status != 200) {
                int rc = xb_client_fail(&r);

                xb_reply_free(&r);
                return rc;
        }
        a = json_object_get(r.json, "approvals");
        if (json) {
                json_dumpf(r.json, stdout, JSON_INDENT(2));
                putchar('\n');
        } else if (!json_array_size(a))
                printf("nothing waits for approval\n");
        else {
                printf("%-26s  %-6s  %-26s  %6s  %s\n", "ID", "KIND", "SANDBOX", "EXPIRES", "WHAT");
                json_array_foreach(a, i, v) {
                        const char *kind = json_string_value(json_object_get(v, "kind"));

                        printf("%-26s  %-6s  %-26s  %5.0fs  %s\n", json_string_value(json_object_get(v, "id")),
                               kind ? kind : "?", json_string_value(json_object_get(v, "sandbox_id")),
                               json_number_value(json_object_get(v, "expires_in_s")),
                               json_string_value(json_object_get(v, "reason")));
                }
        }
        xb_reply_free(&r);
        return 0;
}

/* The value: from the terminal without echo, else all of stdin (one
 * trailing newline dropped). */
static int
read_value(const char *name, char *buf, size_t cap)
{
        struct termios saved, quiet;
        bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
        size_t n = 0;
        ssize_t k;

        if (tty) {
                fprintf(stderr, "value of the secret %s (not shown): ", name);
                quiet = saved;
                quiet.c_lflag &= ~(tcflag_t)ECHO;
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
        }
        while (n + 1 < cap && (k = read(STDIN_FILENO, buf + n, cap - 1 - n)) > 0) {
                n += (size_t)k;
                if (tty && memchr(buf, '\n', n))
                        break;
        }
        if (tty) {
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
                fputc('\n', stderr);
        }
        buf[n] = '\0';
        if (tty && strchr(buf, '\n'))
                *strchr(buf, '\n') = '\0';
        n = strlen(buf);
        if (n && buf[n - 1] == '\n')
                buf[--n] = '\0';
        if (n && buf[n - 1] == '\r')
                buf[--n] = '\0';
        return n ? 0 : -1;
}

static int
decide(struct xb_client *c, const char *id, bool allow, bool remember, const char *hosts, const char *header,
       bool existing)
{
        _cleanup_free_ char *path = NULL;
        struct xb_reply r, l;
        json_t *body, *a, *v, *mine = NULL;
        char value[VALUE_MAX + 2];
        size_t i;
        int rc = 0;

        if (!xb_client_id_ok(id))
                return xb_client_error("`%s` is not an approval id (execbox approvals lists them)", id);
        if (xb_client_json(c, "GET", "/v1/approvals", NULL, &l) < 0)
                return XB_EXIT_OWN_ERROR;
        a = json_object_get(l.json, "approvals");
        json_array_foreach(a, i, v)
                if (!strcmp(json_string_value(json_object_get(v, "id")) ?: "", id))
                        mine = v;
        if (!mine) {
                xb_reply_free(&l);
                return xb_client_error("no approval %s waits (decided, timed out, or not yours)", id);
        }
        body = json_pack("{s:s}", "decision", allow ? "allow" : "deny");
        if (remember)
                json_object_set_new(body, "remember", json_true());
        if (allow && !strcmp(json_string_value(json_object_get(mine, "kind")) ?: "", "secret") && !existing) {
                /* Where the value will go, before it is typed. */
                fprintf(stderr, "sandbox %s asks for the secret %s\n  sent to: %s\n  as: %s\n",
                        json_string_value(json_object_get(mine, "sandbox_id")),
                        json_string_value(json_object_get(mine, "name")),
                        hosts ? hosts : json_string_value(json_object_get(mine, "hosts")) ?: "(none: give --hosts)",
                        header ? header : json_string_value(json_object_get(mine, "header")) ?: "placeholders only");
                if (read_value(json_string_value(json_object_get(mine, "name")), value, sizeof(value)) < 0) {
                        json_decref(body);
                        xb_reply_free(&l);
                        return xb_client_error("no value given (type it, or pipe it on stdin; --existing "
                                               "attaches the secret you already have)");
                }
                json_object_set_new(body, "value", json_string(value));
                explicit_bzero(value, sizeof(value));
                if (hosts) {
                        json_t *arr = json_array();
                        _cleanup_free_ char *dup = strdup(hosts);
                        char *save = NULL;

                        for (char *t = dup ? strtok_r(dup, ", ", &save) : NULL; t; t = strtok_r(NULL, ", ", &save))
                                json_array_append_new(arr, json_string(t));
                        json_object_set_new(body, "hosts", arr);
                }
                if (header)
                        json_object_set_new(body, "header", json_string(header));
        }
        xb_reply_free(&l);
        path = xb_client_path("/v1/approvals/", id);
        if (!path || xb_client_json(c, "POST", path, body, &r) < 0) {
                json_decref(body);
                return XB_EXIT_OWN_ERROR;
        }
        json_decref(body);
        if (r.status != 200)
                rc = xb_client_fail(&r);
        else
                printf("%s %s\n", allow ? "allowed" : "denied", id);
        xb_reply_free(&r);
        return rc;
}

int
xb_cmd_approvals(int argc, char **argv)
{
        static const struct option opts[] = { XB_CLIENT_LONGOPTS,
                                              { "json", no_argument, NULL, O_JSON },
                                              { "remember", no_argument, NULL, O_REMEMBER },
                                              { "hosts", required_argument, NULL, O_HOSTS },
                                              { "header", required_argument, NULL, O_HEADER },
                                              { "existing", no_argument, NULL, O_EXISTING },
                                              { 0 } };
        struct xb_client c = { 0 };
        bool json = false, remember = false, existing = false;
        const char *hosts = NULL, *header = NULL, *verb;
        int opt;

        opterr = 0;
        while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
                switch (opt) {
                case XB_CLIENT_OPT_SERVER:
                case XB_CLIENT_OPT_TOKEN_FILE: xb_client_option(&c, opt, optarg); break;
                case O_JSON: json = true; break;
                case O_REMEMBER: remember = true; break;
                case O_HOSTS: hosts = optarg; break;
                case O_HEADER: header = optarg; break;
                case O_EXISTING: existing = true; break;
                case 'h':
                        printf("usage: execbox approvals [OPTIONS] [list | allow ID | deny ID]\n\n"
                               "What waits for a human: secrets sandboxes asked for, and connections to hosts\n"
                               "their policy marks ask. Allowing a secret reads its value from the terminal\n"
                               "(not shown) or stdin, never from the command line.\n\n"
                               "  --json             list as JSON\n"
                               "  --remember         egress: add the host to the sandbox's allow list\n"
                               "  --hosts H,H        secret: the hosts it is sent to (default: as asked)\n"
                               "  --header TEXT      secret: e.g. 'Authorization: Bearer {value}'\n"
                               "  --existing         secret: attach the one you already have, no value\n"
                               XB_CLIENT_USAGE);
                        return 0;
                default: return xb_client_bad_option(opt, argv, opts, "approvals");
                }
        }
        verb = optind < argc ? argv[optind] : "list";
        if (strcmp(verb, "list") && strcmp(verb, "allow") && strcmp(verb, "deny"))
                return xb_client_error("unknown `%s`; usage: execbox approvals [list | allow ID | deny ID]", verb);
        if (strcmp(verb, "list") && optind + 2 != argc)
                return xb_client_error("usage: execbox approvals %s ID", verb);
        if (xb_client_open(&c) < 0)
                return XB_EXIT_OWN_ERROR;
        if (!strcmp(verb, "list"))
                return list(&c, json);
        return decide(&c, argv[optind + 1], !strcmp(verb, "allow"), remember, hosts, header, existing);
}
