/* execbox: a code-execution sandbox for AI agents. This file only picks the
 * subcommand. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

#include "base/title.h"

static void
usage(FILE *f)
{
        fputs("usage: execbox COMMAND [OPTIONS]\n"
              "\n"
              "Commands:\n"
              "  run [OPTIONS] -- CMD [ARG...]  run one command in a fresh sandbox\n"
              "  serve [OPTIONS]                start the sandbox server (REST, MCP)\n"
              "  mcp [OPTIONS]                  speak MCP over stdin and stdout\n"
              "  version                        print the version, commit and kernel features\n"
              "\n"
              "Commands for a running server (--server URL or EXECBOX_URL, token in EXECBOX_TOKEN):\n"
              "  ls, create, rm ID...           list, create and delete sandboxes\n"
              "  exec ID -- CMD [ARG...]        run a command in one, streaming its output\n"
              "  shell ID                       an interactive shell in one, on a terminal\n"
              "  cp SRC DST                     copy a file in or out (ID:PATH names its side)\n"
              "  logs ID                        a sandbox's audit log (--follow for new events)\n"
              "  approvals [allow|deny ID]      what waits for a human: secrets asked for, ask hosts\n"
              "\n"
              "Run `execbox COMMAND --help` for the options of a command.\n",
              f);
}

static const struct {
        const char *name;
        int (*run)(int argc, char **argv);
} commands[] = {
        { "run", xb_cmd_run },     { "serve", xb_cmd_serve }, { "mcp", xb_cmd_mcp },   { "ls", xb_cmd_ls },
        { "create", xb_cmd_create }, { "rm", xb_cmd_rm },     { "exec", xb_cmd_exec }, { "shell", xb_cmd_shell },
        { "cp", xb_cmd_cp },       { "logs", xb_cmd_logs }, { "approvals", xb_cmd_approvals },
};

int
main(int argc, char **argv)
{
        /* Fds 0-2 are always open from here on, so no descriptor we create
         * (a pipe to a sandbox, the server's socket) lands on them. */
        for (int fd = 0; fd < 3; fd++)
                if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) != fd)
                        return 125;
        /* From here on argv is a copy: the original's bytes become the
         * title a sandbox's setup child shows (base/title.h). */
        if (!(argv = xb_title_init(argc, argv)))
                return 125;
        if (argc < 2) {
                usage(stderr);
                return 2;
        }
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(argv[1], commands[i].name) == 0)
                        return commands[i].run(argc - 1, argv + 1);
        if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0)
                return xb_cmd_version();
        if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                usage(stdout);
                return 0;
        }
        fprintf(stderr, "execbox: unknown command `%s`; try `execbox --help`\n", argv[1]);
        return 2;
}
