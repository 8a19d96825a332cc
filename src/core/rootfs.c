/* A whole root as a read-only layer: a host program (mmdebstrap, umoci)
 * fills a fresh writable layer's root part, then the daemon moves /usr,
 * /etc and /var/lib/dpkg into their own parts (the overlays a sandbox
 * mounts), makes sure the mount targets are plain directories, removes
 * device nodes, fifos and sockets and clears setuid and setgid bits (the
 * mounts are nosuid and nodev anyway: this is a second line), and
 * snapshots the layer read-only as layers/<name>. See core/rootfs.h. */
#define _GNU_SOURCE
#include "core/rootfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/utf8.h"
#include "core/core.h"
#include "sandbox/store.h"

extern char **environ;

struct xb_rootfs_job {
        struct xb_rootfs_job *next;   /* core->rootfs_jobs */
        struct xb_core *core;
        char layer[128];
        char tmp[40];
        char tail[1500];              /* the end of its output, for the error */
        size_t ntail;
        unsigned char carry[4];       /* a UTF-8 sequence cut by a read */
        size_t ncarry;
        pid_t pid;
        int pidfd, outfd;
        struct xb_io io, out_io;
        xb_rootfs_done done;
        xb_rootfs_output out;
        void *data;
};

static int
open_beneath(int dir, const char *path, int flags)
{
        struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };

        return (int)syscall(SYS_openat2, dir, path, &how, sizeof(how));
}

/* dir/name as a plain directory: whatever else is there goes. */
static int
ensure_dir(int dir, const char *name, mode_t mode)
{
        struct stat st;

        if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                if (S_ISDIR(st.st_mode))
                        return 0;
                if (unlinkat(dir, name, 0) < 0)
                        return -errno;
        }
        if (mkdirat(dir, name, mode) < 0 || fchmodat(dir, name, mode, 0) < 0)
                return -errno;
        return 0;
}

/* Move root/<from> (a directory) to up/<part>; leave an empty mount target. */
static int
split_part(int up, int root, const char *from, const char *part)
{
        _cleanup_close_ int parent = -EBADF;
        const char *slash = strrchr(from, '/'), *base = slash ? slash + 1 : from;
        char dir[64];
        struct stat st;
        int r;

        snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - from) : 1, slash ? from : ".");
        /* The parents of the target: plain directories. */
        if (slash) {
                char walk[64] = "";
                char *save = NULL, tmp[64];

                snprintf(tmp, sizeof(tmp), "%s", dir);
                for (char *c = strtok_r(tmp, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                        _cleanup_close_ int d = walk[0] ? open_beneath(root, walk, O_RDONLY | O_DIRECTORY)
                                                        : fcntl(root, F_DUPFD_CLOEXEC, 0);

                        if (d < 0 || (r = ensure_dir(d, c, 0755)) < 0)
                                return d < 0 ? -errno : r;
                        snprintf(walk + strlen(walk), sizeof(walk) - strlen(walk), "%s%s", walk[0] ? "/" : "", c);
                }
        }
        parent = open_beneath(root, dir, O_RDONLY | O_DIRECTORY);
        if (parent < 0)
                return -errno;
        if (fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
                if (unlinkat(up, part, AT_REMOVEDIR) < 0 || renameat(parent, base, up, part) < 0)
                        return -errno;
        }
        return ensure_dir(parent, base, 0755);
}

static int
scrub(const char *path, const struct stat *st, int flag, struct FTW *f)
{
        (void)f;
        if (flag == FTW_SL)
                return 0;
        if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) || S_ISFIFO(st->st_mode) || S_ISSOCK(st->st_mode))
                return unlink(path) < 0 ? -1 : 0;
        if ((st->st_mode & (S_ISUID | S_ISGID)) && !S_ISDIR(st->st_mode))
                return chmod(path, st->st_mode & 0777 & ~(mode_t)(S_ISUID | S_ISGID)) < 0 ? -1 : 0;
        return 0;
}

