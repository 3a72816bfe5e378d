# SPDX-License-Identifier: GPL-2.0-only
#
# One non-recursive Makefile for the whole tree; the parts list is Kbuild.
#
#   make            build everything into $(O) (default: build/)
#   make run        build, then run moatd on this machine's cgroups
#   make bench      build the benchmarks' tools and BPF probes (tools/bench)
#   make check      build, then run every test, here and under QEMU
#   make sim        build, then the closed-loop simulator at length
#   make vmtest     build, then run the tests on cgroup v2 under QEMU
#   make install    install into $(DESTDIR)$(PREFIX) (PREFIX=/usr: Debian's places)
#   make V=1        show the commands
#   make O=dir      build somewhere else

O		?= build
PREFIX		?= /usr/local
DESTDIR		?=
VMLINUX_BTF	?= /sys/kernel/btf/vmlinux
CC		?= cc
CLANG		?= clang
# DWARF is most of a BPF object (BTF keeps the types and line info the
# kernel uses); moatd embeds its objects, and libbpf reads them at load.
LLVM_STRIP	?= llvm-strip
BPFTOOL		?= bpftool
PKG_CONFIG	?= pkg-config
RST2MAN		?= rst2man
SYSCONFDIR	?= /etc
SBINDIR		?= $(PREFIX)/sbin
MANDIR		?= $(PREFIX)/share/man
UNITDIR		?= $(PREFIX)/lib/systemd/system
COMPLETIONDIR	?= $(PREFIX)/share/bash-completion/completions
DATADIR		?= $(PREFIX)/share/moat
DOCDIR		?= $(PREFIX)/share/doc/moat

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' '$(1)' '$(2)';
endif

include Kbuild

ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' \
	-e 's/ppc64le/powerpc/' -e 's/s390x/s390/' -e 's/riscv64/riscv/')

# Userspace packages, found by pkg-config.  Recursive (=) on purpose: they
# are expanded when a recipe runs, after tools/deps.sh has installed them.
USER_PKGS	:= libbpf libelf zlib json-c libmicrohttpd gnutls
PKG_CFLAGS	= $(shell $(PKG_CONFIG) --cflags $(USER_PKGS))
PKG_LIBS	= $(shell $(PKG_CONFIG) --libs $(USER_PKGS)) -lm

WARNINGS	:= -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
		   -Wmissing-prototypes -Wno-unused-parameter -Wformat=2
USER_CFLAGS	= -std=gnu11 -O2 -g $(WARNINGS) -D_GNU_SOURCE \
		  -I userspace/lib -I bpf -I $(O)/bpf $(PKG_CFLAGS) \
		  -MMD -MP $(CFLAGS)
USER_LDFLAGS	= $(LDFLAGS)

# SANITIZE=1: AddressSanitizer and UndefinedBehaviorSanitizer, any report
# fatal, and libFuzzer's coverage (clang: make san builds so in
# $(O)/san, for make check's sanitizer and fuzzing stages).
ifeq ($(SANITIZE),1)
SAN_FLAGS	:= -fsanitize=address,undefined -fno-sanitize-recover=all \
		   -fno-omit-frame-pointer -fsanitize=fuzzer-no-link
USER_CFLAGS	+= $(SAN_FLAGS)
USER_LDFLAGS	+= $(SAN_FLAGS)
endif

BPF_CFLAGS	:= -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
		   -I $(O)/bpf -I bpf

