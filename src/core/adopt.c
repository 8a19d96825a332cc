/* Sandboxes that outlive the daemon (issue 12, section 4; docs/restart.md).
 *
 * Theory of operation. A claimed sandbox is armed once it is ready (with
 * --adopt-grace above 0): a listening socket at state_dir/keep/<id>.sock
 * (directory 0700, socket 0600; out of every sandbox's mount namespace),
 * a random secret, its uid slot's lock moved to an open file description
 * of its own, and dups of its egress sockets go to its init
 * (xb_sandbox_arm); the record gets the secret, init's pid, the env and
 * the network policy. Each background process's output pipes are kept by
 * init too (HOLD, with a note: what the process list shows of it).
 *
 * At start the records of armed sandboxes are set aside by records.c and
 * tried here: connect, prove the secret, take back the slot's lock and
 * the egress sockets, rebuild the sandbox from its record and its
 * processes from init's HELD messages; what init queued while alone (exits)
 * follows on the socket. Anything that fails is killed and reaped as an
 * unarmed record is. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/log.h"
#include "core/audit.h"
#include "core/proc_int.h"
#include "core/sbx_int.h"
#include "core/session_int.h"
#include "core/templates.h"
#include "net/policy.h"
#include "proc/env.h"
#include "proto/wire.h"

#define KEEP_DIR "keep"

/* proc_adopt.c, session_adopt.c */
int xb__proc_adopt(struct xb_sbx *x, uint32_t tag, pid_t pid, json_t *note, int *fds, size_t nfds);
int xb__session_adopt(struct xb_sbx *x, uint32_t tag, pid_t pid, json_t *note, int *fds, size_t nfds);
int xb__watcher_adopt(struct xb_sbx *x, uint32_t tag, json_t *note);
void xb__sessions_lost(struct xb_sbx *x, json_t *listed);

static void
keep_path(const struct xb_core *s, const char *id, char *buf, size_t n)
{
        snprintf(buf, n, "%s/" KEEP_DIR "/%.*s.sock", s->o.state_dir, XB_SANDBOX_ID_LEN, id);
}

