#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# How far run-queue waits read from the scheduler's own stamp agree with
# moat's, wait by wait (tools/bench/stamp.bpf.c: the design it probes, and what
# it gives up).  tools/bench/overhead.sh prices that design; this says
# what its waits would be worth.
#
#   tools/bench/stamp.sh          (root)
#
# Attaches build/moat-stamp-attach --compare, which runs both ways in the
# same programs (the exact way: bpf_ktime_get_ns() at the wake-up or
# preemption and at the switch, where moat's own reads the runqueue's
# clock mostly, Documentation/rqlat.rst; the stamp's: task->sched_info
# against rq->clock), and
# prints for each load how many switch-ins had a wait both ways, how
# often the stamp read zero where moat's did not, how many of the waits of
# 100 us and 1 ms or more (moat's) it read at under half, and how the
# differences fall: under 1 us, 1 us to 1 ms, 1 ms or more, each way.
# The loads, one after the other:
#   preempt  a pinned perf bench sched pipe with a CPU hog on its CPU: the
#            woken end preempts the hog, the case the stamp reads short;
#   hogs     stress-ng --cpu 2xCPUs for 8 s: waits of a slice or more;
#   migrate  perf bench sched messaging next to a hog per CPU: tasks
#            queued on one CPU and run on another.
# Figures only: no target.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-$top/build}
STAMP=$O/moat-stamp-attach
CPU=${CPU:-$(($(nproc) - 1))}

die() { echo "stamp.sh: $*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "must run as root (BPF)"
for c in perf stress-ng taskset; do
	command -v "$c" >/dev/null || die "$c not found (tools/deps.sh --bench installs it)"
done
[ -x "$STAMP" ] || make -C "$top" O="$O" bench >/dev/null

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# hog CPU: a busy loop on CPU, its pid added to pids
hog() {
	taskset -c "$1" sh -c 'while :; do :; done' &
	pids+=($!)
}

# unhog: stop every hog
unhog() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	pids=()
}

# measure NAME CMD...: the comparison over CMD's run, summed up
measure() {
	local name=$1 sp
	shift
	"$STAMP" --compare >"$work/out" 2>"$work/err" &
	sp=$!
	for _ in $(seq 100); do
		grep -q '^attached' "$work/err" && break
		kill -0 "$sp" 2>/dev/null || break
		sleep 0.1
	done
	grep -q '^attached' "$work/err" || { cat "$work/err" >&2; die "moat-stamp-attach did not attach"; }
	"$@" >/dev/null 2>&1 || true
	kill -INT "$sp"
	wait "$sp" || die "moat-stamp-attach failed"
	awk -v name="$name" '
		{ v[$1] = $2 }
		# slot i: 2^i ns; 2^10 ns is about 1 us, 2^20 about 1 ms
		/_by_2\^/ { i = $1; sub(/.*\^/, "", i); i += 0; b = i < 10 ? 0 : i < 20 ? 1 : 2 }
		$1 ~ /^short_by_/ { s[b] += $2 }
		$1 ~ /^long_by_/ { l[b] += $2 }
		END {
			n = v["both"]
			printf "%-8s %8d waits both ways (%d moat only, %d stamp only); mean %.1f us moat, %.1f us stamp\n",
				name, n, v["a_only"], v["b_only"], n ? v["sum_a"] / n / 1e3 : 0, n ? v["sum_b"] / n / 1e3 : 0
			printf "%-8s the stamp read 0 for %d; under half of moat%s for %d of %d >= 100 us, %d of %d >= 1 ms\n",
				"", v["b_zero"], "\047s", v["a_100us_b_half"], v["a_100us"], v["a_1ms_b_half"], v["a_1ms"]
			printf "%-8s shorter by <1 us %d, 1 us-1 ms %d, >=1 ms %d; longer by <1 us %d, 1 us-1 ms %d, >=1 ms %d\n",
				"", s[0], s[1], s[2], l[0], l[1], l[2]
		}' "$work/out"
}

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -r), $(nproc) CPUs: the scheduler's stamp against moat's waits"
hog "$CPU"
measure preempt taskset -c "$CPU" perf bench sched pipe -l 20000
unhog
measure hogs timeout 8 stress-ng --cpu $(($(nproc) * 2)) -q
for c in $(seq 0 $(($(nproc) - 1))); do hog "$c"; done
measure migrate perf bench sched messaging -g 4 -l 300
unhog
