/* The init wire format: how the daemon and a sandbox's init talk over one
 * SOCK_SEQPACKET socketpair.
 *
 * Theory of operation. Each datagram is one message: an 8-byte header
 * (type, tag) and then fields, each a 4-byte key, a 4-byte length and the
 * bytes, padded to 4. A key may repeat (argv, env). File descriptors ride
 * along as SCM_RIGHTS. Messages are at most XB_MSG_MAX bytes and carry at
 * most XB_MSG_MAXFDS fds. The daemon treats everything init sends as
 * untrusted: the reader checks every length before it reads. Pure code,
 * shared by the static init and the daemon. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define XB_MSG_MAX (64 * 1024)
#define XB_MSG_MAXFDS 8

/* Message types. Requests go daemon -> init, events init -> daemon. */
enum xb_msg_type {
        XB_REQ_SPAWN = 1,     /* fields below; fds: the std fds named in FLAGS */
        XB_REQ_SIGNAL = 2,    /* TARGET, SIGNO, FLAGS (XB_SIG_GROUP or XB_SIG_OTHERS) */
        XB_REQ_FILE = 3,      /* a file operation, see enum xb_fop */
        XB_REQ_WATCH = 4,     /* PATH, FLAGS (XB_WATCH_RECURSIVE), UID, GID: watch a directory */
        XB_REQ_UNWATCH = 5,   /* TARGET: the watch's tag; init frees it and answers nothing */
        /* Survival of the daemon (init_keep.c). KEEP arms it: DATA the
         * secret, TIMEOUT_MS the grace; fds: the listening socket, the uid
         * slot's lock, then the egress sockets (if any). */
        XB_REQ_KEEP = 6,
        XB_REQ_HOLD = 7,      /* tag = a spawn's; PID, DATA the daemon's note; fds: the daemon's ends of
                               * its pipes (at most 3) */
        XB_REQ_UNHOLD = 8,    /* TARGET: drop what HOLD kept */
        XB_REQ_HELLO = 9,     /* a new daemon, first on an accepted connection: DATA the secret */
        XB_SETUP_GO = 50,     /* daemon -> setup child: ids mapped; fds: v1 cgroup `tasks` files */
        XB_SETUP_PTY = 51,    /* a command being started -> its starter, on a socket of their own
                               * (struct xb_exec_spec.tty_sock); fds: its terminal's master */
        XB_SETUP_LAYERS = 52, /* daemon -> setup child, before GO: the id-mapped layer mounts (layers.h) */
        XB_SETUP_BINDS = 53,  /* then, with a layered root: the caller's binds, id-mapped (rootfs.c) */

        XB_EV_READY = 100,    /* VERSION */
        XB_EV_SPAWNED = 101,  /* tag = request tag; PID */
        XB_EV_EXITED = 102,   /* tag = spawn tag; STATUS, UTIME_US, STIME_US, MAXRSS_KB */
        XB_EV_ERROR = 103,    /* tag = request tag; ERRNO, STAGE */
        XB_EV_FILE = 104,     /* tag = request tag; reply to XB_REQ_FILE */
        XB_EV_WATCH = 105,    /* tag = watch tag; ERRNO (first reply; nonzero ends it), WEVENT...,
                               * FLAGS (XB_WATCH_OVERFLOW, XB_WATCH_END) */
        XB_EV_KEPT = 106,     /* after HELLO: COUNT egress sockets, TARGET the highest tag in use;
                               * fds: the slot's lock, then the egress sockets */
        XB_EV_HELD = 107,     /* then one per HOLD: tag, PID, DATA, fds; the last has FLAGS XB_HELD_END
                               * (and no tag); then events init queued while alone */
};
#define XB_HELD_END 0x1u
#define XB_KEEP_SECRET_LEN 64   /* hex characters */
#define XB_HOLD_NOTE_MAX 2048

