/* Sandbox creation and teardown. See sandbox.h for the sequence. */
#define _GNU_SOURCE
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sched.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/title.h"
#include "proto/wire.h"
#include "sandbox/caps.h"
#include "sandbox/landlock.h"
#include "sandbox/pools.h"
#include "sandbox/runtime.h"
#include "sandbox/etcview.h"
#include "sandbox/sandbox_int.h"



#define INIT_SOCK_FD 3
#define XB_INIT_SNDBUF (2 << 20)

int
xb_random_id(char *id, size_t len)
{
        static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
        unsigned char raw[64];

        if (len == 0 || len - 1 > sizeof(raw))
                return -EINVAL;
        if (getrandom(raw, len - 1, 0) != (ssize_t)(len - 1))
                return -EIO;
        for (size_t i = 0; i + 1 < len; i++)
                id[i] = alphabet[raw[i] & 31];
        id[len - 1] = '\0';
        return 0;
}

int
xb_engine_open(const struct xb_engine_opts *o, struct xb_engine **ret, struct xb_err *err)
{
        struct xb_engine *e = calloc(1, sizeof(*e));
        int r;

        if (!e)
                return xb_err_set(err, ENOMEM, "engine");
        e->init_fd = e->runtime_fd = -1;
        e->mount_owner_set = o->mount_owner_set;
        e->mount_uid = o->mount_uid;
        e->mount_gid = o->mount_gid;
        if (geteuid() != 0) {
                free(e);
                return xb_err_msg(err, EPERM, "execbox needs root to create sandboxes "
                                  "(user ranges, cgroups); run it with sudo");
        }
        xb_host_layout_detect(&e->layout);
        if ((r = xb_runtime_open(o->runtime_dir ? o->runtime_dir : XB_RUNTIME_DIR, err)) < 0)
                goto fail;
        e->runtime_fd = r;
        if ((r = xb_uidpool_open(&e->uids, e->runtime_fd, "uids.lock", 0, err)) < 0)
                goto fail;
        if ((r = xb_etcview_prepare_ca(o->runtime_dir ? o->runtime_dir : XB_RUNTIME_DIR, XB_USER_UID,
                                       o->extra_ca_pem, &e->etc_dir, err)) < 0)
                goto fail;
        if (o->layers != XB_LAYERS_NONE &&
            (r = xb_layers_base_prepare(o->runtime_dir ? o->runtime_dir : XB_RUNTIME_DIR, &e->layout, XB_USER_UID,
                                        &e->base_root, err)) < 0)
                goto fail;
        if (o->layers != XB_LAYERS_NONE &&
            (r = xb_layers_dpkg_prepare(o->runtime_dir ? o->runtime_dir : XB_RUNTIME_DIR, &e->dpkg_fix, err)) < 0)
                goto fail;
        if (o->layers == XB_LAYERS_DISK) {
                struct xb_err serr = { 0 };

                /* No btrfs here (no module, no loop devices in a container or
                 * a unit with PrivateDevices, no mkfs.btrfs): the read-only
                 * image of --layers none, which works everywhere, and the
                 * caller says why. */
                if (xb_store_open(o->state_dir ? o->state_dir : "/var/lib/execbox",
                                  o->runtime_dir ? o->runtime_dir : XB_RUNTIME_DIR,
                                  o->store_size ? o->store_size : XB_STORE_SIZE_DEFAULT, &e->store, &serr) < 0) {
                        snprintf(e->store_error, sizeof(e->store_error), "%s", serr.msg);
                        free(e->base_root);
                        e->base_root = NULL;
                }
        }
        if ((r = xb_cgroup_sys_open(o->cgroup_mode, o->cgroup_parent ? o->cgroup_parent : "execbox",
                                    &e->cgroups, err)) < 0)
                goto fail;
        if ((r = xb_seccomp_embedded(&e->seccomp, err)) < 0)
                goto fail;
        {
                struct xb_err perr = { 0 };

                if (xb_pools_reserve(o->max_sandboxes, &e->sigpending, &perr) < 0)
                        snprintf(e->pools_warning, sizeof(e->pools_warning), "%s", perr.msg);
        }
        if ((r = xb_runtime_init_image(e->runtime_fd, err)) < 0)
                goto fail;
        e->init_fd = r;
        if (o->nallow) {
                e->allow = calloc(o->nallow, sizeof(char *));
                if (!e->allow) {
                        r = xb_err_set(err, ENOMEM, "engine");
                        goto fail;
                }
                for (size_t i = 0; i < o->nallow; i++) {
                        e->allow[i] = realpath(o->allow_mounts[i], NULL);
                        if (!e->allow[i]) {
                                r = xb_err_set(err, errno, "allowed mount directory %s", o->allow_mounts[i]);
                                goto fail;
                        }
                        e->nallow++;
                }
        }
        *ret = e;
        return 0;
fail:
        xb_engine_close(e);
        return r;
}

