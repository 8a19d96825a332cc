#!/bin/sh
# Runs inside the check-vm guest, under tini as PID 1 (stub-init), with the
# repo read-only at /src and the host's result directory at /out. Reads
# /out/config (written by tools/vm/run.sh), runs the tests, writes /out/rc
# and powers off. The kernel is Debian's, cgroup v1 is off on its command
# line, and only cgroup2 is mounted: pure cgroup v2, as on production hosts.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PY_COLORS=0 TERM=dumb
rc=1
finish() {
	dmesg >/out/dmesg 2>/dev/null
	echo "$rc" >/out/rc
	sync
	echo "xb-vm: guest done at $(up) s, rc=$rc"
	echo o >/proc/sysrq-trigger
	sleep 60
}
trap finish EXIT
set -u
. /out/config

mkdir -p /dev/pts /dev/shm /run /sys/fs/cgroup
mountpoint -q /dev/pts || mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts /dev/pts
mountpoint -q /dev/shm || mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# As systemd mounts it (the initramfs left it noexec, and the init image runs from /run/execbox).
if mountpoint -q /run; then mount -o remount,exec,nosuid,nodev /run; else mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /run; fi
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
# Kernel messages (a test's OOM kill) go to /out/dmesg, not the console.
dmesg -n 1
ip link set lo up
hostname xbvm
# overlay (and friends) are modules in Debian's kernel, from the guest's
# own /lib/modules.
for m in overlay loop veth tun; do modprobe -q "$m" || echo "xb-vm: no module $m"; done

echo "xb-vm: $(uname -r), accel=$XB_ACCEL, cgroup: $(stat -fc %T /sys/fs/cgroup)," \
	"controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
grep -q ' cgroup ' /proc/mounts && { echo "xb-vm: a cgroup v1 hierarchy is mounted" >&2; exit; }

up() { cut -d' ' -f1 /proc/uptime; }
# The tests run from a copy on the guest's own disk (9p is slow for
# Python's many small reads, and some tests write next to themselves),
# without the objects (a build here starts afresh anyway).
if [ "${XB_COPY:-1}" = 1 ]; then
	mkdir -p /var/xb
	tar -C /src --exclude=./.git --exclude=./build-san --exclude=./build/fuzz --exclude=./build/fuzz-obj \
		--exclude=./build/src --exclude=./build/bench --exclude='*.o' -cf - . | tar -C /var/xb -xf -
	cd /var/xb
else
	cd /src
fi
echo "xb-vm: ready at $(up) s"

# The host's build, if it runs here (same Debian 12 userland, same ABI);
# otherwise build it here.
abi_ok() {
	for b in build/execbox build/tests/test_*; do
		case $b in *.d) continue ;; esac
		[ -x "$b" ] || return 1
		ldd "$b" | grep -q 'not found' && return 1
	done
	build/execbox --version >/dev/null
}
if ! abi_ok; then
	echo "xb-vm: the host's build does not run here; building in the guest"
	rm -rf build
	make -j"$(nproc)" all $(ls tests/unit/test_*.c | sed 's|^tests/unit/|build/tests/|; s|\.c$||') >/var/xb-build.log 2>&1 ||
		{ tail -40 /var/xb-build.log; exit; }
fi

fail=0
if [ "$XB_UNIT" = 1 ]; then
	echo "xb-vm: unit tests at $(up) s"
	for t in build/tests/test_*; do
		case $t in *.d) continue ;; esac
		"$t" --jobs 1 >/var/xb-unit.log 2>&1 || { fail=1; echo "xb-vm: FAILED $t"; tail -30 /var/xb-unit.log; }
		tail -1 /var/xb-unit.log
	done
fi
echo "xb-vm: integration at $(up) s: $XB_TESTS"
EXECBOX=$PWD/build/execbox XBPROBE=$PWD/build/tests/xbprobe \
	python3 -m pytest -q -rfE -p no:cacheprovider $XB_PYTEST_ARGS $XB_TESTS || fail=1
rc=$fail
