# smcproxy: one Makefile, pkg-config for every library.
# make | make deps | make check-units | make check | make demo | make bench | make install

PREFIX     ?= /usr/local
SBINDIR    ?= $(PREFIX)/sbin
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
UNITDIR    ?= /lib/systemd/system
DESTDIR    ?=

CC      ?= cc
B       ?= build
PKGS     = libuv jansson libsystemd libibverbs librdmacm libcrypto libmicrohttpd libbpf
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo 0.1)

# A missing library stops the build here, naming its .pc package, rather
# than as a compiler error about a header far below. Goals that build
# nothing (or run make deps first and build in a sub-make) go without.
NOLIB_GOALS := deps clean uninstall lint-man check demo check-rdma-ready
ifneq ($(filter-out $(NOLIB_GOALS),$(or $(MAKECMDGOALS),all)),)
ifeq ($(shell command -v pkg-config),)
$(error pkg-config is not installed: run `make deps` (contrib/install-deps))
endif
PKG_MISSING := $(strip $(foreach p,$(PKGS),$(if $(shell pkg-config --exists $(p) && echo y),,$(p))))
ifneq ($(PKG_MISSING),)
$(error pkg-config finds no $(PKG_MISSING) (.pc): run `make deps` (contrib/install-deps), or set PKG_CONFIG_PATH)
endif
endif

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CTL_LIBS   := $(shell pkg-config --libs jansson 2>/dev/null)
CMOCKA_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null)

# WERROR=1 (CI: .ci/run) turns every warning into an error.
WERROR   ?= 0
OPT      ?= -O2
CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Wshadow -Wvla -Wno-unused-parameter -D_GNU_SOURCE \
	   -fno-strict-aliasing -Iconfig -Iproxy -Idaemon -I$(B) $(PKG_CFLAGS)
ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif
LDLIBS  += $(PKG_LIBS) -lpthread

