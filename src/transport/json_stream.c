/* A JSON body generated as it is sent: libmicrohttpd's content reader asks
 * for at most a buffer's worth at a time, and each call writes only that
 * much of the document, walking the tree from where it stopped. A reply
 * of tens of MB (an exec's output, a file, a process read, a session's
 * result) so never costs one long json_dumps on the loop, nor a second,
 * serialised copy of itself in memory. The text is what json_dumps with
 * JSON_COMPACT writes: keys in insertion order, the same escapes; numbers
 * and literals are json_dumps's own. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/http_int.h"
#include "transport/json_stream.h"

struct frame {
        json_t *v;                    /* an object or an array being written */
        void *iter;                   /* object: the next member */
        size_t i;                     /* array: the next index */
};

struct xb_jgen {
        json_t *root;                 /* referenced */
        size_t flags;                 /* json_dumps flags for numbers */
        struct frame *stack;
        size_t depth, cap;
        bool started, done, failed;
        /* A string being written, then its closing quote (and a key's colon). */
        const char *s;
        size_t slen, spos;
        bool in_str, str_is_key;
        json_t *value;                /* after a key: its value, next */
        /* Text made but not yet sent: punctuation, a number, a literal. */
        char *pend;
        size_t plen, ppos, pcap;
};

static void
pend_add(struct xb_jgen *g, const char *s, size_t n)
{
        if (g->plen + n > g->pcap) {
                size_t cap = g->pcap ? g->pcap : 64;
                char *p;

                while (cap < g->plen + n)
                        cap *= 2;
                if (!(p = realloc(g->pend, cap))) {
                        g->failed = true;
                        return;
                }
                g->pend = p;
                g->pcap = cap;
        }
        memcpy(g->pend + g->plen, s, n);
        g->plen += n;
}

static void
push(struct xb_jgen *g, json_t *v)
{
        if (g->depth == g->cap) {
                size_t cap = g->cap ? g->cap * 2 : 16;
                struct frame *n = reallocarray(g->stack, cap, sizeof(*n));

                if (!n) {
                        g->failed = true;
                        return;
                }
                g->stack = n;
                g->cap = cap;
        }
        g->stack[g->depth++] = (struct frame){ .v = v, .iter = json_is_object(v) ? json_object_iter(v) : NULL };
}

static void
start_string(struct xb_jgen *g, const char *s, size_t n, bool key)
{
        g->s = s;
        g->slen = n;
        g->spos = 0;
        g->in_str = true;
        g->str_is_key = key;
        pend_add(g, "\"", 1);
}

/* Begin v: a container is pushed, a string started, anything else made
 * by json_dumps itself. */
static void
begin_value(struct xb_jgen *g, json_t *v)
{
        char *t;

        if (json_is_object(v) || json_is_array(v)) {
                push(g, v);
                pend_add(g, json_is_object(v) ? "{" : "[", 1);
        } else if (json_is_string(v))
                start_string(g, json_string_value(v), json_string_length(v), false);
        else if ((t = json_dumps(v, g->flags | JSON_COMPACT | JSON_ENCODE_ANY))) {
                pend_add(g, t, strlen(t));
                free(t);
        } else
                g->failed = true;
}

/* The next piece of the document into pend (or a string started). */
static void
step(struct xb_jgen *g)
{
        struct frame *f;

        if (!g->started) {
                g->started = true;
                begin_value(g, g->root);
                return;
        }
        if (g->value) {
                json_t *v = g->value;

                g->value = NULL;
                begin_value(g, v);
                return;
        }
        if (!g->depth) {
                g->done = true;
                return;
        }
        f = &g->stack[g->depth - 1];
        if (json_is_object(f->v)) {
                const char *k;

                if (!f->iter) {
                        g->depth--;
                        pend_add(g, "}", 1);
                        return;
                }
                if (f->iter != json_object_iter(f->v))
                        pend_add(g, ",", 1);
                k = json_object_iter_key(f->iter);
                g->value = json_object_iter_value(f->iter);
                f->iter = json_object_iter_next(f->v, f->iter);
                start_string(g, k, strlen(k), true);
                return;
        }
        if (f->i >= json_array_size(f->v)) {
                g->depth--;
                pend_add(g, "]", 1);
                return;
        }
        if (f->i)
                pend_add(g, ",", 1);
        begin_value(g, json_array_get(f->v, f->i++));
}

/* Escape from g->spos into out (room bytes), as json_dumps does without
 * JSON_ENSURE_ASCII or JSON_ESCAPE_SLASH. */
