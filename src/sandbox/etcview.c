/* Building the shared /etc view. */
#define _GNU_SOURCE
#include "etcview.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "sandbox/mountplan.h"

#define STAMP ".execbox-stamp"
#define STAMP_VERSION "v4"   /* what build() writes: bumped when it changes */
#define CHECKED "etc.checked"   /* its mtime: when the view was last found current */
#define RETIRED ".execbox-retired"  /* in a view: its mtime is when it stopped being current */

struct budget {
        uint64_t bytes;
        unsigned entries;
};

/* What the view depends on: each allowlisted entry's identity and times. */
static uint64_t fnv1a(const char *s);

static int
fingerprint(unsigned user_uid, const char *extra_ca, struct xb_buf *fp)
{
        int r = xb_buf_printf(fp, STAMP_VERSION " uid=%u ca=%016llx\n", user_uid,
                              (unsigned long long)(extra_ca ? fnv1a(extra_ca) : 0));

        for (const char *const *e = xb_etc_allowlist; *e && !r; e++) {
                struct stat st;
                char path[256];

                snprintf(path, sizeof(path), "/etc/%s", *e);
                if (stat(path, &st) < 0)
                        r = xb_buf_printf(fp, "%s -\n", *e);
                else
                        r = xb_buf_printf(fp, "%s %" PRIu64 " %" PRIu64 " %" PRId64 ".%09ld %" PRId64 "\n", *e,
                                          (uint64_t)st.st_dev, (uint64_t)st.st_ino, (int64_t)st.st_mtim.tv_sec,
                                          st.st_mtim.tv_nsec, (int64_t)st.st_size);
        }
        return r;
}

static int
write_file(int dir, const char *name, const char *content, mode_t mode)
{
        _cleanup_close_ int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);

        if (fd < 0)
                return -errno;
        if (fchmod(fd, mode) < 0)
                return -errno;
        return xb_write_all(fd, content, strlen(content));
}

static int copy_entry(int sdir, int ddir, const char *name, int depth, struct budget *b);

static int
copy_dir(int sdir, int ddir, const char *name, mode_t mode, int depth, struct budget *b)
{
        _cleanup_close_ int src = -EBADF, dst = -EBADF;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int r = 0;

        if (depth > 8)
                return -ELOOP;
        src = openat(sdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (src < 0)
                return -errno;
        d = xb_take_fdopendir(&src);
        if (!d)
                return -errno;
        if (mkdirat(ddir, name, 0755) < 0 && errno != EEXIST)
                return -errno;
        dst = openat(ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dst < 0)
                return -errno;
        fchmod(dst, mode & 0755);
        while ((de = readdir(d)) && r == 0) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                r = copy_entry(dirfd(d), dst, de->d_name, depth + 1, b);
        }
        return r;
}

static int
copy_file(int sdir, int ddir, const char *name, mode_t mode, struct budget *b)
{
        _cleanup_close_ int in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        _cleanup_close_ int out = -1;
        char buf[65536];
        ssize_t n;

        if (in < 0)
                return errno == EACCES ? 0 : -errno;   /* unreadable: leave it out */
        out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0755);
        if (out < 0)
                return -errno;
        while ((n = read(in, buf, sizeof(buf))) > 0) {
                if ((b->bytes += (uint64_t)n) > XB_ETCVIEW_MAX_BYTES)
                        return -EFBIG;
                if (xb_write_all(out, buf, (size_t)n) < 0)
                        return -errno;
        }
        return n < 0 ? -errno : 0;
}

