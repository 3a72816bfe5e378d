#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# moatd at scale: its CPU time per control cycle, its memory and the time
# a Prometheus scrape of /metrics takes, with N groups (real cgroups under
# a prefix of the cpu controller's hierarchy, each a group by rule).
#
#   tools/bench/scale.sh [GROUPS] [SECONDS]     (root; default 500, 20)
#
# CPU time comes from /proc/PID/schedstat (ns on the CPU), divided by the
# cycles run in the window (SECONDS / period_ms).  Memory, from
# /proc/PID/status: VmRSS at the window's end (the target's), and VmHWM,
# the peak, which comes from libbpf's parse of the kernel's BTF at start.
# The scrape: the median of 21 GETs of /metrics with curl (time_total:
# connect to last byte), after the CPU window so that they do not count
# in it.
#
# Targets at 500 groups: <= 2 ms of CPU per cycle, RSS <= 16 MiB, a
# scrape <= 20 ms.
# Exits 1 when a target is missed.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-$top/build}
N=${1:-500}
SECS=${2:-20}
PERIOD_MS=500

die() { echo "scale.sh: $*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "must run as root (cgroups, BPF)"
[[ "$N" =~ ^[1-9][0-9]*$ ]] || die "GROUPS: '$N' is not a positive integer"
[[ "$SECS" =~ ^[1-9][0-9]*$ ]] || die "SECONDS: '$SECS' is not a positive integer"
[ -x "$O/moatd" ] && [ -x "$O/moatctl" ] || make -C "$top" O="$O" >/dev/null

# The cpu controller's hierarchy: a v1 mount listing cpu, else cgroup2.
cpu_mnt=$(awk '$9 == "cgroup" && $NF ~ /(^|,)cpu(,|$)/ { print $5; exit }' /proc/self/mountinfo)
[ -n "$cpu_mnt" ] || cpu_mnt=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$cpu_mnt" ] || die "no cgroup hierarchy with the cpu controller"

work=$(mktemp -d)
prefix="$cpu_mnt/moat-bench-$$"
moatd_pid=
cleanup() {
	if [ -n "$moatd_pid" ]; then
		kill "$moatd_pid" 2>/dev/null || true
		wait "$moatd_pid" 2>/dev/null || true
	fi
	if [ -d "$prefix" ]; then
		find "$prefix" -mindepth 1 -maxdepth 1 -type d -exec rmdir {} + 2>/dev/null || true
		rmdir "$prefix" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir "$prefix"
for i in $(seq -w 1 "$N"); do
	mkdir "$prefix/grp-$i"
done
printf 'period_ms = %s\nrules/bench = grp-* lc\n' "$PERIOD_MS" >"$work/moat.conf"

"$O/moatd" --foreground --socket "$work/sock" --config "$work/moat.conf" \
	--cgroup-root "$prefix" --listen 127.0.0.1:0 2>"$work/moatd.log" &
moatd_pid=$!
ctl() { "$O/moatctl" --socket "$work/sock" "$@"; }
for _ in $(seq 100); do
	found=$(ctl ls groups 2>/dev/null | wc -l || true)
	[ "$found" -ge "$N" ] && break
	sleep 0.2
done
[ "$found" -ge "$N" ] || { cat "$work/moatd.log" >&2; die "moatd found $found of $N groups"; }

cpu_ns() { awk '{ print $1 }' "/proc/$moatd_pid/schedstat"; }
start=$(cpu_ns)
sleep "$SECS"
end=$(cpu_ns)
cycles=$((SECS * 1000 / PERIOD_MS))
rss_kb=$(awk '/^VmRSS/ { print $2 }' "/proc/$moatd_pid/status")
hwm_kb=$(awk '/^VmHWM/ { print $2 }' "/proc/$moatd_pid/status")
cycle_us=$(ctl get cycle_us)
port=$(ctl get http/port)
for _ in $(seq 21); do
	curl -s -o "$work/metrics" -w '%{time_total}\n' "http://127.0.0.1:$port/metrics"
done | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] * 1000 }' >"$work/scrape"
scrape_ms=$(cat "$work/scrape")
series=$(grep -vc '^#' "$work/metrics")
bytes=$(wc -c <"$work/metrics")

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -r), $(nproc) CPUs, $N groups under $prefix"
awk -v t=$((end - start)) -v c="$cycles" -v w="$cycle_us" -v r="$rss_kb" -v h="$hwm_kb" \
	-v s="$scrape_ms" -v n="$series" -v b="$bytes" 'BEGIN {
	cpu = t / c / 1e6
	printf "CPU per cycle:   %.3f ms over %d cycles (target <= 2 ms: %.2fx of it)\n", cpu, c, cpu / 2
	printf "last cycle wall: %.3f ms\n", w / 1000
	printf "RSS:             %.1f MiB (target <= 16 MiB: %.2fx of it), peak %.1f MiB\n",
		r / 1024, r / 1024 / 16, h / 1024
	printf "scrape:          %.1f ms for %d series, %.0f KiB (target <= 20 ms: %.2fx of it)\n",
		s, n, b / 1024, s / 20
	exit !(cpu <= 2 && r / 1024 <= 16 && s <= 20)
}' || { echo "scale.sh: a target was missed" >&2; exit 1; }
