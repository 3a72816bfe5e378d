#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# What moatd's task hooks cost every fork on the node: run_time_ns /
# run_cnt of bpf/cgroup_events.bpf.c's sched_process_fork program and of
# bpf/rqlat.bpf.c's rqlat_fork (which creates each new task's local
# storage) from the kernel's BPF stats (kernel.bpf_stats_enabled, on only
# for this run and put back on exit), over FORKS fork+exec of /bin/true,
# twice:
#  - untracked: moatd in observe mode, the tracked map empty (every node
#    without resctrl allocation);
#  - tracked: moatd allocating on the FAKE resctrl with the forking shell
#    in a BE group's cgroup, so each fork looks up both tasks' cgroups
#    (the common case there: a child in its parent's cgroup).
#
#   tools/bench/fork_hook.sh [FORKS]     (root; default 3000; after make)
#
# No target: it is printed next to what a fork costs anyway.
set -eu
forks=${1:-3000}
top=$(cd "$(dirname "$0")/../.." && pwd)
B=${O:-$top/build}
# the cpu controller's hierarchy: v1's, else the v2 mount
cpu=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ { print $2; exit }' /proc/self/mounts)
[ -n "$cpu" ] || cpu=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[ "$(id -u)" -eq 0 ] || { echo "fork_hook.sh: run as root" >&2; exit 1; }
W=$(mktemp -d /tmp/moat-forkhook.XXXXXX)
M=$(mktemp -d /tmp/moat-forkhook-resctrl.XXXXXX)
old=$(sysctl -n kernel.bpf_stats_enabled)
pid= fpid=
cleanup() {
	[ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }
	echo $$ >"$cpu/cgroup.procs" 2>/dev/null || true
	rmdir "$cpu/moatfb-1" 2>/dev/null || true
	[ -z "$fpid" ] || { kill "$fpid" 2>/dev/null; wait "$fpid" 2>/dev/null || true; }
	rmdir "$M" 2>/dev/null || true
	sysctl -q kernel.bpf_stats_enabled="$old"
	rm -rf "$W"
}
trap cleanup EXIT
sysctl -q kernel.bpf_stats_enabled=1

# "<ns> <runs>" of the program named $1 (bpftool gives the full name)
stats() {
	bpftool prog show -j | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    if p.get("name", "") == sys.argv[1]:
        print(p.get("run_time_ns", 0), p.get("run_cnt", 0))' "$1"
}

# $1: label, $2: mode, then NAME=value for moatd's environment
measure() {
	local label=$1 mode=$2 a b ra rb t0 t1
	shift 2
	rm -f "$W/sock"
	env "$@" "$B/moatd" --foreground --mode "$mode" --config "$W/conf" \
		--state-dir "$W/state" --socket "$W/sock" 2>"$W/log" &
	pid=$!
	sleep 2
	a=$(stats sched_process_fork_btf)
	ra=$(stats rqlat_fork)
	t0=$(date +%s%N)
	for _ in $(seq "$forks"); do /bin/true; done
	t1=$(date +%s%N)
	b=$(stats sched_process_fork_btf)
	rb=$(stats rqlat_fork)
	"$B/moatctl" --socket "$W/sock" get resctrl/state resctrl/be/tasks |
		tr '\n' ' ' | sed 's/^/  moatd: resctrl state, be tasks: /'; echo
	kill "$pid"
	wait "$pid" || true
	pid=
	echo "$a $b $t0 $t1 $ra $rb" | awk -v l="$label" '{
		n = $4 - $2
		printf "%-10s sched_process_fork: %d runs, %.0f ns/run; rqlat_fork: %.0f ns/run; a fork+exec of /bin/true: %.0f us\n",
		       l, n, ($3 - $1) / n, ($9 - $7) / ($10 - $8), ($6 - $5) / 1000 / n }'
}

printf 'period_ms = 500\nhttp/listen = \nrules/b = moatfb-* be\n' >"$W/conf"
mkdir -p "$cpu/moatfb-1"
measure untracked observe
"$B/selftests/moat-fake-resctrl" --layout intel "$M" &
fpid=$!
sleep 0.5
echo $$ >"$cpu/moatfb-1/cgroup.procs"
measure tracked enforce MOAT_RESCTRL_ROOT="$M" MOAT_RESCTRL_VENDOR=intel
