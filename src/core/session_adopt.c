/* A code session of an earlier daemon's sandbox, rebuilt from what init
 * kept of its driver (adopt.c): its tag, pid, the daemon's ends of its
 * three pipes and the note (id, language, mode). The driver process is
 * the same, so its state (variables, imports) is as it was; a cell that
 * was running at the restart ends unanswered (its late output is
 * dropped), and the next cell waits for it in the driver. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "core/session_int.h"
#include "core/sessions.h"

int xb__session_adopt(struct xb_sbx *x, uint32_t tag, pid_t pid, json_t *note, int *fds, size_t nfds);
void xb__sessions_lost(struct xb_sbx *x, json_t *listed);

int
xb__session_adopt(struct xb_sbx *x, uint32_t tag, pid_t pid, json_t *note, int *fds, size_t nfds)
{
        const char *id = json_string_value(json_object_get(note, "session"));
        const char *lang = json_string_value(json_object_get(note, "language"));
        const char *mode = json_string_value(json_object_get(note, "mode"));
        struct xb_session *ss = NULL;

        if (nfds != 3 || !id || strlen(id) != 16 || !lang || strlen(lang) > 60 || !mode ||
            strcmp(mode, xb__driver_mode(lang)) || x->nsessions >= XB_SESSIONS_PER_SANDBOX ||
            !(ss = calloc(1, sizeof(*ss))))
                goto fail;
        ss->sbx = x;
        ss->inbuf.max = 64u << 20;
        ss->line.max = XB__LINE_MAX_BYTES + 65536;
        ss->errtail.max = XB__STDERR_TAIL + 1;
        memcpy(ss->id, id, 17);
        snprintf(ss->language, sizeof(ss->language), "%s", lang);
        snprintf(ss->mode, sizeof(ss->mode), "%s", mode);
        ss->tag = xb_sbx_pending_add_at(x, &xb__session_pending, ss, tag);
        if (!ss->tag)
                goto fail;
        ss->pid = pid;
        ss->in_fd = fds[0];
        ss->out_fd = fds[1];
        ss->err_fd = fds[2];
        ss->exec_count = (int)json_integer_value(json_object_get(note, "execution_count"));
        /* Above any request id the earlier daemon may have in flight. */
        ss->next_id = (uint64_t)1 << 40;
        ss->state = SS_IDLE;
        ss->started_ms = xb_now_ms();
        xb__session_watch(ss);
        xb_sbx_ref(x);
        ss->next = x->sessions;
        x->sessions = ss;
        x->nsessions++;
        return 0;
fail:
        free(ss);
        for (size_t i = 0; i < nfds; i++)
                close(fds[i]);
        return -EINVAL;
}

/* The sessions x's record lists that init did not hand back: shown lost
 * (dead, with why and what to do) rather than forgotten. A restart of one
 * starts a new interpreter. */
void
xb__sessions_lost(struct xb_sbx *x, json_t *listed)
{
        size_t i;
        json_t *v;

        json_array_foreach(listed, i, v) {
                const char *id = json_string_value(json_object_get(v, "id"));
                const char *lang = json_string_value(json_object_get(v, "language"));
                struct xb_session *ss;

                if (!id || strlen(id) != 16 || !lang || strlen(lang) > 60 || xb_session_find(x, id) ||
                    x->nsessions >= XB_SESSIONS_PER_SANDBOX || !(ss = calloc(1, sizeof(*ss))))
                        continue;
                ss->sbx = x;
                ss->in_fd = ss->out_fd = ss->err_fd = -1;
                ss->inbuf.max = 64u << 20;
                ss->line.max = XB__LINE_MAX_BYTES + 65536;
                ss->errtail.max = XB__STDERR_TAIL + 1;
                memcpy(ss->id, id, 17);
                snprintf(ss->language, sizeof(ss->language), "%s", lang);
                snprintf(ss->mode, sizeof(ss->mode), "%s", xb__driver_mode(lang));
                ss->state = SS_DEAD;
                ss->lost = true;
                snprintf(ss->death, sizeof(ss->death), "%s", XB__SESSION_LOST);
                ss->started_ms = xb_now_ms();
                xb_sbx_ref(x);
                ss->next = x->sessions;
                x->sessions = ss;
                x->nsessions++;
        }
}
