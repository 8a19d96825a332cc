/* The 2026-07-28 request headers of Streamable HTTP (SEP-2243): Mcp-Method
 * must equal the body's method; Mcp-Name its params.name (tools/call,
 * prompts/get) or params.uri (resources/read); and for a tool whose input
 * schema marks an argument with x-mcp-header, Mcp-Param-{Name} must carry
 * that argument, or be absent when it is. Values are compared after
 * trimming spaces and decoding the =?base64?...?= form, which must be
 * valid base64 of text without NUL bytes. Pure functions of one request. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "mcp/mcp.h"

/* A header value as sent, or decoded from =?base64?...?=; -1 if that is malformed. */
static int
header_value(const char *h, char *out, size_t cap)
{
        size_t n = strlen(h);
        ssize_t len;

        for (const char *p = h; *p; p++)
                if ((unsigned char)*p < 0x20 && *p != '\t')
                        return -1;
        if (n < 11 || strncmp(h, "=?base64?", 9) || strcmp(h + n - 2, "?=")) {
                if (n >= cap)
                        return -1;
                memcpy(out, h, n + 1);
                return 0;
        }
        len = xb_base64_decode(h + 9, n - 11, out, cap - 1, 0);
        if (len < 0)
                return -1;
        out[len] = '\0';
        return memchr(out, '\0', (size_t)len) ? -1 : 0;
}

/* The body's value as header text: strings as is, integers and booleans
 * spelled out; NULL for anything else. */
static const char *
arg_text(json_t *v, char *buf, size_t cap)
{
        if (json_is_string(v))
                return json_string_value(v);
        if (json_is_integer(v))
                snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
        else if (json_is_real(v))
                snprintf(buf, cap, "%.17g", json_real_value(v));
        else if (json_is_boolean(v))
                snprintf(buf, cap, "%s", json_is_true(v) ? "true" : "false");
        else
                return NULL;
        return buf;
}

const char *
xb_mcp_check_headers(struct xb_req *r, struct xb_mcp *m, json_t *msg, char *why, size_t cap)
{
        const char *method = json_string_value(json_object_get(msg, "method"));
        json_t *params = json_object_get(msg, "params");
        char h[4200], dec[4200];
        const char *name = NULL, *v;

        if (!xb_req_header_trim(r, "Mcp-Method", h, sizeof(h)))
                return "Header mismatch: the Mcp-Method header is missing";
        if (!method || strcmp(h, method)) {
                snprintf(why, cap, "Header mismatch: Mcp-Method header value '%.64s' does not match body method '%.64s'",
                         h, method ? method : "");
                return why;
        }
        if (!strcmp(method, "tools/call") || !strcmp(method, "prompts/get"))
                name = json_string_value(json_object_get(params, "name"));
        else if (!strcmp(method, "resources/read"))
                name = json_string_value(json_object_get(params, "uri"));
        if (name) {
                if (!xb_req_header_trim(r, "Mcp-Name", h, sizeof(h)))
                        return "Header mismatch: the Mcp-Name header is missing";
                if (header_value(h, dec, sizeof(dec)) < 0 || strcmp(dec, name)) {
                        snprintf(why, cap, "Header mismatch: Mcp-Name header value '%.64s' does not match the body's "
                                 "'%.64s'", h, name);
                        return why;
                }
        }
        if (name && !strcmp(method, "tools/call")) {
                json_t *schema = xb_mcp_tool_input(m, name, true), *p, *args = json_object_get(params, "arguments");
                const char *k;

                json_object_foreach(json_object_get(schema, "properties"), k, p) {
                        const char *hn = json_string_value(json_object_get(p, "x-mcp-header"));
                        json_t *a = json_object_get(args, k);
                        char hname[128], num[64];

                        if (!hn)
                                continue;
                        snprintf(hname, sizeof(hname), "Mcp-Param-%.100s", hn);
                        v = xb_req_header_trim(r, hname, h, sizeof(h));
                        if (!a || json_is_null(a)) {
                                if (v) {
                                        snprintf(why, cap, "Header mismatch: %s is sent but `%s` is not in the arguments",
                                                 hname, k);
                                        json_decref(schema);
                                        return why;
                                }
                                continue;
                        }
                        if (!v || header_value(h, dec, sizeof(dec)) < 0 || !arg_text(a, num, sizeof(num)) ||
                            strcmp(dec, arg_text(a, num, sizeof(num)))) {
                                snprintf(why, cap, "Header mismatch: %s %s", hname,
                                         !v ? "is missing" : "does not match the argument (or is malformed)");
                                json_decref(schema);
                                return why;
                        }
                }
                json_decref(schema);
        }
        return NULL;
}
