/* Operations on proc: see ops.h. */
#include "core/core.h"
#include "ops/ops.h"

const struct xb_op xb_ops_proc[] = {
        { NULL, NULL },
};
