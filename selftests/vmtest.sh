#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Run moat's test suite on a real cgroup v2 kernel, booted under QEMU, as
# the kernel's own tools/testing/selftests/bpf/vmtest.sh does.
#
#   selftests/vmtest.sh                  Debian's linux-image-amd64 kernel
#   VMTEST_KERNEL=bzImage selftests/vmtest.sh    another kernel
#   VMTEST_FILTER='moatd/*' selftests/vmtest.sh   some tests (Criterion --filter)
#
# The kernel package is downloaded and unpacked, never installed.  The
# initramfs holds busybox, moat's binaries and test suite, and the shared
# libraries they load; its init mounts proc, sysfs, devtmpfs, bpffs,
# tracefs and cgroup2, enables +cpu +memory +io, runs the suite, prints
# its exit status on the serial console and powers off.  KVM is used
# when it works, software emulation otherwise.  Exits with the guest's
# test status; a guest that hangs or panics fails with its console shown
# (after one more boot: see below).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
O=$(cd "$O" && pwd)
work="$O/vmtest"
TIMEOUT=${VMTEST_TIMEOUT:-300}
BINS="moatd moatctl moat-rqlat selftests/moat-selftests selftests/moat-fake-resctrl"

die() { echo "vmtest.sh: $*" >&2; exit 2; }

for b in $BINS; do
	[ -x "$O/$b" ] || die "$O/$b missing: run make first"
done
for t in qemu-system-x86_64 cpio gzip; do
	command -v "$t" >/dev/null || die "$t not found (tools/deps.sh installs it)"
done
[ -x /bin/busybox ] || die "/bin/busybox not found (tools/deps.sh installs busybox-static)"
mkdir -p "$work"

