/* libFuzzer target for the Connect envelope parser (e2b/connect.h): walk
 * a buffer of envelopes as a streamed request body would be walked; the
 * parser must never read past the buffer or return a span outside it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "e2b/connect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        size_t off = 0;

        while (off < size) {
                const uint8_t *p;
                size_t n;
                uint8_t f;
                ssize_t k = xb_connect_parse(data + off, size - off, 1 << 20, &f, &p, &n);

                if (k < 0)
                        break;
                if (p < data + off || p + n > data + size || (size_t)k != 5 + n)
                        abort();
                off += (size_t)k;
        }
        return 0;
}