# Everything below daemon/ is a library: proxy/ and config/ never log.
# BPF programs (NAME.bpf.c) are built by clang for the kernel, not linked.
BPF_SRC    := $(shell find proxy -name '*.bpf.c' | sort)
LIB_SRC    := $(wildcard config/*.c) $(filter-out $(BPF_SRC),$(shell find proxy -name '*.c' | sort))
LIB_OBJ    := $(LIB_SRC:%.c=$(B)/%.o)
# daemon/ctl/ is smcproxyctl: its main and the control protocol's codec and
# renderers, which the daemon links too (it speaks the same protocol).
CTLLIB_SRC := $(filter-out daemon/ctl/smcproxyctl.c,$(wildcard daemon/ctl/*.c))
CTLLIB_OBJ := $(CTLLIB_SRC:%.c=$(B)/%.o)
CFG_OBJ    := $(patsubst %.c,$(B)/%.o,$(wildcard config/*.c))
DAEMON_SRC := $(wildcard daemon/*.c)
DAEMON_OBJ := $(DAEMON_SRC:%.c=$(B)/%.o)

UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
# The helpers unit tests link (unit_filter, fake_transport, ...): named
# here, so that make keeps them instead of deleting them as intermediate
# files and relinking every unit test on the next run.
UNIT_HELPER_OBJ := $(patsubst tests/unit/%.c,$(B)/tests/unit/%.o,\
		   $(filter-out $(UNIT_SRC),$(wildcard tests/unit/*.c)))
# tests/tools/peer_*.c: what the hostile peers share, not tools themselves.
PEER_SRC   := $(wildcard tests/tools/peer_*.c)
PEER_OBJ   := $(PEER_SRC:%.c=$(B)/%.o)
TOOL_SRC   := $(filter-out $(PEER_SRC),$(wildcard tests/tools/*.c))
TOOL_BIN   := $(TOOL_SRC:tests/tools/%.c=$(B)/tools/%)
FUZZ_SRC   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_REPLAY := $(FUZZ_SRC:tests/fuzz/%.c=$(B)/fuzz/%-replay)

all: $(B)/smcproxyd $(B)/smcproxyctl

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

# The version in a header rewritten only when it changes: the objects that
# print it rebuild then, and only they (a -D flag would leave them stale).
$(B)/version.h: FORCE
	@mkdir -p $(B)
	@v='#define SMCPROXY_VERSION "$(VERSION)"'; \
	  [ "$$(cat $@ 2>/dev/null)" = "$$v" ] || echo "$$v" > $@
$(B)/daemon/main.o $(B)/daemon/ctl_cmds.o $(B)/daemon/ctl/smcproxyctl.o: $(B)/version.h
FORCE:

# The intercept programs: compiled for the BPF target against the UAPI
# headers only (no vmlinux.h, no BTF of the running kernel), then embedded
# in a libbpf skeleton header that the loader (intercept.c) includes, so
# the daemon carries its programs and needs no file at run time. The
# multiarch include folder has <asm/types.h>, which -target bpf does not
# look in by itself.
BPF_CLANG ?= clang
# Debian installs bpftool in /usr/sbin, which a user's PATH may lack.
BPFTOOL   ?= $(or $(shell command -v bpftool),/usr/sbin/bpftool)
# Missing tools stop the build here, by name, as a missing library does.
ifneq ($(filter-out $(NOLIB_GOALS),$(or $(MAKECMDGOALS),all)),)
ifeq ($(shell command -v $(BPF_CLANG)),)
$(error $(BPF_CLANG) is not installed (it builds the eBPF intercept): run `make deps` (contrib/install-deps))
endif
ifeq ($(shell command -v $(BPFTOOL)),)
$(error $(BPFTOOL) is not installed (bpftool gen skeleton): run `make deps` (contrib/install-deps))
endif
endif
BPF_CFLAGS = -O2 -g -target bpf -Wall -Werror -I/usr/include/$(shell $(CC) -dumpmachine)
$(B)/%.bpf.o: %.bpf.c proxy/intercept/maps-t.h
	@mkdir -p $(dir $@)
	$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $@
$(B)/proxy/intercept/intercept.skel.h: $(B)/proxy/intercept/intercept.bpf.o
	$(BPFTOOL) gen skeleton $< name intercept_bpf > $@.tmp && mv $@.tmp $@
$(B)/proxy/intercept/intercept.o $(B)/proxy/intercept/bypass.o: $(B)/proxy/intercept/intercept.skel.h

$(B)/libsmcproxy.a: $(LIB_OBJ) $(CTLLIB_OBJ)
	$(AR) rcs $@ $^

$(B)/smcproxyd: $(DAEMON_OBJ) $(B)/libsmcproxy.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The client reads a config (for the stats socket's path) and speaks the
# control protocol: config/ and jansson, none of the data plane's libraries.
$(B)/smcproxyctl: $(B)/daemon/ctl/smcproxyctl.o $(CTLLIB_OBJ) $(CFG_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(CTL_LIBS)

# Unit tests: one cmocka binary per module. A test may list the library
# symbols it wraps in tests/unit/test_X.wrap (one symbol per line), and
# the helpers it links in tests/unit/test_X.helpers (one name per line:
# tests/unit/NAME.c, not a test itself, such as fake_transport). Every
# test links unit_filter (UNIT_TEST=PATTERN runs only the matching cases).
unit_helpers = $(patsubst %,$(B)/tests/unit/%.o,unit_filter $(shell cat tests/unit/$(1).helpers 2>/dev/null))
.SECONDEXPANSION:
$(B)/tests/%: tests/unit/%.c $$(call unit_helpers,$$*) $(B)/libsmcproxy.a $(DAEMON_OBJ)
	@mkdir -p $(dir $@)
	@[ -n "$(CMOCKA_LIBS)" ] || { echo "pkg-config finds no cmocka (.pc): run \`make deps\`" >&2; exit 1; }
	$(CC) $(CFLAGS) -Itests/unit -MMD -MP $(LDFLAGS) -o $@ $< $(call unit_helpers,$*) \
	  $(patsubst %,-Wl$(comma)--wrap=%,$(shell cat tests/unit/$*.wrap 2>/dev/null)) \
	  $(filter-out $(B)/daemon/main.o,$(DAEMON_OBJ)) $(B)/libsmcproxy.a $(LDLIBS) $(CMOCKA_LIBS)
comma := ,

$(B)/tools/%: tests/tools/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LDLIBS) -lm

# ctsrc asks conntrack with the daemon's own code (origdst_src()).
$(B)/tools/ctsrc: tests/tools/ctsrc.c $(B)/libsmcproxy.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(B)/libsmcproxy.a $(LDLIBS)

# smcpeer (over shm) and rdmapeer (over rdma, for the rdma guest tests)
# speak the wire protocol with the daemon's own codecs, and share their
# handshake client (peer_hs.c), link messages (peer_msg.c) and command
# line (peer_util.c).
$(B)/tools/smcpeer $(B)/tools/rdmapeer: $(B)/tools/%: tests/tools/%.c $(PEER_OBJ) $(B)/libsmcproxy.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(PEER_OBJ) $(B)/libsmcproxy.a $(LDLIBS)

# Fuzz targets: replayed over their corpus by a plain driver in make check,
# fuzzed for real with clang's libFuzzer by make fuzz.
$(B)/fuzz/%-replay: tests/fuzz/%.c tests/fuzz/replay.c $(B)/libsmcproxy.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< tests/fuzz/replay.c $(B)/libsmcproxy.a $(LDLIBS)

FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
fuzz:
	$(MAKE) B=build-fuzz CC=$(FUZZ_CC) OPT="-O1 -fsanitize=fuzzer-no-link,address,undefined" build-fuzz/libsmcproxy.a
	@set -e; for f in $(FUZZ_SRC); do n=$$(basename $$f .c); \
	  $(FUZZ_CC) $(CFLAGS) -O1 -fsanitize=fuzzer,address,undefined -o build-fuzz/$$n $$f build-fuzz/libsmcproxy.a $(LDLIBS); \
	  mkdir -p build-fuzz/corpus-$$n; \
	  build-fuzz/$$n -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=build-fuzz/ \
	    build-fuzz/corpus-$$n tests/fuzz/corpus/$$n; done

# The bench's LD_PRELOAD shim that puts unmodified TCP programs on the
# kernel's AF_SMC, to measure kernel SMC-R beside smcproxy.
$(B)/bench/smc_preload.so: tests/bench/smc_preload.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -shared $(LDFLAGS) -o $@ $< -ldl

tools: $(TOOL_BIN) $(B)/bench/smc_preload.so
units: $(UNIT_BIN) $(UNIT_HELPER_OBJ)

deps:
	@contrib/install-deps

check: deps
ifneq ($(RDMA),0)
	@$(MAKE) --no-print-directory check-rdma-ready
endif
	$(MAKE) check-units
	$(MAKE) all tools
	$(MAKE) check-asan
	$(MAKE) check-tsan
	tests/integration/run $(B)
ifeq ($(RDMA),0)
	@echo "************************************************************************"
	@echo "SKIPPED: rdma guest tests (RDMA=0): the rdma transport was NOT tested,"
	@echo "nor the unit under a real systemd (check-systemd boots the same guest)"
	@echo "************************************************************************"
else
	$(MAKE) check-rdma
	$(MAKE) check-systemd
endif

# The contributor's fast loop: the layer and mark checks, the unit tests and the fuzz
# corpora replayed. No root, no package installed, no network namespace;
# seconds once built (doc/testing.md).
check-units:
	tests/lint/check-layers
	tests/lint/check-marks
	$(MAKE) units $(FUZZ_REPLAY)
	tests/run-units $(B)
	tests/fuzz/run-replay $(B)

# The layering of the tree by its #include lines (doc/architecture.md):
# nothing outside a transport's folder names it but the registry's table.
check-layers:
	tests/lint/check-layers

# The same unit tests and fuzz corpora under AddressSanitizer and UBSan.
check-asan:
	$(MAKE) B=build-asan OPT="-O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" all units $(FUZZ_SRC:tests/fuzz/%.c=build-asan/fuzz/%-replay)
	ASAN_OPTIONS=detect_leaks=1 tests/run-units build-asan
	ASAN_OPTIONS=detect_leaks=1 tests/fuzz/run-replay build-asan

# ThreadSanitizer: the unit tests and the integration tests whose daemons
# run two workers (lib.sh's default config; t_shm_close and t_emfile run one
# worker in each of two daemons or beside the main thread's stats socket).
# A race fails the run: halt_on_error stops the process with status 66, and
# a report file left in build-tsan/tsan/ fails the target even when the test
# around the process did not notice. gcc, because its -Wno-tsan silences the
# warning that TSan does not model the fences of the shm doorbell (shared
# with another process, which TSan cannot see anyway). About 2 minutes.
TSAN_CC    ?= gcc
TSAN_IT    ?= t_workers t_ctl_views t_reload t_sigterm_drain t_shm_close \
	      t_ctl_fail_link t_emfile t_shm_peer_kill t_socket_activation
TSAN_OPTS  ?= halt_on_error=1 exitcode=66 log_path=$(CURDIR)/build-tsan/tsan/report
check-tsan:
	$(MAKE) B=build-tsan CC=$(TSAN_CC) OPT="-O1 -fsanitize=thread -fno-omit-frame-pointer -Wno-tsan" all units tools
	@rm -rf build-tsan/tsan && mkdir -p build-tsan/tsan
	@export TSAN_OPTIONS="$(TSAN_OPTS)"; rc=0; \
	  tests/run-units build-tsan || rc=1; \
	  tests/integration/run build-tsan $(TSAN_IT) || rc=1; \
	  if ls build-tsan/tsan/report.* >/dev/null 2>&1; then \
	    cat build-tsan/tsan/report.*; \
	    echo "check-tsan: ThreadSanitizer reported the races above (build-tsan/tsan/)"; rc=1; \
	  fi; exit $$rc

check-integration: all tools
	tests/integration/run $(B)

# The rdma transport over real verbs: Soft-RoCE (rdma_rxe) in a QEMU guest
# that boots Debian's kernel and runs every tests/rdma/t_*.sh in one boot;
# then, between two hosts (check-rdma-pair), every tests/rdma/pair/t_*.sh
# in one boot of two guests joined by a wire, a daemon in each. Both run
# even when the first fails, so that one run says everything.
# RDMA=0 make check skips them, loudly; a machine that cannot boot the guest
# fails make check rather than pass it untested.
# make check asks first, so that a machine without the guest's packages
# learns it before the other suites ran.
check-rdma: all tools check-rdma-ready
	rc=0; tests/rdma/lab tests/rdma/run $(B) || rc=1; \
	  tests/rdma/lab --pair tests/rdma/pair/run $(B) -- tests/rdma/pair/run $(B) || rc=1; \
	  exit $$rc

check-rdma-pair: all tools check-rdma-ready
	tests/rdma/lab --pair tests/rdma/pair/run $(B) -- tests/rdma/pair/run $(B)

check-rdma-ready:
	@tests/rdma/lab --check || { echo "check-rdma: the rdma guest tests cannot run here:" \
	  "run contrib/install-deps, or RDMA=0 make check to skip the rdma tests explicitly"; exit 1; }

# The Debian package's unit under a real systemd: the guest of tests/rdma/lab
# booted with systemd as PID 1 on a throw-away overlay of this machine's /,
# the .deb (built once per source tree) installed in it, and
# tests/systemd/run drives the unit with systemctl (doc/testing-systemd.md).
# About 3.5 minutes on a busy machine with a cached package.
check-systemd: all tools check-rdma-ready
	deb=$$(tests/systemd/build-deb $(B)) && tests/rdma/lab --systemd tests/systemd/run $(B) "$$deb"

demo: deps
	$(MAKE) all tools
	@contrib/demo $(B)

bench: all tools
	tests/bench/run $(B)

# The rdma link group against direct TCP and the TCP relay, and autocork,
# rdma.inline and cq.pool on and off, in one boot of the Soft-RoCE guest
# (tests/rdma/lab): ratios only, about 7 minutes; knobs at the top of
# tests/bench/rdma.
.PHONY: bench-rdma
bench-rdma: all tools
	tests/bench/rdma $(B)

# smcproxy over rdma between two Soft-RoCE guests (tests/rdma/lab --pair)
# against direct TCP and kernel SMC-R: 64 B round trip, bulk, small writes
# with autocork on and off, 100 flows with cq.pool 1 and 2, Redis, and the
# daemons' context switches and syscalls per round trip; ratios only, about
# 6 minutes; knobs at the top of tests/bench/rdma-pair.
.PHONY: bench-rdma-pair
bench-rdma-pair: all tools
	tests/bench/rdma-pair $(B)

install: all
	install -D -m 0755 $(B)/smcproxyd $(DESTDIR)$(SBINDIR)/smcproxyd
	install -D -m 0755 $(B)/smcproxyctl $(DESTDIR)$(BINDIR)/smcproxyctl
	install -D -m 0755 contrib/smcproxy-iptables $(DESTDIR)$(SBINDIR)/smcproxy-iptables
	install -D -m 0644 systemd/smcproxyd.service $(DESTDIR)$(UNITDIR)/smcproxyd.service
	sed -i 's|/usr/local/sbin|$(SBINDIR)|g' $(DESTDIR)$(UNITDIR)/smcproxyd.service
	install -D -m 0644 systemd/smcproxyd.socket $(DESTDIR)$(UNITDIR)/smcproxyd.socket
	install -D -m 0644 man/smcproxyd.8 $(DESTDIR)$(MANDIR)/man8/smcproxyd.8
	install -D -m 0644 man/smcproxyctl.8 $(DESTDIR)$(MANDIR)/man8/smcproxyctl.8
	install -D -m 0644 man/smcproxy-iptables.8 $(DESTDIR)$(MANDIR)/man8/smcproxy-iptables.8
	install -D -m 0644 man/smcproxyd.json.5 $(DESTDIR)$(MANDIR)/man5/smcproxyd.json.5
	install -D -m 0644 man/smcproxy-protocol.7 $(DESTDIR)$(MANDIR)/man7/smcproxy-protocol.7
	install -d $(DESTDIR)$(SYSCONFDIR)/smcproxy
	[ -e $(DESTDIR)$(SYSCONFDIR)/smcproxy/smcproxyd.json ] || \
	  install -m 0644 contrib/smcproxyd.json $(DESTDIR)$(SYSCONFDIR)/smcproxy/smcproxyd.json
	@echo "smcproxy: so that servers on this host see the clients' own addresses on the"
	@echo "  flows peers open, run 'smcproxy-iptables route add' (smcproxyd(8), \"The client's address\")"

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/smcproxyd $(DESTDIR)$(BINDIR)/smcproxyctl \
	  $(DESTDIR)$(SBINDIR)/smcproxy-iptables $(DESTDIR)$(UNITDIR)/smcproxyd.service \
	  $(DESTDIR)$(UNITDIR)/smcproxyd.socket \
	  $(DESTDIR)$(MANDIR)/man8/smcproxyd.8 $(DESTDIR)$(MANDIR)/man8/smcproxyctl.8 \
	  $(DESTDIR)$(MANDIR)/man8/smcproxy-iptables.8 \
	  $(DESTDIR)$(MANDIR)/man5/smcproxyd.json.5 \
	  $(DESTDIR)$(MANDIR)/man7/smcproxy-protocol.7

lint-man:
	mandoc -Tlint -Wwarning man/*.[0-9]

clean:
	rm -rf build build-asan build-tsan build-fuzz

.PHONY: all deps check check-units check-layers check-asan check-tsan check-integration check-rdma check-rdma-pair check-rdma-ready check-systemd demo bench install uninstall clean fuzz tools units lint-man
-include $(shell find $(B) -name '*.d' 2>/dev/null)
