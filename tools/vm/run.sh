#!/usr/bin/env bash
# `make check-vm`: boot Debian's 6.1 kernel in QEMU on pure cgroup v2, with
# this repo shared read-only (9p), run the tests there, and fail when they
# fail. KVM when it boots (nested KVM often does not), else TCG, where a
# named subset runs. Leaves no process or temporary directory behind.
#
#   XB_VM_TESTS    pytest selection (default: all of tests/integration under
#                  KVM, $TCG_TESTS under TCG)
#   XB_VM_UNIT     1 (default) to run the unit tests, 0 not to
#   XB_VM_ACCEL    kvm or tcg to skip the probe
#   XB_VM_TIMEOUT  seconds for the whole guest run (default 1080)
#   XB_VM_COPY     0 to run from the read-only share instead of a copy
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# Under TCG: the limits (resources), lifecycle, posture and escape suites, and
# the server's own cgroup handling (create, limits, pause, delete, expiry).
TCG_TESTS="tests/integration/test_resources.py tests/integration/test_lifecycle.py
tests/integration/test_posture.py tests/integration/test_escape.py
tests/integration/test_server_api.py tests/integration/test_server_ops.py
tests/integration/test_leakcheck.py tests/integration/test_cgroup_delegation.py"
# ...less two whose time bounds assume native speed (under TCG an exec takes
# over 100 ms, and an inode flood over 20 s): both pass or fail on timing only.
TCG_DESELECT="--deselect tests/integration/test_server_ops.py::test_metrics_is_prometheus_text
--deselect tests/integration/test_resources.py::test_inode_flood_is_bounded_by_the_memory_limit"
timeout_s=${XB_VM_TIMEOUT:-1080}
mem=${XB_VM_MEM:-3072}
smp=${XB_VM_SMP:-2}

"$repo/tools/vm/deps.sh"
img=$("$repo/tools/vm/image.sh")
[ -d "$img" ] || { echo "check-vm: tools/vm/image.sh gave no image directory but: $img" >&2; exit 1; }

work=$(mktemp -d /tmp/execbox-vm.XXXXXX)
qpid=
cleanup() {
	if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
		kill "$qpid" 2>/dev/null || true
		wait "$qpid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir "$work/out"

# boot ACCEL CPU: start QEMU in the background (qpid), console in $work/console.
boot() {
	: >"$work/console"
	qemu-system-x86_64 -accel "$1" -cpu "$2" -m "$mem" -smp "$smp" \
		-nodefaults -display none -no-reboot -nic none \
		-chardev file,id=con,path="$work/console" -serial chardev:con \
		-kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
		-append "root=/dev/vda rw init=/sbin/xb-vm-init console=ttyS0 quiet loglevel=4 panic=-1 cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1" \
		-drive file="$img/root.img",if=virtio,format=raw,snapshot=on \
		-virtfs local,path="$repo",mount_tag=xbsrc,security_model=none,readonly=on \
		-virtfs local,path="$work/out",mount_tag=xbout,security_model=none \
		</dev/null >"$work/qemu.log" 2>&1 &
	qpid=$!
}
stop() {
	kill "$qpid" 2>/dev/null || true
	wait "$qpid" 2>/dev/null || true
	qpid=
}

accel=${XB_VM_ACCEL:-}
t0=$(date +%s)
# Whether KVM boots this guest holds until the host reboots: probe once per
# host boot.
probe_file=$(dirname "$img")/accel-$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)
[ -n "$accel" ] || accel=$(cat "$probe_file" 2>/dev/null || true)
if [ -z "$accel" ] && [ -r /dev/kvm ]; then
	# A working KVM guest prints the kernel's banner within a second or two.
	printf 'XB_ACCEL=probe\nXB_UNIT=0\nXB_COPY=0\nXB_TESTS=\nXB_PYTEST_ARGS=\n' >"$work/out/config"
	boot kvm host,-arch-capabilities
	for _ in $(seq 30); do
		grep -q 'xb-vm: ' "$work/console" 2>/dev/null && { accel=kvm; break; }
		kill -0 "$qpid" 2>/dev/null || break
		sleep 1
	done
	stop
	[ -n "$accel" ] || echo "check-vm: KVM did not boot the guest within 30 s; using TCG"
fi
accel=${accel:-tcg}
[ -n "${XB_VM_ACCEL:-}" ] || echo "$accel" >"$probe_file"
cpu=qemu64
[ "$accel" = kvm ] && cpu=host,-arch-capabilities
if [ "$accel" = kvm ]; then
	default_tests=tests/integration default_args=
else
	default_tests=$TCG_TESTS default_args=$TCG_DESELECT
fi
tests=$(echo ${XB_VM_TESTS:-$default_tests})
[ -z "${XB_VM_TESTS:-}" ] || default_args=
cat >"$work/out/config" <<CONF
XB_ACCEL=$accel
XB_UNIT=${XB_VM_UNIT:-1}
XB_TESTS="$tests"
XB_PYTEST_ARGS="$(echo ${XB_VM_PYTEST_ARGS:-} $default_args)"
XB_COPY=${XB_VM_COPY:-1}
CONF
rm -f "$work/out/rc"
echo "check-vm: booting ($accel, $smp CPUs, $mem MiB), tests: $tests"
boot "$accel" "$cpu"
tail -n +1 -f --pid="$qpid" "$work/console" &
tpid=$!
deadline=$(($(date +%s) + timeout_s))
while kill -0 "$qpid" 2>/dev/null; do
	if [ "$(date +%s)" -ge "$deadline" ]; then
		echo "check-vm: the guest ran over ${timeout_s} s; stopping it" >&2
		stop
		break
	fi
	sleep 2
done
wait "$qpid" 2>/dev/null || true
qpid=
wait "$tpid" 2>/dev/null || true
rc=$(cat "$work/out/rc" 2>/dev/null || echo missing)
log=${XB_VM_LOG:-$repo/build/check-vm.log}
mkdir -p "$(dirname "$log")" && cp "$work/console" "$log" || true
echo "check-vm: guest result rc=$rc after $(($(date +%s) - t0)) s (console: $log)"
if [ "$rc" != 0 ]; then
	[ "$rc" = missing ] && { echo "check-vm: no result from the guest; QEMU said:"; cat "$work/qemu.log"; }
	exit 1
fi