void
xb_engine_close(struct xb_engine *e)
{
        if (!e)
                return;
        if (e->init_fd >= 0)
                close(e->init_fd);
        if (e->runtime_fd >= 0)
                close(e->runtime_fd);
        free(e->etc_dir);
        free(e->base_root);
        free(e->dpkg_fix);
        xb_store_close(e->store);
        xb_cgroup_sys_close(e->cgroups);
        xb_uidpool_close(&e->uids);
        for (size_t i = 0; i < e->nallow; i++)
                free(e->allow[i]);
        free(e->allow);
        free(e);
}

/* ---- the setup child ---- */

struct child_args {
        int sock;
        int net_sock;                 /* -1: no egress sockets */
        int init_fd;
        const struct xb_mount_plan *plan;
        const struct xb_seccomp *seccomp;
        const struct xb_sandbox_config *cfg;
        const struct xb_bind *binds;  /* resolved */
        size_t nbinds;
        const char *root_opts;        /* the root overlay's options; NULL: tmpfs image */
        uint64_t sigpending;
};

/* Landlock: writes only below the writable mounts; the init image, which
 * lives outside the root, may still be executed. */
static int
confine(const struct child_args *a, struct xb_err *err)
{
        struct xb_landlock_path paths[3 + 32] = {
                { "/tmp", 1 }, { "/home/user", 1 }, { "/dev/shm", 1 },
        };
        size_t n = 3;
        int r;

        /* A layered root is the sandbox's own layer, writable throughout;
         * /proc and /dev keep their read-only mounts. */
        if (a->root_opts) {
                paths[0] = (struct xb_landlock_path){ "/", 1 };
                n = 1;
        }

        for (size_t i = 0; i < a->nbinds && n < ARRAY_SIZE(paths); i++)
                if (a->binds[i].rw)
                        paths[n++] = (struct xb_landlock_path){ a->binds[i].dest, 1 };
        r = xb_landlock_apply(paths, n, a->init_fd, err);
        return r < 0 ? r : 0;
}

/* The one-shot command, in a child of the setup child: a failure to start
 * is reported on the init socket under its tag, as init would. It runs in
 * our memory until its exec (CLONE_VM | CLONE_VFORK, as posix_spawn does:
 * no page tables to copy), on a stack of its own, touching only its own
 * stack and making syscalls. */
static int
first_main(void *arg)
{
        const struct child_args *a = arg;
        const char *stage = "spawn";
        int e = xb_exec_child(a->cfg->first, &stage);
        uint8_t buf[256];
        struct xb_msgw w;

        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_ERROR, a->cfg->first_tag);
        xb_msgw_u64(&w, XB_K_ERRNO, (uint64_t)(e ? e : EIO));
        xb_msgw_str(&w, XB_K_STAGE, stage);
        xb_msg_send(a->sock, w.buf, w.len, NULL, 0);
        _exit(127);
}

