/* Base64 (RFC 4648 section 4, the standard alphabet with padding): an
 * encoder, and a strict decoder that rejects what a careless one would
 * guess at. Pure code; no line wrapping, no URL-safe alphabet. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

/* Characters in the encoding of n bytes, without the NUL. */
static inline size_t
xb_base64_encoded_len(size_t n)
{
        return (n + 2) / 3 * 4;
}

/* Most bytes that n characters of base64 decode to. */
static inline size_t
xb_base64_decoded_max(size_t n)
{
        return n / 4 * 3;
}

/* The bytes n characters of padded base64 at s decode to (whole quanta). */
static inline size_t
xb_base64_decoded_len(const char *s, size_t n)
{
        return xb_base64_decoded_max(n) - (n && s[n - 1] == '=') - (n > 1 && s[n - 2] == '=');
}

/* Skip CR and LF between characters (MIME-wrapped input, as old Jupyter
 * kernels send). Nothing else is ever skipped. */
#define XB_BASE64_NEWLINES 1u

/* Encode n bytes into out, NUL-terminated; returns the length written, or
 * -ENOBUFS when cap is under xb_base64_encoded_len(n) + 1 (out untouched). */
ssize_t xb_base64_encode(const void *in, size_t n, char *out, size_t cap);
/* The same into a malloc'd string the caller frees; -ENOMEM, or
 * -EOVERFLOW when n is too large to encode. *ret untouched on failure. */
int xb_base64_encode_alloc(const void *in, size_t n, char **ret);

/* Decode n characters of in (no NUL needed) into out; returns the bytes
 * written. -EINVAL unless the input is whole quanta of the alphabet, with
 * '=' only as the one or two last characters of the last quantum;
 * -ENOBUFS when the bytes do not fit in cap. Pad bits need not be zero
 * (RFC 4648 section 3.5 leaves that to the decoder). out may hold partial
 * output after a failure. */
ssize_t xb_base64_decode(const char *in, size_t n, void *out, size_t cap, unsigned flags);
/* The same into a malloc'd buffer of at most max bytes (-ENOBUFS past it),
 * the caller frees *ret; it is NUL-terminated one past *ret_len for text.
 * Outputs untouched on failure. */
int xb_base64_decode_alloc(const char *in, size_t n, size_t max, unsigned flags, void **ret, size_t *ret_len);
