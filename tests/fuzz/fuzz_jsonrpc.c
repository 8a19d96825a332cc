/* libFuzzer target for MCP's JSON-RPC framing over stdio (mcp/mcp_stdio.c
 * and the core's dispatch in mcp.c), as `execbox mcp` reads it from any
 * client: the input is the whole byte stream, split into lines, parsed,
 * batched and answered, with no engine behind it (core NULL, as in the
 * unit tests), so every request that needs a sandbox fails cleanly. What
 * must hold: the server ends at end of input, and what it writes is whole
 * lines, each one JSON-RPC 2.0 message or batch. Built by `make fuzz`;
 * `make fuzz-replay` runs the saved corpus. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/loop.h"
#include "mcp/mcp.h"
#include "ops/catalog.h"
#include "sandbox/limits.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct xb_loop *loop;
static struct xb_mcp *mcp;

static void
check(int cond)
{
        if (!cond)
                abort();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
        static struct xb_limits limits;
        struct xb_err err = { 0 };
        struct xb_mcp_opts mo;

        (void)argc;
        (void)argv;
        check(xb_catalog_init(&err) == 0);
        loop = xb_loop_new();
        check(loop != NULL);
        mo = (struct xb_mcp_opts){ .loop = loop, .defaults = &limits, .ntenants = 1 };
        check(xb_mcp_new(&mo, &mcp, &err) == 0);
        return 0;
}

static void
check_message(json_t *m)
{
        check(json_is_object(m));
        check(!strcmp(json_string_value(json_object_get(m, "jsonrpc")) ?: "", "2.0"));
        check(json_object_get(m, "result") || json_object_get(m, "error") || json_object_get(m, "method"));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xb_err err = { 0 };
        struct xb_mcp_stdio *s = NULL;
        int in[2], out;
        char *text;
        off_t len;

        if (size > 60000)
                return 0;
        check(pipe2(in, O_CLOEXEC) == 0);
        check(write(in[1], data, size) == (ssize_t)size);
        close(in[1]);
        /* Writes to a memfd never wait, so the answers need no reader. */
        out = memfd_create("fuzz-out", MFD_CLOEXEC);
        check(out >= 0);
        check(xb_mcp_stdio_start(mcp, loop, in[0], out, &s, &err) == 0);
        xb_loop_run(loop);
        xb_mcp_stdio_stop(s);
        len = lseek(out, 0, SEEK_END);
        text = malloc((size_t)len + 1);
        check(text && pread(out, text, (size_t)len, 0) == len);
        text[len] = '\0';
        check(len == 0 || text[len - 1] == '\n');
        if (getenv("FUZZ_JSONRPC_DUMP"))   /* to see what a corpus entry reaches */
                check(write(2, text, (size_t)len) == len);
        for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
                json_t *m = json_loadb(line, (size_t)(nl - line), 0, NULL);
                size_t i;
                json_t *e;

                check(m != NULL);
                if (json_is_array(m)) {
                        check(json_array_size(m) > 0);
                        json_array_foreach(m, i, e)
                                check_message(e);
                } else
                        check_message(m);
                json_decref(m);
        }
        free(text);
        close(in[0]);
        close(out);
        return 0;
}
