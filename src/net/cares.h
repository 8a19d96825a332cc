/* c-ares, loaded with dlopen(3) when the egress proxy starts, as
 * libmicrohttpd is (transport/mhd.h): `execbox run` never resolves a name
 * and must not pay for loading it. The pointers are typed from <ares.h>,
 * so the compiler checks every call. Call through ARES(name). */
#pragma once
#include <ares.h>

#include "base/err.h"

#define XB_ARES_FUNCS(X)                                                                 \
        X(library_init) X(init_options) X(destroy) X(set_servers_ports_csv)             \
        X(getaddrinfo) X(freeaddrinfo) X(send) X(process_fd) X(timeout)                 \
        X(expand_name) X(free_string) X(strerror)

struct xb_ares {
#define XB_ARES_FIELD(name) __typeof__(&ares_##name) name;
        XB_ARES_FUNCS(XB_ARES_FIELD)
#undef XB_ARES_FIELD
};

extern struct xb_ares xb_ares;
#define ARES(name) (xb_ares.name)

/* Load the library once and initialise it; err says why not. */
int xb_ares_load(struct xb_err *err);
