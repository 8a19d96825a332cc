/* make bench: `execbox serve` over HTTP, side by side with its peers.
 *
 *  1. warm exec round trip: POST /v1/sandboxes/{id}/exec {"argv":["/bin/true"]}
 *     on one keep-alive connection, interleaved with a bare posix_spawn +
 *     waitpid of /bin/true in this process (the floor); and, in the same
 *     rounds, what MCP's run_command runs (bash -c true) both ways: POST
 *     .../exec {"cmd":"true"}, and tools/call run_command {"cmd":"true"} in
 *     one MCP session over Streamable HTTP on its own connection;
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
 *     and the same with no pool, for scale;
 *  7. requests per second through a published port
 *     (/v1/sandboxes/{id}/ports/8080/) against the same server inside
 *     reached directly from its network namespace.
 *  8. CPU fairness: a sandbox's warm exec round trip while idle, and while
 *     64 processes spin in another sandbox (bench/server/fair.c).
 *  9. layered roots: create + first exec with --layers disk against
 *     --layers none (no pool, interleaved), and snapshot and fork of a
 *     sandbox that wrote 200 MB.
 * 10. the pause + resume round trip (POST .../pause, POST .../resume) of a
 *     sandbox whose process holds 1 GiB, beside an idle one's.
 *
 * The client is a small HTTP/1.1 implementation on raw sockets
 * (bench/server/client.c): keep-alive, Content-Length and chunked bodies,
 * and it checks every status code and every exec's verdict, so a wrong
 * answer fails the run instead of looking fast. Each part has its own file
 * in bench/server/. The bench starts its own servers (EXECBOX is argv[1])
 * in temporary state directories and stops each with SIGTERM to its pid.
 *
 * usage: bench_server EXECBOX [ROUNDS]   (ROUNDS for 1; default 1000)
 * BENCH_ONLY=56 runs parts 5 and 6 only; BENCH_CELLS (500) sets the cells
 * of 5, BENCH_PY_ROUNDS (30) and BENCH_PY_PAUSE_MS (1500) the rounds of 6
 * and the pause after each, which lets the pool start a new session;
 * BENCH_LAYER_ROUNDS (50) the rounds of 7. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/bench.h"

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
        if (!only || strchr(only, '7'))
                bench_ports(argv[1], env_int("BENCH_PORT_ROUNDS", 1000, 10));
        if (!only || strchr(only, '8'))
                bench_fair_cpu(argv[1], env_int("BENCH_FAIR_ROUNDS", 200, 10));
        if (!only || strchr(only, '9'))
                bench_layers(argv[1], env_int("BENCH_LAYER_ROUNDS", 50, 5));
        if (!only || strchr(only, 'a'))
                bench_pause(argv[1], env_int("BENCH_PAUSE_ROUNDS", 200, 10));
        return 0;
}
