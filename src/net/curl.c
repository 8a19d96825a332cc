/* Loading libcurl at run time; see curl.h for why. */
#define _GNU_SOURCE
#include "net/curl.h"

#include <dlfcn.h>
#include <errno.h>

#ifndef XB_CURL_SONAME
#define XB_CURL_SONAME "libcurl.so.4"
#endif

struct xb_curl xb_curl;

int
xb_curl_load(struct xb_err *err)
{
        void *h;

        if (xb_curl.global_init)
                return 0;
        h = dlopen(XB_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!h)
                return xb_err_msg(err, ENOENT, "cannot load %s (%s); install libcurl4 "
                                  "(scripts/deps.sh does)", XB_CURL_SONAME, dlerror());
#define XB_CURL_LOAD(name)                                                                    \
        *(void **)&xb_curl.name = dlsym(h, "curl_" #name);                                    \
        if (!xb_curl.name)                                                                    \
                return xb_err_msg(err, ENOENT, "%s lacks curl_%s; it is older than the headers "  \
                                  "execbox was built with", XB_CURL_SONAME, #name);
        XB_CURL_FUNCS(XB_CURL_LOAD)
#undef XB_CURL_LOAD
        if (xb_curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                xb_curl.global_init = NULL;
                return xb_err_msg(err, EIO, "libcurl failed to initialise");
        }
        return 0;
}
