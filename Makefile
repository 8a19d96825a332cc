# execbox: see README.md. `make` builds, `make check` tests, `make run`
# starts the server, `make bench` measures.

CC ?= gcc
BUILD ?= build
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wformat=2 -Wimplicit-fallthrough -Wvla -Wpointer-arith -Wundef \
        -Wno-missing-field-initializers -Wno-format-truncation
HARDEN := -D_FORTIFY_SOURCE=3 -fstack-protector-strong -fstack-clash-protection -fcf-protection
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu17 $(WARN) $(HARDEN) -Isrc -MMD -MP
LDFLAGS += -Wl,-z,relro,-z,now -Wl,-z,noexecstack

ifeq ($(SANITIZE),1)
  SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  BUILD := build-san
endif

PKGS := jansson libmicrohttpd
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libmicrohttpd is loaded at run time (src/transport/mhd.h): only its headers here.
# zlib decodes gzip uploads (base/gunzip.h).
PKG_LIBS := $(shell pkg-config --libs jansson zlib 2>/dev/null)
MHD_SONAME := $(shell objdump -p $$(pkg-config --variable=libdir libmicrohttpd 2>/dev/null)/libmicrohttpd.so 2>/dev/null | awk '/SONAME/{print $$2}')
CFLAGS += -DXB_MHD_SONAME='"$(or $(MHD_SONAME),libmicrohttpd.so.12)"'
# Signed links use GnuTLS's HMAC, which libmicrohttpd loads (transport/sign.h).
GNUTLS_SONAME := $(shell objdump -p $$(pkg-config --variable=libdir gnutls 2>/dev/null)/libgnutls.so 2>/dev/null | awk '/SONAME/{print $$2}')
CFLAGS += -DXB_GNUTLS_SONAME='"$(or $(GNUTLS_SONAME),libgnutls.so.30)"'
# The egress proxy's resolver, c-ares, is loaded at run time too (net/cares.h).
ARES_SONAME := $(shell objdump -p $$(pkg-config --variable=libdir libcares 2>/dev/null)/libcares.so 2>/dev/null | awk '/SONAME/{print $$2}')
CFLAGS += -DXB_ARES_SONAME='"$(or $(ARES_SONAME),libcares.so.2)"'

