#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# What moat's BPF costs: scheduler throughput with and without the rqlat
# programs attached, and each program's cost per event.
#
#   tools/bench/overhead.sh [PAIRS]       (root; default 5 pairs)
#   RQLAT_ARGS=--raw-tp tools/bench/overhead.sh    the raw_tp programs
#
# Throughput: `perf bench sched pipe`, both ends pinned to one CPU so that
# every operation is two wake-ups and two context switches, in PAIRS
# alternating rounds: nothing attached; the floor (build/moat-floor-attach:
# empty tp_btf programs on the same tracepoints, tools/bench/floor.bpf.c); and
# moat-rqlat attached (watching the root cgroup, so the blame path runs
# for every task: the worst case).  Prints each round's ratios to the run
# without, their medians, and how far moat's is below the floor's: the
# figure that counts, since absolute ns differ threefold between machines
# of one kind.  Unpinned, the benchmark measures this
# VM's cross-CPU wake-up path instead (its ops/s moved 9x with unrelated
# load here) and says nothing about moat.
# Cost per event: run_time_ns / run_cnt of each program from the kernel's
# BPF stats (kernel.bpf_stats_enabled, on only for those runs and put back
# on exit), for the floor, and for moat with blame off and with the root
# cgroup watched, each then above the floor's.  Between the two, what each
# part of the hot path costs: moat's programs cut after it
# (build/moat-rqlat-parts, enum moat_rqlat_part in tools/bench/rqlat_parts.h), each
# part's price the step from the part before (the floor's, for the first).
# Then the same for another design, priced in the same run: waits read
# from the scheduler's own stamp, with no program at sched_wakeup and no
# clock read (build/moat-stamp-attach, tools/bench/stamp.bpf.c; it has no blame).
# Its pipe throughput is a column of the rounds too.  How far its waits
# agree with moat's: tools/bench/stamp.sh.
#
# The anchor: bcc's libbpf-tools runqlat (one global histogram of every
# task's waits, no cgroups, no blame), RUNQLAT its path (default: the
# runqlat on PATH, Debian's libbpf-tools package, which tools/deps.sh
# --bench installs; RUNQLAT= skips it).  Its pipe throughput is a column
# of the rounds, its programs are priced with moat's, and both are summed
# above the floor over the programs one pipe operation runs (the events
# each program saw, over the operations): moat's sum over runqlat's is
# the figure the issue "the hot path at half of runqlat's cost" holds to
# <= 0.5, and moat's pipe ratio to within 0.02 of the floor's.
#
# Targets, each against the same run (issue: the hot path at half of
# runqlat's cost): moat's ns a pipe operation above the floor, blame on
# (--watch /), <= 0.5 of runqlat's; moat's pipe ratio no more than 0.02
# below the floor's.  The earlier absolute targets (ratio >= 0.95,
# sched_switch <= 150 ns, floor + 50 and + 30 ns) are retired: their
# figures are still printed.
#
# The counter path (bpf/pmu.bpf.c), with PMU_EVENTS (default cpu-clock,
# the software event that stands in where there is no PMU; "cycles
# instructions LLC-load-misses" on a machine with one): PAIRS more pairs
# without and with moat-rqlat --watch / and build/moat-pmu-attach both
# attached, and the cost of both sched_switch programs per event
# together.  Targets: ratio >= 0.93, <= 300 ns per sched_switch.
# PMU_EVENTS= skips it.
# Exits 1 when a target is missed.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-$top/build}
PAIRS=${1:-5}
LOOPS=${LOOPS:-200000}
CPU=${CPU:-$(($(nproc) - 1))}
RQLAT=$O/moat-rqlat
PMU=$O/moat-pmu-attach
FLOOR=$O/moat-floor-attach
PARTS=$O/moat-rqlat-parts
STAMP=$O/moat-stamp-attach
RUNQLAT=${RUNQLAT-$(command -v runqlat || true)}
PMU_EVENTS=${PMU_EVENTS-cpu-clock}