# The kernel: Debian's current linux-image-amd64, fetched once.
kernel=${VMTEST_KERNEL:-}
if [ -z "$kernel" ]; then
	latest() {
		apt-cache depends linux-image-amd64 2>/dev/null |
			awk '/Depends: linux-image-[0-9]/ { print $2; exit }'
	}
	pkg=$(latest)
	if [ -z "$pkg" ] && [ "$(id -u)" -eq 0 ]; then
		apt-get update -q >/dev/null 2>&1 || true
		pkg=$(latest)
	fi
	[ -n "$pkg" ] || die "apt-cache knows no linux-image-amd64 (run apt-get update)"
	if [ ! -d "$work/$pkg" ]; then
		rm -rf "$work/deb" && mkdir -p "$work/deb"
		(cd "$work/deb" && apt-get download -q "$pkg" >/dev/null 2>&1) ||
			die "apt-get download $pkg failed"
		dpkg -x "$work"/deb/*.deb "$work/$pkg.tmp"
		mv "$work/$pkg.tmp" "$work/$pkg"
		rm -rf "$work/deb"
	fi
	kernel=$(ls "$work/$pkg"/boot/vmlinuz-*)
fi
[ -r "$kernel" ] || die "kernel $kernel not readable"

# The initramfs.
root="$work/root"
rm -rf "$root"
mkdir -p "$root"/{bin,dev,proc,sys,tmp,run,moat/build/selftests,moat/selftests}
cp /bin/busybox "$root/bin/busybox"
# moat's binaries, the libraries they load, and libpfm4, which they
# dlopen() (the PMU tests)
dlopened=$(ldconfig -p | awk '$1 == "libpfm.so.4" { print $NF; exit }')
for b in $BINS; do
	cp "$O/$b" "$root/moat/build/$b"
	ldd "$O/$b" | awk '/=> \// { print $3 } /^\t\// { print $1 }'
done | { cat; for l in $dlopened; do echo "$l"; ldd "$l" |
	awk '/=> \// { print $3 } /^\t\// { print $1 }'; done; } |
	sort -u | while read -r lib; do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
cp -r "$top/selftests/fixtures" "$root/moat/selftests/"
# zram, for swap: without it no anonymous page can be reclaimed, and the
# memory.high test has nothing to show.  Debian's kernel has it as a
# module; another kernel may have it built in, or skips that test.
mkdir -p "$root/moat/modules"
if [ -z "${VMTEST_KERNEL:-}" ]; then
	mods="$work/$pkg/lib/modules/$(basename "$work/$pkg/lib/modules"/*)/kernel"
	cp "$mods/mm/zsmalloc.ko" "$root/moat/modules/1-zsmalloc.ko" 2>/dev/null &&
		cp "$mods/drivers/block/zram/zram.ko" "$root/moat/modules/2-zram.ko" ||
		echo "vmtest.sh: no zram module in $pkg: no swap in the guest" >&2
	# fuse, for the FAKE resctrl (a FUSE file system) of the resctrl tests
	cp "$mods/fs/fuse/fuse.ko" "$root/moat/modules/3-fuse.ko" 2>/dev/null ||
		echo "vmtest.sh: no fuse module in $pkg: the FAKE resctrl tests skip" >&2
fi
printf '%s\n' "${VMTEST_FILTER:-}" >"$root/moat/filter"
cat >"$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
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
MOAT_FIXTURES=/moat/selftests/fixtures MOAT_BUILD=/moat/build \
	build/selftests/moat-selftests --jobs 1 --verbose "$@"
echo "vmtest-exit: $?"
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.cpio.gz"

# KVM if it works here: a stopped VM stays up until killed, where KVM
# fails it aborts at once (this project's build VM: "failed to set MSR").
accel=tcg
if [ -w /dev/kvm ]; then
	probe=0
	bash -c 'timeout 3 qemu-system-x86_64 -accel kvm -cpu host -M q35 -S \
		-display none -nodefaults </dev/null >/dev/null 2>&1' 2>/dev/null ||
		probe=$?
	if [ "$probe" -eq 124 ]; then
		accel=kvm
	fi
fi
cpu=max
[ "$accel" = kvm ] && cpu=host
# Software emulation with one thread for both vCPUs.  With a thread per
# vCPU (QEMU 7.2's default), about one boot in three froze here for
# good: both vCPUs looping in exc_int3 on the breakpoint text_poke_bp()
# had put in __schedule() (QEMU's monitor, "info registers -a", mapped
# through /proc/kallsyms) as moatd's start or stop flipped a static key
# (a tracepoint's, or CFS bandwidth's).  Cross-modifying code is where
# multi-threaded TCG is weakest; one thread has not frozen since
# (Documentation/testing.rst), at some speed.
[ "$accel" = tcg ] && accel=tcg,thread=single

# Boot once; the guest's test status, or nothing when it gave none.
boot() {
	local log=$1 rc

	echo "vmtest.sh: booting $kernel ($accel), timeout ${TIMEOUT}s" >&2
	set +e
	timeout "$TIMEOUT" qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -m 2048 -smp 2 \
		-kernel "$kernel" -initrd "$work/initramfs.cpio.gz" \
		-append "console=ttyS0 loglevel=5 panic=-1 oops=panic softlockup_panic=1" \
		-nographic -no-reboot -nodefaults -serial stdio </dev/null |
		tee "$log" >&2
	rc=${PIPESTATUS[0]}
	set -e
	[ "$rc" -eq 124 ] && echo "vmtest.sh: the guest hung: no result in ${TIMEOUT}s" >&2
	sed -n 's/^vmtest-exit: \([0-9]*\).*/\1/p' "$log" | tail -n 1
}

# A guest that hangs or panics gives no result (see above for the one
# cause found).  Say so, keep its console, and boot once more; a test
# that fails is never retried.
status=$(boot "$work/console.log")
if [ -z "$status" ]; then
	cp "$work/console.log" "$work/console-first.log"
	echo "vmtest.sh: the guest gave no result; its console is above and in $work/console-first.log; booting once more" >&2
	status=$(boot "$work/console.log")
	if [ -n "$status" ]; then
		echo "vmtest.sh: warning: the first boot gave no result ($work/console-first.log), the second did" >&2
	fi
fi
if [ -z "$status" ]; then
	echo "vmtest.sh: the guest gave no result twice; its console is above and in $work/console.log" >&2
	exit 1
fi
exit "$status"
