/* Unit tests for sandbox/cgroup_v2.c on a fake cgroupfs (plain
 * directories and files): which group a pure-v2 daemon takes as its
 * sandboxes' parent, and what it writes there. The real thing (a daemon in
 * a delegated subtree of a pure-v2 kernel) is in
 * tests/integration/test_cgroup_delegation.py, run by make check-vm. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "sandbox/cgroup_int.h"

static char dir[] = "/tmp/xb-cgv2-XXXXXX";
static int root = -1;

static void
put(const char *path, const char *text)
{
        int fd = openat(root, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

        cr_assert(fd >= 0, "create %s: %s", path, strerror(errno));
        cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
}

static char *
get(const char *path)
{
        char *s = NULL;

        cr_assert_eq(xb_read_file_at(root, path, 4096, &s, NULL), 0, "read %s", path);
        return s;
}

static void
setup(void)
{
        cr_assert_not_null(mkdtemp(dir));
        root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cr_assert(root >= 0);
}

static void
teardown(void)
{
        char cmd[128];

        close(root);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        cr_assert_eq(system(cmd), 0);
        strcpy(dir, "/tmp/xb-cgv2-XXXXXX");
}

TestSuite(cgroup_v2, .init = setup, .fini = teardown);

Test(cgroup_v2, own_group_from_proc_self_cgroup)
{
        char own[64];

        cr_assert_eq(cg_v2_self("0::/system.slice/execbox.service\n", own, sizeof(own)), 0);
        cr_assert_str_eq(own, "system.slice/execbox.service");
        /* hybrid: v1 lines first, the v2 one last */
        cr_assert_eq(cg_v2_self("4:memory:/x\n2:pids:/y\n0::/user.slice\n", own, sizeof(own)), 0);
        cr_assert_str_eq(own, "user.slice");
        cr_assert_eq(cg_v2_self("0::/\n", own, sizeof(own)), 0);
        cr_assert_str_eq(own, "");
        cr_assert_eq(cg_v2_self("4:memory:/x\n", own, sizeof(own)), -ENOENT);
        cr_assert_eq(cg_v2_self("0::/../../etc\n", own, sizeof(own)), -ENAMETOOLONG);
        cr_assert_eq(cg_v2_self("0::/a/very/long/path/that/does/not/fit/in/sixty-four/bytes/at/all/not/even/close/x\n", own,
                                sizeof(own)), -ENAMETOOLONG);
}

Test(cgroup_v2, the_hosts_root_is_not_a_subtree_to_keep_to)
{
        cr_assert_not(cg_v2_delegated(root, ""), "the host's root (no cgroup.type) taken as delegated");
        /* A cgroup namespace's root is a group like any other: it has cgroup.type. */
        put("cgroup.type", "domain\n");
        cr_assert(cg_v2_delegated(root, ""), "a container's root not kept to");
}

Test(cgroup_v2, a_group_is_delegated_by_its_xattr)
{
        int fd;

        cr_assert_eq(mkdirat(root, "system.slice", 0755), 0);
        cr_assert_eq(mkdirat(root, "system.slice/execbox.service", 0755), 0);
        cr_assert_not(cg_v2_delegated(root, "system.slice/execbox.service"), "no xattr, yet delegated");
        cr_assert_not(cg_v2_delegated(root, "system.slice/missing.service"));
        fd = openat(root, "system.slice/execbox.service", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fsetxattr(fd, "trusted.delegate", "1", 1, 0) < 0) {
                close(fd);
                cr_skip_test("this file system keeps no trusted.* xattrs: %s", strerror(errno));
        }
        close(fd);
        cr_assert(cg_v2_delegated(root, "system.slice/execbox.service"), "systemd's trusted.delegate=1 ignored");
        /* The group above it was not delegated. */
        cr_assert_not(cg_v2_delegated(root, "system.slice"));
}

Test(cgroup_v2, taking_a_subtree_moves_the_daemon_to_a_leaf_and_enables_controllers)
{
        struct xb_err err = { 0 };
        _cleanup_free_ char *procs = NULL, *ctl = NULL;
        struct stat st;
        int fd;

        cr_assert_eq(mkdirat(root, "svc", 0755), 0);
        put("svc/cgroup.procs", "4242\n4343\n");
        put("svc/cgroup.subtree_control", "");
        /* cgroupfs makes a new group's files itself; here the test does. */
        cr_assert_eq(mkdirat(root, "svc/daemon", 0755), 0);
        put("svc/daemon/cgroup.procs", "");
        fd = cg_v2_take_subtree(root, "svc", &err);
        cr_assert(fd >= 0, "%s", err.msg);
        cr_assert_eq(fstat(fd, &st), 0);
        cr_assert(S_ISDIR(st.st_mode));
        close(fd);
        procs = get("svc/daemon/cgroup.procs");
        /* One pid per write, as the kernel takes them: the last one stays in the fake file. */
        cr_assert(strncmp(procs, "4343", 4) == 0, "the group's other processes were not moved: %s", procs);
        ctl = get("svc/cgroup.subtree_control");
        cr_assert_str_eq(ctl, "+memory +pids +cpu");
}

Test(cgroup_v2, a_subtree_without_its_files_fails_with_a_reason)
{
        struct xb_err err = { 0 };

        cr_assert_eq(mkdirat(root, "svc", 0755), 0);
        cr_assert_lt(cg_v2_take_subtree(root, "svc", &err), 0);
        cr_assert(strstr(err.msg, "daemon"), "%s", err.msg);
        cr_assert_lt(cg_v2_take_subtree(root, "nowhere", &err), 0);
        cr_assert(strstr(err.msg, "/nowhere"), "%s", err.msg);
}
