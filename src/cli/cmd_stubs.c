/* Placeholders until the server lands: they say so and fail. */
#include <stdio.h>

#include "cli/cli.h"

int
xb_cmd_mcp(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        fputs("execbox: error: `mcp` is not built yet\n", stderr);
        return XB_EXIT_OWN_ERROR;
}