die() { echo "overhead.sh: $*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "must run as root (BPF, sysctl)"
[[ "$PAIRS" =~ ^[1-9][0-9]*$ ]] || die "PAIRS: '$PAIRS' is not a positive integer"
command -v perf >/dev/null || die "perf not found (tools/deps.sh installs linux-perf)"
command -v jq >/dev/null || die "jq not found (tools/deps.sh installs it)"
command -v bpftool >/dev/null || die "bpftool not found (tools/deps.sh installs it)"
[ -x "$RQLAT" ] && [ -x "$PMU" ] && [ -x "$FLOOR" ] && [ -x "$PARTS" ] && [ -x "$STAMP" ] ||
	make -C "$top" O="$O" all bench >/dev/null
if [ -n "$RUNQLAT" ] && [ ! -x "$RUNQLAT" ]; then
	die "RUNQLAT: '$RUNQLAT' is not an executable"
fi
[ -n "$RUNQLAT" ] || echo "# runqlat not found (tools/deps.sh --bench installs libbpf-tools): no anchor in this run"

work=$(mktemp -d)
rqlat_pid=
pmu_pid=
floor_pid=
parts_pid=
stamp_pid=
runqlat_pid=
attached_pid=
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	for p in $rqlat_pid $pmu_pid $floor_pid $parts_pid $stamp_pid $runqlat_pid; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	sysctl -qw kernel.bpf_stats_enabled="$old_stats"
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
sysctl -qw kernel.bpf_stats_enabled=0

pipe_ops() {
	taskset -c "$CPU" perf bench sched pipe -l "$LOOPS" 2>/dev/null |
		awk '/ops\/sec/ { print $1 }'
}

# attach PATTERN LOG CMD...: CMD in the background, stdout discarded,
# until its stderr (in LOG) has a line matching PATTERN; its pid in
# attached_pid.
attach() {
	local pattern=$1 log=$2
	shift 2
	"$@" >/dev/null 2>"$log" &
	attached_pid=$!
	for _ in $(seq 100); do
		grep -q "$pattern" "$log" && return 0
		kill -0 "$attached_pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$log" >&2
	die "$(basename "$1") did not attach"
}

# detach VAR: stop the tool attach() started, whose pid is in VAR; empty VAR.
detach() {
	local -n pid_of=$1

	kill "$pid_of"
	wait "$pid_of" 2>/dev/null || true
	pid_of=
}

start_rqlat() {
	# shellcheck disable=SC2086
	attach '^Tracing\|attaching' "$work/rqlat.err" "$RQLAT" "$@" ${RQLAT_ARGS:-} --json
	rqlat_pid=$attached_pid
}

start_floor() {
	attach '^attached' "$work/floor.err" "$FLOOR"
	floor_pid=$attached_pid
}

stop_floor() { detach floor_pid; }

start_parts() {
	attach '^attached' "$work/parts.err" "$PARTS" "$@"
	parts_pid=$attached_pid
}

stop_parts() { detach parts_pid; }

start_stamp() {
	attach '^attached' "$work/stamp.err" "$STAMP" "$@"
	stamp_pid=$attached_pid
}

stop_stamp() { detach stamp_pid; }

# runqlat prints its banner on stdout, line-buffered by stdbuf so that it
# reaches the log before runqlat's first (never reached) interval
start_runqlat() {
	# shellcheck disable=SC2016  # $0 is expanded by that sh
	attach '^Tracing' "$work/runqlat.err" sh -c 'exec stdbuf -oL "$0" 999999 1 >&2' "$RUNQLAT"
	runqlat_pid=$attached_pid
}

stop_runqlat() { detach runqlat_pid; }

# Cumulative run_time_ns and run_cnt of the rqlat programs and the floor's
# (bpftool here cannot tell which process loaded a program: go by name).
prog_stats() {
	bpftool prog show --json | jq -r '
		.[] | select(.name | test("^(sched|pmu)_(switch|wakeup|wakeup_new)_(btf|raw)$|^floor_|^stamp_(switch|wakeup)|^rqlat_fork$|^(handle_)?sched_(switch|wakeup|wakeup_new)$"))
		| "\(.name) \(.run_time_ns // 0) \(.run_cnt // 0)"'
}

median() {
	sort -g "$1" | awk '{ v[NR] = $1 }
		END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

stop_rqlat() { detach rqlat_pid; }

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -r), $(nproc) CPUs"
echo "# perf bench sched pipe -l $LOOPS on CPU $CPU, $PAIRS pairs, moat-rqlat ${RQLAT_ARGS:-}"
printf '%-6s %12s %12s %12s %12s %12s %8s %8s %8s %8s\n' round off_ops/s floor_ops/s moat_ops/s stamp_ops/s runqlat_ops/s floor moat stamp runqlat
: >"$work/ratios"
: >"$work/floor_ratios"
: >"$work/stamp_ratios"
: >"$work/runqlat_ratios"
ratio_of() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a / b }'; }
for i in $(seq "$PAIRS"); do
	off=$(pipe_ops)
	start_floor
	fl=$(pipe_ops)
	stop_floor
	start_rqlat --watch /
	on=$(pipe_ops)
	stop_rqlat
	start_stamp all
	st=$(pipe_ops)
	stop_stamp
	rq=- rratio=-
	if [ -n "$RUNQLAT" ]; then
		start_runqlat
		rq=$(pipe_ops)
		stop_runqlat
		rratio=$(ratio_of "$rq" "$off")
		echo "$rratio" >>"$work/runqlat_ratios"
	fi
	ratio=$(ratio_of "$on" "$off")
	fratio=$(ratio_of "$fl" "$off")
	sratio=$(ratio_of "$st" "$off")
	echo "$ratio" >>"$work/ratios"
	echo "$fratio" >>"$work/floor_ratios"
	echo "$sratio" >>"$work/stamp_ratios"
	printf '%-6s %12s %12s %12s %12s %12s %8s %8s %8s %8s\n' "$i" "$off" "$fl" "$on" "$st" "$rq" "$fratio" "$ratio" "$sratio" "$rratio"
