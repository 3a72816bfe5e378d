#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Run moat's test suite on real cgroup v2 kernels, booted under QEMU, as
# the kernel's own tools/testing/selftests/bpf/vmtest.sh does.
#
#   selftests/vmtest.sh                        Debian's 6.1 and 6.12 kernels
#   VMTEST_KERNELS='6.12' selftests/vmtest.sh  one of them
#   VMTEST_KERNELS=/path/bzImage ...           another kernel (no modules)
#   VMTEST_FILTER='moatd/*' ...                some tests (Criterion --filter)
#   VMTEST_ACCEL=kvm|tcg ...                   no probe: this accelerator
#   VMTEST_JOBS=1 ...                          one guest at a time (the
#                                              default: as many as the
#                                              CPUs can emulate at once)
#   VMTEST_RUN='tools/bench/scale.sh 500 20'   a command instead of the
#                                              suite, from moat's tree
#                                              (tools/ is in the guest,
#                                              and what the benchmarks
#                                              run: make bench's tools,
#                                              nginx, stress-ng)
#
# A Debian kernel is named by its series: 6.1 is linux-image-amd64's
# (bookworm's default), 6.12 linux-image-6.12-amd64's (bookworm's
# backport).  Its package is downloaded and unpacked, never installed.
# The initramfs holds busybox, moat's binaries and test suite, the shared
# libraries they load, and the kernel's modules the tests need (zram for
# swap, fuse for the fake resctrl) with their dependencies; its init
# mounts proc, sysfs, devtmpfs, bpffs, tracefs and cgroup2, enables +cpu
# +memory +io, runs the suite, prints its exit status on the serial
# console and powers off.
#
# KVM is used when a probe boots the first kernel and its initramfs under
# KVM far enough to print a marker: a QEMU that merely starts proves
# nothing (on some machines a KVM boot hangs in SeaBIOS).  Otherwise, or
# when a suite's boot under KVM gives no result, software emulation.
# The choice and its reason are one line.  A guest is judged hung when
# its console stays silent for VMTEST_SILENCE seconds (every test prints
# at its start and its end, and Criterion stops a test after 60 s), not
# by the suite's total time, which depends on the machine.
#
# Output: for each kernel, "== vmtest: NAME ==", the guest's console,
# then "vmtest: NAME: result N" (N: the suite's exit status; "none" when
# the guest gave none).  Exits 0 when every kernel's suite passed.
set -Eeuo pipefail
# set -e exits without a word: say where
trap 'echo "vmtest.sh: line $LINENO: exit $? of: $BASH_COMMAND" >&2' ERR

top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
O=$(cd "$O" && pwd)
work="$O/vmtest"
KERNELS=${VMTEST_KERNELS:-${VMTEST_KERNEL:-6.1 6.12}}
ACCEL=${VMTEST_ACCEL:-auto}
KVM_CPU=${VMTEST_KVM_CPU:-host}
SILENCE=${VMTEST_SILENCE:-240}		# no console output: hung
BOOT_TIMEOUT=${VMTEST_BOOT_TIMEOUT:-180} # no "vmtest:" line from init yet
PROBE_TIMEOUT=${VMTEST_PROBE_TIMEOUT:-60}
BINS="moatd moatctl moat-rqlat selftests/moat-selftests selftests/moat-fake-resctrl selftests/libmoat-fault.so"
# and for a benchmark (VMTEST_RUN), make bench's
BENCH_BINS="moat-loadgen moat-siege moat-kubestub moat-memprobe"
BOOTED='^vmtest: '	# a line of the guest's init
QEMU_EXTRA=()

die() { echo "vmtest.sh: $*" >&2; exit 2; }

for b in $BINS ${VMTEST_RUN:+$BENCH_BINS}; do
	[ -x "$O/$b" ] || die "$O/$b missing: run make${VMTEST_RUN:+ bench} first"
done
for t in qemu-system-x86_64 cpio gzip xz; do
	command -v "$t" >/dev/null || die "$t not found (tools/deps.sh installs it)"
done
[ -x /bin/busybox ] || die "/bin/busybox not found (tools/deps.sh installs busybox-static)"
case "$ACCEL" in auto|kvm|tcg) ;; *) die "VMTEST_ACCEL=$ACCEL: expected auto, kvm or tcg" ;; esac
mkdir -p "$work"