/* With a layered root the caller's binds come id-mapped from the daemon
 * (XB_SETUP_BINDS), in plan order: they replace the sources we opened. */
static int
take_binds(const struct child_args *a, struct xb_err *err)
{
        struct xb_mount_plan *plan = (struct xb_mount_plan *)a->plan;
        size_t step = 0;

        for (size_t got = 0; got < a->nbinds;) {
                uint8_t buf[64];
                int fds[XB_MSG_MAXFDS];
                size_t nfds = 0;
                ssize_t n = xb_msg_recv(a->sock, buf, sizeof(buf), fds, &nfds, false);
                struct xb_msgr m;

                if (n <= 0 || xb_msgr_init(&m, buf, (size_t)n) < 0 || m.type != XB_SETUP_BINDS || !nfds ||
                    got + nfds > a->nbinds)
                        return xb_err_msg(err, EPIPE, "the daemon went away during setup");
                for (size_t i = 0; i < nfds; i++, got++) {
                        while (step < plan->n && !(plan->steps[step].flags & XB_MOPF_USER))
                                step++;
                        if (step == plan->n)
                                return xb_err_msg(err, EPROTO, "more mounts than the plan has");
                        if (plan->steps[step].src_fd >= 0)
                                close(plan->steps[step].src_fd);
                        plan->steps[step].src_fd = fds[i];
                        plan->steps[step].flags |= XB_MOPF_IDMAPPED;
                        plan->steps[step].skip = false;
                        step++;
                }
        }
        return 0;
}

