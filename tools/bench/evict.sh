#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The last resort, measured: does evicting the BE pod keep an LC pod's
# memory out of reclaim and its processes out of the OOM killer, where
# memory.high alone does not?
#
#   tools/bench/evict.sh [REPS] [SECONDS]        (root; default 5, 60)
#
# Needs cgroup v2: run it in the 6.12 guest, whose init turns 512 MiB of
# swap on zram on; SWAP=off turns it off for the runs, as most Kubernetes
# nodes have none:
#
#   VMTEST_KERNELS=6.12 VMTEST_RUN='SWAP=off tools/bench/evict.sh 5 60' \
#	selftests/vmtest.sh
#
# With swap, the BE pod's anonymous memory goes to it under memory.high,
# and kubepods runs short only once the swap is full; without, memory.high
# frees nothing, the OOM killer comes before any pressure, and moat evicts
# on the threshold alone (enforce.rst).
# A small node: kubepods (cgroupfs driver, under /evictbench) with a
# memory limit of NODE_MB (384 MiB), as kubelet bounds all pods by the
# node's allocatable memory.  In it an LC pod (burstable, classed lc,
# priority 1000) whose container runs moat-memprobe touch: a working set
# of LC_MB (128 MiB) touched a word a page each pass, and 4 MiB of fresh
# pages taken and given back (a request's buffers), 20 ms apart, so that
# a page reclaimed from it costs the next pass a fault and a page charged
# at kubepods' limit costs a reclaim first; and, BE_AT (5) s
# later, a BE pod (besteffort, classed be, priority 0) allocating
# BE_RATE (8) MiB/s without bound.  The API server is moat-kubestub, the
# tests' stub (a fake: no API server runs here); an eviction it accepts
# is carried out as kubelet would: the pod's processes killed
# (cgroup.kill), its cgroups removed, the pod deleted.
#
#   none   no moatd: the kernel's reclaim, then its OOM killer
#   off    moatd enforcing, evict/mode = off: memory.high on the BE pod
#   on     moatd enforcing, evict/mode = on (the defaults otherwise:
#          under 10% available for 3 periods with BE's memory.high at
#          its floor, or the LC pod's memory pressure over its target
#          with BE held)
#
# Each run reports: the LC probe's passes and p99/max pass time (ms;
# "killed" when the OOM killer took it), the LC pod's memory pressure
# over the run (memory.pressure some total, seconds), OOM kills in the
# LC pod and in the rest of kubepods (memory.events oom_kill), the
# lowest memory available under kubepods' limit (%), and for an
# eviction: the seconds from the first reading under 10% (a watcher's,
# every 100 ms) to the eviction's request (cross_s), from moatd's last
# step of the BE pod's memory.high to its decision (floor_s: the
# decision waits evict/memory_periods after the floor), and from the
# decision (moatd's log line, stamped as it came) to the pod's processes
# gone (gone_s); and how long the run waited for the node's memory
# pressure of the run before to pass (settle_s: PSI's some avg10 under 1%).
# Medians per scenario at the end.  PERIOD_MS (1000): moatd's period.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-$top/build}
REPS=${1:-5}
SECS=${2:-60}
NODE_MB=${NODE_MB:-384}
LC_MB=${LC_MB:-128}
BE_RATE=${BE_RATE:-8}
BE_AT=${BE_AT:-5}
PERIOD_MS=${PERIOD_MS:-1000}
THRESHOLD=10	# evict/memory_available_pct's default
# kubelet's oom_score_adj: besteffort 1000; burstable 1000 - 1000 x its
# memory request / the node's capacity (the LC pod requests its working
# set)
LC_ADJ=$((1000 - 1000 * LC_MB / NODE_MB))
SCENARIOS=${SCENARIOS:-none off on}

die() { echo "evict.sh: $*" >&2; exit 2; }

cg=/sys/fs/cgroup
[ "$(id -u)" = 0 ] || die "needs root"
[ -e $cg/cgroup.controllers ] || die "needs cgroup v2 at $cg (run it in the 6.12 guest: see the top of this file)"
for b in moatd moatctl moat-kubestub moat-memprobe; do
	[ -x "$O/$b" ] || die "$O/$b missing: make all bench"
done
# SWAP=off: the swap devices off for the runs, back on at the end
swapped=
if [ "${SWAP:-}" = off ]; then
	swapped=$(awk 'NR > 1 { print $1 }' /proc/swaps)
	for d in $swapped; do
		swapoff "$d" || die "swapoff $d failed"
	done
fi
swap=$(awk 'NR > 1 { kb += $3 } END { print kb / 1024 }' /proc/swaps)

LC_UID=0a1b2c3d-4e5f-6789-abcd-ef0123456789
BE_UID=bbbbbbbb-cccc-dddd-eeee-ffffffffffff
LC_CID=$(printf 'a%.0s' $(seq 64))
BE_CID=$(printf 'b%.0s' $(seq 64))
root=$cg/evictbench
kp=$root/kubepods
lcpod=$kp/burstable/pod$LC_UID
bepod=$kp/besteffort/pod$BE_UID
work=$(mktemp -d /tmp/evict.XXXXXX)
pids=()

