/* A cell's rich-output budget (display, result and error outputs): pure
 * bookkeeping, apart from cells.c so that the session-line fuzzer
 * (tests/fuzz/fuzz_session.c) runs the real bounds. */
#include <stdbool.h>
#include <string.h>

#include "core/session_int.h"

bool
xb__cell_charge_rich(struct xb__cell *c, uint64_t n)
{
        uint64_t limit = c->output_limit > XB__CELL_RICH_DEFAULT ? c->output_limit : XB__CELL_RICH_DEFAULT;

        if (c->rich_bytes + n > limit) {
                c->rich_dropped += n;
                c->events_dropped++;
                return false;
        }
        c->rich_bytes += n;
        return true;
}

bool
xb__cell_full(const struct xb__cell *c, const char *line, size_t len)
{
        uint64_t limit = c->output_limit > XB__CELL_RICH_DEFAULT ? c->output_limit : XB__CELL_RICH_DEFAULT;
        /* Its data is at least a sixth of the line (JSON escapes are at most six bytes). */
        bool rich_full = c->rich_bytes + len / 6 > limit;

        /* Text is always parsed: its dropped bytes are counted exactly. */
        return rich_full && (!strncmp(line, "{\"type\":\"display\"", 17) || !strncmp(line, "{\"type\":\"result\"", 16) ||
                             !strncmp(line, "{\"type\":\"error\"", 15));
}

void
xb__cell_drop(struct xb__cell *c, uint64_t n)
{
        c->rich_dropped += n;
        c->events_dropped++;
}