static size_t
escape(struct xb_jgen *g, char *out, size_t room)
{
        static const char hex[] = "0123456789ABCDEF";
        size_t o = 0;

        while (g->spos < g->slen && room - o >= 6) {
                unsigned char c = (unsigned char)g->s[g->spos];

                if (c >= 0x20 && c != '"' && c != '\\') {
                        /* A run that needs no escape, copied at once. */
                        size_t n = 0, max = g->slen - g->spos;

                        if (max > room - o)
                                max = room - o;
                        while (n < max) {
                                unsigned char d = (unsigned char)g->s[g->spos + n];

                                if (d < 0x20 || d == '"' || d == '\\')
                                        break;
                                n++;
                        }
                        memcpy(out + o, g->s + g->spos, n);
                        o += n;
                        g->spos += n;
                        continue;
                }
                out[o++] = '\\';
                switch (c) {
                case '"': out[o++] = '"'; break;
                case '\\': out[o++] = '\\'; break;
                case '\b': out[o++] = 'b'; break;
                case '\f': out[o++] = 'f'; break;
                case '\n': out[o++] = 'n'; break;
                case '\r': out[o++] = 'r'; break;
                case '\t': out[o++] = 't'; break;
                default:
                        out[o++] = 'u';
                        out[o++] = '0';
                        out[o++] = '0';
                        out[o++] = hex[c >> 4];
                        out[o++] = hex[c & 15];
                }
                g->spos++;
        }
        return o;
}

ssize_t
xb_jgen_read(struct xb_jgen *g, char *out, size_t max)
{
        size_t o = 0;

        while (o < max && !g->failed) {
                if (g->ppos < g->plen) {
                        size_t n = g->plen - g->ppos;

                        if (n > max - o)
                                n = max - o;
                        memcpy(out + o, g->pend + g->ppos, n);
                        o += n;
                        g->ppos += n;
                        continue;
                }
                g->plen = g->ppos = 0;
                if (g->in_str && g->spos < g->slen) {
                        size_t n = escape(g, out + o, max - o);

                        if (!n)
                                break;   /* under 6 bytes of room: next call */
                        o += n;
                        continue;
                }
                if (g->in_str) {
                        g->in_str = false;
                        pend_add(g, g->str_is_key ? "\":" : "\"", g->str_is_key ? 2 : 1);
                        continue;
                }
                if (g->done)
                        break;
                step(g);
        }
        return g->failed ? -1 : (ssize_t)o;
}

static ssize_t
reader(void *cls, uint64_t pos, char *out, size_t max)
{
        ssize_t n = xb_jgen_read(cls, out, max);

        (void)pos;
        if (n < 0)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        return n ? n : MHD_CONTENT_READER_END_OF_STREAM;
}

struct xb_jgen *
xb_jgen_new_flags(json_t *body, size_t flags)
{
        struct xb_jgen *g = calloc(1, sizeof(*g));

        if (g) {
                g->root = body;
                g->flags = flags;
        } else
                json_decref(body);
        return g;
}

struct xb_jgen *
xb_jgen_new(json_t *body)
{
        return xb_jgen_new_flags(body, 0);
}

void
xb_jgen_free(struct xb_jgen *g)
{
        if (!g)
                return;
        json_decref(g->root);
        free(g->stack);
        free(g->pend);
        free(g);
}

static void
jgen_release(void *cls)
{
        xb_jgen_free(cls);
}

/* The bytes of v's strings (and keys), cheaply: whether to stream it. */
static size_t
string_bytes(json_t *v, size_t stop, unsigned depth)
{
        size_t n = 0, i;
        const char *k;
        json_t *e;

        if (json_is_string(v))
                return json_string_length(v);
        if (depth > 64)
                return stop;   /* deep: stream it */
        if (json_is_object(v))
                json_object_foreach(v, k, e) {
                        n += strlen(k) + string_bytes(e, stop, depth + 1) + 8;
                        if (n >= stop)
                                return n;
                }
        else if (json_is_array(v))
                json_array_foreach(v, i, e) {
                        n += string_bytes(e, stop, depth + 1) + 8;
                        if (n >= stop)
                                return n;
                }
        return n + 8;
}

size_t
xb_json_string_bytes(json_t *v, size_t stop)
{
        return string_bytes(v, stop, 0);
}

struct MHD_Response *
http_json_response(json_t *body, size_t *ret_size)
{
        struct xb_jgen *g;
        struct MHD_Response *resp;
        size_t est = string_bytes(body, XB_JSON_STREAM_MIN, 0);

        if (est < XB_JSON_STREAM_MIN) {
                char *s = json_dumps(body, JSON_COMPACT);

                json_decref(body);
                if (!s)
                        return NULL;
                *ret_size = strlen(s);
                resp = MHD(create_response_from_buffer)(*ret_size, s, MHD_RESPMEM_MUST_FREE);
                if (!resp)
                        free(s);
                return resp;
        }
        if (!(g = xb_jgen_new(body)))
                return NULL;
        *ret_size = est;
        resp = MHD(create_response_from_callback)(MHD_SIZE_UNKNOWN, 64u << 10, reader, g, jgen_release);
        if (!resp)
                xb_jgen_free(g);
        return resp;
}