# Stop what this run started, by pid, and remove its cgroups.
teardown() {
	local p d
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	pids=()
	for d in "$bepod" "$lcpod"; do
		[ -d "$d" ] && echo 1 >"$d/cgroup.kill" 2>/dev/null || true
	done
	for _ in $(seq 50); do
		grep -q "populated 1" "$kp/cgroup.events" 2>/dev/null || break
		sleep 0.1
	done
	for _ in $(seq 50); do
		[ -d "$root" ] || return 0
		find "$root" -depth -type d -exec rmdir {} + 2>/dev/null || true
		sleep 0.1
	done
	die "$root would not go: $(find "$root" -name cgroup.procs -exec cat {} +)"
}
trap 'teardown; rm -rf "$work"; for d in $swapped; do swapon "$d"; done' EXIT
trap 'exit 130' INT TERM

# subtree DIR: DIR made, with cpu and memory given to its children.
subtree() {
	mkdir -p "$1"
	echo "+cpu +memory" >"$1/cgroup.subtree_control"
}

make_tree() {
	[ ! -d "$root" ] || die "$root is there already: another run of this script?"
	subtree "$root"
	subtree "$kp"
	echo "${NODE_MB}M" >"$kp/memory.max"
	subtree "$kp/burstable"
	subtree "$kp/besteffort"
	subtree "$lcpod"
	subtree "$bepod"
	mkdir "$lcpod/$LC_CID" "$bepod/$BE_CID"
}

# in_cgroup DIR OOM_SCORE_ADJ CMD...: CMD run in cgroup DIR, in the
# background, with the OOM score adjustment kubelet gives its pod.
in_cgroup() {
	local d=$1 adj=$2
	shift 2
	sh -c 'echo $$ >"$0/cgroup.procs" && echo "$1" >/proc/$$/oom_score_adj && shift && exec "$@"' \
		"$d" "$adj" "$@" &
	pids+=("$!")
}

# field FILE KEY: the number after "KEY " or "KEY=" in FILE; 0 if none.
field() {
	awk -v k="$2" '{
		for (i = 1; i <= NF; i++) {
			if ($i == k) { print $(i + 1); exit }
			if (index($i, k "=") == 1) { print substr($i, length(k) + 2); exit }
		}
	}' "$1" 2>/dev/null | grep . || echo 0
}

ctl() { "$O/moatctl" --socket "$work/sock" "$@"; }

start_moatd() {
	printf '%s\n' "period_ms = $PERIOD_MS" "mode = enforce" "evict/mode = $1" \
		"kube/publish = 0" >"$work/moat.conf"
	rm -rf "$work/state"
	(
		. "$work/env"
		exec "$O/moatd" --foreground --config "$work/moat.conf" --cgroup-root /evictbench \
			--state-dir "$work/state" --socket "$work/sock" --listen 127.0.0.1:0
	) 2> >(while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done \
		>>"$work/moatd.log") &
	pids+=("$!")
	for _ in $(seq 300); do
		ctl get "groups/$BE_UID/name" 2>/dev/null | grep -q batch/etl && return
		sleep 0.1
	done
	die "moatd did not see the BE pod: $(tail -5 "$work/moatd.log")"
}

# The node's memory pressure of the run before, still in PSI's averages,
# would reach into the next one's moatd: each run starts once the node's
# some avg10 is under 1% (at most a minute; the wait is printed).
settle() {
	local t=0 avg
	while [ "$t" -lt 600 ]; do
		avg=$(sed -n 's/^some avg10=\([0-9.]*\) .*/\1/p' /proc/pressure/memory)
		awk -v a="$avg" 'BEGIN { exit !(a < 1) }' && break
		sleep 0.1
		t=$((t + 1))
	done
	settled=$(awk -v t="$t" 'BEGIN { printf "%.1f", t / 10 }')
}