static int
fixup(struct xb_rootfs_job *j, struct xb_err *err)
{
        static const char *const targets[] = { "proc", "dev", "tmp", "root", "run", "home", NULL };
        char path[4300];
        _cleanup_close_ int up = -EBADF, root = -EBADF, home = -EBADF;
        int r;

        snprintf(path, sizeof(path), "%s/sbx/%s/up", j->core->eng->store->path, j->tmp);
        up = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        root = up < 0 ? -1 : open_beneath(up, "root", O_RDONLY | O_DIRECTORY);
        if (root < 0)
                return xb_err_set(err, errno, "open the new root");
        /* No device node, fifo or socket; no setuid or setgid file. */
        snprintf(path, sizeof(path), "%s/sbx/%s/up/root", j->core->eng->store->path, j->tmp);
        if (nftw(path, scrub, 64, FTW_PHYS | FTW_MOUNT) < 0)
                return xb_err_set(err, errno ? errno : EIO, "scrub the new root");
        if ((r = split_part(up, root, "usr", "usr")) < 0 || (r = split_part(up, root, "etc", "etc")) < 0 ||
            (r = split_part(up, root, "var/lib/dpkg", "dpkg")) < 0)
                return xb_err_set(err, -r, "split the new root");
        for (const char *const *t = targets; *t; t++)
                if ((r = ensure_dir(root, *t, !strcmp(*t, "tmp") ? 01777 : !strcmp(*t, "root") ? 0700 : 0755)) < 0)
                        return xb_err_set(err, -r, "make /%s", *t);
        home = open_beneath(root, "home", O_RDONLY | O_DIRECTORY);
        if (home < 0 || (r = ensure_dir(home, "user", 0755)) < 0 ||
            fchownat(home, "user", XB_USER_UID, XB_USER_UID, AT_SYMLINK_NOFOLLOW) < 0)
                return xb_err_set(err, errno, "make /home/user");
        return 0;
}

static void
tail_add(struct xb_rootfs_job *j, const char *p, size_t n)
{
        size_t room = sizeof(j->tail) - 1;

        if (n >= room) {
                memcpy(j->tail, p + n - room, room);
                j->ntail = room;
        } else {
                if (j->ntail + n > room) {
                        memmove(j->tail, j->tail + (j->ntail + n - room), room - n);
                        j->ntail = room - n;
                }
                memcpy(j->tail + j->ntail, p, n);
                j->ntail += n;
        }
        j->tail[j->ntail] = 0;
}

/* Where the text of p[0..n) ends without cutting a UTF-8 sequence: the
 * cut one's bytes wait for the next read. */
static size_t
whole_utf8(const unsigned char *p, size_t n)
{
        for (size_t back = 1; back <= 3 && back <= n; back++) {
                unsigned char c = p[n - back];
                size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;

                if ((c & 0xc0) == 0x80)
                        continue;   /* a continuation byte: look further back */
                return want > back && c < 0xf8 ? n - back : n;
        }
        return n;
}

/* Read what the program wrote (at most a few reads per turn of the loop):
 * to its tail, and to out. Returns false at its end (EOF or an error). */
static bool
read_output(struct xb_rootfs_job *j, int rounds)
{
        char buf[16384 + 4];

        while (rounds-- > 0) {
                ssize_t n;
                size_t whole;
                _cleanup_free_ char *text = NULL;
                size_t tlen;

                memcpy(buf, j->carry, j->ncarry);
                n = read(j->outfd, buf + j->ncarry, sizeof(buf) - 4);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return true;
                if (n <= 0)
                        return false;
                n += (ssize_t)j->ncarry;
                whole = whole_utf8((unsigned char *)buf, (size_t)n);
                j->ncarry = (size_t)n - whole;
                memcpy(j->carry, buf + whole, j->ncarry);
                if (!whole)
                        continue;
                /* Bytes that are not UTF-8 at all: U+FFFD, so the text goes into JSON. */
                text = xb_utf8_sanitize(buf, whole, &tlen);
                if (!text)
                        continue;
                tail_add(j, text, tlen);
                if (j->out)
                        j->out(j->data, text, tlen);
        }
        return true;
}

