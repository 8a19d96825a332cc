/* Loading libmicrohttpd at run time; see mhd.h for why. */
#define _GNU_SOURCE
#include "mhd.h"

#include <dlfcn.h>
#include <errno.h>

#ifndef XB_MHD_SONAME
#define XB_MHD_SONAME "libmicrohttpd.so.12"
#endif

struct xb_mhd xb_mhd;

int
xb_mhd_load(struct xb_err *err)
{
        void *h;

        if (xb_mhd.start_daemon)
                return 0;
        h = dlopen(XB_MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h)
                return xb_err_msg(err, ENOENT, "cannot load %s (%s); install libmicrohttpd12 "
                                  "(scripts/deps.sh does)", XB_MHD_SONAME, dlerror());
#define XB_MHD_LOAD(name)                                                                     \
        *(void **)&xb_mhd.name = dlsym(h, "MHD_" #name);                                      \
        if (!xb_mhd.name)                                                                     \
                return xb_err_msg(err, ENOENT, "%s lacks MHD_%s; it is older than the headers "   \
                                  "execbox was built with", XB_MHD_SONAME, #name);
        XB_MHD_FUNCS(XB_MHD_LOAD)
#undef XB_MHD_LOAD
        return 0;
}