static int
copy_entry(int sdir, int ddir, const char *name, int depth, struct budget *b)
{
        struct stat st;

        if (++b->entries > 20000)
                return -E2BIG;
        if (fstatat(sdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (S_ISDIR(st.st_mode))
                return copy_dir(sdir, ddir, name, st.st_mode, depth, b);
        if (S_ISREG(st.st_mode))
                return copy_file(sdir, ddir, name, st.st_mode, b);
        if (S_ISLNK(st.st_mode)) {
                char target[4096];
                ssize_t n = readlinkat(sdir, name, target, sizeof(target) - 1);

                if (n < 0)
                        return -errno;
                target[n] = '\0';
                return symlinkat(target, ddir, name) < 0 ? -errno : 0;
        }
        return 0;   /* sockets, fifos and devices have no place in /etc */
}

/* Copy /etc/<rel> (rel may have one '/': "ssl/certs") into ddir. Symlinks
 * stay symlinks: their targets are in /usr, which every sandbox has. */
static int
copy_allowed(int etc, int ddir, const char *rel, struct budget *b)
{
        char parent[256];
        const char *slash = strchr(rel, '/');
        _cleanup_close_ int pdir = -1, sdir = -1;

        if (!slash)
                return copy_entry(etc, ddir, rel, 0, b);
        snprintf(parent, sizeof(parent), "%.*s", (int)(slash - rel), rel);
        sdir = openat(etc, parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sdir < 0)
                return errno == ENOENT ? 0 : -errno;
        if (mkdirat(ddir, parent, 0755) < 0 && errno != EEXIST)
                return -errno;
        pdir = openat(ddir, parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (pdir < 0)
                return -errno;
        return copy_entry(sdir, pdir, slash + 1, 0, b);
}

static int
rm_rf_at(int dir, const char *name, int depth)
{
        _cleanup_close_ int fd = -EBADF;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        if (unlinkat(dir, name, 0) == 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return -errno;
        if (depth > 16)
                return -ELOOP;
        fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = xb_take_fdopendir(&fd);
        if (!d)
                return -errno;
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                        rm_rf_at(dirfd(d), de->d_name, depth + 1);
        return unlinkat(dir, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

/* Debian's static system accounts (base-passwd's masters: the same on every
 * Debian host, none of the host's own users), so that maintainer scripts
 * find the owners they chown to (man-db's trigger: man); then the sandbox's
 * user. Without base-passwd, the bare minimum. */
static int
accounts(char **ret, const char *master, const char *fallback, const char *user_line)
{
        _cleanup_close_ int dir = open("/usr/share/base-passwd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;

        if (dir < 0 || xb_read_file_at(dir, master, 16384, &text, &len) < 0 || !len || text[len - 1] != '\n')
                return asprintf(ret, "%s%s", fallback, user_line) < 0 ? -ENOMEM : 0;
        return asprintf(ret, "%s%s", text, user_line) < 0 ? -ENOMEM : 0;
}

/* The host's CA bundle with extra appended, in place of the copy (which
 * may be a symlink), and extra alone beside it for NODE_EXTRA_CA_CERTS. */
static int
add_ca(int etc, int d, const char *extra)
{
        _cleanup_close_ int src = openat(etc, "ssl/certs/ca-certificates.crt", O_RDONLY | O_CLOEXEC);
        _cleanup_close_ int certs = openat(d, "ssl/certs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct xb_buf b = { .max = 8u << 20 };
        char chunk[65536];
        ssize_t n;
        int r = 0;

        if (certs < 0) {
                if (mkdirat(d, "ssl", 0755) < 0 && errno != EEXIST)
                        return -errno;
                if (mkdirat(d, "ssl/certs", 0755) < 0 && errno != EEXIST)
                        return -errno;
                certs = openat(d, "ssl/certs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (certs < 0)
                        return -errno;
        }
        while (src >= 0 && (n = read(src, chunk, sizeof(chunk))) > 0 && !r)
                r = xb_buf_append(&b, chunk, (size_t)n);
        if (!r && b.len && b.data[b.len - 1] != '\n')
                r = xb_buf_append(&b, "\n", 1);
        if (!r)
                r = xb_buf_append(&b, extra, strlen(extra));
        if (!r)
                r = xb_buf_append(&b, "", 1);
        if (r < 0) {
                xb_buf_free(&b);
                return -ENOMEM;
        }
        unlinkat(certs, "ca-certificates.crt", 0);
        r = write_file(certs, "ca-certificates.crt", b.data, 0644);
        xb_buf_free(&b);
        if (!r)
                r = write_file(certs, "execbox-egress-ca.pem", extra, 0644);
        return r;
}

static int
build(int root, const char *tmpname, unsigned user_uid, const char *stamp, const char *extra_ca)
{
        struct budget b = { 0 };
        _cleanup_free_ char *passwd = NULL, *group = NULL;
        char line[96];
        _cleanup_close_ int etc = open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int d = -1;
        int r = 0;

        if (etc < 0)
                return -errno;
        if (mkdirat(root, tmpname, 0755) < 0)
                return -errno;
        d = openat(root, tmpname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d < 0)
                return -errno;
        fchmod(d, 0755);
        for (const char *const *e = xb_etc_allowlist; *e && r == 0; e++)
                r = copy_allowed(etc, d, *e, &b);
        snprintf(line, sizeof(line), "user:x:%u:%u:user:/home/user:/bin/bash\n", user_uid, user_uid);
        if (!r)
                r = accounts(&passwd, "passwd.master",
                             "root:x:0:0:root:/root:/bin/bash\n"
                             "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n", line);
        snprintf(line, sizeof(line), "user:x:%u:\n", user_uid);
        if (!r)
                r = accounts(&group, "group.master", "root:x:0:\ntty:x:5:\nusers:x:100:\nnogroup:x:65534:\n", line);
        if (!r && extra_ca)
                r = add_ca(etc, d, extra_ca);
        if (!r)
                r = write_file(d, "passwd", passwd, 0644);
        if (!r)
                r = write_file(d, "group", group, 0644);
        if (!r)
                r = write_file(d, "hostname", "sandbox\n", 0644);
        if (!r)
                r = write_file(d, "hosts", "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost\n", 0644);
        /* No network but loopback: a resolver that answers nothing, fast. */
        if (!r)
                r = write_file(d, "resolv.conf", "# execbox: this sandbox has no network\nnameserver 127.0.0.1\n", 0644);
        if (!r)
                r = write_file(d, "nsswitch.conf", "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
                               "networks: files\nprotocols: files\nservices: files\n", 0644);
        if (!r)
                r = write_file(d, STAMP, stamp, 0600);
        return r;
}

/* FNV-1a: the view's name from its fingerprint (not a security boundary:
 * the directory is root's). */
static uint64_t
fnv1a(const char *s)
{
        uint64_t h = 1469598103934665603ULL;

        for (; *s; s++)
                h = (h ^ (unsigned char)*s) * 1099511628211ULL;
        return h;
}

/* Point the "etc" symlink at view, atomically. */
static void
set_current(int root, const char *view)
{
        char tmp[64];

        snprintf(tmp, sizeof(tmp), "etc.link.%d", (int)getpid());
        unlinkat(root, tmp, 0);
        if (symlinkat(view, root, tmp) < 0)
                return;
        if (renameat(root, tmp, root, "etc") < 0 && (errno == EISDIR || errno == ENOTEMPTY)) {
                /* An older execbox kept the view itself at "etc": retire it like a view. */
                char old[64];

                snprintf(old, sizeof(old), "etc-legacy-%d", (int)getpid());
                if (renameat(root, "etc", root, old) == 0)
                        renameat(root, tmp, root, "etc");
        }
        unlinkat(root, tmp, 0);
}

/* Views other than current: mark them retired, and remove those retired
 * longer than any sandbox can live (a sandbox binds its view for life). */
static void
retire_others(int root, const char *current)
{
        _cleanup_close_ int fd = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_closedir_ DIR *d = xb_take_fdopendir(&fd);
        struct dirent *de;

        if (!d)
                return;
        while ((de = readdir(d))) {
                char marker[300];
                struct stat st;

                if (strncmp(de->d_name, "etc-", 4) != 0 || strcmp(de->d_name, current) == 0)
                        continue;
                snprintf(marker, sizeof(marker), "%s/%s", de->d_name, RETIRED);
                if (fstatat(root, marker, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        int m = openat(root, marker, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

                        if (m >= 0)
                                close(m);
                } else if (time(NULL) - st.st_mtime > XB_ETCVIEW_KEEP_S)
                        rm_rf_at(root, de->d_name, 0);
        }
}

/* The view was made by this version of the builder (another build of
 * execbox on the machine may have made the current one). */
static bool
stamp_current(int root, const char *view)
{
        char path[128], head[8] = { 0 };
        _cleanup_close_ int fd = -EBADF;

        snprintf(path, sizeof(path), "%s/" STAMP, view);
        fd = openat(root, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        return fd >= 0 && read(fd, head, 3) == 3 && !memcmp(head, STAMP_VERSION " ", 3);
}

int
xb_etcview_prepare(const char *dir, unsigned user_uid, char **ret_path, struct xb_err *err)
{
        return xb_etcview_prepare_ca(dir, user_uid, NULL, ret_path, err);
}

int
xb_etcview_prepare_ca(const char *dir, unsigned user_uid, const char *extra_ca, char **ret_path,
                      struct xb_err *err)
{
        char cadir[4096];

        _cleanup_close_ int root = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct xb_buf fp = { .max = 1 << 20 };
        char view[64], tmpname[64], path[4096];
        struct stat st;
        int r;

        if (root < 0)
                return xb_err_set(err, errno, "open %s", dir);
        /* Each CA has views of its own, so no caller without it (or with
         * another) ever binds them. */
        if (extra_ca) {
                snprintf(cadir, sizeof(cadir), "%s/caview-%016llx", dir, (unsigned long long)fnv1a(extra_ca));
                if (mkdir(cadir, 0755) < 0 && errno != EEXIST)
                        return xb_err_set(err, errno, "mkdir %s", cadir);
                close(root);
                root = open(cadir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (root < 0)
                        return xb_err_set(err, errno, "open %s", cadir);
                dir = cadir;
        }
        /* Checked a moment ago (a burst of runs): the current view, without
         * the ~40 stat calls of a fingerprint. */
        if (fstatat(root, CHECKED, &st, AT_SYMLINK_NOFOLLOW) == 0 && time(NULL) >= st.st_mtime &&
            time(NULL) - st.st_mtime < XB_ETCVIEW_RECHECK_S) {
                ssize_t n = readlinkat(root, "etc", view, sizeof(view) - 1);

                if (n > 4 && (view[n] = '\0', strncmp(view, "etc-", 4) == 0) && !strchr(view, '/') &&
                    faccessat(root, view, F_OK, AT_SYMLINK_NOFOLLOW) == 0 && stamp_current(root, view))
                        goto done;
        }
        if (fingerprint(user_uid, extra_ca, &fp) < 0) {
                xb_buf_free(&fp);
                return xb_err_set(err, ENOMEM, "fingerprint /etc");
        }
        snprintf(view, sizeof(view), "etc-%016llx", (unsigned long long)fnv1a(fp.data));
        if (fstatat(root, view, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                snprintf(tmpname, sizeof(tmpname), "etc.new.%d", (int)getpid());
                rm_rf_at(root, tmpname, 0);
                r = build(root, tmpname, user_uid, fp.data, extra_ca);
                if (r < 0) {
                        xb_buf_free(&fp);
                        rm_rf_at(root, tmpname, 0);
                        return xb_err_set(err, -r, "prepare the sandbox /etc in %s", dir);
                }
                /* Another process may have built the same view meanwhile: keep theirs. */
                if (renameat(root, tmpname, root, view) < 0)
                        rm_rf_at(root, tmpname, 0);
        }
        xb_buf_free(&fp);
        set_current(root, view);
        retire_others(root, view);
        {
                /* Stamped only after a real check, so a steady stream of
                 * runs still rechecks every XB_ETCVIEW_RECHECK_S. */
                int fd = openat(root, CHECKED, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

                if (fd >= 0) {
                        futimens(fd, NULL);
                        close(fd);
                }
        }
done:
        snprintf(path, sizeof(path), "%s/%s", dir, view);
        *ret_path = strdup(path);
        return *ret_path ? 0 : xb_err_set(err, ENOMEM, "etc view");
}

void
xb_etcview_remove_ca(int dir_fd, const char *extra_ca)
{
        char name[64];

        snprintf(name, sizeof(name), "caview-%016llx", (unsigned long long)fnv1a(extra_ca));
        rm_rf_at(dir_fd, name, 0);
}