# seccomp_policy.c needs libseccomp: it runs at build time, not in execbox.
POLICY_SRC := src/sandbox/seccomp_policy.c
LIB_SRC := $(filter-out $(POLICY_SRC),$(wildcard src/base/*.c src/proto/*.c src/sandbox/*.c src/proc/*.c src/net/*.c \
  src/core/*.c src/ops/*.c src/transport/*.c src/rest/*.c src/plugin/*.c src/mcp/*.c src/judge/*.c \
  src/e2b/*.c src/daemon/*.c))
CLI_SRC := $(wildcard src/cli/*.c)
INIT_SRC := $(wildcard src/init/*.c) src/proto/wire.c src/proto/pseudofs.c src/sandbox/execspec.c src/base/err.c
UNIT_SRC := $(wildcard tests/unit/test_*.c)
# Test-only MCP plug-ins (the conformance fixtures): in execbox-test, never in execbox.
FIXTURE_SRC := $(wildcard tests/fixtures/*.c)

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
INIT_OBJ := $(INIT_SRC:%.c=$(BUILD)/init-obj/%.o)
FIXTURE_OBJ := $(FIXTURE_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

EXECBOX := $(BUILD)/execbox
EXECBOX_TEST := $(BUILD)/execbox-test
INIT := $(BUILD)/execbox-init
PROBE := $(BUILD)/tests/xbprobe

.PHONY: all deps check http-test unit integration cli-test metrics-test logs-test drivers-test clients-test tools-test run bench clean install fuzz fuzz-replay format

all: $(EXECBOX) $(PROBE)

deps:
	@scripts/deps.sh

# Library and CLI objects: PIE, hardened, sanitizers when asked.
$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC $<"; $(CC) $(CFLAGS) $(SAN) $(PKG_CFLAGS) -ffunction-sections -fPIE -c $< -o $@

# The init is static and tiny, built with musl: glibc's start-up probes the
# CPU with cpuid, which traps to the hypervisor on VMs and cost 0.4 ms of
# every sandbox start. Debian's musl-gcc cannot link static PIE, so we
# derive a specs file from its own that can, and let it see the kernel's
# uapi headers through MUSL_INC. No sanitizer runtime here.
MUSL_SPECS_SRC = $(shell sed -n 's/.*-specs "\([^"]*\)".*/\1/p' $$(command -v musl-gcc) 2>/dev/null)
MUSL_SPECS := $(BUILD)/musl-static-pie.specs
MUSL_INC := $(BUILD)/musl-include
INIT_CC = $(CC) -specs=$(MUSL_SPECS)

$(MUSL_SPECS):
	@mkdir -p $(@D)
	@test -n "$(MUSL_SPECS_SRC)" || { echo "musl-gcc not found: run scripts/deps.sh" >&2; exit 1; }
	sed -e 's|%{!shared: \([^ ]*\)/Scrt1.o}|%{static-pie: \1/rcrt1.o} %{!static-pie:%{!shared: \1/Scrt1.o}}|' \
	    -e 's|-dynamic-linker \([^ ]*\) -nostdlib|%{!static-pie:-dynamic-linker \1} -nostdlib %{static-pie:-static -pie --no-dynamic-linker -z text}|' \
	    $(MUSL_SPECS_SRC) > $@

$(MUSL_INC)/.stamp:
	@mkdir -p $(MUSL_INC)
	ln -sfn /usr/include/linux $(MUSL_INC)/linux
	ln -sfn /usr/include/asm-generic $(MUSL_INC)/asm-generic
	ln -sfn /usr/include/$$(gcc -print-multiarch)/asm $(MUSL_INC)/asm
	@touch $@

$(BUILD)/init-obj/%.o: %.c $(MUSL_INC)/.stamp $(MUSL_SPECS)
	@mkdir -p $(@D)
	@echo "  CC $< (init)"; $(INIT_CC) -std=gnu17 $(WARN) -Isrc -isystem $(MUSL_INC) -MMD -MP -Os \
	  -fstack-protector-strong -ffunction-sections -fdata-sections -fPIE -c $< -o $@

$(INIT): $(INIT_OBJ) $(MUSL_SPECS)
	$(INIT_CC) -static-pie -s -Wl,--gc-sections $(LDFLAGS) -o $@ $(INIT_OBJ)

$(BUILD)/gen_seccomp: tools/gen_seccomp.c $(BUILD)/$(POLICY_SRC:.c=.o) $(BUILD)/src/base/err.o
	$(CC) $(CFLAGS) $(SAN) -o $@ $(filter %.c %.o,$^) -lseccomp

$(BUILD)/seccomp-main.bpf $(BUILD)/seccomp-stub.bpf &: $(BUILD)/gen_seccomp
	$(BUILD)/gen_seccomp $(BUILD)/seccomp-main.bpf $(BUILD)/seccomp-stub.bpf

DRIVERS := src/drivers/python_driver.py src/drivers/node_driver.js

$(BUILD)/blobs.o: src/sandbox/blobs.S $(INIT) $(BUILD)/seccomp-main.bpf $(BUILD)/seccomp-stub.bpf $(DRIVERS)
	$(CC) -c -DXB_INIT_PATH='"$(INIT)"' -DXB_SECCOMP_MAIN='"$(BUILD)/seccomp-main.bpf"' \
	  -DXB_SECCOMP_STUB='"$(BUILD)/seccomp-stub.bpf"' -DXB_PYTHON_DRIVER='"src/drivers/python_driver.py"' \
	  -DXB_NODE_DRIVER='"src/drivers/node_driver.js"' $< -o $@

# The init image's identity names its cached copy in the runtime directory.
$(BUILD)/init_hash.c: $(INIT)
	printf 'const char xb_init_hash[] = "%s";\n' "$$(sha256sum $< | cut -c1-16)" > $@

$(BUILD)/init_hash.o: $(BUILD)/init_hash.c
	$(CC) -c $< -o $@

# The commit `execbox --version` names: only this checkout's, never a
# parent directory's (a source package unpacked inside another repository).
GIT_COMMIT := $(shell test -e .git && git describe --always --dirty 2>/dev/null || echo unknown)
$(BUILD)/git_commit.c: FORCE
	@mkdir -p $(@D)
	@s='const char xb_git_commit[] = "$(GIT_COMMIT)";'; [ "$$(cat $@ 2>/dev/null)" = "$$s" ] || echo "$$s" > $@

$(BUILD)/git_commit.o: $(BUILD)/git_commit.c
	$(CC) -c $< -o $@

.PHONY: FORCE
FORCE:

$(EXECBOX): $(CLI_OBJ) $(LIB_OBJ) $(BUILD)/blobs.o $(BUILD)/init_hash.o $(BUILD)/git_commit.o
	$(CC) $(SAN) -pie $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

# The same objects plus the test-only plug-ins; `make mcp-test` runs it.
$(EXECBOX_TEST): $(CLI_OBJ) $(LIB_OBJ) $(FIXTURE_OBJ) $(BUILD)/blobs.o $(BUILD)/init_hash.o $(BUILD)/git_commit.o
	$(CC) $(SAN) -pie $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

# The probe runs inside sandboxes to attack them; static (musl, like the
# init) so it needs nothing there and starts without glibc's cpuid probes.
PROBE_SRC := tests/helper/xbprobe.c tests/helper/xbprobe_attacks.c
$(PROBE): $(PROBE_SRC) tests/helper/xbprobe.h $(MUSL_INC)/.stamp $(MUSL_SPECS)
	@mkdir -p $(@D)
	$(INIT_CC) -std=gnu17 -O2 -Wall -Wextra -Werror -isystem $(MUSL_INC) -static -s -o $@ $(PROBE_SRC)

$(BUILD)/tests/test_%: tests/unit/test_%.c $(LIB_OBJ) $(BUILD)/$(POLICY_SRC:.c=.o) $(BUILD)/blobs.o $(BUILD)/init_hash.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN) $(PKG_CFLAGS) -Wno-missing-prototypes -fPIE -pie -o $@ $(filter %.c %.o,$^) $(PKG_LIBS) -lseccomp -lcriterion

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t --jobs 1; done

# libFuzzer targets, one per parser: `make fuzz` builds them with clang,
# `make fuzz-replay` runs each once over its saved corpus (for `make check`);
# fuzz for real with e.g. $(BUILD)/fuzz/fuzz_wire tests/fuzz/corpus/wire.
FUZZ_CC ?= clang
FUZZ_BIN := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))

