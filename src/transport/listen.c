/* Sockets for the HTTP front: the --listen spec (HOST:PORT or unix:PATH)
 * parsed and bound, the server's URL, and whether an address is loopback
 * (MCP's Host check and `serve --no-auth` depend on that). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "transport/http_int.h"

static bool
addr_is_loopback(const struct sockaddr *sa)
{
        if (sa->sa_family == AF_INET)
                return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
        if (sa->sa_family == AF_INET6)
                return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
        return sa->sa_family == AF_UNIX;
}

bool
xb_http_is_loopback(const char *listen)
{
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
        char host[256];
        const char *colon;
        bool all = true;

        if (!listen || strncmp(listen, "unix:", 5) == 0)
                return true;
        colon = strrchr(listen, ':');
        if (!colon || (size_t)(colon - listen) >= sizeof(host))
                return false;
        snprintf(host, sizeof(host), "%.*s", (int)(colon - listen), listen);
        if (host[0] == '[') {
                memmove(host, host + 1, strlen(host));
                host[strcspn(host, "]")] = '\0';
        }
        /* What the name resolves to, every address of it: "127.x.example" is not loopback. */
        if (!host[0] || getaddrinfo(host, NULL, &hints, &ai) != 0)
                return false;
        for (struct addrinfo *a = ai; a; a = a->ai_next)
                all = all && addr_is_loopback(a->ai_addr);
        freeaddrinfo(ai);
        return all;
}

int
http_listen_on(struct xb_http *h, const char *spec, struct xb_err *err)
{
        int fd, one = 1;

        if (strncmp(spec, "unix:", 5) == 0) {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                const char *path = spec + 5;

                if (strlen(path) >= sizeof(sa.sun_path))
                        return xb_err_msg(err, ENAMETOOLONG, "unix socket path %s is too long", path);
                snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
                fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return xb_err_set(err, errno, "socket");
                unlink(path);
                if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0660) < 0 || listen(fd, 512) < 0) {
                        int e = errno;

                        close(fd);
                        return xb_err_set(err, e, "listen on %s", spec);
                }
                snprintf(h->unix_path, sizeof(h->unix_path), "%s", path);
                snprintf(h->url, sizeof(h->url), "unix:%s", path);
                h->loopback = true;
                return fd;
        } else {
                char host[256], port[16];
                const char *colon = strrchr(spec, ':');
                struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV }, *ai;
                struct sockaddr_storage ss;
                socklen_t sl = sizeof(ss);
                int rc;

                if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(host) || strlen(colon + 1) >= sizeof(port))
                        return xb_err_msg(err, EINVAL, "--listen takes HOST:PORT or unix:PATH, not `%s`", spec);
                snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
                snprintf(port, sizeof(port), "%s", colon + 1);
                if (host[0] == '[') {
                        memmove(host, host + 1, strlen(host));
                        host[strcspn(host, "]")] = '\0';
                }
                rc = getaddrinfo(host, port, &hints, &ai);
                if (rc)
                        return xb_err_msg(err, EINVAL, "cannot listen on %s: %s", spec, gai_strerror(rc));
                fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
                    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 512) < 0) {
                        int e = errno;

                        if (fd >= 0)
                                close(fd);
                        freeaddrinfo(ai);
                        return xb_err_set(err, e, "listen on %s", spec);
                }
                freeaddrinfo(ai);
                getsockname(fd, (struct sockaddr *)&ss, &sl);
                h->loopback = addr_is_loopback((struct sockaddr *)&ss);
                {
                        char addr[INET6_ADDRSTRLEN] = "";
                        unsigned p = 0;

                        if (ss.ss_family == AF_INET) {
                                inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr, sizeof(addr));
                                p = ntohs(((struct sockaddr_in *)&ss)->sin_port);
                                snprintf(h->url, sizeof(h->url), "http://%s:%u", addr, p);
                        } else {
                                inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, addr, sizeof(addr));
                                p = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
                                snprintf(h->url, sizeof(h->url), "http://[%s]:%u", addr, p);
                        }
                }
                return fd;
        }
}