DEPS_STAMP	:= $(O)/.deps-ok
VMLINUX_H	:= $(O)/bpf/vmlinux.h
BPF_OBJS	:= $(addprefix $(O)/bpf/,$(bpf-y))
SKELS		:= $(BPF_OBJS:.bpf.o=.skel.h)
LIBMOAT		:= $(O)/libmoat.a
LIBMOAT_OBJS	:= $(addprefix $(O)/,$(libmoat-y))
PROGS		:= $(addprefix $(O)/,$(progs-y))
BENCH		:= $(addprefix $(O)/,$(bench-y))
BENCH_BPF_OBJS	:= $(addprefix $(O)/bench/,$(bench-bpf-y))
BENCH_SKELS	:= $(BENCH_BPF_OBJS:.bpf.o=.skel.h)
BENCH_OBJS	:= $(foreach p,$(bench-y),$(addprefix $(O)/,$($(p)-y)))
SELFTESTS	:= $(O)/selftests/moat-selftests
TESTPROGS	:= $(addprefix $(O)/selftests/,$(testprogs-y))
TESTLIBS	:= $(addprefix $(O)/selftests/,$(testlibs-y))
SELFTEST_OBJS	:= $(addprefix $(O)/,$(selftests-y))
FUZZERS		:= $(addprefix $(O)/fuzz/,$(fuzz-y))
MANPAGES	:= $(patsubst Documentation/man/%.rst,$(O)/man/%,$(wildcard Documentation/man/*.rst))
UNIT		:= $(O)/dist/moatd.service
USER_OBJS	:= $(LIBMOAT_OBJS) $(SELFTEST_OBJS) \
		   $(foreach p,$(progs-y) $(bench-y) $(testprogs-y) $(fuzz-y),$(addprefix $(O)/,$($(p)-y)))

.DELETE_ON_ERROR:
# Keep the BPF objects and skeletons: they are outputs, not intermediates.
.SECONDARY: $(BPF_OBJS) $(SKELS) $(BENCH_BPF_OBJS) $(BENCH_SKELS)
.PHONY: all run bench check sim vmtest nodetest install clean deps san fuzzers fuzz image

all: $(PROGS) $(SELFTESTS) $(TESTPROGS) $(TESTLIBS) $(MANPAGES) $(UNIT)

# The benchmarks' own: a build host that lacks what a probe reads still
# builds moat.
bench: $(BENCH)

# Man pages from reStructuredText.  Docutils 0.19's rst2man puts .sp
# right after .SH and writes literal blocks in font C, which mandoc -T
# lint reports: both are taken out.
$(O)/man/%: Documentation/man/%.rst | $(DEPS_STAMP)
	$(call msg,RST2MAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(RST2MAN) --no-datestamp --no-generator $< | \
		sed -e '/^\.S[HS] /{n;/^\.sp$$/d;}' -e 's/^\.ft C$$/.ft CW/' > $@

# The systemd unit, for the checks (make install writes its own, for the
# SBINDIR of the install, which may not be the build's).
$(UNIT): dist/systemd/moatd.service.in
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)sed 's|@SBINDIR@|$(SBINDIR)|g' $< > $@

# A fresh machine has nothing: install what is missing, once per build dir.
$(DEPS_STAMP): tools/deps.sh
	$(Q)mkdir -p $(@D)
	$(Q)tools/deps.sh
	$(Q)touch $@

deps: $(DEPS_STAMP)

$(VMLINUX_H): | $(DEPS_STAMP)
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)if [ ! -r $(VMLINUX_BTF) ]; then \
		echo "error: no kernel BTF at $(VMLINUX_BTF) (CONFIG_DEBUG_INFO_BTF=y is needed; set VMLINUX_BTF=path)" >&2; \
		exit 1; fi
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@

$(O)/bpf/%.bpf.o: bpf/%.bpf.c $(VMLINUX_H) $(wildcard bpf/*.h) | $(DEPS_STAMP)
	$(call msg,CLANG,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(O)/bpf/%.skel.h: $(O)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$(notdir $*)) > $@

# The benchmarks' probes; rqlat_parts.bpf.c is bpf/rqlat.bpf.c cut.
$(O)/bench/%.bpf.o: tools/bench/%.bpf.c $(VMLINUX_H) $(wildcard bpf/*.h tools/bench/*.h) | $(DEPS_STAMP)
	$(call msg,CLANG,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -I tools/bench -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(O)/bench/rqlat_parts.bpf.o: bpf/rqlat.bpf.c

$(O)/bench/%.skel.h: $(O)/bench/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$(notdir $*)) > $@

$(BENCH_OBJS): USER_CFLAGS += -I $(O)/bench -I tools/bench
$(BENCH_OBJS): | $(BENCH_SKELS)

# Userspace objects may include any skeleton.
$(O)/%.o: %.c | $(SKELS) $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(USER_CFLAGS) -c $< -o $@

$(LIBMOAT): $(LIBMOAT_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

define prog_rule
$(O)/$(1): $(addprefix $(O)/,$($(1)-y)) $(LIBMOAT)
	$$(call msg,LINK,$$@)
	$$(Q)$$(CC) $$(USER_LDFLAGS) -o $$@ $$^ $$(PKG_LIBS)
endef
$(foreach p,$(progs-y) $(bench-y),$(eval $(call prog_rule,$(p))))

# The fake resctrl is a FUSE file system: only it links libfuse3.
FUSE_CFLAGS	= $(shell $(PKG_CONFIG) --cflags fuse3)
FUSE_LIBS	= $(shell $(PKG_CONFIG) --libs fuse3)
$(O)/selftests/fake_resctrl.o: USER_CFLAGS += $(FUSE_CFLAGS)
$(O)/selftests/moat-fake-resctrl: $(addprefix $(O)/,$(moat-fake-resctrl-y))
	$(call msg,LINK,$@)
	$(Q)$(CC) $(USER_LDFLAGS) -o $@ $^ $(FUSE_LIBS)

# The eviction benchmark's stub API server is the tests' (kubestub.h).
$(O)/tools/bench/kubestub_main.o: USER_CFLAGS += -I selftests

# The tests of moatd's parts include their headers.
$(filter $(O)/selftests/%,$(SELFTEST_OBJS)): USER_CFLAGS += -I userspace/moatd

# The fault the tests preload into moatd: never sanitized, for it runs
# in the sanitized moatd too, beside the sanitizer's own interceptors.
$(O)/selftests/libmoat-fault.so: selftests/fault.c | $(DEPS_STAMP)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -shared -fPIC -O2 $(WARNINGS) -o $@ $< -ldl

$(SELFTESTS): $(SELFTEST_OBJS) $(LIBMOAT)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(USER_LDFLAGS) -o $@ $^ $(PKG_LIBS) -lcriterion

define fuzz_rule
$(O)/fuzz/$(1): $(addprefix $(O)/,$($(1)-y)) $(LIBMOAT)
	$$(call msg,LINK,$$@)
	$$(Q)mkdir -p $$(@D)
	$$(Q)$$(CC) $$(USER_LDFLAGS) -fsanitize=fuzzer -o $$@ $$^ $$(PKG_LIBS)
endef
$(foreach p,$(fuzz-y),$(eval $(call fuzz_rule,$(p))))
fuzzers: $(FUZZERS)

# Everything again with the sanitizers, and the fuzzers, in $(O)/san.
san: | $(DEPS_STAMP)
	$(Q)$(MAKE) --no-print-directory O=$(O)/san SANITIZE=1 CC=$(CLANG) all fuzzers

# Each fuzzer for FUZZ_SECONDS (default 60) from its seed corpus.
fuzz: san
	O=$(abspath $(O)) selftests/fuzz.sh

# The main job on this machine: moatd, observing, until Ctrl-C.
RUN_ARGS ?= --foreground --mode observe
run: $(PROGS)
	@echo "moatd observes this machine's cgroups; in another shell try:"
	@echo "    $(O)/moatctl status"
	@echo "    curl -s 127.0.0.1:9590/hints"
	@echo "Ctrl-C stops it."
	$(O)/moatd $(RUN_ARGS)

# The suite here, then on cgroup v2 under QEMU, then one line adding up.
# The build on every CPU (unless make was given -j: its jobserver), the
# tests one at a time: the BPF tests measure scheduling and must not
# compete.
NPROC		:= $(shell nproc 2>/dev/null || echo 1)
check:
	$(Q)$(MAKE) --no-print-directory $(if $(findstring -j,$(MAKEFLAGS)),,-j$(NPROC)) \
		all san bench
	O=$(abspath $(O)) selftests/check.sh

# The closed-loop simulator at length: MOAT_SIM_SEEDS seeds (200) of
# MOAT_SIM_PERIODS periods (2000) on each cgroup version (testing.rst).
MOAT_SIM_SEEDS ?= 200
sim: all
	MOAT_SIM_SEEDS=$(MOAT_SIM_SEEDS) MOAT_FIXTURES=$(abspath selftests/fixtures) \
		MOAT_BUILD=$(abspath $(O)) $(O)/selftests/moat-selftests --jobs 1 --filter 'sim/*'

# The suite on a real cgroup v2 kernel only (VMTEST_KERNEL=bzImage).
vmtest: all
	O=$(abspath $(O)) selftests/vmtest.sh

# A node in a VM: systemd, containerd, runc and moatd.service (root).
nodetest: all bench
	O=$(abspath $(O)) selftests/nodetest.sh

# The container image, from Debian packages (tools/image.sh; root).
MOAT_VERSION	:= $(shell sed -n 's/^\#define MOAT_VERSION[^"]*"\(.*\)"/\1/p' userspace/moatd/moatd.h)
image: $(PROGS)
	O=$(abspath $(O)) MOAT_VERSION=$(MOAT_VERSION) tools/image.sh

# Where Debian puts each (PREFIX=/usr there): the programs, the unit,
# the man pages, bash completion, the rules and dashboards; the example
# config as /etc/moat/moat.conf unless one is there (an admin's file is
# never overwritten), and always under the doc directory.
install: $(PROGS) $(MANPAGES) $(UNIT)
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(COMPLETIONDIR) $(DESTDIR)$(DATADIR)/prometheus \
		$(DESTDIR)$(DATADIR)/grafana $(DESTDIR)$(DOCDIR)/examples \
		$(DESTDIR)$(SYSCONFDIR)/moat
	install -m 0755 $(PROGS) $(DESTDIR)$(SBINDIR)/
	sed 's|@SBINDIR@|$(SBINDIR)|g' dist/systemd/moatd.service.in \
		> $(DESTDIR)$(UNITDIR)/moatd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/moatd.service
	install -m 0644 $(filter %.8,$(MANPAGES)) $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 $(filter %.5,$(MANPAGES)) $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 dist/bash-completion/moatctl $(DESTDIR)$(COMPLETIONDIR)/
	install -m 0644 contrib/prometheus/moat.rules.yml $(DESTDIR)$(DATADIR)/prometheus/
	install -m 0644 contrib/grafana/*.json $(DESTDIR)$(DATADIR)/grafana/
	install -m 0644 dist/moat.conf $(DESTDIR)$(DOCDIR)/examples/
	[ -e $(DESTDIR)$(SYSCONFDIR)/moat/moat.conf ] || \
		install -m 0644 dist/moat.conf $(DESTDIR)$(SYSCONFDIR)/moat/

clean:
	rm -rf $(O)

-include $(USER_OBJS:.o=.d)
