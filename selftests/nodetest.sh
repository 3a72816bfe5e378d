#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A Kubernetes node in a VM: Debian's 6.12 kernel under QEMU on a root
# file system of Debian's packages (mmdebstrap), with systemd as PID 1,
# containerd and runc, and moat installed into it by make install, with
# make image's tar beside it.  The guest's test
# (selftests/node/node-test.sh) plays kubelet's part with the real
# owners' tools, runs moatd under systemd with its installed unit, then
# the image under containerd as the DaemonSet would run it: see that
# script for what it checks.
#
#   selftests/nodetest.sh                  boot, test, power off
#   NODETEST_SHELL=1 selftests/nodetest.sh boot to a login prompt on this
#                                          terminal (root, no password;
#                                          the test is
#                                          /usr/lib/moat-node/node-test.sh;
#                                          Ctrl-A X quits QEMU)
#   NODETEST_ACCEL=kvm|tcg ...             no probe: this accelerator
#
# The root file system's packages are systemd, containerd, runc and
# those that hold the libraries moat's binaries load (found with ldd and
# dpkg -S); the tar mmdebstrap makes of them is kept in $O/node, named by
# a hash of that list, and made again only when the list changes.  Each
# run unpacks it, installs moat, and makes an ext4 image of it, which
# QEMU opens with snapshot=on: the guest's writes never reach it.  The
# initramfs is busybox and the modules needed to mount it.
#
# KVM where /dev/kvm is writable and the guest gives a result under it,
# else TCG (one emulation thread, as vmtest.sh's guests, for the same
# reason).  Output: the guest's "node:" lines, then
# "nodetest: result N" (N the guest's failures, "none" when it gave no
# result).  Exits 0 when the guest's test passed.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
O=$(cd "$O" && pwd)
work="$O/vmtest"	# the kernels vmtest.sh unpacked: shared
node="$O/node"
KERNEL=${NODETEST_KERNEL:-6.12}
ACCEL=${NODETEST_ACCEL:-auto}
KVM_CPU=${VMTEST_KVM_CPU:-host}
SILENCE=${NODETEST_SILENCE:-240}
BOOT_TIMEOUT=${NODETEST_BOOT_TIMEOUT:-240}
KVM_BOOT_TIMEOUT=${NODETEST_KVM_BOOT_TIMEOUT:-90}
BOOTED='^node: '
BINS="moatd moatctl moat-rqlat"
# the stub of the API server the DaemonSet's moatd reads pods from
STUB=moat-kubestub

die() { echo "nodetest.sh: $*" >&2; exit 2; }

for b in $BINS; do
	[ -x "$O/$b" ] || die "$O/$b missing: run make first"
done
[ -x "$O/$STUB" ] || die "$O/$STUB missing: run make bench first"
for t in qemu-system-x86_64 mmdebstrap mke2fs cpio gzip umoci kubectl python3; do
	command -v "$t" >/dev/null || die "$t not found (tools/deps.sh installs it)"
done
[ -x /bin/busybox ] || die "/bin/busybox not found (tools/deps.sh installs busybox-static)"
case "$ACCEL" in auto|kvm|tcg) ;; *) die "NODETEST_ACCEL=$ACCEL: expected auto, kvm or tcg" ;; esac
mkdir -p "$work" "$node"
# shellcheck source=selftests/guest.sh
. "$top/selftests/guest.sh"

# The Debian packages of the libraries moat's binaries load, and of the
# one they dlopen() by SONAME (libpfm4).
library_packages() {
	{
		for b in $BINS $STUB; do
			ldd "$O/$b" | awk '/=> \// { print $3 } /^\t\// { print $1 }'
		done
		ldconfig -p | awk '$1 == "libpfm.so.4" &&
				   !seen[$1]++ { print $NF }'
	} | sort -u | while read -r lib; do
		dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib"
	done | cut -d: -f1 | sort -u
}

# The root file system as a tar, made once per package list.
rootfs_tar() {
	local pkgs key tar

	pkgs=$( (echo systemd systemd-sysv dbus udev containerd runc kmod procps \
		iproute2 util-linux openssl; library_packages) | tr ' ' '\n' | sort -u |
		tr '\n' ',' | sed 's/,$//')
	key=$( (echo "$pkgs"; mmdebstrap --version) | sha256sum | cut -c1-12)
	tar="$node/rootfs-$key.tar"
	if [ ! -s "$tar" ]; then
		rm -f "$node"/rootfs-*.tar "$node"/rootfs.tmp
		echo "nodetest.sh: mmdebstrap: bookworm with $pkgs" >&2
		mmdebstrap --quiet --variant=minbase --include="$pkgs" --format=tar \
			bookworm "$node/rootfs.tmp" >&2 ||
			die "mmdebstrap failed (it needs Debian's mirror: apt-get works?)"
		mv "$node/rootfs.tmp" "$tar"
	fi
	echo "$tar"
}

