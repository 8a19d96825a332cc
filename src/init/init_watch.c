/* Directory watches for the daemon (XB_REQ_WATCH, XB_REQ_UNWATCH).
 *
 * Theory of operation. Each watch is one inotify instance of init's, so
 * that it sees what any process in the sandbox does, and so that dropping
 * it (unwatch, or the daemon gone) frees everything at one close. A
 * recursive watch adds every directory under its root, and each directory
 * created or moved in later, up to XB_WATCH_DIRS_MAX; a directory moved
 * away loses its watches (its paths would be stale). Events go to the
 * daemon as XB_EV_WATCH messages, many per message; the kernel's queue is
 * bounded (max_queued_events) and its IN_Q_OVERFLOW becomes the OVERFLOW
 * flag, so a flood costs init one bounded read per watch per loop turn. The
 * first reply says whether the watch exists (ERRNO); END says its root is
 * gone. Watches are added as the request's fsuid, so a directory the user
 * cannot read cannot be watched. While init waits alone for a next daemon
 * its watches are not read: their events wait in the kernel's queue (as
 * bounded), and what a next daemon did not take back (a stream's watch)
 * is freed when it attaches. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "init.h"

#define MASK (IN_CREATE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF)
#define DEPTH_MAX 32

struct wdir {
        int wd;
        char *rel;            /* relative to the root; "" for the root itself */
};

struct watch {
        uint32_t tag;         /* 0: free */
        int fd;
        bool recursive;
        uint32_t uid, gid;
        char root[PATH_MAX];
        struct wdir *dirs;
        size_t ndirs;
};

static struct watch watches[XB_WATCHES_MAX];
static uint8_t txbuf[XB_MSG_MAX];

static bool
become(uint32_t uid, uint32_t gid)
{
        setfsgid(gid);
        setfsuid(uid);
        return (uint32_t)setfsuid(uid) == uid && (uint32_t)setfsgid(gid) == gid;
}

static void
restore(void)
{
        if (!become(0, 0))
                _exit(74);
}

static struct wdir *
find_wd(struct watch *w, int wd)
{
        for (size_t i = 0; i < w->ndirs; i++)
                if (w->dirs[i].wd == wd)
                        return &w->dirs[i];
        return NULL;
}

static void
drop_dir(struct watch *w, struct wdir *d)
{
        free(d->rel);
        *d = w->dirs[--w->ndirs];
}