static void
on_output(struct xb_io *io, uint32_t events)
{
        struct xb_rootfs_job *j = io->data;

        (void)events;
        if (!read_output(j, 4))
                xb_io_stop(&j->out_io);
}

void
xb_rootfs_clamp(struct xb_core *s, bool on)
{
        for (struct xb_rootfs_job *j = s->rootfs_jobs; j; j = j->next)
                xb_store_limit(s->eng->store, j->tmp, on ? 1 : XB_STORE_NO_LIMIT);
}

static void
job_end(struct xb_rootfs_job *j, struct xb_err *err)
{
        struct xb_store *st = j->core->eng->store;

        for (struct xb_rootfs_job **pp = (struct xb_rootfs_job **)&j->core->rootfs_jobs; *pp; pp = &(*pp)->next)
                if (*pp == j) {
                        *pp = j->next;
                        break;
                }

        if (j->out_io.active)
                xb_io_stop(&j->out_io);
        if (j->outfd >= 0)
                close(j->outfd);
        if (!err->ecode && !err->code && xb_store_snapshot(st, j->tmp, "layers", j->layer, true, 0, err) == 0)
                j->core->m.layers_created++;
        xb_store_delete(st, "sbx", j->tmp, NULL);
        j->done(j->data, (err->ecode || err->code) ? NULL : j->layer, err);
        free(j);
}

static void
on_exit_cb(struct xb_io *io, uint32_t events)
{
        struct xb_rootfs_job *j = io->data;
        struct xb_err err = { 0 };
        siginfo_t si = { 0 };

        (void)events;
        if (waitid(P_PIDFD, (id_t)j->pidfd, &si, WEXITED | WNOHANG) < 0 || !si.si_pid)
                return;
        xb_io_stop(&j->io);
        close(j->pidfd);
        /* What it wrote last is in the pipe still (a child of its own that
         * keeps the pipe open is not waited for). */
        if (j->out_io.active && !read_output(j, 64))
                xb_io_stop(&j->out_io);
        if (si.si_code != CLD_EXITED || si.si_status != 0) {
                /* Its last lines: what fits in a message with a caller's prefix. */
                const char *tail = j->tail + (j->ntail > 320 ? j->ntail - 320 : 0), *nl;

                if (tail > j->tail && (nl = strchr(tail, '\n')) && nl[1])
                        tail = nl + 1;

                xb_err_code(&err, XB_E_TEMPLATE_BUILD_FAILED, EIO, NULL, "%s %d; the end of its output:\n%s",
                            si.si_code == CLD_EXITED ? "it exited with" : "it was killed by signal", si.si_status,
                            tail);
        } else if (fixup(j, &err) < 0) {
                err.ecode = XB_E_TEMPLATE_BUILD_FAILED;
        }
        job_end(j, &err);
}

