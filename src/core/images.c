/* Images that cells displayed: decoded from the driver's base64, checked,
 * and kept per sandbox (the newest XB_IMAGES_PER_SANDBOX, at most
 * XB_IMAGE_BYTES_PER_SANDBOX) for adapters to serve by name. They outlive
 * their sessions: a pending tag of their own frees them when the sandbox
 * ends. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "core/core.h"
#include "core/sessions.h"
#include "core/session_int.h"

struct xb_image {
        struct xb_image *next;
        char name[64];
        char mime[24];
        unsigned char *data;
        size_t len;
};

static void
image_free(struct xb_image *im)
{
        free(im->data);
        free(im);
}

static void
images_died(void *ctx, const char *why)
{
        struct xb_sbx *x = ctx;

        (void)why;
        x->images_tag = 0;
        while (x->images) {
                struct xb_image *im = x->images;

                x->images = im->next;
                image_free(im);
        }
        x->nimages = 0;
        x->image_bytes = 0;
}

static const struct xb_pending_ops images_pending = { .died = images_died };

const char *
xb__image_store(struct xb_sbx *x, const char *mime, const char *b64, const char *hint_name)
{
        static const unsigned char png_sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
        size_t in = strlen(b64), n;
        void *out;
        struct xb_image *im;

        /* Nothing may hold images past the sandbox's death, which frees them. */
        if (x->state >= XB_SBX_DYING ||
            (!x->images_tag && !(x->images_tag = xb_sbx_pending_add(x, &images_pending, x))))
                return NULL;
        if (in / 4 * 3 > XB_IMAGE_MAX || xb_base64_decode_alloc(b64, in, XB_IMAGE_MAX, XB_BASE64_NEWLINES, &out, &n) < 0)
                return NULL;
        if (strcmp(mime, "image/png") == 0 && (n < 8 || memcmp(out, png_sig, 8) != 0)) {
                free(out);
                return NULL;
        }
        im = calloc(1, sizeof(*im));
        if (!im) {
                free(out);
                return NULL;
        }
        snprintf(im->name, sizeof(im->name), "%s.%s", hint_name, strcmp(mime, "image/png") ? "jpg" : "png");
        snprintf(im->mime, sizeof(im->mime), "%s", mime);
        im->data = out;
        im->len = n;
        /* Append at the tail; evict from the head past the caps. */
        {
                struct xb_image **pp = &x->images;

                while (*pp)
                        pp = &(*pp)->next;
                *pp = im;
        }
        x->nimages++;
        x->image_bytes += n;
        while (x->images && x->images != im &&
               (x->nimages > XB_IMAGES_PER_SANDBOX || x->image_bytes > XB_IMAGE_BYTES_PER_SANDBOX)) {
                struct xb_image *old = x->images;

                x->images = old->next;
                x->nimages--;
                x->image_bytes -= old->len;
                image_free(old);
        }
        return im->name;
}

const void *
xb_image_find(struct xb_sbx *x, const char *name, size_t *len, const char **mime)
{
        for (struct xb_image *im = x->images; im; im = im->next)
                if (strcmp(im->name, name) == 0) {
                        *len = im->len;
                        *mime = im->mime;
                        return im->data;
                }
        return NULL;
}
