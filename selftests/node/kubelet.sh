#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# kubelet's part on the node guest (selftests/nodetest.sh), played with
# the real owners' own tools: the QoS tiers and the pods are systemd
# slices started as kubelet's cgroup manager (libcontainer's systemd
# driver) starts them, transient units over D-Bus with their CPU
# weights; the containers are containerd's, started by runc with its
# systemd driver in cri-containerd-<id>.scope under their pod's slice.
#
#   kubelet.sh tiers                   kubepods.slice and its QoS tiers
#   kubelet.sh pod QOS UID WEIGHT      a pod's slice
#   kubelet.sh ctr QOS UID ID CMD...   a container of that pod
#   kubelet.sh image QOS UID ID IMAGE FLAG... -- CMD...
#                                      a container of an image containerd
#                                      holds, with ctr run's FLAGs
#   kubelet.sh id NAME                 a 64-hex container id, as CRI's
set -euo pipefail

# StartTransientUnit(name, mode, properties, aux), as libcontainer's
# systemd manager calls it for a slice (DefaultDependencies=no, its
# resources as properties; systemd finds the parent slice by name).
slice() {
	busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 \
		org.freedesktop.systemd1.Manager StartTransientUnit \
		'ssa(sv)a(sa(sv))' "$1" replace 4 \
		Description s "libcontainer container $1" \
		DefaultDependencies b false \
		CPUWeight t "$2" \
		MemoryAccounting b true 0 >/dev/null
}

case "${1:-}" in
tiers)
	# The weights kubelet sets on 2 CPUs: kubepods from the node's
	# allocatable (2000m: 2048 shares, weight 79), burstable from its
	# pods' requests, besteffort the least (2 shares, weight 1).
	slice kubepods.slice 79
	slice kubepods-burstable.slice 20
	slice kubepods-besteffort.slice 1
	;;
pod)
	slice "kubepods-$2-pod${3//-/_}.slice" "$4"
	;;
ctr)
	qos=$2 uid=${3//-/_} id=$4
	shift 4
	# the root file system a busybox; containerd's own snapshots need
	# an image, and none can be pulled here
	ctr run -d --runc-systemd-cgroup \
		--cgroup "kubepods-$qos-pod$uid.slice:cri-containerd:$id" \
		--rootfs /var/lib/moat-node/busybox "$id" "$@"
	;;
image)
	qos=$2 uid=${3//-/_} id=$4 image=$5
	shift 5
	flags=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		flags+=("$1")
		shift
	done
	shift
	ctr run -d --runc-systemd-cgroup \
		--cgroup "kubepods-$qos-pod$uid.slice:cri-containerd:$id" \
		"${flags[@]}" "$image" "$id" "$@"
	;;
id)
	printf %s "$2" | sha256sum | cut -c1-64
	;;
*)
	echo "usage: kubelet.sh tiers | pod QOS UID WEIGHT | ctr QOS UID ID CMD... |" \
		"image QOS UID ID IMAGE FLAG... -- CMD... | id NAME" >&2
	exit 2
	;;
esac