int
xb_rootfs_import(struct xb_core *s, const char *layer, char *const argv[], int in_fd, xb_rootfs_done done,
                 xb_rootfs_output out, void *data, struct xb_err *err)
{
        struct xb_rootfs_job *j;
        posix_spawn_file_actions_t fa;
        char dir[4300], envv[4400], *envp[3];
        int r, pfd[2];

        if (!s->eng->store)
                return xb_err_code(err, XB_E_LAYERS_UNSUPPORTED, EOPNOTSUPP, NULL, "no layer store");
        if (!(j = calloc(1, sizeof(*j))))
                return xb_err_set(err, ENOMEM, "import");
        j->core = s;
        j->done = done;
        j->out = out;
        j->data = data;
        j->outfd = -1;
        snprintf(j->layer, sizeof(j->layer), "%s", layer);
        memcpy(j->tmp, "i-", 2);
        xb_random_id(j->tmp + 2, sizeof(j->tmp) - 2);
        if ((r = xb_store_layer_create(s->eng->store, j->tmp, 0, err)) < 0) {
                free(j);
                return r;
        }
        snprintf(dir, sizeof(dir), "%s/sbx/%s/up/root", s->eng->store->path, j->tmp);
        /* Its output comes to the daemon as it is written (a pipe, read on the loop). */
        if (pipe2(pfd, O_CLOEXEC) < 0) {
                r = errno;
                xb_store_delete(s->eng->store, "sbx", j->tmp, NULL);
                free(j);
                return xb_err_set(err, r, "make a pipe");
        }
        j->outfd = pfd[0];
        fcntl(pfd[0], F_SETFL, O_NONBLOCK);
        snprintf(envv, sizeof(envv), "XB_ROOTFS=%s", dir);
        envp[0] = envv;
        envp[1] = (char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin";
        envp[2] = NULL;
        posix_spawn_file_actions_init(&fa);
        if (in_fd >= 0)
                posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
        else
                posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
        posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
        r = posix_spawn(&j->pid, argv[0], &fa, NULL, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        close(pfd[1]);
        if (!r && xb_io_start(s->loop, &j->out_io, j->outfd, EPOLLIN, on_output, j) < 0)
                xb_warn("rootfs import: cannot watch its output; it is not streamed");
        if (r) {
                close(j->outfd);
                xb_store_delete(s->eng->store, "sbx", j->tmp, NULL);
                free(j);
                return xb_err_set(err, r, "run %s", argv[0]);
        }
        j->pidfd = (int)syscall(SYS_pidfd_open, j->pid, 0);
        if (j->pidfd < 0 || xb_io_start(s->loop, &j->io, j->pidfd, EPOLLIN, on_exit_cb, j) < 0) {
                kill(j->pid, SIGKILL);
                waitpid(j->pid, NULL, 0);
                if (j->out_io.active)
                        xb_io_stop(&j->out_io);
                close(j->outfd);
                xb_store_delete(s->eng->store, "sbx", j->tmp, NULL);
                free(j);
                return xb_err_set(err, EIO, "watch %s", argv[0]);
        }
        j->next = s->rootfs_jobs;
        s->rootfs_jobs = j;
        if (s->disk_tight)
                xb_store_limit(s->eng->store, j->tmp, 1);
        return 0;
}

bool
xb_rootfs_layer_exists(struct xb_core *s, const char *layer)
{
        char path[4300];
        struct stat st;

        if (!s->eng->store)
                return false;
        snprintf(path, sizeof(path), "%s/layers/%s", s->eng->store->path, layer);
        return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool
mirror_in(const char *path, char *buf, size_t n)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[1024];

        while (f && fgets(line, sizeof(line), f)) {
                char uri[512];

                if ((sscanf(line, "deb %511s", uri) == 1 || sscanf(line, "URIs: %511s", uri) == 1) && uri[0] != '[' &&
                    !strstr(uri, "security") && (!strncmp(uri, "http://", 7) || !strncmp(uri, "https://", 8)) &&
                    strlen(uri) > 7 && !strcmp(uri + strlen(uri) - 7, "/debian") &&
                    strspn(uri, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:/.-_~%") ==
                            strlen(uri)) {
                        snprintf(buf, n, "%s", uri);
                        return true;
                }
        }
        return false;
}

bool
xb_host_debian_mirror(char *buf, size_t n)
{
        static const char *const files[] = { "/etc/apt/sources.list", "/etc/apt/sources.list.d/debian.sources" };
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        for (size_t i = 0; i < ARRAY_SIZE(files); i++)
                if (mirror_in(files[i], buf, n))
                        return true;
        d = opendir("/etc/apt/sources.list.d");
        while (d && (de = readdir(d))) {
                char p[600];

                if (de->d_name[0] == '.')
                        continue;
                snprintf(p, sizeof(p), "/etc/apt/sources.list.d/%s", de->d_name);
                if (mirror_in(p, buf, n))
                        return true;
        }
        return false;
}
