#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# moatd at scale: its CPU time per control cycle, its memory and the time
# a Prometheus scrape of /metrics takes, with N groups (real cgroups under
# a prefix of the cpu controller's hierarchy, each a group by rule).
#
#   tools/bench/scale.sh [GROUPS] [SECONDS] [PAIRS]  (root; default 500, 20, 2)
#
# CPU time comes from /proc/PID/schedstat (ns on the CPU), divided by the
# cycles run in the window (SECONDS / period_ms), in PAIRS (default 2)
# pairs of windows, alternating the two sources of the groups' counters
# in one moatd (observe/source): each group's files, then the cgroup
# iterator (one read a period for all, where the kernel has one).  The
# ratio of the medians is the figure that counts (this VM's absolute
# figures wander by a fifth from hour to hour).  Each window also gives
# moatd's CPU time by stage of its cycle (moat_cycle_cpu_seconds_total,
# scraped just before and after it), per cycle.  Memory, from
# /proc/PID/status: VmRSS at the first window's end (the target's), as
# moatd runs under Prometheus: after scrapes of /metrics, whose body's
# buffer moatd keeps for the next (http.c); of it RssAnon (the
# file-backed rest is mostly moatd's own binary, whose embedded BPF
# objects libbpf reads: how much of it is mapped depends on the page
# cache), and VmHWM, the peak.
# The scrape: the median of 21 GETs of /metrics with curl (time_total:
# connect to last byte), after the CPU window so that they do not count
# in it.
#
# Targets at 500 groups: <= 2 ms of CPU per cycle (with the iterator
# where there is one: moatd's default), RSS <= 16 MiB, a scrape <= 20 ms;
# the iterator at most half the files' CPU per cycle (reported).
# Exits 1 when a target is missed.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-$top/build}
N=${1:-500}
SECS=${2:-20}
PAIRS=${3:-2}
PERIOD_MS=500

die() { echo "scale.sh: $*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "must run as root (cgroups, BPF)"
[[ "$N" =~ ^[1-9][0-9]*$ ]] || die "GROUPS: '$N' is not a positive integer"
[[ "$SECS" =~ ^[1-9][0-9]*$ ]] || die "SECONDS: '$SECS' is not a positive integer"
[[ "$PAIRS" =~ ^[1-9][0-9]*$ ]] || die "PAIRS: '$PAIRS' is not a positive integer"
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
	--state-dir "$work/state" \
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
cycles=$((SECS * 1000 / PERIOD_MS))
port=$(ctl get http/port)
# moatd's CPU seconds by stage of its cycle, and its cycles, to $1
stages() {
	curl -s "http://127.0.0.1:$port/metrics" |
		awk '/^moat_cycle_cpu_seconds_total\{|^moat_cycles_total / { print $1, $2 }' >"$1"
}
# ms of CPU per cycle over a window of SECS, with observe/source $1; the
# window's stages (scraped outside it) to $work/stages-$1
window() {
	local start end
	ctl set observe/source "$1" >/dev/null
	sleep 1		# the switch's period is not the window's
	stages "$work/before"
	start=$(cpu_ns)
	sleep "$SECS"
	end=$(cpu_ns)
	stages "$work/after"
	awk 'NR == FNR { v[$1] = $2; next }
	     $1 == "moat_cycles_total" { c = $2 - v[$1]; next }
	     { d[$1] = $2 - v[$1]; n[++k] = $1 }
	     END { for (i = 1; i <= k; i++) {
			s = n[i]; sub(/.*stage="/, "", s); sub(/".*/, "", s)
			printf "%s %.3f ", s, c ? d[n[i]] / c * 1e3 : 0 }
		   print "" }' "$work/before" "$work/after" >"$work/stages-$1"
	awk -v t=$((end - start)) -v c="$cycles" 'BEGIN { printf "%.3f\n", t / c / 1e6 }'
}
median() {
	sort -g | awk '{ v[NR] = $1 }
		END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
: >"$work/files" && : >"$work/auto"
for i in $(seq "$PAIRS"); do
	window auto >>"$work/auto"
	active=$(ctl get observe/active_source)
	# memory as moatd runs by default: before a switch of source has
	# loaded the iterator again (libbpf parses the kernel's BTF each time)
	if [ "$i" = 1 ]; then
		rss_kb=$(awk '/^VmRSS/ { print $2 }' "/proc/$moatd_pid/status")
		hwm_kb=$(awk '/^VmHWM/ { print $2 }' "/proc/$moatd_pid/status")
		anon_kb=$(awk '/^RssAnon/ { print $2 }' "/proc/$moatd_pid/status")
	fi
	window files >>"$work/files"
	echo "pair $i: $active $(tail -n 1 "$work/auto") ms, files $(tail -n 1 "$work/files") ms of CPU per cycle"
	echo "  ms per cycle by stage, $active: $(cat "$work/stages-auto")"
	echo "  ms per cycle by stage, files: $(cat "$work/stages-files")"
done
files_ms=$(median <"$work/files")
cpu_ms=$(median <"$work/auto")
cycle_us=$(ctl get cycle_us)
for _ in $(seq 21); do
	curl -s -o "$work/metrics" -w '%{time_total}\n' "http://127.0.0.1:$port/metrics"
done | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] * 1000 }' >"$work/scrape"
scrape_ms=$(cat "$work/scrape")
series=$(grep -vc '^#' "$work/metrics")
bytes=$(wc -c <"$work/metrics")

# A source that fails reads nothing and costs little: say it, and fail.
if grep -q '^<[0-4]>observe:' "$work/moatd.log"; then
	echo "scale.sh: moatd's source of the counters failed:" >&2
	grep '^<[0-4]>observe:' "$work/moatd.log" | sort | uniq -c | head -n 5 >&2
	warned=1
fi

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -r), $(nproc) CPUs, $N groups under $prefix"
awk -v cpu="$cpu_ms" -v f="$files_ms" -v a="$active" -v c="$cycles" -v p="$PAIRS" \
	-v w="$cycle_us" -v r="$rss_kb" -v h="$hwm_kb" -v an="$anon_kb" \
	-v s="$scrape_ms" -v n="$series" -v b="$bytes" 'BEGIN {
	printf "CPU per cycle:   %.3f ms (%s; median of %d windows of %d cycles; target <= 2 ms: %.2fx of it)\n",
		cpu, a, p, c, cpu / 2
	printf "                 %.3f ms reading each group'"'"'s files: %s/files %.2f (target <= 0.5)\n",
		f, a, cpu / f
	printf "last cycle wall: %.3f ms\n", w / 1000
	printf "RSS:             %.1f MiB after 2 scrapes (target <= 16 MiB: %.2fx of it), peak %.1f MiB; %.1f MiB of it anonymous\n",
		r / 1024, r / 1024 / 16, h / 1024, an / 1024
	printf "scrape:          %.1f ms for %d series, %.0f KiB (target <= 20 ms: %.2fx of it)\n",
		s, n, b / 1024, s / 20
	exit !(cpu <= 2 && r / 1024 <= 16 && s <= 20)
}' || { echo "scale.sh: a target was missed" >&2; exit 1; }
[ -z "${warned:-}" ] || exit 1
