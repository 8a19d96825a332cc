/* The install cache's insides, shared by instcache.c and instwalk.c. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "core/instcache.h"

struct xb_sha256;

#define XB_INST_BUSY_MAX 16

struct xb_instcache {
        char *dir;                    /* state_dir/install-cache */
        struct xb_inst_stats st;
        char busy[XB_INST_BUSY_MAX][XB_INST_KEY_HEX];   /* entries being applied: not evicted */
};

void xb_inst_layer_name(const char *key, char out[XB_INST_LAYER_MAX]);
bool xb_inst_busy(const struct xb_instcache *c, const char *key);
/* Every file of layers/<layer>'s upper parts into h, in a fixed order;
 * *lists: it holds apt lists. */
int xb_inst_digest(struct xb_core *s, const char *layer, struct xb_sha256 *h, bool *fresh_index, struct xb_err *err);
/* The bytes of its regular files. */
int xb_inst_layer_bytes(struct xb_core *s, const char *layer, uint64_t *ret, struct xb_err *err);