static int
child_setup(const struct child_args *a, struct xb_err *err)
{
        char *argv[] = { (char *)"execbox-init", NULL, NULL };
        char first[64];
        size_t argc = 1;
        int r, devnull, imgfd;
        int layer_fds[XB_MSG_MAXFDS];

        /* The network namespace is built here, while the daemon makes our v1
         * cgroups and writes our id maps: it is the costliest namespace to
         * create (a loopback device and its sysctls), and clone3 would make
         * the daemon wait for it. */
        if (unshare(CLONE_NEWNET) < 0)
                return xb_err_set(err, errno, "unshare the network namespace");
        /* Sources are opened here, not in the daemon: a bind needs a source
         * mount in the caller's own mount namespace (EINVAL otherwise). And
         * before setresuid: we still have the host root's file access, which
         * the root-only runtime directory needs. */
        if ((r = xb_mountplan_open_sources((struct xb_mount_plan *)a->plan, err)) < 0)
                return r;
        if (a->root_opts) {
                uint8_t buf[64];
                size_t nfds = 0;
                ssize_t n = xb_msg_recv(a->sock, buf, sizeof(buf), layer_fds, &nfds, false);
                struct xb_msgr m;

                if (n <= 0 || xb_msgr_init(&m, buf, (size_t)n) < 0 || m.type != XB_SETUP_LAYERS ||
                    nfds != XB_LAYER_NFDS)
                        return xb_err_msg(err, EPIPE, "the daemon went away during setup");
                if ((r = take_binds(a, err)) < 0)
                        return r;
        }
        {
                uint8_t buf[64];
                int fds[XB_MSG_MAXFDS];
                size_t nfds = 0;
                ssize_t n = xb_msg_recv(a->sock, buf, sizeof(buf), fds, &nfds, false);
                struct xb_msgr m;

                if (n <= 0 || xb_msgr_init(&m, buf, (size_t)n) < 0 || m.type != XB_SETUP_GO)
                        return xb_err_msg(err, EPIPE, "the daemon went away during setup");
                /* Join the v1 groups ourselves: writing "0" to `tasks` moves only
                 * the caller and skips the global lock a pid write takes (see
                 * cgroup.h). We are still the host's root for the file checks. */
                for (size_t i = 0; i < nfds; i++) {
                        if (r == 0 && write(fds[i], "0", 1) != 1)
                                r = -errno;
                        close(fds[i]);
                }
                if (r < 0)
                        return xb_err_set(err, -r, "join the sandbox's cgroups");
        }
        if (setresgid(0, 0, 0) < 0 || setgroups(0, NULL) < 0 || setresuid(0, 0, 0) < 0)
                return xb_err_set(err, errno, "become root in the user namespace");
        /* Pools the kernel counts per user namespace and uid, before the
         * capabilities go (pools.h): what this sandbox takes, no other loses. */
        if ((r = xb_pools_limit_userns(err)) < 0)
                return r;
        {
                struct rlimit rl = { a->sigpending, a->sigpending };

                if (setrlimit(RLIMIT_SIGPENDING, &rl) < 0)
                        return xb_err_set(err, errno, "set RLIMIT_SIGPENDING");
        }
        if (unshare(CLONE_NEWCGROUP) < 0)
                return xb_err_set(err, errno, "unshare the cgroup namespace");
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return xb_err_set(err, errno, "make mounts private");
        if (a->root_opts) {
                r = xb_layers_enter(a->cfg->root, layer_fds, a->cfg->limits.disk, a->root_opts, err);
                for (size_t i = 0; i < XB_LAYER_NFDS; i++)
                        if (layer_fds[i] >= 0)
                                close(layer_fds[i]);
                if (r < 0)
                        return r;
        } else {
                /* The new root is a tmpfs over /tmp, seen only in this mount
                 * namespace; every source was opened before, so nothing under
                 * /tmp is needed. */
                if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=4096") < 0)
                        return xb_err_set(err, errno, "mount the root tmpfs");
                if (chdir("/tmp") < 0)
                        return xb_err_set(err, errno, "enter the new root");
        }
        if ((r = xb_mountplan_execute(a->plan, err)) < 0)
                return r;
        if (syscall(SYS_pivot_root, ".", ".") < 0)
                return xb_err_set(err, errno, "pivot_root");
        /* The old root is now stacked on the new one: detach it. */
        if (umount2(".", MNT_DETACH) < 0 || chdir("/") < 0)
                return xb_err_set(err, errno, "detach the old root");
        if (!a->root_opts &&
            mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
                return xb_err_set(err, errno, "make the root read-only");
        if (sethostname("sandbox", 7) < 0)
                return xb_err_set(err, errno, "sethostname");
        if ((r = xb__loopback_up()) < 0)
                return xb_err_set(err, -r, "bring up loopback");
        if (a->net_sock >= 0 && (r = xb__send_net_sockets(a->net_sock)) < 0)
                return xb_err_set(err, -r, "bind the egress sockets");

        devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 || dup2(devnull, 2) < 0)
                return xb_err_set(err, errno, "open /dev/null");
        close(devnull);

        if ((r = xb_caps_bound(xb_caps_default_mask())) < 0)
                return xb_err_set(err, -r, "drop capabilities from the bounding set");
        if ((r = xb_caps_clear_inheritable()) < 0)
                return xb_err_set(err, -r, "clear inheritable capabilities");
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return xb_err_set(err, errno, "set no_new_privs");

        if ((r = confine(a, err)) < 0)
                return r;
        if ((r = xb_seccomp_install(a->seccomp)) < 0)
                return xb_err_set(err, -r, "install the seccomp filter");
        if (a->cfg->first) {
                const size_t stack_size = 64 * 1024;
                void *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
                pid_t pid;

                if (stack == MAP_FAILED)
                        return xb_err_set(err, errno, "map the command's start-up stack");
                /* Returns once the command has exec'd or given up. */
                pid = clone(first_main, (char *)stack + stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD,
                            (void *)a);
                if (pid < 0)
                        return xb_err_set(err, errno, "start the command");
                munmap(stack, stack_size);
                snprintf(first, sizeof(first), "--first=%d:%u:%d", (int)pid, a->cfg->first_tag,
                         a->cfg->first->last ? 1 : 0);
                argv[argc++] = first;
        }
        argv[argc] = NULL;

        /* Init gets the socket as fd 3 and nothing else; the image fd is
         * close-on-exec and moved out of the way first. */
        imgfd = fcntl(a->init_fd, F_DUPFD_CLOEXEC, 10);
        if (imgfd < 0)
                return xb_err_set(err, errno, "dup the init image fd");
        if (a->sock != INIT_SOCK_FD) {
                if (dup3(a->sock, INIT_SOCK_FD, 0) < 0)
                        return xb_err_set(err, errno, "move the init socket");
        } else if (xb_set_cloexec(INIT_SOCK_FD, false) < 0)
                return xb_err_set(err, errno, "keep the init socket");
        {
                int keep[] = { INIT_SOCK_FD, imgfd };

                if ((r = xb_close_all_except(keep, 2)) < 0)
                        return xb_err_set(err, -r, "close inherited fds");
        }
        {
                char *const envp[] = { NULL };

                syscall(SYS_execveat, imgfd, "", argv, envp, AT_EMPTY_PATH);
        }
        return xb_err_set(err, errno, "exec the sandbox init");
}