/* Watch rel (under root) and, for a recursive watch, what is under it. */
static int
add_tree(struct watch *w, const char *rel, int depth)
{
        char path[PATH_MAX];
        struct wdir *d;
        DIR *dir;
        struct dirent *de;
        int wd;

        if (w->ndirs >= XB_WATCH_DIRS_MAX || depth > DEPTH_MAX)
                return -ENOSPC;
        if ((size_t)snprintf(path, sizeof(path), "%s%s%s", w->root, *rel ? "/" : "", rel) >= sizeof(path))
                return -ENAMETOOLONG;
        wd = inotify_add_watch(w->fd, path, MASK | IN_ONLYDIR | (*rel ? IN_DONT_FOLLOW : 0));
        if (wd < 0)
                return -errno;
        if (!(d = find_wd(w, wd))) {
                struct wdir *n = realloc(w->dirs, (w->ndirs + 1) * sizeof(*n));
                char *r = strdup(rel);

                if (!n || !r) {
                        free(r);
                        if (n)
                                w->dirs = n;
                        inotify_rm_watch(w->fd, wd);
                        return -ENOMEM;
                }
                w->dirs = n;
                w->dirs[w->ndirs++] = (struct wdir){ .wd = wd, .rel = r };
        }
        if (!w->recursive)
                return 0;
        dir = opendir(path);
        if (!dir)
                return 0;
        while ((de = readdir(dir))) {
                char sub[PATH_MAX];

                if (de->d_type != DT_DIR || !strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                        continue;
                if ((size_t)snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", de->d_name) >= sizeof(sub))
                        continue;
                if (add_tree(w, sub, depth + 1) == -ENOSPC)
                        break;
        }
        closedir(dir);
        return 0;
}

/* Forget the watches of rel and everything under it (moved away). */
static void
drop_tree(struct watch *w, const char *rel)
{
        size_t n = strlen(rel);

        for (size_t i = 0; i < w->ndirs;) {
                const char *r = w->dirs[i].rel;

                if (*r && !strncmp(r, rel, n) && (r[n] == '\0' || r[n] == '/')) {
                        inotify_rm_watch(w->fd, w->dirs[i].wd);
                        drop_dir(w, &w->dirs[i]);
                } else
                        i++;
        }
}

static void
free_watch(struct watch *w)
{
        /* What a daemon left with it for the next one (init_keep.c) goes too. */
        xb_init_unhold_tag(w->tag);
        for (size_t i = 0; i < w->ndirs; i++)
                free(w->dirs[i].rel);
        free(w->dirs);
        close(w->fd);
        *w = (struct watch){ .fd = -1 };
}

static void
reply(uint32_t tag, int errnum, uint64_t flags)
{
        uint8_t buf[64];
        struct xb_msgw wr;

        xb_msgw_init(&wr, buf, sizeof(buf), XB_EV_WATCH, tag);
        xb_msgw_u64(&wr, XB_K_ERRNO, (uint64_t)errnum);
        if (flags)
                xb_msgw_u64(&wr, XB_K_FLAGS, flags);
        xb_init_send(&wr, NULL, 0);
}

void
xb_init_watch(const struct xb_msgr *r)
{
        uint64_t flags = 0, uid, gid;
        const char *path;
        size_t len;
        struct watch *w = NULL;
        int e;

        if (xb_msgr_str(r, XB_K_PATH, &path, &len) < 0 || len == 0 || len >= PATH_MAX || path[0] != '/' ||
            xb_msgr_u64(r, XB_K_UID, &uid) < 0 || xb_msgr_u64(r, XB_K_GID, &gid) < 0 || uid > 65535 ||
            gid > 65535 || r->tag == 0) {
                reply(r->tag, EINVAL, 0);
                return;
        }
        xb_msgr_u64(r, XB_K_FLAGS, &flags);
        for (size_t i = 0; i < XB_WATCHES_MAX && !w; i++)
                if (!watches[i].tag)
                        w = &watches[i];
        if (!w) {
                reply(r->tag, EMFILE, 0);
                return;
        }
        *w = (struct watch){ .tag = r->tag, .recursive = flags & XB_WATCH_RECURSIVE, .uid = (uint32_t)uid,
                             .gid = (uint32_t)gid };
        memcpy(w->root, path, len);
        w->root[len] = '\0';
        while (len > 1 && w->root[len - 1] == '/')
                w->root[--len] = '\0';
        w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (w->fd < 0) {
                e = errno;
                *w = (struct watch){ .fd = -1 };
                reply(r->tag, e, 0);
                return;
        }
        if (!become(w->uid, w->gid))
                e = -EPERM;
        else
                e = add_tree(w, "", 0);
        restore();
        if (e < 0 && e != -ENOSPC) {
                free_watch(w);
                reply(r->tag, -e, 0);
                return;
        }
        reply(r->tag, 0, 0);
}

void
xb_init_unwatch(const struct xb_msgr *r)
{
        uint64_t target;

        if (xb_msgr_u64(r, XB_K_TARGET, &target) < 0 || target == 0 || target > UINT32_MAX)
                return;
        for (size_t i = 0; i < XB_WATCHES_MAX; i++)
                if (watches[i].tag == (uint32_t)target)
                        free_watch(&watches[i]);
}

size_t
xb_init_watch_fds(struct pollfd *pfd, size_t max, int *idx)
{
        size_t n = 0;

        for (size_t i = 0; i < XB_WATCHES_MAX && n < max; i++)
                if (watches[i].tag) {
                        pfd[n] = (struct pollfd){ .fd = watches[i].fd, .events = POLLIN };
                        idx[n++] = (int)i;
                }
        return n;
}

static void
put_event(struct xb_msgw *m, uint32_t tag, uint32_t type, const char *rel, const char *name, uint64_t *flags)
{
        uint8_t field[4 + PATH_MAX + NAME_MAX + 2];
        int n = snprintf((char *)field + 4, sizeof(field) - 4, "%s%s%s", rel, *rel && *name ? "/" : "", name);

        if (n < 0 || (size_t)n >= sizeof(field) - 4)
                return;
        memcpy(field, &type, 4);
        /* Room for the field and the flags: else send what we have first. */
        if (m->len + 8 + 4 + (size_t)n + 4 + 32 > XB_MSG_MAX) {
                if (*flags)
                        xb_msgw_u64(m, XB_K_FLAGS, *flags);
                xb_init_send(m, NULL, 0);
                *flags = 0;
                xb_msgw_init(m, txbuf, sizeof(txbuf), XB_EV_WATCH, tag);
        }
        xb_msgw_put(m, XB_K_WEVENT, field, 4 + (size_t)n);
}

void
xb_init_watch_read(int i)
{
        struct watch *w = &watches[i];
        char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
        struct xb_msgw m;
        uint64_t flags = 0;
        bool end = false, any = false;
        ssize_t n;

        if (!w->tag)
                return;
        n = read(w->fd, buf, sizeof(buf));
        if (n <= 0)
                return;
        xb_msgw_init(&m, txbuf, sizeof(txbuf), XB_EV_WATCH, w->tag);
        for (char *p = buf; p < buf + n;) {
                struct inotify_event *ev = (struct inotify_event *)p;
                struct wdir *d = find_wd(w, ev->wd);
                const char *name = ev->len ? ev->name : "";
                uint32_t type = 0;

                p += sizeof(*ev) + ev->len;
                if (ev->mask & IN_Q_OVERFLOW) {
                        flags |= XB_WATCH_OVERFLOW;
                        any = true;
                        continue;
                }
                if (!d)
                        continue;
                if (ev->mask & IN_IGNORED) {
                        if (!*d->rel)
                                end = true;
                        drop_dir(w, d);
                        continue;
                }
                if (ev->mask & IN_DELETE_SELF) {
                        if (!*d->rel)
                                put_event(&m, w->tag, XB_WEV_REMOVE, "", "", &flags);
                        any = true;
                        continue;
                }
                if (ev->mask & (IN_CREATE | IN_MOVED_TO))
                        type = XB_WEV_CREATE;   /* a move's new name is a creation, as fsnotify has it */
                else if (ev->mask & IN_MODIFY)
                        type = XB_WEV_WRITE;
                else if (ev->mask & IN_DELETE)
                        type = XB_WEV_REMOVE;
                else if (ev->mask & IN_MOVED_FROM)
                        type = XB_WEV_RENAME;
                else if (ev->mask & IN_ATTRIB)
                        type = XB_WEV_CHMOD;
                if (!type)
                        continue;
                put_event(&m, w->tag, type, d->rel, name, &flags);
                any = true;
                if (w->recursive && (ev->mask & IN_ISDIR) && (ev->mask & (IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE))) {
                        char sub[PATH_MAX];

                        /* d may move as dirs change: copy its path first. */
                        if ((size_t)snprintf(sub, sizeof(sub), "%s%s%s", d->rel, *d->rel ? "/" : "", name) >=
                            sizeof(sub))
                                continue;
                        if (ev->mask & IN_MOVED_FROM)
                                drop_tree(w, sub);
                        else if (become(w->uid, w->gid)) {
                                add_tree(w, sub, 1);
                                restore();
                        } else
                                restore();
                }
        }
        if (end)
                flags |= XB_WATCH_END;
        if (any || flags) {
                if (flags)
                        xb_msgw_u64(&m, XB_K_FLAGS, flags);
                xb_init_send(&m, NULL, 0);
        }
        if (end)
                free_watch(w);
}

uint32_t
xb_init_watch_max_tag(void)
{
        uint32_t m = 0;

        for (size_t i = 0; i < XB_WATCHES_MAX; i++)
                if (watches[i].tag > m)
                        m = watches[i].tag;
        return m;
}

bool
xb_init_watch_live(uint32_t tag)
{
        for (size_t i = 0; i < XB_WATCHES_MAX && tag; i++)
                if (watches[i].tag == tag)
                        return true;
        return false;
}

void
xb_init_watch_keep_only(bool (*kept)(uint32_t tag))
{
        for (size_t i = 0; i < XB_WATCHES_MAX; i++)
                if (watches[i].tag && !kept(watches[i].tag))
                        free_watch(&watches[i]);
}
