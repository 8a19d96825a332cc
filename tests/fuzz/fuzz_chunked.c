/* libFuzzer target for the chunked-body decoder (transport/chunked.h),
 * which reads what a server inside a sandbox replies. Fed whole or a byte
 * at a time, it must decode alike, never write past its output, never
 * take more than it was given, and never emit more than the input held.
 * Built by `make fuzz`; `make fuzz-replay` runs the saved corpus. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/chunked.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int cond)
{
        if (!cond)
                abort();
}

/* Decode data fed in pieces of at most step bytes (0: all at once) into
 * out; the bytes written, or -1 if malformed. *end: done was reported. */
static ssize_t
decode(const uint8_t *data, size_t size, size_t step, char *out, size_t cap, bool *end)
{
        struct xb_dechunk d = { 0 };
        size_t have = 0, off = 0, total = 0;

        *end = false;
        while (!*end) {
                size_t used = 0;
                ssize_t n;

                /* one more step of input each round, all of it at once with 0 */
                have = step && have + step < size ? have + step : size;
                n = xb_dechunk(&d, (const char *)data + off, have - off, &used, out + total, cap - total, end);
                if (n < 0)
                        return -1;
                check(used <= have - off && (size_t)n <= cap - total);
                off += used;
                total += (size_t)n;
                if (!n && !used && have == size)
                        break;   /* it needs more than there is */
        }
        return (ssize_t)total;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *a = malloc(size + 1), *b = malloc(size + 1);
        bool end_a, end_b;
        ssize_t na, nb;

        if (!a || !b) {
                free(a);
                free(b);
                return 0;
        }
        na = decode(data, size, 0, a, size + 1, &end_a);
        nb = decode(data, size, 1, b, size + 1, &end_b);
        check(na <= (ssize_t)size);
        /* A byte at a time may stop at a line too long sooner, never later. */
        if (na >= 0 && nb >= 0) {
                check(na == nb && end_a == end_b);
                check(!memcmp(a, b, (size_t)na));
        }
        free(a);
        free(b);
        return 0;
}
