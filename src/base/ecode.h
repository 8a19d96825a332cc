/* Protocol-neutral error codes. An engine failure carries one of these
 * next to its errno (struct xb_err.ecode); each adapter maps it to its own
 * terms: rest/status.c to an HTTP status and a REST hint, mcp/hints.c to a
 * tool hint. One code is one situation: two situations that want
 * different advice get two codes, even when they share a wire name.
 *
 * X(ENUM, "wire_name"): the wire name is what clients see as error.code. */
#pragma once

#define XB_ECODES(X)                                                  \
        X(NONE, "error")                                              \
        X(INVALID, "invalid_request")                                 \
        X(INTERNAL, "internal")                                       \
        X(NOMEM, "out_of_memory")                                     \
        X(SHUTTING_DOWN, "shutting_down")                             \
        /* sandboxes */                                               \
        X(SANDBOX_NOT_FOUND, "sandbox_not_found")                     \
        X(SANDBOX_GONE, "sandbox_gone")                               \
        X(SANDBOX_EXPIRED, "sandbox_gone")   /* lease ran out */      \
        X(SANDBOX_ENDED, "sandbox_gone")     /* a tombstone: ended before this request */ \
        X(SANDBOX_BUSY, "sandbox_busy")                               \
        X(SANDBOX_PAUSED, "paused")          /* 409: resume it first */ \
        X(SANDBOX_FAILED, "sandbox_failed")                           \
        X(SANDBOX_UNAVAILABLE, "sandbox_failed")   /* 503: retry */   \
        X(TOO_MANY_SANDBOXES, "too_many_sandboxes")                   \
        X(OVER_CEILING, "over_ceiling")   /* above --max-* */        \
        X(OVER_QUOTA, "over_quota")       /* the tenant's quota */    \
        X(INVALID_MOUNT, "invalid_mount")                             \
        X(INVALID_TEMPLATE, "invalid_request")                        \
        X(INVALID_METADATA, "invalid_request")                        \
        X(METADATA_TOO_LARGE, "invalid_request")                      \
        X(INVALID_NETWORK, "invalid_request")      /* a network policy */ \
        X(NETWORK_FORBIDDEN, "network_forbidden")  /* over the operator's ceiling */ \
        X(NETWORK_UNAVAILABLE, "network_unavailable")   /* the server has no egress */ \
        X(INVALID_SECRET, "invalid_request")       /* a secret's fields */ \
        X(SECRET_NOT_FOUND, "secret_not_found")                       \
        X(TOO_MANY_SECRETS, "too_many_secrets")                       \
        X(APPROVAL_NOT_FOUND, "approval_not_found")                   \
        X(NOT_APPROVED, "not_approved")   /* a human denied it, or none answered in time */ \
        /* templates and layers */                                    \
        X(TEMPLATE_NOT_FOUND, "template_not_found")                   \
        X(TEMPLATE_EXISTS, "template_exists")                         \
        X(TEMPLATE_IN_USE, "template_in_use")                         \
        X(LAYERS_UNSUPPORTED, "layers_unsupported")                   \
        X(TEMPLATE_BUILD_FAILED, "template_build_failed")             \
        X(INSTALL_FAILED, "install_failed")                           \
        X(TEMPLATE_NOT_READY, "template_not_ready")   /* its start command */ \
        /* processes */                                               \
        X(PROCESS_NOT_FOUND, "process_not_found")                     \
        X(WATCHER_NOT_FOUND, "watcher_not_found")                     \
        X(TOO_MANY_WATCHES, "too_many_watches")                       \
        X(PROCESS_FINISHED, "process_finished")                       \
        X(PROCESS_LIMIT, "process_limit")                             \
        X(TOO_MANY_PROCESSES, "too_many_processes")                   \
        X(FD_BUDGET, "fd_budget")            /* the daemon's fds a tenant or sandbox may hold */ \
        X(COMMAND_TOO_LONG, "command_too_long")                       \
        X(COMMAND_NOT_FOUND, "command_not_found")                     \
        X(BAD_CWD, "bad_cwd")                                         \
        X(SPAWN_FAILED, "spawn_failed")                               \
        X(SPAWN_INTERNAL, "spawn_failed")          /* 500 */          \
        X(STDIN_CLOSED, "stdin_closed")                               \
        X(BAD_SIGNAL, "invalid_request")                              \
        X(BAD_OFFSETS, "invalid_request")                             \
        X(INVALID_COMMAND, "invalid_request")      /* exec's arguments */ \
        X(INVALID_PROCESS_START, "invalid_request")                   \
        X(INVALID_STDIN, "invalid_request")                           \
        /* files */                                                   \
        X(MISSING_PATH, "missing_path")                               \
        X(INVALID_PATH, "invalid_path")                               \
        X(PATH_TOO_LONG, "path_too_long")                             \
        X(INVALID_MODE, "invalid_mode")                               \
        X(INVALID_DEPTH, "invalid_depth")                             \
        X(FILE_NOT_FOUND, "file_not_found")                           \
        X(NOT_A_DIRECTORY, "not_a_directory")                         \
        X(IS_A_DIRECTORY, "is_a_directory")                           \
        X(PERMISSION_DENIED, "permission_denied")  /* reading */      \
        X(PERMISSION_DENIED_CHANGE, "permission_denied")              \
        X(READ_ONLY, "read_only")                                     \
        X(DISK_FULL, "disk_full")                                     \
        X(ALREADY_EXISTS, "already_exists")                           \
        X(FILE_EXISTS, "file_exists")                                 \
        X(DIRECTORY_NOT_EMPTY, "directory_not_empty")                 \
        X(PROTECTED_PATH, "protected_path")                           \
        X(SYMLINK_REFUSED, "symlink_refused")                         \
        X(CROSS_DEVICE, "cross_device")                               \
        X(TREE_TOO_LARGE, "tree_too_large")                           \
        X(TEXT_FILE_BUSY, "text_file_busy")                           \
        X(FILE_BUSY, "file_busy")                                     \
        X(NOT_A_REGULAR_FILE, "not_a_regular_file")                   \
        X(UNSUPPORTED_FILE, "unsupported_file")                       \
        X(FILE_TOO_LARGE, "file_too_large")                           \
        X(BAD_FILE_NAME, "invalid_path")           /* . or .., a move into itself */ \
        X(FILE_ERROR, "file_error")                                   \
        X(FILE_REQUEST_FAILED, "file_request_failed")                 \
        X(FILE_REQUEST_INTERNAL, "file_request_failed")   /* 500 */   \
        X(TOO_MANY_FILE_REQUESTS, "too_many_file_requests")           \
        X(RANGE_NOT_SATISFIABLE, "range_not_satisfiable")             \
        X(UPLOAD_TOO_LARGE, "upload_too_large")                       \
        X(INVALID_ENCODING, "invalid_encoding")    /* a corrupt or cut gzip body */ \
        X(UNSUPPORTED_ENCODING, "unsupported_encoding")  /* 415 */    \
        X(WRITE_FAILED, "write_failed")                               \
        /* sessions */                                                \
        X(SESSION_NOT_FOUND, "session_not_found")                     \
        X(SESSION_DEAD, "session_dead")            /* running a cell */ \
        X(SESSION_DEAD_VARIABLE, "session_dead")   /* reading a variable */ \
        X(SESSION_DEAD_LOST, "session_dead")       /* died while reading */ \
        X(SESSION_BUSY, "session_busy")            /* running a cell */ \
        X(SESSION_BUSY_VARIABLE, "session_busy")                      \
        X(SESSION_DELETED, "session_deleted")                         \
        X(SESSION_FAILED, "session_failed")        /* 503: did not start */ \
        X(SESSION_INTERNAL, "session_failed")      /* 500 */          \
        X(TOO_MANY_SESSIONS, "too_many_sessions")                     \
        X(UNKNOWN_LANGUAGE, "unknown_language")                       \
        X(NO_INPUT, "no_input")                                       \
        X(ALREADY_WAITING, "already_waiting")                         \
        X(VARIABLE_NOT_FOUND, "variable_not_found")                   \
        X(VARIABLES_UNSUPPORTED, "variables_unsupported")             \
        X(BAD_VARIABLE_NAME, "invalid_request")                       \
        X(IMAGE_NOT_FOUND, "image_not_found")                         \
        X(INVALID_LANGUAGE, "invalid_request")     /* not a language name */ \
        /* published ports */                                         \
        X(INVALID_PORT, "invalid_port")                               \
        X(PORT_CLOSED, "port_closed")      /* nothing listens */      \
        X(SHARE_EXPIRED, "link_expired")                              \
        X(BAD_SHARE, "bad_signature")                                 \
        /* the seeds' plugin routes */                                \
        X(GUIDE_NOT_FOLLOWED, "guide_not_followed")                   \
        X(UNAUTHORIZED, "unauthorized")

enum xb_ecode {
#define XB_ECODE_ENUM(e, name) XB_E_##e,
        XB_ECODES(XB_ECODE_ENUM)
#undef XB_ECODE_ENUM
        XB_E__COUNT
};

/* The wire name ("sandbox_not_found"); "error" for an unknown code. */
const char *xb_ecode_name(enum xb_ecode c);
