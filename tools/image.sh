#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# make image: moat's container image, an OCI image built here from Debian
# packages and moat's own binaries, without a registry or a daemon:
#
#   1. the Debian packages that hold every library moatd, moatctl and
#      moat-rqlat load -- ldd's, and the one they dlopen() (libpfm4 for
#      the PMU events), which ldd cannot see -- found with dpkg -S on this
#      machine, the one that built them;
#   2. mmdebstrap extracts those packages and their dependencies, from
#      this machine's apt sources and suite, into a root file system, with
#      the three programs in /usr/sbin (as make install puts them) and a
#      linker cache;
#   3. umoci makes it the one layer of an OCI image, moat:VERSION and
#      moat:latest in $O/image/oci, and $O/image/moat.oci.tar is that
#      layout as one file (podman load, ctr images import, skopeo copy).
#
# No shell, no package manager and no libc tools in it: moatd is the
# entrypoint, moatctl runs with `kubectl exec ... moatctl`.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
: "${MOAT_VERSION:?}"
out=$O/image
die() { echo "image: $*" >&2; exit 1; }

for t in mmdebstrap umoci ldconfig dpkg-query; do
	command -v "$t" >/dev/null || die "no $t (tools/deps.sh installs it)"
done
[ "$(id -u)" = 0 ] || die "mmdebstrap's root mode needs root"
for b in moatd moatctl moat-rqlat; do
	[ -x "$O/$b" ] || die "$O/$b: not built (make)"
done

# 1. libraries -> packages
libs=$(for b in moatd moatctl moat-rqlat; do ldd "$O/$b"; done |
	awk '/=> \// { print $3 }'
	for so in libpfm.so.4; do
		path=$(ldconfig -p | awk -v so="$so" '$1 == so { print $NF; exit }')
		[ -n "$path" ] || die "$so (dlopen()ed) is not installed here"
		echo "$path"
	done)
# (dpkg knows a file by the path its package gave it: /lib or /usr/lib)
pkgs=$(for l in $libs; do
	real=$(readlink -f "$l")
	for p in "$real" "${real#/usr}" "/usr$real"; do
		dpkg-query -S "$p" 2>/dev/null && break
	done | sed 's/[:,].*//' | grep . || die "no package holds $real"
done | sort -u)
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:?}")

rm -rf "$out"
mkdir -p "$out"
echo "image: $suite, packages: $(echo $pkgs)"
# 2. the root file system
mmdebstrap --quiet --variant=extract --include="$(echo $pkgs | tr ' ' ,)" \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--extract-hook='mkdir -p "$1/usr/sbin" "$1/etc/moat" "$1/var/lib/moat" "$1/run/moat" "$1/host" "$1/proc" "$1/sys"' \
	--extract-hook="copy-in $O/moatd $O/moatctl $O/moat-rqlat /usr/sbin" \
	--extract-hook='ldconfig -r "$1"' \
	--extract-hook='rm -rf "$1/var/cache/apt" "$1/var/lib/apt/lists"' \
	"$suite" "$out/rootfs.tar"

# 3. the OCI image
umoci init --layout "$out/oci"
umoci new --image "$out/oci:$MOAT_VERSION"
umoci unpack --image "$out/oci:$MOAT_VERSION" "$out/bundle" >/dev/null
tar -C "$out/bundle/rootfs" -xf "$out/rootfs.tar"
umoci repack --image "$out/oci:$MOAT_VERSION" "$out/bundle"
umoci config --image "$out/oci:$MOAT_VERSION" \
	--config.entrypoint /usr/sbin/moatd \
	--config.cmd --foreground \
	--config.exposedports 9590/tcp \
	--config.stopsignal SIGTERM \
	--config.label org.opencontainers.image.title=moat \
	--config.label "org.opencontainers.image.version=$MOAT_VERSION" \
	--config.label "org.opencontainers.image.base.name=debian:$suite" \
	--config.label org.opencontainers.image.licenses=GPL-2.0-only
umoci tag --image "$out/oci:$MOAT_VERSION" latest
umoci gc --layout "$out/oci"
rm -rf "$out/bundle" "$out/rootfs.tar"
tar -C "$out/oci" -cf "$out/moat.oci.tar" .
echo "image: $out/oci (moat:$MOAT_VERSION, moat:latest), $out/moat.oci.tar: $(du -h "$out/moat.oci.tar" | cut -f1)"
