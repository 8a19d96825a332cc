#!/usr/bin/env bash
# What `make check-vm` needs on the host, from Debian: QEMU and mmdebstrap
# (the guest's kernel and root are Debian packages too; tools/vm/image.sh).
set -euo pipefail
missing=()
for p in qemu-system-x86 mmdebstrap e2fsprogs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "check-vm deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
