/* Writes the seed corpus of fuzz_wire: a few real init messages built with
 * the wire writer, one file each. Not part of the build; regenerate with
 *   cc -std=gnu17 -Isrc -o /tmp/gen tests/fuzz/gen_wire_corpus.c src/proto/wire.c &&
 *   /tmp/gen tests/fuzz/corpus/wire */
#include <stdio.h>
#include <string.h>

#include "proto/wire.h"

static uint8_t buf[XB_MSG_MAX];

static int
save(const char *dir, const char *name, const struct xb_msgw *w)
{
        char path[512];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "wb");
        if (!f || w->overflow || fwrite(w->buf, 1, w->len, f) != w->len) {
                perror(path);
                return 1;
        }
        return fclose(f) != 0;
}

int
main(int argc, char **argv)
{
        static const uint8_t bin[5] = { 0, 1, 2, 0xff, 0x80 };
        struct xb_msgw w;
        int r = 0;

        if (argc != 2) {
                fprintf(stderr, "usage: %s DIR\n", argv[0]);
                return 2;
        }
        xb_msgw_init(&w, buf, sizeof(buf), XB_REQ_SPAWN, 1);
        xb_msgw_str(&w, XB_K_ARGV, "/bin/sh");
        xb_msgw_str(&w, XB_K_ARGV, "-c");
        xb_msgw_str(&w, XB_K_ARGV, "echo hi");
        xb_msgw_str(&w, XB_K_ENV, "PATH=/usr/bin:/bin");
        xb_msgw_str(&w, XB_K_ENV, "HOME=/home/user");
        xb_msgw_str(&w, XB_K_CWD, "/home/user");
        xb_msgw_u64(&w, XB_K_UID, 1000);
        xb_msgw_u64(&w, XB_K_GID, 1000);
        xb_msgw_u64(&w, XB_K_FLAGS, XB_SPAWN_STDOUT | XB_SPAWN_STDERR | XB_SPAWN_NEWSESSION);
        xb_msgw_u64(&w, XB_K_RLIMIT_FSIZE, UINT64_MAX);
        r |= save(argv[1], "spawn", &w);

        xb_msgw_init(&w, buf, sizeof(buf), XB_REQ_SIGNAL, 2);
        xb_msgw_u64(&w, XB_K_TARGET, 1);
        xb_msgw_u64(&w, XB_K_SIGNO, 9);
        xb_msgw_u64(&w, XB_K_FLAGS, XB_SIG_GROUP);
        r |= save(argv[1], "signal", &w);

        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_READY, 0);
        xb_msgw_u64(&w, XB_K_VERSION, XB_PROTO_VERSION);
        r |= save(argv[1], "ready", &w);

        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_EXITED, 1);
        xb_msgw_u64(&w, XB_K_STATUS, 256);
        xb_msgw_u64(&w, XB_K_UTIME_US, 1234);
        xb_msgw_u64(&w, XB_K_STIME_US, 567);
        xb_msgw_u64(&w, XB_K_MAXRSS_KB, 4096);
        r |= save(argv[1], "exited", &w);

        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_ERROR, 3);
        xb_msgw_u64(&w, XB_K_ERRNO, 2);
        xb_msgw_str(&w, XB_K_STAGE, "execve");
        r |= save(argv[1], "error", &w);

        xb_msgw_init(&w, buf, sizeof(buf), XB_REQ_FILE, 4);
        xb_msgw_u64(&w, XB_K_OP, 1);
        xb_msgw_str(&w, XB_K_PATH, "/home/user/data.bin");
        xb_msgw_put(&w, XB_K_DATA, bin, sizeof(bin));
        xb_msgw_u64(&w, XB_K_OFFSET, 0);
        xb_msgw_u64(&w, XB_K_MODE, 0644);
        r |= save(argv[1], "file", &w);

        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_SPAWNED, 1);
        r |= save(argv[1], "header-only", &w);
        return r;
}