bool
xb_adopt_armed_id(struct xb_core *s, const char *id)
{
        char path[4200];
        struct stat st;

        if (!s->o.state_dir || strlen(id) < XB_SANDBOX_ID_LEN)
                return false;
        keep_path(s, id, path, sizeof(path));
        return lstat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

void
xb_adopt_arm(struct xb_sbx *x)
{
        struct xb_core *s = x->core;
        struct xb_err err = { 0 };
        unsigned char raw[XB_KEEP_SECRET_LEN / 2];
        char path[4200], secret[XB_KEEP_SECRET_LEN + 1];
        int r;

        /* A sealed install builder (instcache.c) must not come back as an
         * ordinary sandbox of its tenant: unarmed, a restart reaps it. */
        if (x->armed || !s->o.adopt_grace_ms || !s->records_on || x->pooled || x->sealed || !x->created_unix_ms ||
            !x->sb || x->state != XB_SBX_READY)
                return;
        if ((mkdirat(s->state_fd, KEEP_DIR, 0700) < 0 && errno != EEXIST) ||
            getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
                xb_warn("sandbox %s will not outlive the daemon: %s", x->id, strerror(errno));
                goto out;
        }
        {
                _cleanup_close_ int d = openat(s->state_fd, KEEP_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);

                if (d < 0 || fchmod(d, 0700) < 0) {
                        xb_warn("sandbox %s will not outlive the daemon: %s/" KEEP_DIR ": %s", x->id,
                                s->o.state_dir, strerror(errno));
                        goto out;
                }
        }
        for (size_t i = 0; i < sizeof(raw); i++)
                snprintf(secret + 2 * i, 3, "%02x", raw[i]);
        keep_path(s, x->id, path, sizeof(path));
        if ((r = xb_sandbox_arm(x->sb, path, secret, s->o.adopt_grace_ms, x->net_keep, x->nnet_keep, &err)) < 0) {
                xb_warn("sandbox %s will not outlive the daemon: %s", x->id, err.msg);
                goto out;
        }
        memcpy(x->keep_secret, secret, sizeof(secret));
        x->armed = true;
        xb_record_save(x);
        /* A warm session claimed with the sandbox, started before. */
        for (struct xb_session *ss = x->sessions; ss; ss = ss->next)
                xb_adopt_hold_session(ss);
out:
        while (x->nnet_keep)
                close(x->net_keep[--x->nnet_keep]);
}

static void
send_hold(struct xb_sbx *x, uint32_t tag, pid_t pid, const char *text, const int *fds, size_t nfds)
{
        uint8_t buf[XB_HOLD_NOTE_MAX + 128];
        struct xb_msgw w;

        xb_msgw_init(&w, buf, sizeof(buf), XB_REQ_HOLD, tag);
        xb_msgw_u64(&w, XB_K_PID, (uint64_t)pid);
        xb_msgw_str(&w, XB_K_DATA, text);
        if (w.overflow || xb_msg_send(x->sb->sock, w.buf, w.len, fds, nfds) < 0)
                xb_debug("sandbox %s: process %d will not outlive the daemon", x->id, (int)pid);
}

static void
send_unhold(struct xb_sbx *x, uint32_t tag)
{
        uint8_t buf[64];
        struct xb_msgw w;

        if (!x->armed || !x->sb || x->state >= XB_SBX_DYING || !tag)
                return;
        xb_msgw_init(&w, buf, sizeof(buf), XB_REQ_UNHOLD, 0);
        xb_msgw_u64(&w, XB_K_TARGET, tag);
        xb_msg_send(x->sb->sock, w.buf, w.len, NULL, 0);
}

void
xb_adopt_hold_session(struct xb_session *ss)
{
        struct xb_sbx *x = ss->sbx;
        _cleanup_free_ char *text = NULL;
        int fds[3] = { ss->in_fd, ss->out_fd, ss->err_fd };
        json_t *note;

        /* An unclaimed warm session is nobody's yet: it is not kept. */
        if (!x->armed || !x->sb || ss->pid <= 0 || ss->in_fd < 0 || ss->out_fd < 0 || ss->err_fd < 0 ||
            (ss->warm && !ss->claimed) || ss->state == SS_DEAD || ss->state == SS_STARTING)
                return;
        note = json_pack("{s:s,s:s,s:s,s:i}", "session", ss->id, "language", ss->language, "mode", ss->mode,
                         "execution_count", ss->exec_count);
        text = note ? json_dumps(note, JSON_COMPACT) : NULL;
        json_decref(note);
        if (text)
                send_hold(x, ss->tag, ss->pid, text, fds, 3);
}

void
xb_adopt_hold_watch(struct xb_sbx *x, uint32_t tag, json_t *note)
{
        _cleanup_free_ char *text = NULL;

        if (!x->armed || !x->sb || x->state >= XB_SBX_DYING || !(text = json_dumps(note, JSON_COMPACT)) ||
            strlen(text) > XB_HOLD_NOTE_MAX)
                return;
        send_hold(x, tag, 0, text, NULL, 0);
}

void
xb_adopt_unhold_session(struct xb_session *ss)
{
        send_unhold(ss->sbx, ss->tag);
}

void
xb_adopt_hold(struct xb_proc *p)
{
        struct xb_sbx *x = p->sbx;
        _cleanup_free_ char *text = NULL;
        int fds[2];
        size_t nfds = 0;
        json_t *note;

        /* A terminal's one fd is its master (init keeps a dup of it, so the
         * pty stays open and buffers while no daemon reads it). */
        if (!x->armed || !x->sb || p->out_fd < 0 || (!p->tty && p->err_fd < 0))
                return;
        note = json_pack("{s:s,s:O,s:O,s:s?,s:s?,s:I,s:I}", "cmd", p->cmd, "argv", p->argv ? p->argv : json_null(),
                         "env", p->env ? p->env : json_null(), "cwd", p->cwd, "tag", p->client_tag, "limit",
                         (json_int_t)p->out.limit, "age_ms", (json_int_t)(xb_now_ms() - p->start_ms));
        /* The next daemon goes on with its whole streams' files and its timeout. */
        if (note && p->tty) {
                json_object_set_new(note, "pty", json_pack("{s:i,s:i}", "rows", p->rows, "cols", p->cols));
                if (p->sp_out.path && !p->sp_out.failed)
                        json_object_set_new(note, "spill", json_pack("[s]", p->sp_out.path));
        } else if (note && p->sp_out.path && p->sp_err.path && !p->sp_out.failed && !p->sp_err.failed)
                json_object_set_new(note, "spill", json_pack("[s,s]", p->sp_out.path, p->sp_err.path));
        /* Its start on the wall clock: age_ms alone says nothing of the
         * time between this note (written at the spawn) and the next daemon. */
        if (note)
                json_object_set_new(note, "started_at_unix_ms",
                                    json_integer((json_int_t)(xb_unix_ms() - (xb_now_ms() - p->start_ms))));
        if (note && p->timeout_ms)
                json_object_set_new(note, "timeout_at_unix_ms",
                                    json_integer((json_int_t)(xb_unix_ms() + p->timeout_ms -
                                                              (xb_now_ms() - p->start_ms))));
        text = note ? json_dumps(note, JSON_COMPACT) : NULL;
        if (text && strlen(text) > XB_HOLD_NOTE_MAX) {
                /* Too long to keep whole: the command line stands for it. */
                json_object_set_new(note, "argv", json_null());
                json_object_set_new(note, "env", json_null());
                free(text);
                text = json_dumps(note, JSON_COMPACT);
        }
        json_decref(note);
        if (!text || strlen(text) > XB_HOLD_NOTE_MAX)
                return;
        fds[nfds++] = p->out_fd;
        if (!p->tty)
                fds[nfds++] = p->err_fd;
        send_hold(x, p->tag, p->pid, text, fds, nfds);
}

void
xb_adopt_unhold(struct xb_proc *p)
{
        if (p->background && p->spawned)
                send_unhold(p->sbx, p->tag);
}

static char **
strv_of(json_t *a)
{
        char **v;
        size_t i, n = json_is_array(a) ? json_array_size(a) : 0;

        if (!n)
                return NULL;
        v = calloc(n + 1, sizeof(char *));
        for (i = 0; v && i < n; i++)
                if (!(v[i] = strdup(json_string_value(json_array_get(a, i)) ?: "")))
                        break;
        return v;
}

/* init's HELD messages: its processes. */
static int
read_held(struct xb_sbx *x, struct xb_err *err)
{
        struct xb_core *s = x->core;

        for (unsigned k = 0; k < 1024; k++) {
                int fds[XB_MSG_MAXFDS];
                size_t nfds = 0;
                ssize_t n = xb_msg_recv(x->sb->sock, s->rxbuf, XB_MSG_MAX, fds, &nfds, false);
                struct xb_msgr r;
                uint64_t flags = 0, pid = 0;
                const char *note;
                size_t len;
                json_t *j;

                if (n <= 0 || xb_msgr_init(&r, s->rxbuf, (size_t)n) < 0 || r.type != XB_EV_HELD) {
                        for (size_t i = 0; i < nfds; i++)
                                close(fds[i]);
                        return xb_err_msg(err, EPROTO, "its init's process table is torn");
                }
                if (xb_msgr_u64(&r, XB_K_FLAGS, &flags) == 0 && (flags & XB_HELD_END))
                        return 0;
                if (xb_msgr_u64(&r, XB_K_PID, &pid) < 0 || pid > 4194304 ||
                    xb_msgr_str(&r, XB_K_DATA, &note, &len) < 0 || nfds > 3 ||
                    !(j = json_loadb(note, len, 0, NULL))) {
                        for (size_t i = 0; i < nfds; i++)
                                close(fds[i]);
                        continue;   /* that one process is lost, not the sandbox */
                }
                /* A polled watcher: no pid, no fds (init holds its inotify). */
                if (json_is_string(json_object_get(j, "watcher"))) {
                        for (size_t i = 0; i < nfds; i++)
                                close(fds[i]);
                        if (nfds || xb__watcher_adopt(x, r.tag, j) < 0)
                                xb_warn("sandbox %s: watcher %s lost", x->id,
                                        json_string_value(json_object_get(j, "watcher")));
                } else if (pid < 2 || nfds < 1) {
                        for (size_t i = 0; i < nfds; i++)
                                close(fds[i]);
                } else if (json_is_string(json_object_get(j, "session"))) {
                        if (xb__session_adopt(x, r.tag, (pid_t)pid, j, fds, nfds) < 0)
                                xb_warn("sandbox %s: session %s lost", x->id,
                                        json_string_value(json_object_get(j, "session")));
                } else if (xb__proc_adopt(x, r.tag, (pid_t)pid, j, fds, nfds) < 0)
                        xb_warn("sandbox %s: process %d not re-adopted", x->id, (int)pid);
                json_decref(j);
        }
        return xb_err_msg(err, E2BIG, "its init holds too many processes");
}

static void
set_policy(struct xb_sbx *x, json_t *rec)
{
        struct xb_netpol *p = NULL;
        struct xb_err err = { 0 };
        json_t *v = json_object_get(rec, "network");

        /* A policy that does not parse back is the strictest one. */
        if (!v || xb_netpol_parse(v, &p, &err) < 0 || !p)
                p = xb_netpol_new(XB_NET_NONE);
        if (p) {
                xb_net_set_policy(x->net, p);
                xb_netpol_unref(p);
        }
}

static int
adopt_one(struct xb_core *s, const char *id, struct xb_err *err)
{
        char name[XB_SANDBOX_ID_LEN + 8], path[4200];
        _cleanup_close_ int fd = -EBADF;
        json_t *rec, *keep, *lim;
        struct xb_adopt_spec a = { .id = id };
        struct xb_sbx *x = NULL;
        int net[3], r;
        size_t nnet = 0;
        const char *secret = NULL, *user = NULL, *tname = NULL;
        int pid = 0, slot = -1, tenant = 0;
        json_int_t created = 0, timeout_s = 0;
        double cpus = 0;
        json_int_t mem = 0, pids = 0, disk = 0;

        snprintf(name, sizeof(name), "%s.json", id);
        fd = openat(s->records_dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        rec = fd >= 0 ? json_loadfd(fd, 0, NULL) : NULL;
        keep = json_object_get(rec, "keep");
        if (!rec || json_unpack(keep, "{s:s,s:i}", "secret", &secret, "pid", &pid) < 0 ||
            json_unpack(rec, "{s:i,s:i,s:o,s:I,s:I,s?s,s?s}", "tenant", &tenant, "slot", &slot, "limits", &lim,
                        "created_at_ms", &created, "timeout_s", &timeout_s, "user", &user, "template", &tname) < 0 ||
            json_unpack(lim, "{s:I,s:I,s:F,s:I}", "memory", &mem, "pids", &pids, "cpus", &cpus, "disk", &disk) < 0 ||
            strlen(secret) != XB_KEEP_SECRET_LEN || pid < 2 || slot < 0) {
                json_decref(rec);
                return xb_err_msg(err, EINVAL, "its record is torn");
        }
        keep_path(s, id, path, sizeof(path));
        a.path = path;
        a.secret = secret;
        a.pid = pid;
        a.slot = (uint32_t)slot;
        a.disk = (uint64_t)disk;
        a.limits = (struct xb_cgroup_limits){ .memory = (uint64_t)mem, .pids = (uint64_t)pids,
                                              .cpus_milli = (uint32_t)(cpus * 1000 + 0.5) };
        x = calloc(1, sizeof(*x));
        if (!x) {
                json_decref(rec);
                return xb_err_set(err, ENOMEM, "sandbox");
        }
        if ((r = xb_sandbox_adopt(s->eng, &a, net, &nnet, &x->sb, err)) < 0) {
                free(x);
                json_decref(rec);
                return r;
        }
        x->core = s;
        x->refs = 1;
        x->state = XB_SBX_READY;
        x->armed = true;
        /* New tags above every one init still uses (adopted ones go below). */
        x->next_tag = a.max_tag;
        memcpy(x->keep_secret, secret, XB_KEEP_SECRET_LEN + 1);
        memcpy(x->id, id, XB_SANDBOX_ID_LEN);
        x->tenant = tenant;
        x->limits = (struct xb_limits){ .memory = (uint64_t)mem, .pids = (uint64_t)pids,
                                        .cpus_milli = a.limits.cpus_milli, .disk = (uint64_t)disk };
        x->uid = user && !strcmp(user, "root") ? 0 : XB_USER_UID;
        x->created_unix_ms = (uint64_t)created;
        {
                uint64_t now = xb_unix_ms(), age = now > (uint64_t)created ? now - (uint64_t)created : 0;

                x->created_ms = xb_now_ms() > age ? xb_now_ms() - age : 1;
        }
        x->metadata = json_incref(json_object_get(rec, "metadata") ?: json_object());
        x->env = strv_of(json_object_get(keep, "env"));
        x->lowers = strv_of(json_object_get(rec, "layers"));
        if (json_is_string(json_object_get(rec, "cwd")))
                x->cwd = strdup(json_string_value(json_object_get(rec, "cwd")));
        x->auto_pause = json_is_true(json_object_get(rec, "auto_pause"));
        x->paused_ttl_ms = (uint64_t)json_integer_value(json_object_get(rec, "paused_ttl_s")) * 1000;
        if (!x->paused_ttl_ms)
                x->paused_ttl_ms = s->o.paused_ttl_ms ? s->o.paused_ttl_ms : XB_PAUSED_TTL_DEFAULT_MS;
        x->max_lifetime_ms = (uint64_t)json_integer_value(json_object_get(rec, "max_lifetime_s")) * 1000;
        if (!x->max_lifetime_ms)
                x->max_lifetime_ms = s->o.max_lifetime_ms ? s->o.max_lifetime_ms : XB_LIFETIME_MAX_DEFAULT_MS;
        if (tname) {
                struct xb_template *t = xb_template_find(s, tname, tenant);

                /* Its reference (and workdir); the layers stay the
                 * record's, which are what the sandbox has mounted. */
                if (t) {
                        char **mine = x->lowers;

                        x->lowers = NULL;
                        xb_template_attach(x, t);
                        if (mine) {
                                xb_strv_free(x->lowers);
                                x->lowers = mine;
                        }
                }
        }
        if (s->net && (x->net = xb_net_new(s->net, x->id))) {
                set_policy(x, rec);
                if (nnet == 3) {
                        if (xb_net_attach(x->net, net, err) < 0)
                                xb_warn("sandbox %s: %s", x->id, err->msg);
                        nnet = 0;
                } else
                        xb_warn("sandbox %s: its egress sockets did not come back; it has no network", x->id);
        }
        xb_sbx_secrets_restore(x, json_object_get(rec, "secrets"));
        while (nnet)
                close(net[--nnet]);
        if (xb__sbx_register(x) < 0) {
                r = xb_err_set(err, ENOMEM, "register the sandbox");
                json_decref(rec);
                goto fail;
        }
        {
                struct xb_tenant_metrics *tm = xb_metrics_tenant(&s->m, tenant);

                if (tm)
                        tm->sandboxes++;
        }
        x->fds_base = xb_fds_charge(x, XB_FDS_PER_SANDBOX_BASE, NULL) == 0;
        x->audit = xb_audit_open(s->audits, x->id, x->tenant);
        if ((r = read_held(x, err)) < 0) {
                json_decref(rec);
                xb_sbx_destroy(x, XB_SBX_SHUTDOWN, "the daemon restarted and could not re-adopt the sandbox");
                xb__sbx_adopt_watch(x);
                return r;
        }
        xb__sessions_lost(x, json_object_get(rec, "sessions"));
        {
                const char *st = json_string_value(json_object_get(rec, "state"));
                struct xb_err perr = { 0 };
                bool pause = st && !strcmp(st, "paused");
                bool pause_auto = json_is_true(json_object_get(keep, "pause_auto"));

                json_decref(rec);
                xb_audit_add(x->audit, "adopt", json_pack("{s:i,s:i}", "processes", (int)x->nprocs, "sessions",
                                                          (int)x->nsessions));
                xb__sbx_adopt_watch(x);
                xb_sbx_touch(x, timeout_s > 0 ? (uint64_t)timeout_s * 1000 : XB_TTL_DEFAULT_MS);
                /* Paused when the earlier daemon died: thawed to answer, paused again. */
                if (pause && xb_sbx_pause(x, pause_auto, &perr) < 0)
                        xb_warn("sandbox %s: not paused again: %s", x->id, perr.msg);
        }
        xb_record_save(x);
        s->m.sandboxes_adopted++;
        xb_info("sandbox %s (of an earlier daemon) re-adopted with %u processes", x->id, x->nprocs);
        return 0;
fail:
        xb_net_free(x->net);
        xb_template_release(x);
        xb_sandbox_destroy(x->sb);
        json_decref(x->metadata);
        for (char **e = x->env; e && *e; e++)
                free(*e);
        free(x->env);
        for (char **e = x->lowers; e && *e; e++)
                free(*e);
        free(x->lowers);
        free(x->cwd);
        free(x);
        return r;
}

/* It could not be adopted: if its init lives (in its slot's group), it
 * dies now, and the record is reaped. */
static void
give_up(struct xb_core *s, const char *id)
{
        char name[XB_SANDBOX_ID_LEN + 8];
        _cleanup_close_ int fd = -EBADF;
        json_t *rec;
        int pid = 0;

        snprintf(name, sizeof(name), "%s.json", id);
        fd = openat(s->records_dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        rec = fd >= 0 ? json_loadfd(fd, 0, NULL) : NULL;
        if (rec && json_unpack(rec, "{s:{s:i}}", "keep", "pid", &pid) == 0 && pid > 1) {
                int slot = (int)json_integer_value(json_object_get(rec, "slot"));
                char path[64], want[64];
                _cleanup_free_ char *text = NULL;
                int pfd = (int)syscall(SYS_pidfd_open, pid, 0);

                snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
                snprintf(want, sizeof(want), "-u%d\n", slot);
                if (pfd >= 0 && xb_read_file_at(AT_FDCWD, path, 1 << 16, &text, NULL) == 0 && strstr(text, want)) {
                        struct pollfd p = { .fd = pfd, .events = POLLIN };

                        syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
                        poll(&p, 1, 5000);
                }
                if (pfd >= 0)
                        close(pfd);
        }
        json_decref(rec);
        if (xb__record_reap(s, name))
                s->m.sandboxes_reaped++;
}

void
xb_adopt_all(struct xb_core *s)
{
        size_t i;
        json_t *v;
        unsigned ok = 0, failed = 0;

        json_array_foreach(s->adopt_todo, i, v) {
                const char *name = json_string_value(v);
                char id[XB_SANDBOX_ID_LEN + 1];
                struct xb_err err = { 0 };

                snprintf(id, sizeof(id), "%s", name);
                if (adopt_one(s, id, &err) == 0) {
                        ok++;
                        continue;
                }
                xb_warn("sandbox %s (of an earlier daemon) could not be re-adopted: %s", id, err.msg);
                give_up(s, id);
                failed++;
        }
        json_decref(s->adopt_todo);
        s->adopt_todo = NULL;
        if (ok || failed)
                xb_warn("%u sandboxes of an earlier daemon re-adopted, %u could not be (killed and reaped)", ok,
                        failed);
}

static void
close_io(struct xb_io *io, int *fd)
{
        xb_io_stop(io);
        if (*fd >= 0)
                close(*fd);
        *fd = -1;
}

/* Let go of x without ending it: nothing of ours reads its pipes or
 * talks to its init any more (init's EOF makes it wait for the next
 * daemon); its memory goes with our exit. */
static void
leave_one(struct xb_sbx *x, void *data)
{
        unsigned *n = data;

        if (!x->armed || x->state != XB_SBX_READY || !x->sb)
                return;
        /* A paused one stays frozen: its record says so, and the next
         * daemon thaws it to re-attach, then pauses it again. */
        xb__sbx_unlist(x);
        xb_timer_stop(&x->expiry);
        for (struct xb_proc *p = x->procs; p; p = p->next) {
                xb_timer_stop(&p->hard);
                xb_timer_stop(&p->soft);
                xb_timer_stop(&p->drain);
                close_io(&p->out_io, &p->out_fd);
                close_io(&p->err_io, &p->err_fd);
                close_io(&p->in_io, &p->in_fd);
                close_io(&p->tty_io, &p->tty_sock);
        }
        for (struct xb_session *ss = x->sessions; ss; ss = ss->next) {
                close_io(&ss->in_io, &ss->in_fd);
                close_io(&ss->out_io, &ss->out_fd);
                close_io(&ss->err_io, &ss->err_fd);
        }
        xb_net_free(x->net);
        x->net = NULL;
        close_io(&x->sock_io, &x->sb->sock);
        close_io(&x->pidfd_io, &x->sb->pidfd);
        x->state = XB_SBX_DYING;   /* nothing may start on it now */
        (*n)++;
}

unsigned
xb_core_leave(struct xb_core *s)
{
        unsigned n = 0;

        if (!s || !s->o.adopt_grace_ms)
                return 0;
        xb_sbx_foreach(s, leave_one, &n);
        s->nleft += n;
        return n;
}
