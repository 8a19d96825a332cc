/* The daemon's side of the file protocol (XB_REQ_FILE, XB_EV_FILE): it
 * writes requests and validates replies. Init's replies are untrusted: the
 * parser checks every field's key, length and range, the number of fds,
 * and each listing entry, and refuses anything else. Pure code: no paths
 * are opened here (the fds arrive from init; core/files.c checks them). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "proto/wire.h"

struct xb_file_req {
        enum xb_fop op;
        const char *path;             /* absolute */
        const char *path2;            /* MOVE: the destination, absolute */
        uint32_t uid, gid;            /* init acts with this fsuid and fsgid */
        uint32_t mode;                /* WRITE, MKDIR: permission bits */
        uint32_t depth;               /* LIST: 1..XB_FILE_DEPTH_MAX */
        uint32_t flags;               /* XB_FILE_* */
};

/* Send a request on the init socket (non-blocking); -EAGAIN when init is
 * behind, -E2BIG when the paths do not fit a message. */
int xb_filec_send(int sock, uint32_t tag, const struct xb_file_req *q, struct xb_err *err);

struct xb_file_reply {
        int errnum;                   /* 0 on success, else 1..4095 */
        enum xb_ftype type;           /* STAT; on failure the kind found, or 0 */
        uint32_t mode;
        uint64_t size;
        int64_t mtime_ns;
        const char *target;           /* STAT of a symlink: points into the message */
        size_t target_len;
        uint64_t count;               /* LIST (final part), MKDIR, DELETE */
        bool trunc;                   /* LIST: entries were left out */
        bool more;                    /* LIST: a part; more follow */
        size_t nentries;              /* LIST: entries in this message */
        size_t entry_bytes;           /* LIST: bytes of their paths */
};

/* Validate one XB_EV_FILE message as the reply to op, which arrived with
 * nfds fds. Returns 0 and fills ret, or -EBADMSG for anything malformed
 * (the caller kills the sandbox). */
int xb_filec_parse(const struct xb_msgr *m, enum xb_fop op, size_t nfds, struct xb_file_reply *ret);

/* Iterate the entries of a message xb_filec_parse accepted: *cursor starts
 * at 0. rel points into the message (rel_len bytes, no NUL, not terminated). */
bool xb_filec_next_entry(const struct xb_msgr *m, size_t *cursor, struct xb_file_entry *e, const char **rel,
                         size_t *rel_len);