static void __attribute__((noreturn))
child_main(const struct child_args *a)
{
        struct xb_err err = { 0 };
        uint8_t buf[1024];
        struct xb_msgw w;

        /* If the daemon dies before init runs, so do we. */
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        /* Our memory is a copy of the daemon's, and a one-shot command runs
         * beside us before we exec init: nothing in the sandbox may ptrace
         * us, read our memory or take our fds. The name tells us apart in
         * ps for that moment. */
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        prctl(PR_SET_NAME, "execbox-setup", 0, 0, 0);
        /* Nor read the daemon's command line from /proc/1/cmdline: before
         * the exec, it shows our copy of argv. */
        xb_title_set("execbox-init");
        /* Ignored signals survive exec: a daemon started with SIGINT
         * ignored (`execbox serve &` in a script) must not pass that on to
         * init and every command. */
        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        signal(sig, SIG_DFL);
        child_setup(a, &err);
        xb_msgw_init(&w, buf, sizeof(buf), XB_EV_ERROR, 0);
        xb_msgw_u64(&w, XB_K_ERRNO, (uint64_t)(err.code ? err.code : EIO));
        xb_msgw_str(&w, XB_K_STAGE, err.msg);
        /* Before the final exec the socket may already have moved to fd 3. */
        if (xb_msg_send(a->sock, w.buf, w.len, NULL, 0) == -EBADF)
                xb_msg_send(INIT_SOCK_FD, w.buf, w.len, NULL, 0);
        _exit(127);
}

static int
write_id_map(pid_t pid, const char *file, uid_t base)
{
        char path[64], map[64];
        _cleanup_close_ int fd = -1;

        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
        snprintf(map, sizeof(map), "0 %u %u\n", (unsigned)base, XB_UID_RANGE);
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return write(fd, map, strlen(map)) == (ssize_t)strlen(map) ? 0 : -errno;
}

static void
free_binds(struct xb_bind *b, size_t n)
{
        for (size_t i = 0; i < n; i++)
                xb_bind_free(&b[i]);
        free(b);
}

int
xb_sandbox_start(struct xb_engine *e, const struct xb_sandbox_config *cfg, struct xb_sandbox **ret,
                 struct xb_err *err)
{
        _cleanup_free_ struct xb_sandbox *sb = calloc(1, sizeof(*sb));
        struct xb_mount_plan plan = { 0 };
        struct xb_bind *binds = NULL;
        struct xb_image_opts img;
        struct xb_cgroup_limits cl;
        struct clone_args ca = { 0 };
        struct xb_cgroup_join join = { .clone_fd = -1, .tasks = { -1, -1, -1, -1, -1 } };
        _cleanup_close_ int sock = -EBADF, child_sock = -EBADF;   /* the init socket's two ends */
        _cleanup_close_ int net_sock = -EBADF, child_net = -EBADF;   /* the egress sockets' way out */
        int sv[2], pidfd = -1, r;
        bool have_slot = false;
        pid_t pid;
        struct xb_layered_opts layered = { 0 };
        char *opts[XB_LAYER_PARTS] = { 0 };

