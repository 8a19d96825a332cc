/* execbox: a code-execution sandbox for AI agents. This file only picks the
 * subcommand. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

#include "base/title.h"
#include "base/version.h"

static void
usage(FILE *f)
{
        fputs("usage: execbox COMMAND [OPTIONS]\n"
              "\n"
              "Commands:\n"
              "  run [OPTIONS] -- CMD [ARG...]  run one command in a fresh sandbox\n"
              "  serve [OPTIONS]                start the sandbox server (REST, MCP)\n"
              "  mcp [OPTIONS]                  speak MCP over stdin and stdout\n"
              "  version                        print the version\n"
              "\n"
              "Run `execbox COMMAND --help` for the options of a command.\n",
              f);
}

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
        if (strcmp(argv[1], "run") == 0)
                return xb_cmd_run(argc - 1, argv + 1);
        if (strcmp(argv[1], "serve") == 0)
                return xb_cmd_serve(argc - 1, argv + 1);
        if (strcmp(argv[1], "mcp") == 0)
                return xb_cmd_mcp(argc - 1, argv + 1);
        if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
                printf("execbox %s\n", XB_VERSION);
                return 0;
        }
        if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                usage(stdout);
                return 0;
        }
        fprintf(stderr, "execbox: unknown command `%s`; try `execbox --help`\n", argv[1]);
        return 2;
}
