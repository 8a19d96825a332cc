#!/usr/bin/env bash
# Build the Debian package offline from a copy of the work tree (the
# package's clean step would empty ./build), check it with lintian, and put
# the .deb and the lintian report in OUT. Uncommitted files come along.
# usage: scripts/build-deb.sh OUT
set -euo pipefail
out=$(realpath -m "${1:?usage: build-deb.sh OUT}")
src=$(cd "$(dirname "$0")/.." && pwd)
for tool in dpkg-buildpackage dh lintian; do
  command -v "$tool" >/dev/null || { echo "build-deb: $tool is missing; run scripts/deps.sh" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/execbox" "$work/tmp"
# lintian leaves its MLDBM caches (mldbm-elf-*) in TMPDIR: keep them in ours.
export TMPDIR="$work/tmp"
(cd "$src" && git ls-files -z --cached --others --exclude-standard |
   xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' | tar --null -T - -cf -) | tar -xf - -C "$work/execbox"
start=$(date +%s)
(cd "$work/execbox" && dpkg-buildpackage -b -us -uc) > "$work/build.log" 2>&1 || {
  tail -40 "$work/build.log" >&2; echo "build-deb: dpkg-buildpackage failed" >&2; exit 1; }
built=$(date +%s)
mkdir -p "$out"
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
cp "$work/build.log" "$out/build.log"
# Errors and warnings fail; overrides (debian/*.lintian-overrides) say why
# each remaining one stays.
rc=0
lintian --fail-on error,warning --info "$out"/*.changes > "$out/lintian.txt" 2>&1 || rc=$?
cat "$out/lintian.txt"
echo "build-deb: built in $((built - start)) s, lintian in $(($(date +%s) - built)) s; $(cd "$out" && ls ./*.deb | tr '\n' ' ')"
exit $rc
