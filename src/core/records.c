/* What of the registry outlives the daemon: each registered sandbox's
 * record, state_dir/sandboxes/<id>.json (written atomically: temp, fsync,
 * rename; removed when the sandbox ends), and the tombstones, appended to
 * state_dir/tombs.log (one JSON object a line; compacted at start and when
 * it doubles the ring).
 *
 * A record found at start is a sandbox of a daemon that died without
 * ending it. An armed one (adopt.c, --adopt-grace) may be alive still and
 * is re-adopted; any other is reaped (its cgroup and writable layer go
 * with the stale-cgroup and layer-store sweeps) and becomes a tombstone, so
 * its clients hear 410 and why, not a bare 404. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "core/core.h"
#include "core/sessions.h"

#define RECORDS_DIR "sandboxes"
#define TOMBS_LOG "tombs.log"
#define REAPED_WHY "the daemon restarted and the sandbox did not survive it; create a new sandbox"

/* name in dirfd, atomically: a reader sees the old file or the whole new
 * one. sync: fdatasync before the rename, so that a host crash keeps it
 * too (the tombstones' compacted log, which holds them all); a record
 * skips it (see xb_record_save). */
static int
write_atomic(int dirfd, const char *name, const char *data, size_t len, bool sync)
{
        char tmp[128];
        _cleanup_close_ int fd = -EBADF;
        size_t off = 0;

        snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        while (off < len) {
                ssize_t n = write(fd, data + off, len - off);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        int e = n < 0 ? errno : EIO;

                        unlinkat(dirfd, tmp, 0);
                        return -e;
                }
                off += (size_t)n;
        }
        if ((sync && fdatasync(fd) < 0) || renameat(dirfd, tmp, dirfd, name) < 0) {
                int e = errno;

                unlinkat(dirfd, tmp, 0);
                return -e;
        }
        return 0;
}

static json_t *
tomb_json(const struct xb_tomb *t, uint64_t at_unix_ms)
{
        return json_pack("{s:s,s:i,s:i,s:I,s:s}", "id", t->id, "tenant", t->tenant, "end", t->end, "at_ms",
                         (json_int_t)at_unix_ms, "why", t->why);
}