done

median=$(median "$work/ratios")
fmedian=$(median "$work/floor_ratios")
echo "median throughput ratio (with/without): $median"
echo "median throughput ratio, the floor: $fmedian; moat below it by $(awk -v f="$fmedian" -v m="$median" 'BEGIN { printf "%.4f", f - m }') (target <= 0.02)"
smedian=$(median "$work/stamp_ratios")
echo "median throughput ratio, the scheduler's stamp (tools/bench/stamp.bpf.c, no blame): $smedian; below the floor's by $(awk -v f="$fmedian" -v m="$smedian" 'BEGIN { printf "%.4f", f - m }')"
if [ -n "$RUNQLAT" ]; then
	rmedian=$(median "$work/runqlat_ratios")
	echo "median throughput ratio, runqlat ($RUNQLAT): $rmedian; below the floor's by $(awk -v f="$fmedian" -v m="$rmedian" 'BEGIN { printf "%.4f", f - m }')"
fi

# stats_of START STOP [ARG...]: one more pipe run, between START ARG...
# and STOP, with the kernel's BPF stats on; the programs' in $work/stats.
stats_of() {
	local start=$1 stop=$2
	shift 2
	sysctl -qw kernel.bpf_stats_enabled=1
	"$start" "$@"
	pipe_ops >/dev/null
	prog_stats >"$work/stats"
	"$stop"
	sysctl -qw kernel.bpf_stats_enabled=0
}

per_event() {
	stats_of start_rqlat stop_rqlat "$@"
}

switch_ns() {
	awk '$1 ~ /^sched_switch/ { t += $2; n += $3 }
		END { printf "%.1f", n ? t / n : 0 }' "$work/stats"
}

# ns/event of the programs on one tracepoint (switch, wakeup, wakeup_new)
# in $work/stats
tp_ns() {
	awk -v tp="$1" '$1 ~ ("_" tp "(_btf|_raw)?$") && $1 !~ /^pmu/ { t += $2; n += $3 }
		END { printf "%.1f", n ? t / n : 0 }' "$work/stats"
}

echo
stats_of start_floor stop_floor
floor_switch=$(tp_ns switch) floor_wakeup=$(tp_ns wakeup) floor_wakeup_new=$(tp_ns wakeup_new)
echo "the floor (empty programs): sched_switch $floor_switch ns/event, sched_wakeup $floor_wakeup ns/event"
echo "each part of the hot path, with the parts before it (tools/bench/rqlat_parts.h); in (): its own price"
printf '%-8s %22s %22s\n' part sched_switch_ns sched_wakeup_ns
last_switch=$floor_switch last_wakeup=$floor_wakeup
for part in clock mark wait cgroup hist; do
	stats_of start_parts stop_parts "$part"
	sw=$(tp_ns switch) wk=$(tp_ns wakeup)
	awk -v p="$part" -v s="$sw" -v w="$wk" -v ls="$last_switch" -v lw="$last_wakeup" \
		'BEGIN { printf "%-8s %12.1f (%+6.1f) %12.1f (%+6.1f)\n", p, s, s - ls, w, w - lw }'
	last_switch=$sw last_wakeup=$wk
done
echo "the scheduler's stamp instead (tools/bench/stamp.bpf.c): no program at sched_wakeup; sched_switch cut after each part"
last_switch=$floor_switch
for part in wait cgroup all; do
	stats_of start_stamp stop_stamp "$part"
	sw=$(tp_ns switch)
	awk -v p="$part" -v s="$sw" -v ls="$last_switch" -v f="$floor_switch" \
		'BEGIN { printf "%-8s %12.1f (%+6.1f), above the floor %+.1f\n", p, s, s - ls, s - f }'
	last_switch=$sw
done
# ns above the floor that the programs in $work/stats ran per pipe
# operation: each program's time less the floor's price of its events,
# over the operations (a program on no tracepoint the floor has, such as
# rqlat_fork, counts whole)
per_op() {
	awk -v ops="$LOOPS" -v fs="$floor_switch" -v fw="$floor_wakeup" -v fn="$floor_wakeup_new" '
		$1 ~ /^floor_|^pmu_/ { next }
		{ f = 0 }
		$1 ~ /_switch(_btf|_raw)?$/ { f = fs }
		$1 ~ /_wakeup(_btf|_raw)?$/ { f = fw }
		$1 ~ /_wakeup_new(_btf|_raw)?$/ { f = fn }
		{ t += $2 - f * $3 }
		END { printf "%.1f", t / ops }' "$work/stats"
}

