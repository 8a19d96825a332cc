/* What a sandboxed command is (program, environment, directory, user,
 * rlimits, std fds) and the last steps before it runs, done in the new
 * process itself: shared by the sandbox's init, which spawns commands on
 * request, and by the setup child, which starts a one-shot run's command
 * before init is exec'd. Syscalls only; no allocation. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

struct xb_exec_spec {
        char *const *argv;
        char *const *env;             /* the complete environment */
        const char *cwd;              /* NULL: / */
        uint32_t uid, gid;            /* inside: 0, or the sandbox user */
        uint64_t rl_cpu_s, rl_fsize, rl_nofile;   /* 0 = leave as is */
        int std[3];                   /* stdin, stdout, stderr; -1 = /dev/null */
        bool last;                    /* one-shot: the sandbox ends with this command */
        bool keeper;                  /* init: under a keeper, for killing its whole tree (init_spawn.c) */
        /* A terminal instead of std: a new pty of the sandbox's devpts is
         * the command's controlling terminal and its fds 0-2; its master
         * is sent over tty_sock (one XB_SETUP_PTY message) before exec. */
        bool tty;
        int tty_sock;
        uint16_t tty_rows, tty_cols;  /* its size; 0 = leave the kernel's 0x0 */
};

/* In the new process: its own session, std fds, no other fd across exec,
 * rlimits, the user (leaving uid 0 empties the capability sets), the
 * directory, then execve with a PATH search over the spec's PATH. Returns
 * only on failure: the errno, with *stage naming the step that failed. */
int xb_exec_child(const struct xb_exec_spec *s, const char **stage);