$(BUILD)/fuzz/fuzz_wire: tests/fuzz/fuzz_wire.c src/proto/wire.c
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu17 -g -O1 -Wall -Wextra -Werror -Isrc -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -o $@ $(filter %.c,$^)

$(BUILD)/fuzz/fuzz_filec: tests/fuzz/fuzz_filec.c src/proc/filec.c src/proto/wire.c src/base/err.c
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu17 -g -O1 -Wall -Wextra -Werror -Isrc -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -o $@ $(filter %.c,$^)

$(BUILD)/fuzz/fuzz_chunked: tests/fuzz/fuzz_chunked.c src/transport/chunked.c
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu17 -g -O1 -Wall -Wextra -Werror -Isrc -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -o $@ $(filter %.c,$^)

$(BUILD)/fuzz/fuzz_conf: tests/fuzz/fuzz_conf.c src/cli/config.c src/base/err.c
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=gnu17 -g -O1 -Wall -Wextra -Werror -Isrc -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined -o $@ $(filter %.c,$^)

FUZZ_FLAGS := -std=gnu17 -g -O1 -Wall -Wextra -Werror -Wno-missing-field-initializers -Isrc \
  -fsanitize=address,undefined -fno-sanitize-recover=undefined
$(BUILD)/fuzz/fuzz_jsonv: tests/fuzz/fuzz_jsonv.c src/ops/jsonv.c src/proc/env.c src/base/err.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer $(PKG_CFLAGS) -o $@ $(filter %.c,$^) $(PKG_LIBS)