        if (!sb)
                return xb_err_set(err, ENOMEM, "sandbox");
        sb->pidfd = sb->sock = sb->net_sock = sb->slot_fd = -1;
        sb->eng = e;
        if ((r = xb_limits_validate(&cfg->limits, err)) < 0)
                return r;
        if ((r = xb_random_id(sb->id, sizeof(sb->id))) < 0)
                return xb_err_set(err, -r, "random id");

        /* The caller's binds: validated, resolved and checked against the allowlist. */
        if (cfg->nbinds) {
                if (cfg->nbinds > 32)
                        return xb_err_msg(err, E2BIG, "at most 32 mounts per sandbox");
                if ((r = xb_binds_validate(cfg->binds, cfg->nbinds, err)) < 0)
                        return r;
                binds = calloc(cfg->nbinds, sizeof(*binds));
                if (!binds)
                        return xb_err_set(err, ENOMEM, "binds");
                for (size_t i = 0; i < cfg->nbinds; i++) {
                        binds[i].host = strdup(cfg->binds[i].host);
                        binds[i].dest = strdup(cfg->binds[i].dest);
                        binds[i].rw = cfg->binds[i].rw;
                        if (!binds[i].host || !binds[i].dest) {
                                r = xb_err_set(err, ENOMEM, "binds");
                                goto fail;
                        }
                        r = xb_bind_resolve(&binds[i], (const char *const *)e->allow, e->nallow, err);
                        if (r < 0)
                                goto fail;
                }
        }

        img = (struct xb_image_opts){
                .disk = cfg->limits.disk, .user_uid = XB_USER_UID, .user_gid = XB_USER_UID,
                .etc_dir = e->etc_dir, .binds = binds, .nbinds = cfg->nbinds, .layout = e->layout,
        };
        if (cfg->root) {
                if ((r = xb__layered_prepare(sb, cfg, opts, &layered, err)) < 0)
                        goto fail;
                img.layered = &layered;
        }
        if ((r = xb_mountplan_host(&plan, &img, err)) < 0)
                goto fail;

        if ((r = xb_uidpool_alloc(&e->uids, &sb->uid_slot)) < 0) {
                r = xb_err_msg(err, EAGAIN, "no free uid range: %u sandboxes are running", e->uids.nslots);
                goto fail;
        }
        have_slot = true;
        sb->host_uid_base = xb_uidpool_host_base(sb->uid_slot);

