#!/usr/bin/env bash
# check-vm's self-test: boot the guest with a test that fails on purpose
# (tools/vm/selftest/test_canary.py) and require that tools/vm/run.sh fails,
# for that test, after the guest ran its passing control.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
log=$(mktemp /tmp/execbox-vm-selftest.XXXXXX)
out=$(mktemp /tmp/execbox-vm-selftest-out.XXXXXX)
trap 'rm -f "$log" "$out"' EXIT
XB_VM_UNIT=0 XB_VM_COPY=0 XB_VM_TESTS=tools/vm/selftest/test_canary.py XB_VM_PYTEST_ARGS=-rA XB_VM_LOG="$log" XB_VM_TIMEOUT=600 \
	"$here/run.sh" >"$out" 2>&1
rc=$?
# On failure, what run.sh itself said too: a failure before the guest boots
# (deps, image, accel probe) leaves the console log empty.
fail() { echo "check-vm self-test: $*" >&2; tail -n 60 "$out" >&2; cat "$log" >&2; exit 1; }
[ "$rc" -ne 0 ] || fail "run.sh passed although a guest test failed"
grep -q 'PASSED tools/vm/selftest/test_canary.py::test_guest_is_pure_cgroup_v2' "$log" ||
	fail "the guest's control test did not pass (rc=$rc)"
grep -q 'FAILED tools/vm/selftest/test_canary.py::test_deliberate_failure' "$log" ||
	fail "run.sh failed (rc=$rc), but not for the deliberate failure"
echo "check-vm self-test: a failing guest test fails check-vm (rc=$rc), as it must"