results=()
run_one() {
	local scen=$1 rep=$2 lc passes p99 max pressure lc_oom all_oom be_oom
	local cross asked gone decided crossed_s gone_s min floor floor_s=-

	: >"$work/evict.log"
	: >"$work/moatd.log"
	rm -f "$work/env"
	settle
	make_tree
	"$O/moat-kubestub" "$work/sa" "$work/env" "$work/evict.log" \
		"$LC_UID:shop:web:lc:1000:$lcpod" "$BE_UID:batch:etl:be:0:$bepod" \
		2>>"$work/stub.err" &
	pids+=("$!")
	for _ in $(seq 100); do
		[ -s "$work/env" ] && break
		sleep 0.1
	done
	[ -s "$work/env" ] || die "moat-kubestub did not start: $(cat "$work/stub.err")"
	[ "$scen" = none ] || start_moatd "$scen"

	in_cgroup "$lcpod/$LC_CID" "$LC_ADJ" "$O/moat-memprobe" touch "$LC_MB" "$SECS" >"$work/lc.log"
	lc=$!
	"$O/moat-memprobe" watch "$kp" "$THRESHOLD" "$SECS" >"$work/watch.out" &
	pids+=("$!")
	sleep "$BE_AT"
	in_cgroup "$bepod/$BE_CID" 1000 "$O/moat-memprobe" grow "$BE_RATE"
	wait "$lc" || true
	if [ -n "${DEBUG:-}" ]; then
		for f in memory.current memory.high memory.max memory.events memory.stat cgroup.procs; do
			echo "BE $f: $(head -c 300 "$bepod/$BE_CID/$f" 2>&1 | tr '\n' ' ')" >&2
		done
		for f in memory.current memory.high cpu.max cpu.weight; do
			echo "BE pod $f: $(tr '\n' ' ' <"$bepod/$f" 2>&1)" >&2
		done
		ps -o pid,stat,args >&2 2>/dev/null || ps >&2
	fi
	pressure=$(field "$lcpod/memory.pressure" total)
	lc_oom=$(field "$lcpod/memory.events" oom_kill)
	all_oom=$(field "$kp/memory.events" oom_kill)
	be_oom=$((all_oom - lc_oom))
	teardown
	if [ -n "${DEBUG:-}" ]; then
		echo "--- $scen $rep: moatd.log, evict.log, stub.err, watch.out, lc.log" >&2
		grep -v "^$" "$work/moatd.log" | tail -20 >&2 || true
		cat "$work/evict.log" "$work/stub.err" "$work/watch.out" "$work/lc.log" >&2 || true
	fi
	read -r _ cross _ min <"$work/watch.out" || true
	read -r passes p99 max <<<"$(awk '/^passes/ { print $2, $6, $8 }' "$work/lc.log" 2>/dev/null)" || true
	passes=${passes:-killed} p99=${p99:-killed} max=${max:-killed}
	crossed_s=- gone_s=-
	if read -r _ _ _ asked _ gone <"$work/evict.log"; then
		[ "$cross" = never ] || crossed_s=$(awk -v a="$asked" -v c="$cross" 'BEGIN { printf "%.2f", a - c }')
		decided=$(awk '/evict: asking for pod/ { print $1; exit }' "$work/moatd.log")
		floor=$(awk '/evict: asking for pod/ { print last; exit } /throttle be group.*memory_high/ { last = $1 }' "$work/moatd.log")
		[ -z "$floor" ] || [ -z "$decided" ] ||
			floor_s=$(awk -v a="$decided" -v f="$floor" 'BEGIN { printf "%.2f", a - f }')
		[ -z "$decided" ] || gone_s=$(awk -v g="$gone" -v d="$decided" 'BEGIN { printf "%.2f", g - d }')
	fi
	printf '%-5s %3s  %6s %8s %8s  %8.2f  %6s %6s  %7s  %7s %7s %7s  %7s\n' "$scen" "$rep" \
		"$passes" "$p99" "$max" "$(awk -v p="$pressure" 'BEGIN { print p / 1e6 }')" \
		"$lc_oom" "$be_oom" "$min" "$crossed_s" "$floor_s" "$gone_s" "$settled"
	results+=("$scen $passes $p99 $max $(awk -v p="$pressure" 'BEGIN { print p / 1e6 }') $lc_oom $be_oom $min $crossed_s $floor_s $gone_s")
}

echo "evict.sh: $(uname -r), $(nproc) CPUs, swap ${swap} MiB; kubepods ${NODE_MB} MiB, LC ${LC_MB} MiB, BE ${BE_RATE} MiB/s from ${BE_AT} s, ${SECS} s a run, period ${PERIOD_MS} ms; $(date -u +%FT%TZ)"
printf '%-5s %3s  %6s %8s %8s  %8s  %6s %6s  %7s  %7s %7s %7s  %7s\n' scen run passes p99_ms max_ms \
	pressure_s lc_oom be_oom min_pct cross_s floor_s gone_s settle_s
for rep in $(seq "$REPS"); do
	for scen in $SCENARIOS; do
		case $scen in none|off|on) ;; *) die "scenario $scen: expected none, off or on" ;; esac
		run_one "$scen" "$rep"
	done
done

# Medians per scenario, of each column that has numbers.
echo "medians:"
for scen in $SCENARIOS; do
	printf '%s\n' "${results[@]}" | awk -v s="$scen" '
	function median(c,   n, i, j, t, v) {
		n = 0
		for (i = 1; i <= rows; i++)
			if (col[i, c] ~ /^-?[0-9.]+$/) v[++n] = col[i, c]
		if (!n) return "-"
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
			if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	}
	$1 == s { rows++; for (c = 2; c <= NF; c++) col[rows, c] = $c }
	END {
		printf "%-5s p99_ms %s max_ms %s pressure_s %s lc_oom_total %d be_oom_total %d min_pct %s cross_s %s floor_s %s gone_s %s\n",
			s, median(3), median(4), median(5), sum(6), sum(7), median(8), median(9), median(10), median(11)
	}
	function sum(c,   i, t) { t = 0; for (i = 1; i <= rows; i++) t += col[i, c]; return t }'
done