/* The ring as the log's whole text, oldest first. */
static int
tombs_compact(struct xb_core *s)
{
        uint64_t now = xb_now_ms(), unow = xb_unix_ms();
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        int r;

        if (!f)
                return -ENOMEM;
        for (unsigned k = 0; k < XB_TOMBS_MAX; k++) {
                const struct xb_tomb *t = &s->tombs[(s->tomb_next + k) % XB_TOMBS_MAX];
                json_t *j;

                if (!t->ended_ms || now - t->ended_ms > XB_TOMB_KEEP_MS)
                        continue;
                j = tomb_json(t, unow - (now - t->ended_ms));
                if (j && json_dumpf(j, f, JSON_COMPACT) == 0)
                        fputc('\n', f);
                json_decref(j);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        r = write_atomic(s->state_fd, TOMBS_LOG, text ? text : "", len, true);
        if (r < 0)
                return r;
        s->tomb_lines = 0;
        return 0;
}

void
xb_tomb_persist(struct xb_core *s, const struct xb_tomb *t)
{
        _cleanup_free_ char *line = NULL;
        json_t *j;
        int fd;

        if (!s->records_on)
                return;
        if (++s->tomb_lines > 2 * XB_TOMBS_MAX) {
                if (tombs_compact(s) < 0)
                        xb_warn("cannot rewrite %s/" TOMBS_LOG ": %s", s->o.state_dir, strerror(errno));
                return;   /* the compacted ring has t already */
        }
        j = tomb_json(t, xb_unix_ms());
        line = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        if (!line)
                return;
        /* No fsync: what a SIGKILL of the daemon leaves in the page cache
         * is read back; a host crash may lose the last tombstones only. */
        fd = openat(s->state_fd, TOMBS_LOG, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return;
        {
                size_t n = strlen(line);

                line[n] = '\n';   /* json_dumps's NUL: one write, one line */
                if (write(fd, line, n + 1) != (ssize_t)(n + 1))
                        xb_debug("tombstone of %s not persisted", t->id);
        }
        close(fd);
}

static void
tombs_load(struct xb_core *s)
{
        _cleanup_close_ int fd = openat(s->state_fd, TOMBS_LOG, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        _cleanup_fclose_ FILE *f = NULL;
        uint64_t now = xb_now_ms(), unow = xb_unix_ms();
        char line[1024];

        if (fd < 0 || !(f = fdopen(fd, "r")))
                return;
        fd = -EBADF;
        while (fgets(line, sizeof(line), f)) {
                json_t *j = json_loads(line, 0, NULL);
                const char *id = NULL, *why = NULL;
                int tenant = 0, end = 0;
                json_int_t at = 0;

                if (j &&
                    json_unpack(j, "{s:s,s:i,s:i,s:I,s:s}", "id", &id, "tenant", &tenant, "end", &end, "at_ms", &at,
                                "why", &why) == 0 &&
                    strlen(id) == XB_SANDBOX_ID_LEN && at > 0 && (uint64_t)at <= unow &&
                    unow - (uint64_t)at <= XB_TOMB_KEEP_MS) {
                        struct xb_tomb *t = &s->tombs[s->tomb_next];
                        uint64_t age = unow - (uint64_t)at;

                        s->tomb_next = (s->tomb_next + 1) % XB_TOMBS_MAX;
                        memcpy(t->id, id, sizeof(t->id));
                        t->tenant = tenant;
                        t->end = end;
                        t->ended_ms = now > age ? now - age : 1;
                        snprintf(t->why, sizeof(t->why), "%s", why);
                }
                json_decref(j);
        }
}

/* One record of a daemon that died: a tombstone, and the record goes. */
bool
xb__record_reap(struct xb_core *s, const char *name)
{
        _cleanup_close_ int fd = openat(s->records_dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        json_t *j = fd >= 0 ? json_loadfd(fd, 0, NULL) : NULL;
        const char *id = NULL;
        int tenant = 0;
        bool reaped = false;

        if (j && json_unpack(j, "{s:s,s:i}", "id", &id, "tenant", &tenant) == 0 && strlen(id) == XB_SANDBOX_ID_LEN &&
            !strncmp(name, id, XB_SANDBOX_ID_LEN)) {
                struct xb_tomb *t = &s->tombs[s->tomb_next];

                s->tomb_next = (s->tomb_next + 1) % XB_TOMBS_MAX;
                memcpy(t->id, id, sizeof(t->id));
                t->tenant = tenant;
                t->end = XB_SBX_SHUTDOWN;
                t->ended_ms = xb_now_ms();
                snprintf(t->why, sizeof(t->why), "%s", REAPED_WHY);
                /* Its cgroup, should its uid slot be taken again meanwhile. */
                if (s->eng && json_is_integer(json_object_get(j, "slot")) &&
                    json_integer_value(json_object_get(j, "slot")) >= 0)
                        xb_engine_reap_slot(s->eng, (uint32_t)json_integer_value(json_object_get(j, "slot")));
                /* An armed one's layer was spared by the store's sweep. */
                if (s->eng && s->eng->store)
                        xb_store_delete(s->eng->store, "sbx", id, NULL);
                {
                        char sock[64];

                        snprintf(sock, sizeof(sock), "keep/%s.sock", id);
                        unlinkat(s->state_fd, sock, 0);
                }
                xb_info("sandbox %s (of an earlier daemon) did not survive the restart: reaped", id);
                reaped = true;
        }
        json_decref(j);
        unlinkat(s->records_dir_fd, name, 0);
        return reaped;
}

int
xb_records_open(struct xb_core *s)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd, e;

        s->records_dir_fd = s->state_fd = -1;
        if (!s->o.state_dir)
                return 0;
        s->state_fd = open(s->o.state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->state_fd < 0)
                return -errno;
        if (mkdirat(s->state_fd, RECORDS_DIR, 0700) < 0 && errno != EEXIST)
                goto fail;
        s->records_dir_fd = openat(s->state_fd, RECORDS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (s->records_dir_fd < 0 || fchmod(s->records_dir_fd, 0700) < 0)
                goto fail;
        s->records_on = true;
        tombs_load(s);
        fd = dup(s->records_dir_fd);
        if (fd >= 0 && (d = fdopendir(fd))) {
                while ((de = readdir(d))) {
                        size_t n = strlen(de->d_name);

                        if (de->d_name[0] == '.') {
                                /* A temp file of a write the death cut short. */
                                if (n > 4 && !strcmp(de->d_name + n - 4, ".tmp"))
                                        unlinkat(s->records_dir_fd, de->d_name, 0);
                                continue;
                        }
                        if (n != XB_SANDBOX_ID_LEN + 5 || strcmp(de->d_name + XB_SANDBOX_ID_LEN, ".json"))
                                continue;
                        /* Armed to outlive its daemon: adopt.c tries it. */
                        if (xb_adopt_armed_id(s, de->d_name)) {
                                if (!s->adopt_todo)
                                        s->adopt_todo = json_array();
                                json_array_append_new(s->adopt_todo, json_stringn(de->d_name, XB_SANDBOX_ID_LEN));
                                continue;
                        }
                        if (xb__record_reap(s, de->d_name))
                                s->m.sandboxes_reaped++;
                }
        } else if (fd >= 0)
                close(fd);
        if (s->m.sandboxes_reaped)
                xb_warn("%llu sandboxes of an earlier daemon did not survive its end; their clients get 410",
                        (unsigned long long)s->m.sandboxes_reaped);
        if (tombs_compact(s) < 0)
                xb_warn("cannot rewrite %s/" TOMBS_LOG ": %s", s->o.state_dir, strerror(errno));
        return 0;
fail:
        e = errno;
        if (s->records_dir_fd >= 0)
                close(s->records_dir_fd);
        close(s->state_fd);
        s->records_dir_fd = s->state_fd = -1;
        return -e;
}

void
xb_records_close(struct xb_core *s)
{
        if (!s->records_on)
                return;
        s->records_on = false;
        if (s->records_dir_fd >= 0)
                close(s->records_dir_fd);
        if (s->state_fd >= 0)
                close(s->state_fd);
        s->records_dir_fd = s->state_fd = -1;
}

void
xb_record_save(struct xb_sbx *x)
{
        struct xb_core *s = x->core;
        char name[XB_SANDBOX_ID_LEN + 8];
        _cleanup_free_ char *text = NULL;
        json_t *j, *v;
        int r;

        if (!s->records_on || x->pooled)
                return;
        j = xb_sbx_json(x);
        if (!j)
                return;
        json_object_set_new(j, "version", json_integer(1));
        json_object_set_new(j, "tenant", json_integer(x->tenant));
        json_object_set_new(j, "uid", json_integer(x->uid));
        if (x->sb)
                json_object_set_new(j, "slot", json_integer(x->sb->uid_slot));
        if (x->armed && x->sb) {
                json_t *env = json_array();

                for (char **e = x->env; e && *e; e++)
                        json_array_append_new(env, json_string(*e));
                json_object_set_new(j, "keep", json_pack("{s:s,s:i,s:o,s:b}", "secret", x->keep_secret, "pid",
                                                         (int)x->sb->pid, "env", env, "pause_auto", x->pause_auto));
                if (x->net)
                        json_object_set_new(j, "network", xb_netpol_json(xb_net_policy(x->net)));
                /* Names and placeholders, never values: the tenant posts
                 * those again (secrets.c). */
                if (x->net && (v = xb_sbx_secrets_record(x)))
                        json_object_set_new(j, "secrets", v);
                if (x->cwd)
                        json_object_set_new(j, "cwd", json_string(x->cwd));
                json_object_set_new(j, "sessions", xb_session_record_json(x));
        }
        if (x->lowers) {
                json_t *a = json_array();

                for (char **l = x->lowers; *l; l++)
                        json_array_append_new(a, json_string(*l));
                json_object_set_new(j, "layers", a);
        }
        text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(j);
        if (!text)
                return;
        snprintf(name, sizeof(name), "%s.json", x->id);
        /* No fsync, as for a tombstone: a SIGKILL of the daemon leaves the
         * page cache, which the next start reads; a host crash, which no
         * sandbox survives, may lose the newest records (their clients get
         * 404, not 410). A sync here cost every create 1-10 ms of the
         * loop under disk load. */
        /* It may hold the secret and env: root only (write_atomic makes it 0600). */
        if ((r = write_atomic(s->records_dir_fd, name, text, strlen(text), false)) < 0)
                xb_warn("sandbox %s: record not persisted: %s", x->id, strerror(-r));
}

void
xb_record_drop(struct xb_sbx *x)
{
        char name[XB_SANDBOX_ID_LEN + 8];

        if (!x->core->records_on)
                return;
        snprintf(name, sizeof(name), "%s.json", x->id);
        unlinkat(x->core->records_dir_fd, name, 0);
        if (x->armed) {
                char sock[64];

                snprintf(sock, sizeof(sock), "keep/%s.sock", x->id);
                unlinkat(x->core->state_fd, sock, 0);
        }
}
