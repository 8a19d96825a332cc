/* libcurl, loaded with dlopen(3) when the package cache starts, as c-ares
 * is (net/cares.h): `execbox run` never fetches anything. It is the same
 * libcurl4 the CLI's client loads (scripts/deps.sh has it already). The
 * pointers are typed from <curl/curl.h>; call through CURL(name). */
#pragma once
#include <curl/curl.h>

#include "base/err.h"

#define XB_CURL_FUNCS(X)                                                                  \
        X(global_init) X(easy_init) X(easy_setopt) X(easy_cleanup) X(easy_getinfo)       \
        X(easy_pause) X(easy_strerror) X(multi_init) X(multi_setopt) X(multi_add_handle) \
        X(multi_remove_handle) X(multi_socket_action) X(multi_info_read) X(multi_cleanup) \
        X(multi_assign) X(slist_append) X(slist_free_all)

struct xb_curl {
#define XB_CURL_FIELD(name) __typeof__(&curl_##name) name;
        XB_CURL_FUNCS(XB_CURL_FIELD)
#undef XB_CURL_FIELD
};

extern struct xb_curl xb_curl;
#define CURL(name) (xb_curl.name)

/* Load the library once and initialise it; err says why not. */
int xb_curl_load(struct xb_err *err);
