/* libFuzzer target for the daemon's parser of init's file replies
 * (proc/filec.h), the part of the file protocol a compromised init
 * controls. The first byte picks the operation the reply answers and how
 * many fds came with it; the rest is the message. Whatever the parser
 * accepts must hold up: errno in range, fds only where they belong, every
 * entry and the symlink target inside the message, NUL-free, relative.
 * Built by `make fuzz`; `make fuzz-replay` runs the saved corpus. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc/filec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(int cond)
{
        if (!cond)
                abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct xb_file_reply rep;
        struct xb_file_entry e;
        struct xb_msgr m;
        enum xb_fop op;
        size_t nfds, cur = 0, n = 0, bytes = 0, rel_len;
        const char *rel;
        uint8_t *msg;

        if (size < 1)
                return 0;
        op = (enum xb_fop)(XB_FOP_READ + data[0] % 7);
        nfds = (data[0] >> 3) % 3;
        size--;
        msg = malloc(size ? size : 1);
        if (!msg)
                return 0;
        if (size)
                memcpy(msg, data + 1, size);
        if (xb_msgr_init(&m, msg, size) < 0 || xb_filec_parse(&m, op, nfds, &rep) < 0) {
                free(msg);
                return 0;
        }
        check(rep.errnum >= 0 && rep.errnum <= 4095);
        check(nfds == ((op == XB_FOP_READ || op == XB_FOP_WRITE) && rep.errnum == 0 ? 1u : 0u));
        check(rep.type == 0 || (rep.type >= XB_FT_FILE && rep.type <= XB_FT_OTHER));
        check(rep.mode <= 07777 && rep.size <= INT64_MAX);
        if (rep.target) {
                check(op == XB_FOP_STAT && rep.type == XB_FT_SYMLINK);
                check((const uint8_t *)rep.target >= msg && (const uint8_t *)rep.target + rep.target_len <= msg + size);
                check(rep.target_len > 0 && !memchr(rep.target, '\0', rep.target_len));
        }
        check(!rep.more || op == XB_FOP_LIST);
        while (xb_filec_next_entry(&m, &cur, &e, &rel, &rel_len)) {
                check(op == XB_FOP_LIST && rep.errnum == 0);
                check((const uint8_t *)rel >= msg && (const uint8_t *)rel + rel_len <= msg + size);
                check(rel_len > 0 && rel_len <= XB_FILE_PATH_MAX && rel[0] != '/' && !memchr(rel, '\0', rel_len));
                check(e.type >= XB_FT_FILE && e.type <= XB_FT_OTHER && e.mode <= 07777);
                n++;
                bytes += rel_len;
        }
        check(n == rep.nentries && bytes == rep.entry_bytes);
        free(msg);
        return 0;
}