        cl = (struct xb_cgroup_limits){ .memory = cfg->limits.memory, .pids = cfg->limits.pids,
                                        .cpus_milli = cfg->limits.cpus_milli, .oom_group = cfg->oom_group };
        {
                /* Named after the uid slot we hold: a group of that name can only
                 * be a leftover of a holder that died (killed -9); creating
                 * replaces it (cgroup.c, mkgroup). */
                char name[32];

                snprintf(name, sizeof(name), "u%u", sb->uid_slot);
                if ((r = xb_cgroup_create(e->cgroups, name, &cl, &sb->cg, err)) < 0)
                        goto fail;
        }
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                r = xb_err_set(err, errno, "socketpair");
                goto fail;
        }
        sock = sv[0];
        child_sock = sv[1];
        if (cfg->network) {
                if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                        r = xb_err_set(err, errno, "socketpair");
                        goto fail;
                }
                net_sock = sv[0];
                child_net = sv[1];
        }

        /* No CLONE_NEWNET: the child unshares it in parallel with our work below. */
        ca.flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_PIDFD;
        ca.pidfd = (uint64_t)(uintptr_t)&pidfd;
        ca.exit_signal = SIGCHLD;
        if (xb_cgroup_clone_fd(sb->cg) >= 0) {
                ca.flags |= CLONE_INTO_CGROUP;
                ca.cgroup = (uint64_t)xb_cgroup_clone_fd(sb->cg);
        }
        pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
        if (pid < 0) {
                r = xb_err_set(err, errno, "clone the sandbox");
                goto fail;
        }
        if (pid == 0) {
                struct child_args a = { .sock = child_sock, .net_sock = child_net, .init_fd = e->init_fd, .plan = &plan,
                                        .seccomp = &e->seccomp, .cfg = cfg, .binds = binds,
                                        .nbinds = cfg->nbinds, .root_opts = opts[0], .sigpending = e->sigpending };

                close(sock);
                if (net_sock >= 0)
                        close(net_sock);
                child_main(&a);
        }
        close(TAKE_FD(child_sock));
        if (child_net >= 0)
                close(TAKE_FD(child_net));
        if (net_sock >= 0 && xb_set_nonblock(net_sock, true) == 0)
                sb->net_sock = TAKE_FD(net_sock);
        sb->pid = pid;
        sb->pidfd = pidfd;
        sb->sock = TAKE_FD(sock);
        xb_mountplan_free(&plan);
        xb__free_opts(opts);

        if ((r = xb_cgroup_complete(sb->cg, err)) < 0 || (r = xb_cgroup_join_open(sb->cg, &join, err)) < 0)
                goto fail_child;
        if ((r = write_id_map(pid, "uid_map", sb->host_uid_base)) < 0 ||
            (r = write_id_map(pid, "gid_map", sb->host_uid_base)) < 0) {
                xb_err_set(err, -r, "write the sandbox's id map");
                goto fail_child;
        }
        if (cfg->root && ((r = xb__send_layers(sb, cfg, err)) < 0 || (r = xb__send_binds(sb, cfg, binds, err)) < 0))
                goto fail_child;
        free_binds(binds, cfg->nbinds);
        binds = NULL;
        {
                uint8_t buf[16];
                struct xb_msgw w;
                int fds[XB_MSG_MAXFDS];
                size_t nfds = 0;

                xb_msgw_init(&w, buf, sizeof(buf), XB_SETUP_GO, 0);
                for (size_t i = 0; i < ARRAY_SIZE(join.tasks) && nfds < ARRAY_SIZE(fds); i++)
                        if (join.tasks[i] >= 0)
                                fds[nfds++] = join.tasks[i];
                if ((r = xb_msg_send(sb->sock, w.buf, w.len, fds, nfds)) < 0) {
                        xb_err_set(err, -r, "release the setup child");
                        goto fail_child;
                }
                xb_cgroup_join_close(&join);
        }
        {
                /* Requests queue here while init works through them, and a
                 * session's driver spawn alone is ~50 KiB: room for a burst
                 * of them, so none (nor a signal behind them) meets EAGAIN. */
                int size = XB_INIT_SNDBUF;

                setsockopt(sb->sock, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size));
        }
        if ((r = xb_set_nonblock(sb->sock, true)) < 0) {
                xb_err_set(err, -r, "init socket");
                goto fail_child;
        }
        *ret = TAKE_PTR(sb);
        return 0;

fail_child:
        xb_cgroup_join_close(&join);
        free_binds(binds, cfg->nbinds);
        xb_sandbox_destroy(TAKE_PTR(sb));
        return r;
fail:
        xb_cgroup_join_close(&join);
        xb_mountplan_free(&plan);
        free_binds(binds, cfg->nbinds);
        xb__free_opts(opts);
        if (sb->has_layer)
                xb_store_delete(e->store, "sbx", sb->id, NULL);
        xb_cgroup_destroy(sb->cg);
        if (have_slot)
                xb_uidpool_release(&e->uids, sb->uid_slot);
        return r;
}

