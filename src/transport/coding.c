/* The Content-Encoding of a request body (RFC 9110 8.4): execbox decodes
 * gzip (and its alias x-gzip) and takes identity as none, as envd does.
 * A list of codings, or any other one, is refused by the caller. */
#define _GNU_SOURCE
#include <string.h>
#include <strings.h>

#include "transport/http_int.h"

enum xb_coding
xb_req_content_coding(const struct xb_req *r)
{
        const char *h = xb_req_header(r, "Content-Encoding"), *end;
        size_t n;

        if (!h)
                return XB_CODING_IDENTITY;
        while (*h == ' ' || *h == '\t')
                h++;
        end = h + strcspn(h, ";");
        while (end > h && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        n = (size_t)(end - h);
        if (n == 0 || (n == 8 && !strncasecmp(h, "identity", 8)))
                return XB_CODING_IDENTITY;
        if ((n == 4 && !strncasecmp(h, "gzip", 4)) || (n == 6 && !strncasecmp(h, "x-gzip", 6)))
                return XB_CODING_GZIP;
        return XB_CODING_UNKNOWN;
}
