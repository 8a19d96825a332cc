/* Operations on files: see ops.h. */
#include "core/core.h"
#include "ops/ops.h"

const struct xb_op xb_ops_files[] = {
        { NULL, NULL },
};