void
xb_sandbox_kill(struct xb_sandbox *sb)
{
        /* Once init is reaped its pid namespace is empty, and nothing else
         * can be in the sandbox's cgroup. */
        if (sb->reaped)
                return;
        if (sb->pidfd >= 0)
                syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
        if (sb->cg)
                xb_cgroup_kill(sb->cg);
}

void
xb_sandbox_end(struct xb_sandbox *sb)
{
        if (!sb->reaped && sb->pidfd >= 0)
                syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
        while (xb_sandbox_reap(sb, true) == -EINTR)
                ;
}

int
xb_sandbox_reap(struct xb_sandbox *sb, bool wait)
{
        siginfo_t si = { 0 };

        if (sb->reaped)
                return 1;
        if (sb->adopted) {
                /* Not our child: its end is the pidfd turning readable. */
                struct pollfd p = { .fd = sb->pidfd, .events = POLLIN };
                int n = poll(&p, 1, wait ? 10000 : 0);

                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
                sb->reaped = true;
                return 1;
        }
        if (waitid(P_PIDFD, (id_t)sb->pidfd, &si, WEXITED | (wait ? 0 : WNOHANG)) < 0) {
                if (errno == ECHILD) {
                        sb->reaped = true;
                        return 1;
                }
                return -errno;
        }
        if (si.si_pid == 0)
                return 0;
        sb->reaped = true;
        return 1;
}

int
xb_sandbox_stats(struct xb_sandbox *sb, struct xb_cgroup_stats *st)
{
        return xb_cgroup_stats(sb->cg, st);
}

uint64_t
xb_sandbox_oom_kills(struct xb_sandbox *sb)
{
        return xb_cgroup_oom_kills(sb->cg);
}

int
xb_sandbox_freeze(struct xb_sandbox *sb, bool frozen)
{
        return sb->reaped || !sb->cg ? -ESRCH : xb_cgroup_freeze(sb->cg, frozen);
}

int
xb_sandbox_disk_slack(struct xb_sandbox *sb, bool on)
{
        if (!sb->has_layer || !sb->disk)
                return -ENOENT;
        if (sb->disk_clamped)
                return 0;   /* the clamp holds: no slack either */
        return xb_store_limit(sb->eng->store, sb->id, on ? sb->disk + XB_STORE_SLACK : sb->disk);
}

int
xb_sandbox_disk_clamp(struct xb_sandbox *sb, bool on)
{
        int r;

        if (!sb->has_layer)
                return -ENOENT;
        if (sb->disk_clamped == on)
                return 0;
        /* A limit of one byte: every new reservation fails; a deletion does
         * not need one (btrfs does not enforce qgroups for it). */
        r = xb_store_limit(sb->eng->store, sb->id, on ? 1 : sb->disk ? sb->disk : XB_STORE_NO_LIMIT);
        if (r == 0)
                sb->disk_clamped = on;
        return r;
}

int
xb_sandbox_destroy(struct xb_sandbox *sb)
{
        int r = 0;

        if (!sb)
                return 0;
        xb_sandbox_kill(sb);
        /* Init's exit waits for every task of its pid namespace to die. */
        while (xb_sandbox_reap(sb, true) == -EINTR)
                ;
        if (sb->sock >= 0)
                close(sb->sock);
        if (sb->net_sock >= 0)
                close(sb->net_sock);
        if (sb->pidfd >= 0)
                close(sb->pidfd);
        r = xb_cgroup_destroy(sb->cg);
        if (sb->slot_fd >= 0)
                close(sb->slot_fd);
        xb_uidpool_release(&sb->eng->uids, sb->uid_slot);
        /* Init is reaped, so no mount of its namespace holds the layer. */
        if (sb->has_layer)
                xb_store_delete(sb->eng->store, "sbx", sb->id, NULL);
        free(sb);
        return r;
}
