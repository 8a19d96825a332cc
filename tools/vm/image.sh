#!/usr/bin/env bash
# Build (once) the check-vm guest: a Debian 12 root from tools/vm/packages.txt
# made by mmdebstrap from the host's own apt mirror (read from /etc/apt), as
# an ext4 image, plus its kernel and initrd. Cached under
# ~/.cache/execbox-vm/<key>, keyed by the package list, the stub init and
# this script. Prints the cache directory.
set -euo pipefail
# Only the directory goes to stdout (run.sh reads it): every tool's output
# goes to stderr (mke2fs -q still says "Creating regular file").
exec 3>&1 1>&2
here=$(cd "$(dirname "$0")" && pwd)
cache=${XB_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/execbox-vm}
key=$(cat "$here/packages.txt" "$here/stub-init" "$here/image.sh" | sha256sum | cut -c1-16)
dir=$cache/$key
if [ -s "$dir/root.img" ] && [ -s "$dir/vmlinuz" ] && [ -s "$dir/initrd.img" ]; then
	echo "$dir" >&3
	exit 0
fi
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The host's Debian sources only (not third-party ones), in one-line form.
. /etc/os-release
python3 - "$VERSION_CODENAME" >"$tmp/sources.list" <<'PY'
import glob, sys
codename = sys.argv[1]
suites_ok = lambda s: s == codename or s.startswith(codename + "-")
out = []
for path in glob.glob("/etc/apt/sources.list") + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
    for line in open(path):
        f = line.split("#")[0].split()
        if f and f[0] == "deb" and len(f) > 1 and f[1].startswith("["):   # deb [options] URI ...
            while f[1:] and not f[1].endswith("]"):
                del f[1]
            del f[1:2]
        if len(f) >= 4 and f[0] == "deb" and suites_ok(f[2]) and "main" in f[3:]:
            out.append(f"deb {f[1]} {f[2]} main")
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for stanza in open(path).read().split("\n\n"):
        kv = {}
        for line in stanza.splitlines():
            if line.strip().startswith("#") or ":" not in line:
                continue
            k, v = line.split(":", 1)
            kv[k.strip().lower()] = v.split()
        if "deb" not in kv.get("types", []) or "main" not in kv.get("components", []):
            continue
        for uri in kv.get("uris", []):
            for s in kv.get("suites", []):
                if suites_ok(s):
                    out.append(f"deb {uri} {s} main")
if not out:
    sys.exit(f"no Debian {codename} source found in /etc/apt")
print("\n".join(dict.fromkeys(out)))
PY
pkgs=$(sed 's/#.*//' "$here/packages.txt" | tr -s ' \n' ',' | sed 's/^,//; s/,$//')
echo "check-vm: building the guest root (once; cached in $dir)" >&2
mmdebstrap --quiet --variant=minbase --components=main --include="$pkgs" \
	--customize-hook='echo "127.0.0.1 localhost" > "$1/etc/hosts"' \
	--customize-hook='echo xbvm > "$1/etc/hostname"' \
	--customize-hook='printf "virtio_pci\nvirtio_blk\next4\n" >> "$1/etc/initramfs-tools/modules"' \
	--customize-hook='chroot "$1" update-initramfs -u -k all >/dev/null' \
	--customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
	"$VERSION_CODENAME" "$tmp/root" "$tmp/sources.list"
install -m 0755 "$here/stub-init" "$tmp/root/sbin/xb-vm-init"
cp -L "$tmp/root/vmlinuz" "$tmp/vmlinuz"
cp -L "$tmp/root/initrd.img" "$tmp/initrd.img"
# Room for the tests' files; the image is sparse, and QEMU runs it with
# snapshot=on, so the cached copy is never written.
used=$(du -sm "$tmp/root" | cut -f1)
mke2fs -q -t ext4 -L xbroot -d "$tmp/root" "$tmp/root.img" "$((used + 3072))M"
rm -rf "$tmp/root"
rm -rf "$dir"
mkdir -p "$dir"
mv "$tmp/root.img" "$tmp/vmlinuz" "$tmp/initrd.img" "$dir/"
# Older keys are stale: keep only this one.
find "$cache" -mindepth 1 -maxdepth 1 -not -name "$key" -not -name '.build.*' -exec rm -rf {} +
echo "$dir" >&3
