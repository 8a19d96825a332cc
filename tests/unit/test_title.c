/* The process title (base/title.h): main's argv is copied, and the bytes
 * /proc/PID/cmdline shows are rewritten whole, never past argv's end. */
#include <criterion/criterion.h>
#include <string.h>

#include "base/title.h"

Test(title, replaces_the_whole_area_and_keeps_a_copy)
{
        /* As exec lays them out: the arguments back to back, then more. */
        char area[] = "/host/path/execbox\0serve\0--token-file\0/secret/path\0ENV=after";
        char *argv[] = { area, area + 19, area + 25, area + 38, NULL };
        const size_t len = 38 + strlen("/secret/path") + 1;
        char **copy = xb_title_init(4, argv);

        cr_assert(copy);
        cr_assert_str_eq(copy[0], "/host/path/execbox");
        cr_assert_str_eq(copy[3], "/secret/path");
        cr_assert_null(copy[4]);
        xb_title_set("execbox-init");
        cr_assert_str_eq(area, "execbox-init");
        for (size_t i = strlen("execbox-init"); i < len; i++)
                cr_assert_eq(area[i], '\0', "byte %zu of the old command line is left: %c", i, area[i]);
        cr_assert_str_eq(area + len, "ENV=after", "the title wrote past argv");
        /* The program's copy is untouched. */
        cr_assert_str_eq(copy[1], "serve");
        cr_assert_str_eq(copy[3], "/secret/path");
}

Test(title, a_short_area_gets_a_cut_title)
{
        char area[] = "ab\0c\0tail";
        char *argv[] = { area, area + 3, NULL };
        char **copy = xb_title_init(2, argv);

        cr_assert(copy);
        xb_title_set("execbox-init");
        cr_assert_str_eq(area, "exec");   /* 5 bytes, the last a NUL */
        cr_assert_str_eq(area + 5, "tail");
}
