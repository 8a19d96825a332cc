"""The check-vm self-test's guest side (tools/vm/selftest.sh): one test that
must pass, proving the guest ran pytest on pure cgroup v2, and one that must
fail, proving a failure in the guest fails the host's target."""
import os


def test_guest_is_pure_cgroup_v2():
    assert os.statvfs("/sys/fs/cgroup")
    with open("/proc/mounts") as f:
        kinds = [line.split()[2] for line in f]
    assert "cgroup2" in kinds and "cgroup" not in kinds
    print("xb-vm-canary: pure cgroup v2")


def test_deliberate_failure():
    assert False, "xb-vm-canary: this failure is deliberate"
