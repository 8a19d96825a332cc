/* net/digest.h: SHA-256 of parts (the install cache's keys). */
#include <criterion/criterion.h>
#include <string.h>

#include "net/digest.h"

Test(digest, known_vector)
{
        struct xb_err err = { 0 };
        struct xb_sha256 *h = xb_sha256_new(&err);
        char out[XB_SHA256_HEX];

        cr_assert(h, "%s", err.msg);
        xb_sha256_add(h, "a", 1);
        xb_sha256_add(h, "bc", 2);
        xb_sha256_end(h, out);
        cr_assert_str_eq(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

Test(digest, parts_never_run_into_each_other)
{
        struct xb_err err = { 0 };
        struct xb_sha256 *a = xb_sha256_new(&err), *b = xb_sha256_new(&err);
        char ha[XB_SHA256_HEX], hb[XB_SHA256_HEX];

        cr_assert(a && b);
        xb_sha256_str(a, "ab");
        xb_sha256_str(a, "c");
        xb_sha256_str(b, "a");
        xb_sha256_str(b, "bc");
        xb_sha256_end(a, ha);
        xb_sha256_end(b, hb);
        cr_assert_str_eq(ha, "629c2f14f654f026086f2aefe1855533d0897f49df86a19073be17b237361b09");
        cr_assert_str_neq(ha, hb);
}
