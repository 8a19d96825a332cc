/* Make arbitrary bytes valid UTF-8 for JSON: each invalid byte becomes
 * U+FFFD. Pure code. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at p (1-4), or 0 if invalid. */
size_t xb_utf8_seq_len(const unsigned char *p, size_t n);
/* Valid UTF-8 without a NUL byte. */
bool xb_utf8_valid(const char *s, size_t n);
/* The bytes of the longest start of s that is whole valid characters and
 * no NUL: where checking a text read in slices resumes (a character cut
 * by the end of a slice is not counted yet). */
size_t xb_utf8_valid_prefix(const char *s, size_t n);
/* A malloc'd copy with invalid bytes replaced; *ret_len gets its length. */
char *xb_utf8_sanitize(const char *s, size_t n, size_t *ret_len);