$(BUILD)/fuzz/fuzz_route: tests/fuzz/fuzz_route.c src/transport/route.c src/transport/guard.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer $(PKG_CFLAGS) -o $@ $(filter %.c,$^)

# The session event parser is static: the target includes session_io.c. The
# spawn code in that file is never called there, so what it calls is left
# unresolved (hence no PIE) rather than linking the engine.
$(BUILD)/fuzz/fuzz_session: tests/fuzz/fuzz_session.c src/core/session_io.c src/core/cell_budget.c src/base/buf.c src/base/err.c \
  src/base/fd.c src/base/loop.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -fno-pie -no-pie -Wl,--unresolved-symbols=ignore-in-object-files \
	  $(PKG_CFLAGS) -o $@ $(filter-out src/core/session_io.c,$(filter %.c,$^)) $(PKG_LIBS)

# Targets deep in the daemon (MCP's framing) link the whole library, built
# again with clang and coverage under $(BUILD)/fuzz-obj.
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/fuzz-obj/%.o)
$(BUILD)/fuzz-obj/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC $< (fuzz)"; $(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -MMD -MP $(filter-out -D_FORTIFY_SOURCE%,$(filter -D%,$(CFLAGS))) $(PKG_CFLAGS) \
	  -c $< -o $@

$(BUILD)/fuzz/fuzz_jsonrpc: tests/fuzz/fuzz_jsonrpc.c $(FUZZ_LIB_OBJ) $(BUILD)/blobs.o $(BUILD)/init_hash.o $(BUILD)/git_commit.o
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer $(PKG_CFLAGS) -o $@ $(filter %.c %.o,$^) $(PKG_LIBS)

$(BUILD)/fuzz/fuzz_connect: tests/fuzz/fuzz_connect.c src/e2b/connect.c src/base/buf.c src/base/err.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $(filter %.c,$^)

$(BUILD)/fuzz/fuzz_proxy: tests/fuzz/fuzz_proxy.c src/net/proxy_parse.c src/net/secret.c src/net/policy.c src/net/addr.c \
  src/base/err.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $@ $(filter %.c,$^) -ljansson

fuzz: $(FUZZ_BIN)

