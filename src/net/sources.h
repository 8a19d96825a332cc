/* The host's apt sources, as `packages` mode's default (sources.c). */
#pragma once
#include <stddef.h>

#define XB_NET_SOURCES_MAX 32

/* The http(s) URLs apt on this host fetches from, deduplicated: a
 * malloc'd NULL-terminated vector (free each and it), possibly empty. */
int xb_net_host_sources(const char *apt_dir, char ***ret, size_t *ret_n);
