/* /proc/self/stat, /proc/stat's btime, /proc/self/fd and RLIMIT_NOFILE:
 * what Prometheus client libraries report as process_*. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/procself.h"

static int
boot_time(uint64_t *ret)
{
        _cleanup_free_ char *text = NULL;
        const char *p;

        if (xb_read_file_at(AT_FDCWD, "/proc/stat", 1 << 20, &text, NULL) < 0)
                return -errno;
        p = strstr(text, "\nbtime ");
        if (!p)
                return -EIO;
        *ret = strtoull(p + 7, NULL, 10);
        return 0;
}

static uint64_t
count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        uint64_t n = 0;
        struct dirent *de;

        if (!d)
                return 0;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        return n > 0 ? n - 1 : 0;   /* less the one opendir holds */
}

int
xb_procself_read(struct xb_procself *ret)
{
        _cleanup_free_ char *text = NULL;
        unsigned long long utime, stime, start, vsize;
        long long rss;
        long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
        struct rlimit rl = { 0 };
        uint64_t btime = 0;
        const char *p;
        int r;

        if (xb_read_file_at(AT_FDCWD, "/proc/self/stat", 4096, &text, NULL) < 0)
                return -errno;
        /* The command name may hold spaces and parentheses: the fields
         * start after the last ')'. Field 3 (state) comes first. */
        p = strrchr(text, ')');
        if (!p || tck <= 0 || page <= 0)
                return -EIO;
        if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
                   &utime, &stime, &start, &vsize, &rss) != 5)
                return -EIO;
        if ((r = boot_time(&btime)) < 0)
                return r;
        getrlimit(RLIMIT_NOFILE, &rl);
        *ret = (struct xb_procself){
                .cpu_seconds = (double)(utime + stime) / (double)tck,
                .rss_bytes = rss > 0 ? (uint64_t)rss * (uint64_t)page : 0,
                .vsize_bytes = vsize,
                .open_fds = count_fds(),
                .max_fds = rl.rlim_cur,
                .start_time_seconds = (double)btime + (double)start / (double)tck,
        };
        return 0;
}
