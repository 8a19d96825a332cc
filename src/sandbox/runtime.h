/* The runtime directory (/run/execbox by default): root-only state shared
 * by every execbox process on the machine. It holds the uid-range lock,
 * the prepared /etc view and the init image. Nothing in it is secret, but
 * all of it is trusted, so the directory must be root's and mode 0700. */
#pragma once
#include "base/err.h"

#define XB_RUNTIME_DIR "/run/execbox"

/* Create or check dir; returns an O_DIRECTORY fd. */
int xb_runtime_open(const char *dir, struct xb_err *err);
/* An O_RDONLY fd of the init image for execveat(2): the embedded image,
 * written once per build as dir/init-<hash> (root, 0111), reused after. */
int xb_runtime_init_image(int dirfd, struct xb_err *err);
