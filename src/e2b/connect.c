/* Connect framing and error codes: see connect.h. */
#define _GNU_SOURCE
#include "e2b/connect.h"

#include <errno.h>
#include <string.h>

ssize_t
xb_connect_parse(const void *buf, size_t len, size_t max, uint8_t *flags, const uint8_t **payload, size_t *plen)
{
        const uint8_t *p = buf;
        uint32_t n;

        if (len < XB_CONNECT_HEADER)
                return -EAGAIN;
        if (p[0] & ~(unsigned)XB_CONNECT_END)
                return -EPROTO;
        n = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
        if (n > max)
                return -EMSGSIZE;
        if (len - XB_CONNECT_HEADER < n)
                return -EAGAIN;
        *flags = p[0];
        *payload = p + XB_CONNECT_HEADER;
        *plen = n;
        return (ssize_t)(XB_CONNECT_HEADER + n);
}

int
xb_connect_frame(struct xb_buf *b, uint8_t flags, const void *payload, size_t n)
{
        uint8_t h[XB_CONNECT_HEADER];

        if (n > UINT32_MAX)
                return -EMSGSIZE;
        h[0] = flags;
        h[1] = (uint8_t)(n >> 24);
        h[2] = (uint8_t)(n >> 16);
        h[3] = (uint8_t)(n >> 8);
        h[4] = (uint8_t)n;
        if (xb_buf_append(b, h, sizeof(h)) < 0 || xb_buf_append(b, payload, n) < 0)
                return -ENOMEM;
        return 0;
}

static const struct {
        const char *code;
        unsigned status;
} statuses[] = {
        { "canceled", 499 }, { "unknown", 500 }, { "invalid_argument", 400 }, { "deadline_exceeded", 504 },
        { "not_found", 404 }, { "already_exists", 409 }, { "permission_denied", 403 },
        { "resource_exhausted", 429 }, { "failed_precondition", 400 }, { "aborted", 409 }, { "out_of_range", 400 },
        { "unimplemented", 501 }, { "internal", 500 }, { "unavailable", 503 }, { "data_loss", 500 },
        { "unauthenticated", 401 },
};

unsigned
xb_connect_http_status(const char *code)
{
        for (size_t i = 0; code && i < sizeof(statuses) / sizeof(statuses[0]); i++)
                if (!strcmp(statuses[i].code, code))
                        return statuses[i].status;
        return 500;
}

const char *
xb_connect_code_of_status(unsigned status)
{
        /* The table of the Connect spec's "HTTP to error code" section. */
        switch (status) {
        case 400: return "internal";
        case 401: return "unauthenticated";
        case 403: return "permission_denied";
        case 404: return "unimplemented";
        case 429: case 502: case 503: case 504: return "unavailable";
        default: return "unknown";
        }
}

static const char *
by_errno(int errnum)
{
        switch (errnum) {
        case ENOENT: return "not_found";
        case EEXIST: case ENOTEMPTY: return "already_exists";
        case EACCES: case EPERM: case EROFS: return "permission_denied";
        case ENOSPC: case EDQUOT: case EMFILE: case ENFILE: return "resource_exhausted";
        case EINVAL: case ENAMETOOLONG: case ENOTDIR: case EISDIR: case ELOOP: return "invalid_argument";
        case ETIMEDOUT: return "deadline_exceeded";
        default: return "internal";
        }
}

const char *
xb_connect_code(enum xb_ecode ec, int errnum)
{
        switch (ec) {
        case XB_E_SANDBOX_NOT_FOUND: case XB_E_PROCESS_NOT_FOUND: case XB_E_FILE_NOT_FOUND:
        case XB_E_SESSION_NOT_FOUND: case XB_E_COMMAND_NOT_FOUND: case XB_E_VARIABLE_NOT_FOUND:
        case XB_E_IMAGE_NOT_FOUND: case XB_E_WATCHER_NOT_FOUND:
                return "not_found";
        case XB_E_TOO_MANY_WATCHES:
                return "resource_exhausted";
        case XB_E_NETWORK_FORBIDDEN:
                return "permission_denied";
        case XB_E_NETWORK_UNAVAILABLE:
                return "failed_precondition";
        case XB_E_SANDBOX_GONE: case XB_E_SANDBOX_EXPIRED: case XB_E_SANDBOX_UNAVAILABLE: case XB_E_SHUTTING_DOWN:
                return "unavailable";
        case XB_E_ALREADY_EXISTS: case XB_E_FILE_EXISTS: case XB_E_DIRECTORY_NOT_EMPTY:
                return "already_exists";
        case XB_E_PERMISSION_DENIED: case XB_E_PERMISSION_DENIED_CHANGE: case XB_E_READ_ONLY:
        case XB_E_PROTECTED_PATH: case XB_E_SYMLINK_REFUSED:
                return "permission_denied";
        case XB_E_DISK_FULL: case XB_E_TOO_MANY_SANDBOXES: case XB_E_TOO_MANY_PROCESSES: case XB_E_PROCESS_LIMIT:
        case XB_E_TOO_MANY_FILE_REQUESTS: case XB_E_TOO_MANY_SESSIONS: case XB_E_NOMEM: case XB_E_TREE_TOO_LARGE:
        case XB_E_FILE_TOO_LARGE: case XB_E_UPLOAD_TOO_LARGE:
                return "resource_exhausted";
        case XB_E_PROCESS_FINISHED: case XB_E_STDIN_CLOSED: case XB_E_SANDBOX_BUSY: case XB_E_SESSION_BUSY:
        case XB_E_SESSION_DEAD: case XB_E_NOT_A_DIRECTORY: case XB_E_IS_A_DIRECTORY: case XB_E_NOT_A_REGULAR_FILE:
                return "failed_precondition";
        case XB_E_UNAUTHORIZED:
                return "unauthenticated";
        case XB_E_INTERNAL: case XB_E_SPAWN_INTERNAL: case XB_E_FILE_REQUEST_INTERNAL: case XB_E_SESSION_INTERNAL:
                return "internal";
        case XB_E_FILE_ERROR: case XB_E_FILE_REQUEST_FAILED: case XB_E_WRITE_FAILED: case XB_E_NONE:
                return by_errno(errnum);
        default:
                return !strncmp(xb_ecode_name(ec), "invalid", 7) || ec == XB_E_MISSING_PATH || ec == XB_E_PATH_TOO_LONG ||
                       ec == XB_E_BAD_SIGNAL || ec == XB_E_BAD_CWD || ec == XB_E_COMMAND_TOO_LONG
                               ? "invalid_argument" : by_errno(errnum);
        }
}

const char *
xb_connect_code_ec(const struct xb_err *err)
{
        return xb_connect_code(err->ecode, err->code);
}