/* Field keys. */
enum xb_msg_key {
        XB_K_ARGV = 1, XB_K_ENV, XB_K_CWD, XB_K_UID, XB_K_GID, XB_K_FLAGS,
        XB_K_RLIMIT_CPU, XB_K_RLIMIT_FSIZE, XB_K_RLIMIT_NOFILE,
        XB_K_PID = 20, XB_K_STATUS, XB_K_UTIME_US, XB_K_STIME_US, XB_K_MAXRSS_KB,
        XB_K_ERRNO, XB_K_STAGE, XB_K_VERSION, XB_K_TARGET, XB_K_SIGNO,
        XB_K_OP = 40, XB_K_PATH, XB_K_PATH2, XB_K_MODE, XB_K_DEPTH, XB_K_ENTRY,
        XB_K_SIZE, XB_K_MTIME_NS, XB_K_TYPE, XB_K_NAME, XB_K_COUNT, XB_K_DATA,
        XB_K_OFFSET, XB_K_TRUNC,
        XB_K_ROWS = 60, XB_K_COLS, XB_K_WEVENT,
        XB_K_TIMEOUT_MS = 70,
};

/* XB_REQ_SPAWN flags. */
#define XB_SPAWN_STDIN 0x1u   /* an fd for stdin is attached */
#define XB_SPAWN_STDOUT 0x2u  /* an fd for stdout is attached */
#define XB_SPAWN_STDERR 0x4u  /* an fd for stderr is attached */
#define XB_SPAWN_NEWSESSION 0x8u /* setsid(); sent always, and xb_exec_child does it anyway */
#define XB_SPAWN_LAST 0x10u     /* one-shot: init exits (ending the sandbox) once this command has */
#define XB_SPAWN_KEEPER 0x40u   /* under a keeper, so that XB_SIG_TREE finds every descendant */
#define XB_SPAWN_TTY 0x20u      /* a pty instead of std fds: the one fd attached is a socket the
                                 * command sends its master over (XB_SETUP_PTY); ROWS, COLS */
/* XB_REQ_SIGNAL flags. */
#define XB_SIG_GROUP 0x1u     /* signal the process group, not just the process */
#define XB_SIG_OTHERS 0x2u    /* signal the rest of the process group, not the process */
#define XB_SIG_TREE 0x4u      /* signal every descendant, setsid'd and orphaned ones included */

/* XB_REQ_WATCH and XB_EV_WATCH. A WEVENT field is a uint32_t enum
 * xb_wev, then the path relative to the watched directory ("" for itself;
 * not terminated). */
#define XB_WATCH_RECURSIVE 0x1u
#define XB_WATCH_OVERFLOW 0x2u   /* events were lost before the ones in this message */
#define XB_WATCH_END 0x4u        /* the watched directory is gone: no more events */
enum xb_wev { XB_WEV_CREATE = 1, XB_WEV_WRITE, XB_WEV_REMOVE, XB_WEV_RENAME, XB_WEV_CHMOD };
#define XB_WATCHES_MAX 32        /* per sandbox, in init */
#define XB_WATCH_DIRS_MAX 4096   /* directories one recursive watch follows */

/* XB_REQ_FILE: OP, PATH (absolute, as the sandbox sees it), UID and GID (the
 * fsuid/fsgid init acts as), and per operation the fields below. Every
 * XB_EV_FILE reply carries ERRNO (0 on success); a failure on a file of the
 * wrong kind adds TYPE, the kind found. src/init/init_files.c has the
 * theory of operation. */