# The node's root: the packages, moat, the test; an ext4 image of it.
root_image() {
	local root="$node/root" tar=$1 bb

	rm -rf "$root" && mkdir -p "$root"
	tar -C "$root" -xf "$tar"
	make -s -C "$top" O="$O" DESTDIR="$root" PREFIX=/usr SYSCONFDIR=/etc \
		install >&2 || die "make install into the node's root failed"
	install -d "$root/usr/lib/moat-node"
	install -m 0755 "$top/selftests/node/node-test.sh" \
		"$top/selftests/node/kubelet.sh" "$root/usr/lib/moat-node/"
	install -m 0644 "$top/selftests/node/moat-node.service" \
		"$root/etc/systemd/system/"
	# the DaemonSet's container: the image, its ConfigMap, what kubelet
	# would ask of containerd for it (oci_config.py --ctr), and the stub
	# API server it reads pods from (the tests' fake, whose one Node is
	# test-node: the pod's NODE_NAME)
	install -m 0755 "$O/$STUB" "$root/usr/lib/moat-node/"
	install -D -m 0644 "$O/image/moat.oci.tar" "$root/var/lib/moat-node/moat.oci.tar"
	install -D -m 0644 "$top/deploy/moat.conf" "$root/var/lib/moat-node/configmap/moat.conf"
	kubectl kustomize "$top/deploy" 2>/dev/null >"$node/deploy.yaml" ||
		die "kubectl kustomize deploy/ failed"
	"$top/selftests/oci_config.py" --ctr "$node/deploy.yaml" test-node /run/moat-node/sa \
		/var/lib/moat-node/configmap >"$root/usr/lib/moat-node/daemonset.sh" ||
		die "the DaemonSet as ctr run's flags failed"
	# the containers' root file system: busybox (no image can be pulled)
	bb="$root/var/lib/moat-node/busybox"
	mkdir -p "$bb"/{bin,dev,proc,sys,tmp}
	cp /bin/busybox "$bb/bin/"
	for t in sh usleep sleep cat; do ln -s busybox "$bb/bin/$t"; done
	echo node >"$root/etc/hostname"
	# a node's own: ctr's --net-host binds it (and resolv.conf) in
	printf '127.0.0.1\tlocalhost\n127.0.1.1\tnode\n' >"$root/etc/hosts"
	sed -i 's/^root:[^:]*:/root::/' "$root/etc/shadow"	# a login with no password
	echo '/dev/vda / ext4 rw,relatime 0 1' >"$root/etc/fstab"
	rm -f "$node/root.img"
	mke2fs -q -t ext4 -d "$root" -L node "$node/root.img" 2G ||
		die "mke2fs of the node's root failed"
	rm -rf "$root"
}

# busybox, the modules that mount the root (virtio_blk, ext4) and those
# containerd's snapshots need (overlay), and an init that switches to it.
initramfs() {
	local kdir=$1 root="$node/initramfs"

	rm -rf "$root" && mkdir -p "$root"/{bin,dev,proc,sys,newroot,modules}
	cp /bin/busybox "$root/bin/"
	modules_in_order "$root/modules" "$kdir" virtio_blk crc32c_generic ext4 overlay
	cat >"$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in /modules/*.ko; do insmod "$m" || echo "node: insmod $m failed"; done
for i in $(seq 100); do [ -b /dev/vda ] && break; sleep 0.1; done
if ! mount -t ext4 /dev/vda /newroot; then
	echo "node: the root file system did not mount"
	echo "node-exit: none"
	poweroff -f
fi
echo "node: initramfs: root mounted, systemd next"
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /lib/systemd/systemd
EOF
	chmod +x "$root/init"
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$node/initramfs.cpio.gz"
	rm -rf "$root"
}

pkg=$(debian_package "$KERNEL")
debian_kernel "$pkg"
kernel=$(ls "$work/$pkg"/boot/vmlinuz-*)
kdir=$(ls -d "$work/$pkg"/lib/modules/*/kernel)
start=$(date +%s)
# the moat image, made again when moatd is newer than it
if [ ! "$O/image/moat.oci.tar" -nt "$O/moatd" ]; then
	make -s -C "$top" O="$O" image >&2 || die "make image failed"
fi
tar=$(rootfs_tar)
root_image "$tar"
initramfs "$kdir"
echo "nodetest: root file system $(basename "$tar") ($(du -m "$tar" | cut -f1) MiB), image and initramfs made in $(($(date +%s) - start)) s"

QEMU_EXTRA=(-drive "file=$node/root.img,if=virtio,format=raw,snapshot=on")
append="systemd.show_status=0"
if [ -n "${NODETEST_SHELL:-}" ]; then
	accel=tcg,thread=single
	[ -w /dev/kvm ] && accel=kvm
	exec qemu-system-x86_64 -accel "$accel" -cpu max -m 2048 -smp 2 \
		-kernel "$kernel" -initrd "$node/initramfs.cpio.gz" "${QEMU_EXTRA[@]}" \
		-append "console=ttyS0 loglevel=5 $append" \
		-nographic -no-reboot -nodefaults -serial mon:stdio
fi
append="$append systemd.mask=serial-getty@ttyS0.service systemd.wants=moat-node.service"

accels=tcg
if [ "$ACCEL" = kvm ] || { [ "$ACCEL" = auto ] && [ -w /dev/kvm ]; }; then
	accels="kvm tcg"
fi
[ "$ACCEL" = tcg ] && accels=tcg
log="$node/console.log"
status=
for a in $accels; do
	[ "$a" = tcg ] && a=tcg,thread=single
	echo "nodetest: booting $(basename "$kernel") ($a)"
	start=$(date +%s)
	# Under a KVM that works init speaks within seconds; one that hangs
	# (no line past the BIOS: seen on this project's machines) is
	# judged in KVM_BOOT_TIMEOUT, not in TCG's BOOT_TIMEOUT.
	limit=$BOOT_TIMEOUT
	[ "$a" = kvm ] && limit=$KVM_BOOT_TIMEOUT
	boot "$kernel" "$node/initramfs.cpio.gz" "$a" "$log" "$append" "" "$limit" \
		2>/dev/null
	status=$(console_text "$log" | sed -n 's/^node-exit: \([0-9a-z]*\).*/\1/p' | tail -n 1)
	console_text "$log" | grep '^node' || true
	echo "nodetest: the guest ran $(($(date +%s) - start)) s ($a)"
	[ -n "$status" ] && [ "$status" != none ] && break
	echo "nodetest: no result from the guest ($a); its console is in $log"
done
echo "nodetest: result ${status:-none}"
[ "$status" = 0 ]
