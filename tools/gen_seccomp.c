/* Build step: compile the seccomp policy with libseccomp and write the two
 * raw BPF programs that execbox embeds. usage: gen_seccomp MAIN.bpf STUB.bpf */
#include <stdio.h>

#include "sandbox/seccomp_policy.h"

static int
write_prog(const char *path, const struct sock_filter *p, unsigned short n)
{
        FILE *f = fopen(path, "wb");

        if (!f || fwrite(p, sizeof(*p), n, f) != n || fclose(f) != 0) {
                perror(path);
                return 1;
        }
        return 0;
}

int
main(int argc, char **argv)
{
        struct xb_seccomp s;
        struct xb_err err = { 0 };
        int rc;

        if (argc != 3) {
                fputs("usage: gen_seccomp MAIN.bpf STUB.bpf\n", stderr);
                return 2;
        }
        if (xb_seccomp_policy_build(&s, &err) < 0) {
                fprintf(stderr, "gen_seccomp: %s\n", err.msg);
                return 1;
        }
        rc = write_prog(argv[1], s.main, s.main_len) | write_prog(argv[2], s.stub, s.stub_len);
        xb_seccomp_policy_free(&s);
        return rc;
}
