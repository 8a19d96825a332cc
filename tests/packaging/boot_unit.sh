#!/usr/bin/env bash
# Start execbox.service under a real systemd and run CHECK against it:
# systemd boots as pid 1 of new pid, mount, cgroup, uts, ipc and net
# namespaces, in a child cgroup of ours, with fresh /run, /var/lib, /var/log
# and /tmp, and only our unit to start (units that would touch the host,
# such as udev or sysctl, are masked). Host /run/execbox is shared, as the
# uid range locks in it must be. BIN is copied to /run/xb-bin/execbox
# inside (the unit hides /home, /root and /tmp from the service, and the
# work tree may be there). Everything is torn down on exit.
# usage: boot_unit.sh UNIT BIN CHECK...   (CHECK runs inside, after the start)
set -euo pipefail
unit=$(realpath "$1") bin=$(realpath "$2"); shift 2
[ "$(id -u)" = 0 ] || { echo "boot_unit: needs root" >&2; exit 2; }
dir=$(mktemp -d /var/tmp/xb-boot.XXXXXX)
pid1="" launcher=""

cleanup() {
	set +e
	[ -n "$pid1" ] && kill -KILL "$pid1" 2>/dev/null
	[ -n "$launcher" ] && wait "$launcher" 2>/dev/null
	if [ -f "$dir/cgroups" ]; then
		tac "$dir/cgroups" | while read -r d; do
			find "$d" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null
			rmdir "$d" 2>/dev/null || echo "boot_unit: left $d" >&2
		done
	fi
	rm -rf "$dir"
}
trap cleanup EXIT

mkdir -p "$dir/units/execbox.service.d" /run/execbox
chmod 0700 /run/execbox
cp "$unit" "$dir/units/execbox.service"
cp "$bin" "$dir/execbox"
# Not part of a whole boot: no sysinit.target. Output to a file we can read.
printf '[Unit]\nDefaultDependencies=no\n[Service]\nStandardOutput=append:/run/execbox.log\nStandardError=append:/run/execbox.log\n' \
	> "$dir/units/execbox.service.d/boot.conf"
printf '[Unit]\nDescription=execbox test boot\nDefaultDependencies=no\n' > "$dir/units/xbtest.target"

# Our own cgroup in each hierarchy, below wherever we are (not named
# execbox-*: the integration suites would count it as a sandbox's leak).
pure_v2=$([ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] && echo 1 || echo 0)
while IFS=: read -r hid ctl path; do
	if [ "$hid" = 0 ]; then
		base=/sys/fs/cgroup; [ "$pure_v2" = 1 ] || base=/sys/fs/cgroup/unified
	else
		base=/sys/fs/cgroup/${ctl#name=}
		[ -d "$base" ] || base=/sys/fs/cgroup/${ctl%%,*}
	fi
	[ -d "$base" ] || continue
	d=$base${path%/}/xb-boot-$$
	mkdir "$d"
	if [ -f "$d/cpuset.cpus" ]; then cat "$d/../cpuset.cpus" > "$d/cpuset.cpus"; cat "$d/../cpuset.mems" > "$d/cpuset.mems"; fi
	echo "$d" >> "$dir/cgroups"
done < /proc/self/cgroup
# The cgroup mounts to make again inside, as the cgroup namespace sees them.
awk '$5 ~ "^/sys/fs/cgroup/" && $0 ~ / - cgroup2? / { split($0, a, " - "); split(a[2], b, " "); print $5, b[1], b[3] }' \
	/proc/self/mountinfo > "$dir/cgmounts"

cat > "$dir/init.sh" <<'EOT'
set -e
dir=$1
mount --make-rprivate /
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
	umount -l /sys/fs/cgroup; mount -t cgroup2 cgroup2 /sys/fs/cgroup
else
	umount -R /sys/fs/cgroup
	mount -t tmpfs -o mode=755 tmpfs /sys/fs/cgroup
	while read -r mnt type opts; do
		mkdir -p "$mnt"
		o=$(echo "$opts" | tr , '\n' | grep -vE '^(rw|ro|relatime|nosuid|nodev|noexec)$' | paste -sd, -)
		mount -t "$type" ${o:+-o "$o"} "$type" "$mnt"
	done < "$dir/cgmounts"
fi
mkdir -p "$dir/hostrun"; mount --bind /run/execbox "$dir/hostrun"
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/execbox /run/systemd/system; chmod 700 /run/execbox
mount --bind "$dir/hostrun" /run/execbox
cp -r "$dir/units/." /run/systemd/system/
mkdir /run/xb-bin; cp "$dir/execbox" /run/xb-bin/execbox
for u in systemd-udevd.service systemd-udev-trigger.service systemd-sysctl.service \
	 systemd-modules-load.service systemd-remount-fs.service systemd-random-seed.service \
	 systemd-logind.service systemd-timesyncd.service getty.target console-getty.service; do
	ln -sf /dev/null "/run/systemd/system/$u"
done
mount -t tmpfs tmpfs /var/lib; mount -t tmpfs tmpfs /var/log; mount -t tmpfs tmpfs /tmp
exec env -i container=execbox-test PATH=/usr/sbin:/usr/bin:/sbin:/bin /lib/systemd/systemd --system \
	--unit=xbtest.target --log-target=console --show-status=no > "$dir/console.log" 2>&1
EOT
(
	while read -r d; do echo "$BASHPID" > "$d/cgroup.procs"; done < "$dir/cgroups"
	exec unshare --mount --cgroup --pid --fork --mount-proc --uts --ipc --net bash "$dir/init.sh" "$dir" \
		2> "$dir/init.err"
) &
launcher=$!
for _ in $(seq 100); do
	pid1=$(pgrep -P "$launcher" || true)
	[ -n "$pid1" ] && [ -S "/proc/$pid1/root/run/systemd/private" ] && break
	pid1=""
	sleep 0.1
done
[ -n "$pid1" ] || { echo "boot_unit: systemd did not come up" >&2; cat "$dir/init.err" "$dir/console.log" >&2; exit 1; }
in_boot() { nsenter -t "$pid1" -m -p -n -u -i "$@"; }
in_boot systemctl start execbox.service || { in_boot systemctl status execbox --no-pager >&2; exit 1; }
echo "status: $(in_boot systemctl show -p StatusText --value execbox)"
rc=0
in_boot "$@" || rc=$?
in_boot systemctl stop execbox.service
echo "stopped: $(in_boot systemctl show -p Result --value execbox)"
echo "cgroups left: $(in_boot sh -c 'ls -d /sys/fs/cgroup/*/execbox-* /sys/fs/cgroup/execbox-* 2>/dev/null | wc -l')"
echo "log:"; in_boot cat /run/execbox.log | grep -v '^  ' || true
exit $rc