rq_op=
if [ -n "$RUNQLAT" ]; then
	echo "the anchor, runqlat ($RUNQLAT): one global histogram, no cgroups, no blame"
	stats_of start_runqlat stop_runqlat
	awk '$3 > 0 { printf "%-10s %-24s %12d %10.1f\n", "runqlat", $1, $3, $2 / $3 }' "$work/stats" | sort -k2
	rq_op=$(per_op)
	echo "runqlat: sched_switch $(tp_ns switch), sched_wakeup $(tp_ns wakeup) ns/event; $rq_op ns a pipe operation above the floor"
fi
printf '%-10s %-24s %12s %10s\n' blame program events ns/event
declare -A op_ns
for cfg in off root; do
	if [ "$cfg" = off ]; then per_event; else per_event --watch /; fi
	op_ns[$cfg]=$(per_op)
	awk -v c="$cfg" '$3 > 0 { printf "%-10s %-24s %12d %10.1f\n", c, $1, $3, $2 / $3 }' \
		"$work/stats" | sort -k2
	ns=$(switch_ns)
	echo "sched_switch, blame $cfg: $ns ns/event; above the floor: $(awk -v a="$ns" -v f="$floor_switch" 'BEGIN { printf "%.1f", a - f }')"
	echo "sched_wakeup, blame $cfg: $(tp_ns wakeup) ns/event; above the floor: $(awk -v a="$(tp_ns wakeup)" -v f="$floor_wakeup" 'BEGIN { printf "%.1f", a - f }')"
	echo "blame $cfg: ${op_ns[$cfg]} ns a pipe operation above the floor"
done

ok=1
awk -v f="$fmedian" -v m="$median" 'BEGIN { exit !(f - m <= 0.02) }' || ok=0
if [ -n "$rq_op" ]; then
	printf '%-10s %14s %14s %8s\n' blame moat_ns/op runqlat_ns/op ratio
	for cfg in off root; do
		awk -v c="$cfg" -v m="${op_ns[$cfg]}" -v r="$rq_op" \
			'BEGIN { printf "%-10s %14.1f %14.1f %8.3f\n", c, m, r, (r > 0 ? m / r : 0) }'
	done
	echo "target: moat's ns a pipe operation above the floor, blame root, <= 0.5 of runqlat's"
	awk -v m="${op_ns[root]}" -v r="$rq_op" 'BEGIN { exit !(r > 0 && m / r <= 0.5) }' || ok=0
fi

if [ -n "$PMU_EVENTS" ]; then
	start_pmu() {
		# shellcheck disable=SC2086
		attach '^attached' "$work/pmu.err" "$PMU" $PMU_EVENTS
		pmu_pid=$attached_pid
	}
	stop_pmu() { detach pmu_pid; }
	echo
	echo "# the counter path too: moat-pmu-attach $PMU_EVENTS"
	printf '%-6s %12s %12s %8s\n' pair off_ops/s on_ops/s ratio
	: >"$work/ratios"
	for i in $(seq "$PAIRS"); do
		off=$(pipe_ops)
		start_rqlat --watch /
		start_pmu
		on=$(pipe_ops)
		stop_pmu
		stop_rqlat
		ratio=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.4f", a / b }')
		echo "$ratio" >>"$work/ratios"
		printf '%-6s %12s %12s %8s\n' "$i" "$off" "$on" "$ratio"
	done
	pmedian=$(median "$work/ratios")
	echo "median throughput ratio, rqlat + pmu (with/without): $pmedian (target >= 0.93)"
	sysctl -qw kernel.bpf_stats_enabled=1
	start_rqlat --watch /
	start_pmu
	pipe_ops >/dev/null
	prog_stats >"$work/stats"
	stop_pmu
	stop_rqlat
	sysctl -qw kernel.bpf_stats_enabled=0
	awk '$3 > 0 { printf "%-10s %-24s %12d %10.1f\n", "root", $1, $3, $2 / $3 }' \
		"$work/stats" | sort -k2
	both=$(awk '$1 ~ /switch/ { t += $2; if ($1 ~ /^sched/) n += $3 }
		END { printf "%.1f", n ? t / n : 0 }' "$work/stats")
	echo "sched_switch, rqlat + pmu: $both ns/event (target <= 300)"
	awk -v m="$pmedian" -v s="$both" 'BEGIN { exit !(m >= 0.93 && s > 0 && s <= 300) }' ||
		ok=0
fi

[ "$ok" = 1 ] || { echo "overhead.sh: a target was missed" >&2; exit 1; }
