#!/usr/bin/env bash
# Install the Debian 12 packages execbox builds, tests and benchmarks with.
# Quick when everything is present: it asks dpkg first and only then apt.
set -euo pipefail

PKGS=(
  build-essential pkg-config musl-tools # compiler, linker; musl for the static init
  libseccomp-dev libjansson-dev libmicrohttpd-dev   # seccomp filters, JSON, HTTP
  zlib1g-dev                            # gzip uploads (Content-Encoding: gzip)
  libc-ares-dev                         # the egress proxy's resolver (loaded at run time)
  libcurl4-openssl-dev                  # `execbox mcp --server` (loaded at run time)
  libcriterion-dev                      # unit tests
  clang libclang-rt-14-dev              # libFuzzer targets (make fuzz, fuzz-replay)
  python3 python3-pytest python3-requests           # integration tests
  bubblewrap                            # the benchmark's peer
  iproute2 procps                       # tests inspect namespaces and processes
  python3-numpy python3-matplotlib python3-pandas python3-ipykernel  # the sandbox's Python
  r-cran-irkernel                       # a Jupyter kernel that is not Python (tests)
  debhelper lintian                     # make deb, and its test (tests/packaging)
  man-db mandoc bash-completion systemd # man pages, completion and unit checks
  prometheus                            # promtool check metrics (tests/integration/test_metrics.py)
  btrfs-progs                           # mkfs.btrfs: the layer store's image (serve --layers disk)
  dpkg-dev python3-pip                  # tests/integration/test_layers.py: a local apt repository, pip
  mmdebstrap                            # templates "from": "debian:SUITE" (a clean Debian root)
  umoci                                 # templates imported from OCI image archives
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# JavaScript sessions need node; the MCP clients need npm. Any install will
# do (NodeSource's nodejs carries npm, and conflicts with Debian's npm).
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
