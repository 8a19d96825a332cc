/* libFuzzer target for the session drivers' event lines (core/session_io.c):
 * what the interpreter in a sandbox writes to its protocol fd, and user code
 * in a session can write there too. The file is included, so its static
 * parser (on_out, handle_event, cell_event, clean_bundle) runs as it does in
 * the daemon, on a session with a running cell; the engine around it
 * (the cell's outputs, its end, the image store) is replaced by stubs that
 * check what reaches them. What must hold: every output the parser keeps
 * is a well-formed event whose texts are within the line limit; a broken
 * line ends the session; nothing leaks. Built by `make fuzz`; `make
 * fuzz-replay` runs the saved corpus. */
#include "core/session_io.c"

#include <fcntl.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool died, finished;
static unsigned outputs;

static void
check(int cond)
{
        if (!cond)
                abort();
}

/* ---- the engine around the parser ---- */

const char xb_python_driver[] = "", xb_node_driver[] = "";

void
xb__session_died(struct xb_session *ss, const char *why)
{
        check(why && *why);
        ss->state = SS_DEAD;
        died = true;
}

void
xb__session_ready(struct xb_session *ss)
{
        (void)ss;
}

void
xb__session_variable_event(struct xb_session *ss, uint64_t id, json_t *ev)
{
        (void)ss;
        (void)id;
        check(json_is_object(ev));
}

void
xb__cell_add_output(struct xb__cell *c, json_t *o)
{
        const char *type = json_string_value(json_object_get(o, "type"));

        (void)c;
        check(type != NULL);
        if (!strcmp(type, "stream")) {
                check(xb__valid_text(json_object_get(o, "text"), XB__LINE_MAX_BYTES));
                check(!strcmp(json_string_value(json_object_get(o, "name")), "stdout") ||
                      !strcmp(json_string_value(json_object_get(o, "name")), "stderr"));
        } else if (!strcmp(type, "display") || !strcmp(type, "result")) {
                check(json_is_object(json_object_get(o, "data")) && json_object_size(json_object_get(o, "data")) <= 16);
        } else {
                check(!strcmp(type, "error"));
                check(json_is_array(json_object_get(o, "traceback")) &&
                      json_array_size(json_object_get(o, "traceback")) <= 500);
        }
        outputs++;
        json_decref(o);
}

void
xb__cell_finish(struct xb__cell *c, const char *status)
{
        check(!strcmp(status, "ok") || !strcmp(status, "error") || !strcmp(status, "interrupted") ||
              !strcmp(status, "timeout"));
        c->done = true;
        c->ss->cell = NULL;   /* as the real one moves on to the next cell */
        finished = true;
}

const char *
xb__image_store(struct xb_sbx *x, const char *mime, const char *b64, const char *hint_name)
{
        (void)x;
        (void)hint_name;
        check(mime && b64);
        return strlen(b64) % 2 ? NULL : "image-1.png";
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xb_session ss = { .state = SS_BUSY, .in_fd = -1, .err_fd = -1, .id = "s1" };
        struct xb__cell cell = { .ss = &ss, .id = 1 };
        int p[2];

        if (size > 60000)
                return 0;
        check(pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0);
        check(write(p[1], data, size) == (ssize_t)size);
        close(p[1]);
        ss.out_fd = p[0];
        ss.out_io.data = &ss;
        ss.line.max = XB__LINE_MAX_BYTES;
        ss.cell = &cell;
        died = finished = false;
        outputs = 0;
        on_out(&ss.out_io, 0);
        check(died || ss.out_fd < 0);   /* read to the end, or the session ended */
        json_decref(cell.exit_code);
        json_decref(cell.cwd);
        if (ss.out_fd >= 0)
                close(ss.out_fd);
        xb_buf_free(&ss.line);
        return 0;
}
