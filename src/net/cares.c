/* Loading c-ares at run time; see cares.h for why. */
#define _GNU_SOURCE
#include "net/cares.h"

#include <dlfcn.h>
#include <errno.h>

#ifndef XB_ARES_SONAME
#define XB_ARES_SONAME "libcares.so.2"
#endif

struct xb_ares xb_ares;

int
xb_ares_load(struct xb_err *err)
{
        void *h;

        if (xb_ares.library_init)
                return 0;
        h = dlopen(XB_ARES_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h)
                return xb_err_msg(err, ENOENT, "cannot load %s (%s); install libc-ares2 "
                                  "(scripts/deps.sh does)", XB_ARES_SONAME, dlerror());
#define XB_ARES_LOAD(name)                                                                    \
        *(void **)&xb_ares.name = dlsym(h, "ares_" #name);                                    \
        if (!xb_ares.name)                                                                    \
                return xb_err_msg(err, ENOENT, "%s lacks ares_%s; it is older than the headers "  \
                                  "execbox was built with", XB_ARES_SONAME, #name);
        XB_ARES_FUNCS(XB_ARES_LOAD)
#undef XB_ARES_LOAD
        if (xb_ares.library_init(ARES_LIB_INIT_ALL) != ARES_SUCCESS) {
                xb_ares.library_init = NULL;
                return xb_err_msg(err, EIO, "c-ares failed to initialise");
        }
        return 0;
}
