/* libmicrohttpd, loaded with dlopen(3) when the server starts.
 *
 * Why not link it: libmicrohttpd pulls in GnuTLS, whose load-time
 * constructor costs 1.2 ms. Linked, every `execbox run` would pay it, a
 * third of a sandbox start; `execbox serve` pays it once. The pointers are
 * typed from <microhttpd.h> itself, so the compiler still checks every call.
 * Call through MHD(name), e.g. MHD(queue_response)(conn, 200, resp). */
#pragma once
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>

#include "base/err.h"

#define XB_MHD_FUNCS(X)                                                                  \
        X(start_daemon) X(stop_daemon) X(run) X(run_from_select) X(get_daemon_info)      \
        X(get_timeout) X(get_connection_info) X(lookup_connection_value)                 \
        X(get_connection_values) X(create_response_from_buffer)                          \
        X(create_response_from_callback) X(create_response_from_fd_at_offset64)          \
        X(add_response_header) X(queue_response) X(destroy_response)                     \
        X(suspend_connection) X(resume_connection) X(set_connection_option)              \
        X(get_version) X(quiesce_daemon) X(lookup_connection_value_n) X(add_connection)     \
        X(create_response_for_upgrade) X(upgrade_action) X(create_post_processor)              \
        X(post_process) X(destroy_post_processor)

struct xb_mhd {
#define XB_MHD_FIELD(name) __typeof__(&MHD_##name) name;
        XB_MHD_FUNCS(XB_MHD_FIELD)
#undef XB_MHD_FIELD
};

extern struct xb_mhd xb_mhd;
#define MHD(name) (xb_mhd.name)

/* Load the library once; a clear error if it is missing or too old. */
int xb_mhd_load(struct xb_err *err);