enum xb_fop {
        XB_FOP_READ = 1,      /* -> one fd: O_RDONLY, a regular file */
        XB_FOP_WRITE,         /* MODE, FLAGS (APPEND, MODE_SET, PARENTS) -> one fd: O_WRONLY, regular */
        XB_FOP_STAT,          /* -> TYPE, MODE, SIZE, MTIME_NS, DATA (a symlink's target) */
        XB_FOP_LIST,          /* DEPTH -> ENTRY..., COUNT, TRUNC; parts flagged MORE come first */
        XB_FOP_MKDIR,         /* MODE, FLAGS (PARENTS) -> COUNT (directories made) */
        XB_FOP_MOVE,          /* PATH2, FLAGS (OVERWRITE) */
        XB_FOP_DELETE,        /* FLAGS (RECURSIVE) -> COUNT (entries removed) */
};
/* XB_REQ_FILE flags; XB_FILE_MORE only in replies. */
#define XB_FILE_APPEND 0x1u
#define XB_FILE_MODE_SET 0x2u     /* chmod an existing file to MODE too */
#define XB_FILE_PARENTS 0x4u      /* create missing parent directories (0755) */
#define XB_FILE_OVERWRITE 0x8u
#define XB_FILE_RECURSIVE 0x10u
#define XB_FILE_MORE 0x100u       /* a LIST part: more replies with this tag follow */

/* File kinds (TYPE, and in entries). */
enum xb_ftype {
        XB_FT_FILE = 1, XB_FT_DIR, XB_FT_SYMLINK, XB_FT_FIFO, XB_FT_SOCKET, XB_FT_CHR, XB_FT_BLK, XB_FT_OTHER,
};

/* An XB_K_ENTRY field: this header, then the entry's path relative to the
 * listed directory ("sub/name"; no NUL, not terminated). */
struct xb_file_entry {
        uint32_t type;        /* enum xb_ftype */
        uint32_t mode;        /* permission bits, at most 07777 */
        uint64_t size;
        int64_t mtime_ns;
};

#define XB_FILE_PATH_MAX 4096             /* a path in a request or an entry, in bytes */
#define XB_FILE_LIST_MAX 10000            /* entries in one listing, over all its parts */
#define XB_FILE_LIST_BYTES_MAX (2u << 20) /* bytes of entry paths in one listing */
#define XB_FILE_DEPTH_MAX 5

#define XB_PROTO_VERSION 2u

struct xb_msg_hdr {
        uint32_t type;
        uint32_t tag;
};

/* Writer: fields are appended into a caller-provided buffer. */
struct xb_msgw {
        uint8_t *buf;
        size_t cap;
        size_t len;
        bool overflow;        /* set once a field did not fit; the message is void */
};

void xb_msgw_init(struct xb_msgw *w, void *buf, size_t cap, uint32_t type, uint32_t tag);
void xb_msgw_put(struct xb_msgw *w, uint32_t key, const void *p, size_t n);
void xb_msgw_u64(struct xb_msgw *w, uint32_t key, uint64_t v);
void xb_msgw_str(struct xb_msgw *w, uint32_t key, const char *s);

/* Reader over a received message. */
struct xb_msgr {
        const uint8_t *buf;
        size_t len;
        uint32_t type;
        uint32_t tag;
};

struct xb_field {
        uint32_t key;
        uint32_t len;
        const uint8_t *data;
};

/* Check the header and that every field lies inside the message; -EBADMSG if not. */
int xb_msgr_init(struct xb_msgr *r, const void *buf, size_t len);
/* Iterate fields: *cursor starts at 0; returns false at the end. */
bool xb_msgr_next(const struct xb_msgr *r, size_t *cursor, struct xb_field *f);
/* First field with the key; -ENOENT if absent, -EBADMSG if malformed. */
int xb_msgr_u64(const struct xb_msgr *r, uint32_t key, uint64_t *ret);
/* A string field: no NUL bytes inside; points into the message (not terminated). */
int xb_msgr_str(const struct xb_msgr *r, uint32_t key, const char **ret, size_t *ret_len);
/* True when f holds a valid string (no NUL bytes). */
bool xb_field_is_str(const struct xb_field *f);

/* Send one message with fds; -errno on failure. */
int xb_msg_send(int sock, const void *buf, size_t len, const int *fds, size_t nfds);
/* Receive one message; fds arrive O_CLOEXEC. On a truncated message or control
 * data every received fd is closed and -EBADMSG returned; 0 bytes means EOF. */
ssize_t xb_msg_recv(int sock, void *buf, size_t cap, int *fds, size_t *nfds, bool nonblock);