fuzz-replay: $(FUZZ_BIN)
	@set -e; for f in $(FUZZ_BIN); do echo "== $$f"; $$f -runs=0 tests/fuzz/corpus/$${f##*/fuzz_}; done

integration: $(EXECBOX) $(PROBE)
	EXECBOX=$(abspath $(EXECBOX)) XBPROBE=$(abspath $(PROBE)) \
	  /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/integration

# The integration suite on the ASan+UBSan build (build-san), for CI. Every
# sanitizer report, from any execbox process (the daemon, a forked child, a
# leak at exit), goes to a file, and any file fails the run. A small
# quarantine: the suites that bound the daemon's RSS measure memory ASan
# would otherwise keep back (256 MiB by default) after it is freed.
SAN_REPORTS := $(abspath build-san/san-reports)
# CI's 90 minutes hold make check, this and check-vm: the suites that feed
# the daemon what clients and sandboxes send (parsers, streams, proxies,
# sessions, files). SAN_TESTS=tests/integration runs the whole suite.
SAN_TESTS ?= $(addprefix tests/integration/,test_server_input.py test_http_manners.py test_browser.py \
  test_faults.py test_session_bounds.py test_sessions.py test_files.py test_ports.py test_network.py \
  test_proc_engine.py test_mcp.py test_server_api.py)
.PHONY: integration-san
integration-san:
	$(MAKE) SANITIZE=1 all
	rm -rf $(SAN_REPORTS) && mkdir -p $(SAN_REPORTS)
	ASAN_OPTIONS=log_path=$(SAN_REPORTS)/asan:quarantine_size_mb=4:thread_local_quarantine_size_kb=64 UBSAN_OPTIONS=log_path=$(SAN_REPORTS)/ubsan:print_stacktrace=1 \
	  EXECBOX=$(abspath build-san/execbox) XBPROBE=$(abspath build-san/tests/xbprobe) \
	  /usr/bin/python3 -m pytest -q -p no:cacheprovider $(SAN_TESTS); rc=$$?; \
	  if [ -n "$$(ls $(SAN_REPORTS))" ]; then cat $(SAN_REPORTS)/*; echo "sanitizer reports above" >&2; exit 1; fi; \
	  exit $$rc

# The command-line conventions alone; `make integration` runs them too.
cli-test: $(EXECBOX) $(PROBE)
	EXECBOX=$(abspath $(EXECBOX)) XBPROBE=$(abspath $(PROBE)) \
	  /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/integration/test_cli_conventions.py

# GET /metrics: names, units, views by token, and `promtool check metrics`.
metrics-test: $(EXECBOX) $(PROBE)
	EXECBOX=$(abspath $(EXECBOX)) XBPROBE=$(abspath $(PROBE)) XB_REQUIRE_PROMTOOL=1 \
	  /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/integration/test_metrics.py

# The access log, the audit log and `execbox logs`; `make integration` runs them too.
logs-test: $(EXECBOX) $(PROBE)
	EXECBOX=$(abspath $(EXECBOX)) XBPROBE=$(abspath $(PROBE)) \
	  /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/integration/test_logs.py

# The session drivers (src/drivers) spoken to directly, without a sandbox.
drivers-test:
	/usr/bin/python3 -m pytest -q -p no:cacheprovider tests/drivers

# The include layering of src/ (tools/layers.txt), and the checker's own tests.
.PHONY: layering layering-test
layering:
	python3 tools/checkdeps.py

layering-test:
	/usr/bin/python3 -m pytest -q -p no:cacheprovider tests/layering

# Real MCP clients (the conformance suites, the inspector, the SDK); their
# npm packages are cached outside the repository (tests/mcp/run.sh).
mcp-test: $(EXECBOX_TEST)
	EXECBOX=$(abspath $(EXECBOX_TEST)) tests/mcp/run.sh

# Piston's and Judge0's APIs (src/judge) with their documented request
# shapes, and the npm piston-client (cached like mcp-test's packages).
.PHONY: judge-test
judge-test: $(EXECBOX)
	EXECBOX=$(abspath $(EXECBOX)) /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/judge

# The unmodified E2B SDKs (pinned e2b and @e2b/code-interpreter from npm,
# cached outside the repository) and the E2B wire against the real server.
.PHONY: e2b-test
e2b-test: $(EXECBOX)
	EXECBOX=$(abspath $(EXECBOX)) /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/e2b

# The client libraries (clients/) and the agent example (examples/codeact)
# against the real server; the TypeScript client on mcp-test's Node 22.
clients-test: $(EXECBOX)
	EXECBOX=$(abspath $(EXECBOX)) /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/clients
	EXECBOX=$(abspath $(EXECBOX)) tests/clients/run_node.sh

# POST /v1/tools/{name} in every framework's shape, and the exported tool
# formats against the openai and @anthropic-ai/sdk types (tsc; npm packages
# cached outside the repository, tests/tools/tsc_check.sh).
tools-test: $(EXECBOX)
	EXECBOX=$(abspath $(EXECBOX)) /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/tools

# HTTP manners with Node fetch, and the OpenAPI document through its
# validators (tests/http/run.sh; npm packages cached like mcp-test's).
http-test: $(EXECBOX)
	EXECBOX=$(abspath $(EXECBOX)) tests/http/run.sh

check: deps
	$(MAKE) layering layering-test
	$(MAKE) all
	$(MAKE) unit
	$(MAKE) fuzz-replay
	$(MAKE) integration
	$(MAKE) metrics-test
	$(MAKE) logs-test
	$(MAKE) mcp-test
	$(MAKE) drivers-test
	$(MAKE) clients-test
	$(MAKE) tools-test
	$(MAKE) judge-test
	$(MAKE) e2b-test
	$(MAKE) packaging-test
	$(MAKE) http-test

# Debian's 6.1 kernel on pure cgroup v2 in QEMU (tools/vm/): the unit tests
# and the integration suite (a named subset under TCG) on this build. Its
# self-test first: a deliberately failing guest test must fail it.
.PHONY: check-vm check-vm-selftest
check-vm: all $(UNIT_BIN)
	tools/vm/selftest.sh
	tools/vm/run.sh

check-vm-selftest: all
	tools/vm/selftest.sh

# The server in the foreground; Ctrl-C stops it and removes every sandbox.
LISTEN ?= 127.0.0.1:8000
STATE_DIR ?= /var/lib/execbox
run: deps
	$(MAKE) all
	$(EXECBOX) serve --listen $(LISTEN) --state-dir $(STATE_DIR)

bench: deps
	$(MAKE) all $(BUILD)/bench/bench_run $(BUILD)/bench/bench_server
	$(BUILD)/bench/bench_run $(EXECBOX)
	$(BUILD)/bench/bench_server $(EXECBOX)
	python3 bench/net_bench.py $(EXECBOX)
	python3 bench/pkgcache_bench.py $(EXECBOX)
	/usr/bin/python3 bench/e2b_bench.py $(EXECBOX)

$(BUILD)/bench/%: bench/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $<

# bench_server is bench/bench_server.c (its parts, in order) and the files
# of bench/server/ (its client, utilities and each part).
BENCH_SERVER_OBJ := $(patsubst %.c,$(BUILD)/%.o,bench/bench_server.c $(wildcard bench/server/*.c))
$(BUILD)/bench/bench_server: $(BENCH_SERVER_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN) -o $@ $(filter %.o,$^)

# The binary, the systemd unit (pointing at BINDIR), the man pages, the
# bash completion and the example config; DESTDIR and the directories
# above are respected. The config is /etc/execbox/execbox.conf whatever
# PREFIX is (the binary looks there); one already there is kept, and the
# example goes next to it as execbox.conf.example.
install: $(EXECBOX)
	install -D -m 0755 $(EXECBOX) $(DESTDIR)$(BINDIR)/execbox
	install -d $(DESTDIR)$(UNITDIR)
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/execbox.service.in > $(DESTDIR)$(UNITDIR)/execbox.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/execbox.service
	install -D -m 0644 man/execbox.1 $(DESTDIR)$(MANDIR)/man1/execbox.1
	install -D -m 0644 man/execbox-serve.8 $(DESTDIR)$(MANDIR)/man8/execbox-serve.8
	install -D -m 0644 completion/execbox.bash $(DESTDIR)$(BASHCOMPDIR)/execbox
	install -d $(DESTDIR)/etc/execbox
	conf=$(DESTDIR)/etc/execbox/execbox.conf; [ ! -e $$conf ] || conf=$$conf.example; \
	  install -m 0644 etc/execbox.conf $$conf

# The Debian package, built offline from a copy of the tree (debian/rules
# cleans), then checked by lintian; the .deb lands in $(BUILD)/deb.
.PHONY: deb packaging-test
deb:
	scripts/build-deb.sh $(BUILD)/deb

# The unit, man pages, completion and the sd_notify protocol (and `make deb`
# with XB_TEST_DEB=1, or when dpkg-buildpackage and lintian are installed).
packaging-test: $(EXECBOX)
	EXECBOX=$(abspath $(EXECBOX)) /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/packaging

# clang-format the lines changed since FORMAT_BASE (default: what is not
# committed yet; FORMAT_BASE=main for a whole branch), so lines nobody
# touched keep their layout. .clang-format needs clang-format 19 (Debian 12:
# apt-get install clang-format-19); data tables are marked clang-format off.
CLANG_FORMAT ?= clang-format-19
GIT_CLANG_FORMAT ?= git-$(CLANG_FORMAT)
FORMAT_BASE ?= HEAD
format:
	@command -v $(GIT_CLANG_FORMAT) >/dev/null || \
	  { echo "format: $(GIT_CLANG_FORMAT) not found: apt-get install clang-format-19" >&2; exit 1; }
	$(GIT_CLANG_FORMAT) --force --binary $$(command -v $(CLANG_FORMAT)) --extensions c,h $(FORMAT_BASE) -- src tests tools bench \
	  || [ $$? -eq 1 ]   # 1: it changed files

clean:
	rm -rf build build-san

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
