/* Capability sets: Docker's default set, bounding-set drops and clearing
 * the inheritable and ambient sets. Raw syscalls, usable in the setup child
 * and in the static init. */
#pragma once
#include <stdint.h>

/* Docker's default capabilities as a bit mask (CAP_CHOWN ... CAP_SETFCAP). */
uint64_t xb_caps_default_mask(void);
/* Drop every capability not in keep from the bounding set. */
int xb_caps_bound(uint64_t keep);
/* Clear the inheritable and ambient sets, leaving permitted/effective alone. */
int xb_caps_clear_inheritable(void);
/* Set effective, permitted and inheritable to nothing and clear ambient. */
int xb_caps_drop_all(void);