. "$top/selftests/guest.sh"

# The initramfs every kernel shares: busybox, moat, libraries, fixtures.
base_initramfs() {
	local root="$work/root" dlopened

	rm -rf "$root"
	mkdir -p "$root"/{bin,dev,etc,proc,sys,tmp,run,moat/build/selftests,moat/selftests}
	cp /bin/busybox "$root/bin/busybox"
	# who nginx's workers and setpriv's tests run as, by name
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
		>"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	# moat's binaries, the libraries they load, and the one they dlopen():
	# libpfm4 (the PMU tests); the tools the tests run besides moat's,
	# where this machine has them: openssl (the stub's certificate) and
	# its config, setpriv (moatd as another uid, with capabilities),
	# unshare (busybox's has no cgroup namespace: moatd in a pod's view),
	# bash and curl (the benchmarks of tools/bench, VMTEST_RUN)
	dlopened=$(ldconfig -p | awk '$1 == "libpfm.so.4" &&
				      !seen[$1]++ { print $NF }')
	tools=
	for t in /usr/bin/openssl /usr/bin/setpriv /usr/bin/unshare /bin/bash /usr/bin/curl; do
		[ -x "$t" ] && tools="$tools $t"
	done
	# a benchmark's: its load (tools/bench/protect.sh), where installed
	if [ -n "${VMTEST_RUN:-}" ]; then
		for t in /usr/sbin/nginx /usr/bin/stress-ng; do
			[ -x "$t" ] && tools="$tools $t"
		done
	fi
	for t in $tools /usr/lib/ssl/openssl.cnf; do
		[ -e "$t" ] || continue
		mkdir -p "$root$(dirname "$t")"
		cp -L "$t" "$root$t"
	done
	for b in $BINS ${VMTEST_RUN:+$BENCH_BINS}; do
		cp "$O/$b" "$root/moat/build/$b"
		ldd "$O/$b" | awk '/=> \// { print $3 } /^\t\// { print $1 }'
	done | { cat; for l in $dlopened $tools; do echo "$l"; ldd "$l" |
		awk '/=> \// { print $3 } /^\t\// { print $1 }'; done; } |
		sort -u | while read -r lib; do
		case "$lib" in /usr/bin/*) continue ;; esac
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
	cp -r "$top/selftests/fixtures" "$root/moat/selftests/"
	# the config deploy/ ships, which a test runs as it is
	mkdir -p "$root/moat/deploy"
	cp "$top/deploy/moat.conf" "$root/moat/deploy/"
	mkdir -p "$root/moat/tools"
	cp -r "$top/tools/bench" "$root/moat/tools/"
	printf '%s\n' "${VMTEST_FILTER:-}" >"$root/moat/filter"
	printf '%s\n' "${VMTEST_RUN:-}" >"$root/moat/run"
	cat >"$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
ln -s /proc/self/fd /dev/fd	# bash's <(...), which the benchmarks use
echo "vmtest: init on $(uname -r)"
# The accelerator's probe: this far is far enough.
if grep -q vmtest.probe /proc/cmdline; then
	echo "vmtest-probe: booted"
	poweroff -f
fi
mkdir -p /dev/shm /sys/fs/cgroup
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t bpf bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing
ip link set lo up	# moatd's HTTP tests talk over loopback
echo "+cpu +memory +io" >/sys/fs/cgroup/cgroup.subtree_control
for m in /moat/modules/*.ko; do [ -e "$m" ] && insmod "$m"; done
if [ -e /sys/block/zram0/disksize ] && echo 512M >/sys/block/zram0/disksize &&
   mkswap /dev/zram0 >/dev/null && swapon /dev/zram0; then
	echo "vmtest: swap on zram0, 512 MiB"
fi
echo "vmtest: $(uname -r), $(nproc) CPUs, cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
cd /moat
filter=$(cat /moat/filter)
[ -n "$filter" ] && set -- --filter "$filter"
if [ -n "$(cat /moat/run)" ]; then
	echo "vmtest: running: $(cat /moat/run)"
	O=/moat/build sh -c "$(cat /moat/run)"
else
	MOAT_GUEST=1 MOAT_FIXTURES=/moat/selftests/fixtures MOAT_BUILD=/moat/build \
		build/selftests/moat-selftests --jobs 1 --verbose "$@"
fi
echo "vmtest-exit: $?"
poweroff -f
EOF
	chmod +x "$root/init"
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/base.cpio.gz"
}

# A kernel's own part of the initramfs, appended to the base (the kernel
# unpacks concatenated archives in turn): its modules, decompressed,
# numbered in load order.  zram: swap, without which no anonymous page
# can be reclaimed and the memory.high test has nothing to show.  fuse:
# the FAKE resctrl of the resctrl tests.
kernel_initramfs() {
	local kdir=$1 out=$2 root="$work/modroot" want

	rm -rf "$root" && mkdir -p "$root/moat/modules"
	if [ -n "$kdir" ]; then
		for want in zram fuse; do
			if ! grep -q "^CONFIG_$(echo "$want" | tr a-z A-Z)\(_FS\)\?=[ym]" \
				"$kdir/../../../../boot"/config-* 2>/dev/null; then
				echo "vmtest.sh: no $want in this kernel: the tests that need it skip" >&2
			fi
		done
		modules_in_order "$root/moat/modules" "$kdir" zram fuse
	fi
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out"
}

# The accelerator: KVM only where the first kernel boots under it.
choose_accel() {
	local kernel=$1 initrd=$2 log="$work/probe.log" start

	if [ "$ACCEL" != auto ]; then
		accel=$ACCEL accel_why="VMTEST_ACCEL=$ACCEL"
		return
	fi
	accel=tcg
	if [ ! -w /dev/kvm ]; then
		accel_why="no writable /dev/kvm"
		return
	fi
	start=$(date +%s)
	boot "$kernel" "$initrd" kvm "$log" vmtest.probe "vmtest-probe: booted" \
		"$PROBE_TIMEOUT"
	if grep -q "vmtest-probe: booted" "$log"; then
		accel=kvm
		accel_why="a probe guest booted under KVM (-cpu $KVM_CPU) in $(($(date +%s) - start)) s"
	elif grep -q "hung" "$log"; then
		accel_why="a probe guest under KVM (-cpu $KVM_CPU) printed no marker in ${PROBE_TIMEOUT}s; its console's last words: '$(console_text "$log" |
			{ grep -v 'vmtest.sh:\|terminating on signal' || true; } | tail -n 1 |
			cut -c1-60)'"
	else
		accel_why="KVM (-cpu $KVM_CPU) failed: $(console_text "$log" |
			{ grep -m1 -i 'error\|fail\|abort' || echo 'no error on its console'; } |
			cut -c1-100)"
	fi
}

# One kernel's suite: "vmtest: NAME: result N" at the end.
run_kernel() {
	local name=$1 kernel=$2 initrd=$3 try status a=$accel

	for try in 1 2; do
		# One thread for both vCPUs under software emulation: with a
		# thread per vCPU (QEMU 7.2's default), about one boot in
		# three froze here for good, both vCPUs looping in exc_int3
		# on the breakpoint text_poke_bp() had put in __schedule()
		# as moatd flipped a static key (Documentation/testing.rst).
		[ "$a" = tcg ] && a=tcg,thread=single
		echo "vmtest.sh: $name: booting $(basename "$kernel") ($a)" >&2
		boot "$kernel" "$initrd" "$a" "$work/$name.console.log" "" "" \
			"$BOOT_TIMEOUT"
		status=$(sed -n 's/^vmtest-exit: \([0-9]*\).*/\1/p' \
			"$work/$name.console.log" | tail -n 1)
		[ -n "$status" ] && break
		tail -n 1 "$work/$name.console.log" >&2
		cp "$work/$name.console.log" "$work/$name.console-$try.log"
		# A test that fails is never retried; a guest that gave no
		# result (hung, panicked) is booted once more, under TCG.
		if [ "$try" = 1 ]; then
			if [ "${a%%,*}" = kvm ]; then
				echo "vmtest.sh: $name: WARNING: the guest gave no result under KVM; its console is in $work/$name.console-1.log; booting again under TCG" >&2
				a=tcg
			else
				echo "vmtest.sh: $name: the guest gave no result; its console is in $work/$name.console-1.log; booting once more" >&2
			fi
		fi
	done
	if [ -z "$status" ]; then
		echo "vmtest.sh: $name: the guest gave no result twice; its console is in $work/$name.console.log" >&2
		status=none
	elif [ "$try" = 2 ]; then
		echo "vmtest.sh: $name: warning: the first boot gave no result ($work/$name.console-1.log), the second did" >&2
	fi
	echo "vmtest: $name: result $status"
	[ "$status" = 0 ]
}

# How many guests at once.  Under TCG each guest is one emulation
# thread (above), so as many as this machine has CPUs; under KVM each
# has 2 vCPUs.  A VMTEST_RUN command is a benchmark: alone, so that one
# guest's figures do not depend on the other's.
jobs_default() {
	local cpus

	cpus=$(nproc)
	if [ -n "${VMTEST_RUN:-}" ]; then
		echo 1
	elif [ "${accel%%,*}" = kvm ]; then
		echo $((cpus / 2 > 0 ? cpus / 2 : 1))
	else
		echo "$cpus"
	fi
}

base_initramfs
rc=0 accel= accel_why= names=() kernels=()
for k in $KERNELS; do
	if [ -f "$k" ]; then
		name=$(basename "$k") kernel=$k kdir=
	else
		pkg=$(debian_package "$k")
		debian_kernel "$pkg"
		name=$k
		kernel=$(ls "$work/$pkg"/boot/vmlinuz-*)
		kdir=$(ls -d "$work/$pkg"/lib/modules/*/kernel)
	fi
	[ -r "$kernel" ] || die "kernel $kernel not readable"
	kernel_initramfs "$kdir" "$work/$name.modules.cpio.gz"
	cat "$work/base.cpio.gz" "$work/$name.modules.cpio.gz" >"$work/$name.cpio.gz"
	if [ -z "$accel" ]; then
		choose_accel "$kernel" "$work/$name.cpio.gz"
		echo "vmtest: accelerator $accel: $accel_why"
	fi
	names+=("$name") kernels+=("$kernel")
done

# The guests run in the background, VMTEST_JOBS at a time, each into its
# own log; their logs are printed in the order of VMTEST_KERNELS, each
# as it is written, so the output is the same as one guest after
# another's, only sooner.
JOBS=${VMTEST_JOBS:-$(jobs_default)}
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || die "VMTEST_JOBS=$JOBS: expected a number of guests, 1 or more"
for name in "${names[@]}"; do
	rm -f "$work/$name.run.log" "$work/$name.run.pid" "$work/$name.run.rc"
done
(
	running=0
	for i in "${!names[@]}"; do
		name=${names[$i]}
		if [ "$running" -ge "$JOBS" ]; then
			wait -n || true
			running=$((running - 1))
		fi
		(
			echo "$BASHPID" >"$work/$name.run.pid.tmp"
			mv "$work/$name.run.pid.tmp" "$work/$name.run.pid"
			st=0
			run_kernel "$name" "${kernels[$i]}" "$work/$name.cpio.gz" || st=1
			echo "$st" >"$work/$name.run.rc"
		) >"$work/$name.run.log" 2>&1 &
		running=$((running + 1))
	done
	wait
) &
launcher=$!
# On ^C or SIGTERM, the guests and all that watches them go too: a
# background subshell ignores SIGINT, and would boot its guest again.
descendants() {
	local c

	for c in $(pgrep -P "$1"); do
		echo "$c"
		descendants "$c"
	done
}
trap 'trap - INT TERM; kill $launcher $(descendants "$launcher") 2>/dev/null; exit 130' INT TERM
for name in "${names[@]}"; do
	echo "== vmtest: $name =="
	while [ ! -e "$work/$name.run.pid" ]; do
		kill -0 "$launcher" 2>/dev/null || break
		sleep 1
	done
	[ -e "$work/$name.run.pid" ] &&
		tail -n +1 -f --pid="$(cat "$work/$name.run.pid")" "$work/$name.run.log"
	[ "$(cat "$work/$name.run.rc" 2>/dev/null)" = 0 ] || rc=1
done
wait "$launcher" || true
exit $rc
