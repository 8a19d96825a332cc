/* Compiling the seccomp policy with libseccomp (see seccomp.h for what it
 * allows). Used at build time and by the unit tests, not at run time. */
#pragma once
#include "base/err.h"
#include "sandbox/seccomp.h"

/* Build both filters into malloc'd programs; free with xb_seccomp_policy_free. */
int xb_seccomp_policy_build(struct xb_seccomp *s, struct xb_err *err);
void xb_seccomp_policy_free(struct xb_seccomp *s);
