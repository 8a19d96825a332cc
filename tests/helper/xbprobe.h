/* xbprobe's shared parts: the JSON line writer and the commands that live
 * in xbprobe_attacks.c (the syscall table, the attacks on init). */
#pragma once
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "xbprobe: the syscall attacks are written for x86_64"
#endif

/* x86_64 numbers, for libcs whose tables predate them. */
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_io_uring_enter
#define SYS_io_uring_enter 426
#endif
#ifndef SYS_io_uring_register
#define SYS_io_uring_register 427
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#ifndef SYS_fsmount
#define SYS_fsmount 432
#endif
#ifndef SYS_fspick
#define SYS_fspick 433
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_userfaultfd
#define SYS_userfaultfd 323
#endif
#ifndef SYS_kexec_file_load
#define SYS_kexec_file_load 320
#endif
#define NR_STATMOUNT 457
#define NR_LISTMOUNT 458
#define NR_OPEN_TREE_ATTR 467

#define X32_BIT 0x40000000L

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef AF_MCTP
#define AF_MCTP 45
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#define KEY_SPEC_PROCESS_KEYRING (-2)
#define KEY_SPEC_SESSION_KEYRING (-3)
#define KEYCTL_GET_KEYRING_ID 0

/* A minimal writer: key/value pairs separated automatically. */
struct jw {
        FILE *f;
        int first[16];
        int depth;
};

void jstr(FILE *f, const char *s);
void jstrn(FILE *f, const char *s, size_t n);
void jw_sep(struct jw *w);
void jw_key(struct jw *w, const char *k);
void jw_open(struct jw *w, const char *k, char c);
void jw_close(struct jw *w, char c);
void jw_s(struct jw *w, const char *k, const char *v);
void jw_i(struct jw *w, const char *k, long long v);
void jw_b(struct jw *w, const char *k, int v);
void jw_null(struct jw *w, const char *k);
/* One JSON object on stdout: jw_begin, fields, jw_end (newline, flush). */
void jw_begin(struct jw *w);
void jw_end(struct jw *w);
/* "EPERM" for EPERM; "OK" for 0. */
const char *errname(int e);
/* A key whose value is the errno's name, or null for 0. */
void jw_errno(struct jw *w, const char *k, int e);
/* Read a whole small file into buf (NUL-terminated); -errno on failure. */
int read_file(const char *path, char *buf, size_t cap, size_t *len);
/* "64M" to bytes. */
unsigned long long parse_size(const char *s);
double now_s(void);

/* Commands: argv[0] is the command's name. */
int cmd_spin(int argc, char **argv);
int cmd_syscall(int argc, char **argv);
int cmd_ptrace_init(int argc, char **argv);
int cmd_forge_exit(int argc, char **argv);
int cmd_forge_flood(int argc, char **argv);
