#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The Heracles-style experiment: does moatd keep an LC service's tail
# latency while BE work runs next to it, and what does the BE work keep?
#
#   tools/bench/protect.sh [REPS] [SECONDS]      (root; default 3, 12)
#
# LC: Debian's nginx, one worker, serving a small file on loopback,
# driven by build/moat-loadgen (open loop, fixed rate, latency from each
# request's due time).  BE: stress-ng, one CPU and one cache stressor,
# started BE_AT seconds into the load.  nginx and stress-ng share the
# last CPU; the load generator and moatd run on the first, so the client
# measures without competing.
#
# TREE=kubelet (the default): the cgroups as kubelet's cgroupfs driver
# makes them, the tasks in the container cgroups, every weight as kubelet
# sets it (kubepods 1024 per CPU, a pod's its CPU request, the burstable
# tier the sum of its pods', besteffort 2; cpu.weight on v2 converted as
# kubelet converts).  nginx is a burstable pod requesting 0.5 CPU.
#   alone        LC only
#   none         a BE pod with the LC pod's weight at every level (no
#                isolation)
#   k8s          a besteffort BE pod: cpu.shares 2 / cpu.weight 1
#   moatd-pod    k8s, plus moatd in enforce mode
#   burst        the BE work in a burstable batch pod requesting 1 CPU,
#                where weights alone do not protect
#   burst-moatd  burst, plus moatd, the batch pod classed be by override:
#                its pod-level weight is moat's first lever
#   burst2       two burstable batch pods requesting 1 and 0.5 CPU, each
#                with the BE work: their CPU split is reported
#   burst2-moatd burst2, plus moatd, both batch pods classed be
#   burst3       three burstable batch pods requesting 1, 0.5 and 0.5 CPU
#   burst3-moatd burst3, plus moatd, the three classed be
#   hungry-alone LC only, at HUNGRY_RATE (by default the rate that needs
#                0.7 of a CPU on this machine), a CPU-hungry
#                LC service: nginx needs 60-80% of a CPU
#   hungry       hungry-alone's LC beside burst's batch pod
#   hungry-moatd hungry, plus moatd, the batch pod classed be
#   hungry-moatd-quota  hungry-moatd, the batch pod also held to QUOTA
#                from the start: a BE budget by hand
#                (the hungry* scenarios are judged against hungry-alone,
#                and report the LC's throughput and CPU beside its latency)
#   burst-quota  burst, the batch pod held to QUOTA (CPUs/period in us,
#                0.5/100000) from the start: the quota lever, by hand
#   burst-slices burst, the slices set by hand from the start: nginx's
#                threads LC_SLICE_US (100), the batch pod's BE_SLICE_US
#                (100; 0 leaves them): the slice lever, by hand
# and, with no BE at all, nginx held back by its own CPU limit: the load
# comes in bursts (LIMIT_RATE requests/s for ON_MS, none for OFF_MS;
# 12000, 100, 200: nginx needs ~0.4 CPU in a burst, ~0.13 on average),
# more than LIMIT CPUs (0.2) within a CFS period and well under it on
# average:
#   unlimited    no limit on the LC pod
#   limit        limits.cpu LIMIT on the pod and its container, as
#                kubelet and runc write it (Kubernetes as is)
#   limit-moatd  limit, plus moatd in enforce mode: CFS burst
#   limit-moatd-lift  limit-moatd with burst/lift = 1: the pod's quota
#                lifted where the burst is not enough (the container's,
#                the runtime's, stays)
#   limited-be   limit, and burst's batch pod beside it (1 CPU request,
#                the LC pod 0.5): an LC service at its limit behind BE
#   limited-be-moatd  limited-be, plus moatd in enforce mode, the batch
#                pod classed be: judged against limit, the same LC with
#                the same limit and no BE (p99/limit)
# these report the LC pod's throttled periods (pod and container) and
# its CPU over the run against its limit.
# moatd runs in every scenario, observing where it does not enforce, with
# a period of one loadgen window (1 s): each run also records moatd's LC
# signals for every window next to the client's p99 of that window, and
# the end reports how well each signal ranks and predicts the client.
#
# TREE=flat: the first experiment, LC and BE in cgroups of their own:
#   alone, none, k8s (BE cpu.shares=2 / cpu.weight=1); static: k8s plus
#   a koordlet-style static suppress (BE's CPU budget = shared CPUs x 65%
#   - LC usage, every second); moatd: k8s plus moatd, the BE cgroup a
#   rule's, so moatd may lower its CPU priority (cpu.idle) first;
#   moatd-pod: k8s plus moatd with enforce/cpu_priority = 0 (the quota
#   only); moatd-only: moatd without Kubernetes' weights.
#
# LC latency is over the requests due from BE_AT + 2 s to the end, the
# same steady-state window for every scenario; the reaction (time to
# moatd's first action, time until the LC p99 over 1 s windows is back
# under 1.5x alone) is reported on its own.  BE throughput is stress-ng's
# bogo-ops per second of wall time, per stressor.
#
# Environment: RATE (requests/s, 4000: nginx needs 0.13-0.35 of a CPU on
# this project's machines, enough to lose its wake-up preemption to a
# hog), BE_STRESS (each batch pod's stressors, "cpu cache": one of each;
# "cpu" alone takes the cache stressor's pollution away), HUNGRY_RATE
# (the hungry* scenarios' requests/s; auto, the default, finds the rate
# at which nginx needs HUNGRY_CPU (0.7) of a CPU alone on this machine,
# in two 4 s runs before the first; the lc_cpu column says what nginx
# needed, and rps/al whether it was served), PERIOD_MS (moatd; 1000 for
# kubelet, 500 for flat), TARGET_US (lc/rqlat_p99_target_us, 500),
# SIGNAL (lc/rqlat_signal), SCENARIOS, TREE, KNOBS (more config lines
# for moatd, e.g. KNOBS='enforce/cpu_prio_decrease_pct = 99'), TRACE
# (seconds: each run records the scheduler's events for that long with
# perf and says, wait by wait, what ran while nginx waited:
# tools/bench/lcwaits.py). KNOBS_B (set, even empty: a second arm):
# every scenario runs twice a round, A with KNOBS, then "<scenario>@B"
# with KNOBS_B in its place, each paired with its own arm's alone, and
# the end compares the arms (tools/bench/protect_ab.py): two
# configurations, run by run, under the same drift.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-$top/build}
REPS=${1:-3}
SECS=${2:-12}
RATE=${RATE:-4000}
HUNGRY_RATE=${HUNGRY_RATE:-auto}
HUNGRY_CPU=${HUNGRY_CPU:-0.7}
TREE=${TREE:-kubelet}
TARGET_US=${TARGET_US:-500}
SIGNAL=${SIGNAL:-}
BE_STRESS=${BE_STRESS:-cpu cache}
case $TREE in
kubelet)
	PERIOD_MS=${PERIOD_MS:-1000}
	SCENARIOS=${SCENARIOS:-alone none k8s moatd-pod burst burst-moatd burst2 burst2-moatd burst3 burst3-moatd hungry-alone hungry hungry-moatd} ;;
	# (unlimited limit limit-moatd: named in SCENARIOS)
flat)
	PERIOD_MS=${PERIOD_MS:-500}
	SCENARIOS=${SCENARIOS:-alone none k8s static moatd moatd-pod moatd-only} ;;
*)
	echo "protect.sh: TREE: '$TREE' is neither kubelet nor flat" >&2; exit 2 ;;
esac
LIMIT=${LIMIT:-0.2}
LIMIT_RATE=${LIMIT_RATE:-12000}
ON_MS=${ON_MS:-100}
OFF_MS=${OFF_MS:-200}
BE_AT=2
SKIP=$((BE_AT + 2))
PORT=18080
ARM_KNOBS=${KNOBS:-}	# moatd's config lines of the run's arm (run_one)

die() { echo "protect.sh: $*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "must run as root (cgroups, BPF)"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "REPS: '$REPS' is not a positive integer"
[[ "$SECS" =~ ^[1-9][0-9]*$ ]] && [ "$SECS" -gt $((SKIP + 2)) ] ||
	die "SECONDS: '$SECS' must be an integer over $((SKIP + 2))"
command -v nginx >/dev/null && command -v stress-ng >/dev/null ||
	die "needs nginx and stress-ng: run tools/deps.sh --bench"
[ -z "${TRACE:-}" ] || { [[ "$TRACE" =~ ^[1-9][0-9]*$ ]] && [ "$TRACE" -le $((SECS - SKIP)) ]; } ||
	die "TRACE: '$TRACE' is not a whole number of seconds within the $((SECS - SKIP)) s after $SKIP s"
[ -z "${TRACE:-}" ] || command -v perf >/dev/null || die "TRACE needs perf (linux-perf)"
for sc in $SCENARIOS; do
	[[ "$sc" != *@* ]] || die "SCENARIOS: '$sc': a name with @ is an arm's (KNOBS_B makes them)"
done
[[ "$HUNGRY_RATE" =~ ^([1-9][0-9]*|auto)$ ]] ||
	die "HUNGRY_RATE: '$HUNGRY_RATE' is neither a positive integer nor auto"
[[ "$HUNGRY_CPU" =~ ^0?\.[0-9]+$ ]] && awk -v c="$HUNGRY_CPU" 'BEGIN { exit !(c >= 0.3 && c <= 0.9) }' ||
	die "HUNGRY_CPU: '$HUNGRY_CPU' is not a share of a CPU from 0.3 to 0.9"
stress_args=()
for st in $BE_STRESS; do
	case $st in
	cpu | cache) stress_args+=("--$st" 1) ;;
	*) die "BE_STRESS: '$st' is neither cpu nor cache" ;;
	esac
done
[ "${#stress_args[@]}" -gt 0 ] || die "BE_STRESS: names no stressor (cpu, cache)"
[ -x "$O/moatd" ] && [ -x "$O/moat-loadgen" ] || make -C "$top" O="$O" all bench >/dev/null
# the CPUs this harness may use, counted before it pins itself to one
# (nproc counts those of its affinity)
NCPUS=$(nproc)
[ "$NCPUS" -ge 2 ] || die "needs 2 CPUs: one shared by LC and BE, one for the client"

CLIENT_CPU=0
SHARED_CPU=$((NCPUS - 1))
# The harness's own processes (sleep, awk, the static loop) stay off the
# shared CPU too: children inherit this.
taskset -pc "$CLIENT_CPU" $$ >/dev/null
cpu_mnt=$(awk '$9 == "cgroup" && $NF ~ /(^|,)cpu(,|$)/ { print $5; exit }' /proc/self/mountinfo)
v2=0
if [ -z "$cpu_mnt" ]; then
	cpu_mnt=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
	v2=1
fi
[ -n "$cpu_mnt" ] || die "no cgroup hierarchy with the cpu controller"
# v1 with cpuacct mounted apart: the groups go there too, as kubelet's do,
# so that moatd and the static suppress see their usage.
acct_mnt=
[ "$v2" = 0 ] && acct_mnt=$(awk '$9 == "cgroup" && $NF ~ /(^|,)cpuacct(,|$)/ { print $5; exit }' /proc/self/mountinfo)
[ "$acct_mnt" = "$cpu_mnt" ] && acct_mnt=

work=$(mktemp -d)
chmod 755 "$work"	# nginx's workers run as nobody
name=moat-bench-$$
prefix=$cpu_mnt/$name
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	for m in "$cpu_mnt" ${acct_mnt:+"$acct_mnt"}; do
		[ -d "$m/$name" ] && find "$m/$name" -depth -type d -exec rmdir {} + 2>/dev/null
	done
	[ -n "${KEEP:-}" ] && echo "protect.sh: kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The LC service, started once for every run.
mkdir -p "$work/www" "$work/tmp"
head -c 612 /dev/zero | tr '\0' 'x' >"$work/www/index.html"
cat >"$work/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx.err warn;
events { worker_connections 512; }
http {
	access_log off;
	keepalive_requests 1000000;
	keepalive_timeout 300s;
	client_body_temp_path $work/tmp;
	proxy_temp_path $work/tmp;
	fastcgi_temp_path $work/tmp;
	uwsgi_temp_path $work/tmp;
	scgi_temp_path $work/tmp;
	server {
		listen 127.0.0.1:$PORT;
		root $work/www;
	}
}
EOF
# mk_group PATH: the cgroup and its parents in every hierarchy (on v2,
# each parent gives its children cpu and memory); join_group PATH PID;
# rm_group PATH: it and its parents up to the first that has others.
mk_group() {
	local m rel= part
	for part in ${1//\// }; do
		rel=${rel:+$rel/}$part
		for m in "$prefix" ${acct_mnt:+"$acct_mnt/$name"}; do
			[ -d "$m/$rel" ] && continue
			[ "$v2" = 1 ] && echo "+cpu +memory" >"$(dirname "$m/$rel")/cgroup.subtree_control"
			mkdir "$m/$rel"
		done
	done
}
join_group() {
	echo "$2" >"$prefix/$1/cgroup.procs"
	[ -z "$acct_mnt" ] || echo "$2" >"$acct_mnt/$name/$1/cgroup.procs"
}
rm_group() {
	local m rel=$1
	while [ "$rel" != . ]; do
		for m in "$prefix" ${acct_mnt:+"$acct_mnt/$name"}; do
			rmdir "$m/$rel" 2>/dev/null || return 0
		done
		rel=$(dirname "$rel")
	done
}
# set_shares PATH SHARES: a v1 cpu.shares, or the v2 cpu.weight kubelet
# converts it to: 1 + (shares - 2) * 9999 / 262142.
set_shares() {
	if [ "$v2" = 1 ]; then echo $((1 + ($2 - 2) * 9999 / 262142)) >"$prefix/$1/cpu.weight"
	else echo "$2" >"$prefix/$1/cpu.shares"; fi
}
mkdir "$prefix"
[ -z "$acct_mnt" ] || mkdir "$acct_mnt/$name"

# Where LC and BE run: kubelet's containers, or cgroups of their own.
ctr() { printf '%064x' "$1"; }
LC_UID=0a1b2c3d-4e5f-6789-abcd-ef0123456789
BE_UID=aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee
BATCH_UID=bbbbbbbb-cccc-dddd-eeee-ffffffffffff
BATCH2_UID=cccccccc-dddd-eeee-ffff-000000000000
BATCH3_UID=dddddddd-eeee-ffff-0000-111111111111
if [ "$TREE" = kubelet ]; then
	LC_POD=kubepods/burstable/pod$LC_UID
	LC=$LC_POD/$(ctr 1)
	mk_group "$LC"
	set_shares kubepods $((1024 * NCPUS))
	set_shares "$LC_POD" 512
	set_shares kubepods/burstable 512
	set_shares "$LC" 512
else
	LC=lc
	LC_POD=lc	# its usage and limits: the flat tree's one group
	mk_group lc
fi
(join_group "$LC" "$BASHPID"
 exec taskset -c "$SHARED_CPU" nginx -c "$work/nginx.conf" -e "$work/nginx.err") &
pids+=($!)
for _ in $(seq 50); do
	(echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
	sleep 0.1
done

# The LC's context switches, its threads' voluntary and involuntary
# ones together (not while the load runs: it forks).
lc_switches() {
	local p t k v n=0
	for p in $(cat "$prefix/$LC/cgroup.procs"); do
		for t in /proc/"$p"/task/*; do
			while read -r k v; do
				case $k in
				voluntary_ctxt_switches: | nonvoluntary_ctxt_switches:) n=$((n + v)) ;;
				esac
			done 2>/dev/null <"$t/status" || true
		done
	done
	echo "$n"
}

# LC CPU usage in CPUs over the last @1 seconds, from its tasks' times.
lc_ticks() {
	local p t=0
	for p in $(cat "$prefix/$LC/cgroup.procs"); do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}

# lc_limit CPUS|max: limits.cpu on nginx's pod and its container, as
# kubelet (the pod) and runc (the container) write it; on v1 a child's
# quota may not exceed its parent's, so the pod's goes first, and last
# when the limit goes.
lc_limit() {
	local q g
	if [ "$1" = max ]; then
		for g in "$LC" "$LC_POD"; do
			if [ "$v2" = 1 ]; then echo "max 100000" >"$prefix/$g/cpu.max"
			else echo -1 >"$prefix/$g/cpu.cfs_quota_us"; fi
		done
		return
	fi
	q=$(awk -v c="$1" 'BEGIN { printf "%d", c * 100000 }')
	for g in "$LC_POD" "$LC"; do
		if [ "$v2" = 1 ]; then echo "$q 100000" >"$prefix/$g/cpu.max"
		else echo "$q" >"$prefix/$g/cpu.cfs_quota_us"; fi
	done
}
# The CFS periods a cgroup was throttled in (cpu.stat nr_throttled).
cg_throttled() {
	local k v
	while read -r k v; do
		[ "$k" = nr_throttled ] && { echo "$v"; return; }
	done <"$prefix/$1/cpu.stat"
}
# Whether scenario $1 has BE work.
has_be() {
	case $1 in limited-be*) return 0 ;; alone | hungry-alone | unlimited | limit*) return 1 ;; esac
}
# The batch pods of scenario $1 on the kubelet tree, "UID SHARES" each,
# the first the one every burst*, hungry* and limited-be* scenario has.
batch_pods() {
	case $1 in
	burst2*) printf '%s\n' "$BATCH_UID 1024" "$BATCH2_UID 512" ;;
	burst3*) printf '%s\n' "$BATCH_UID 1024" "$BATCH2_UID 512" "$BATCH3_UID 512" ;;
	burst* | limited-be* | hungry | hungry-moatd*) echo "$BATCH_UID 1024" ;;
	esac
}
# Whether moatd enforces in scenario $1 (kubelet tree).
enforces() {
	case $1 in moatd-pod | burst*-moatd | limit-moatd* | limited-be-moatd | hungry-moatd*) return 0 ;; esac
	return 1
}
# The scenario that judges scenario $1's LC latency: its own LC without
# BE (hungry-alone for hungry*), of its own arm (KNOBS_B).
alone_of() {
	local a
	case $1 in hungry*) a=hungry-alone ;; *) a=alone ;; esac
	[ "${1%@B}" = "$1" ] && echo "$a" || echo "$a@B"
}

set_quota() {	# CPUs
	local q
	q=$(awk -v c="$1" 'BEGIN { q = int(c * 100000); print q < 1000 ? 1000 : q }')
	if [ "$v2" = 1 ]; then echo "$q 100000" >"$prefix/$BE/cpu.max"
	else echo "$q" >"$prefix/$BE/cpu.cfs_quota_us"; fi
}

# pod_quota GROUP: $QUOTA ("CPUS/PERIOD_US") on GROUP, the period first on
# v1 (the kernel refuses a quota under 1 ms: say so rather than round).
pod_quota() {
	local quota=${QUOTA:-0.5/100000} cpus period=100000 q
	cpus=${quota%/*}
	[ "$cpus" = "$quota" ] || period=${quota#*/}
	q=$(awk -v c="$cpus" -v p="$period" 'BEGIN { printf "%d", c * p }')
	[ "$q" -ge 1000 ] || die "QUOTA: '$quota' is a quota of $q us, under the kernel's 1000"
	if [ "$v2" = 1 ]; then echo "$q $period" >"$prefix/$1/cpu.max"
	else echo "$period" >"$prefix/$1/cpu.cfs_period_us"; echo "$q" >"$prefix/$1/cpu.cfs_quota_us"; fi
}

# set_slices US TID...: an EEVDF custom slice (sched_setattr's
# sched_runtime, 6.12+) on each thread, its policy and nice kept.
set_slices() {
	python3 - "$@" <<'PY'
import ctypes, os, platform, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": (314, 315), "aarch64": (274, 275)}.get(platform.machine())
if not nr:
    sys.exit("protect.sh: sched_setattr's number on %s is not known here" % platform.machine())
SETATTR, GETATTR = nr
fmt = "IIQiIQQQ"                # struct sched_attr, SCHED_ATTR_SIZE_VER0
ns = int(sys.argv[1]) * 1000
for tid in map(int, sys.argv[2:]):
    cur = ctypes.create_string_buffer(48)
    if libc.syscall(GETATTR, tid, cur, 48, 0):
        continue                # gone
    _, pol, _, nice, _, _, _, _ = struct.unpack(fmt, cur.raw)
    attr = ctypes.create_string_buffer(struct.pack(fmt, 48, pol, 0, nice, 0, ns, 0, 0), 48)
    if libc.syscall(SETATTR, tid, attr, 0):
        sys.exit("protect.sh: sched_setattr(%d): %s" % (tid, os.strerror(ctypes.get_errno())))
PY
}

# koordlet's BE suppress: budget = capacity x 65% - LC usage, every second.
static_suppress() {
	local hz before after usage
	# /proc/PID/stat's unit, USER_HZ: 100 on x86 and arm64, where the
	# guest's busybox has no getconf
	hz=$(getconf CLK_TCK 2>/dev/null) || hz=100
	before=$(lc_ticks)
	while sleep 1; do
		after=$(lc_ticks)
		usage=$(awk -v d=$((after - before)) -v hz="$hz" 'BEGIN { print d / hz }')
		before=$after
		set_quota "$(awk -v u="$usage" 'BEGIN { b = 1 * 0.65 - u; print (b > 0 ? b : 0) }')"
	done
}

# start_moatd MODE [CPU_PRIORITY]: moatd on the client's CPU.  On the
# kubelet tree, lc_gid is then the id of nginx's container's group.
start_moatd() {
	local id
	{
		printf 'period_ms = %s\nlc/rqlat_p99_target_us = %s\n' "$PERIOD_MS" "$TARGET_US"
		[ -z "$SIGNAL" ] || printf 'lc/rqlat_signal = %s\n' "$SIGNAL"
		[ -z "$ARM_KNOBS" ] || printf '%s\n' "$ARM_KNOBS"
		[ "$TREE" = kubelet ] ||
			printf 'rules/lc = lc lc\nrules/be = be be\nenforce/cpu_priority = %s\n' "$2"
	} >"$work/moat.conf"
	rm -rf "$work/state"
	# each line of moatd's log with the time it came: the first action's
	# (run_one), without a watcher that polls (below)
	taskset -c "$CLIENT_CPU" "$O/moatd" --foreground --mode "$1" \
		--config "$work/moat.conf" --cgroup-root "/$name" \
		--state-dir "$work/state" --socket "$work/sock" --listen 127.0.0.1:0 \
		2> >(while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done \
			>>"$work/moatd.log") &
	moatd_pid=$!
	pids+=("$moatd_pid")
	lc_gid=
	for _ in $(seq 100); do
		if [ "$TREE" = flat ]; then
			[ "$(ctl ls groups 2>/dev/null | wc -l)" -ge 2 ] && return
		else
			for id in $(ctl ls groups 2>/dev/null); do
				id=${id%/}
				case $(ctl get "groups/$id/path") in
				*/"$LC") lc_gid=$id; return ;;
				esac
			done
		fi
		sleep 0.1
	done
	die "moatd did not find the groups: $(tail -5 "$work/moatd.log")"
}
ctl() { "$O/moatctl" --socket "$work/sock" "$@"; }

now() { printf '%s\n' "$EPOCHREALTIME"; }
# A sleep without a fork: a read that times out on a pipe no one writes.
exec {napfd}<> <(:)
nap() { read -r -t "$1" -u "$napfd" _ || true; }

# A cgroup's CPU time, in us: v2 cpu.stat's usage_usec, v1 cpuacct.usage.
# Read with builtins: no fork while the load runs.
cg_usage_us() {
	local k v
	if [ "$v2" = 1 ]; then
		while read -r k v; do
			[ "$k" = usage_usec ] && { echo "$v"; return; }
		done <"$prefix/$1/cpu.stat"
	elif [ -n "$acct_mnt" ]; then
		read -r v <"$acct_mnt/$name/$1/cpuacct.usage"
		echo $((v / 1000))
	else
		echo 0
	fi
}

# One run: "p50 p99 p999 cpu_ops cache_ops first_action_s recovery_s
# be_split stalled throttled lc_cpus lc_rate lc_switches"; be_split is the first
# batch pod's CPU over each other's, ":" between, from the latency
# window's start to the end (burst2*, burst3*; "-" elsewhere); throttled,
# the LC pod's and container's throttled periods over the run (unlimited
# and limit*; "-" elsewhere), lc_cpus its pod's CPU over the run, and
# lc_rate the requests the client had answered per second, lc_switches
# the LC's context switches over the run a request answered (requests
# a wake-up, inverted: nginx takes every request waiting when it wakes).
# On the kubelet tree, the run's windows go to $work/$sc.sig as
# "run window_s client_p99_us wp99_us ap99_us".
run_one() {
	# $1 "<scenario>@B": the scenario, moatd with KNOBS_B in KNOBS' place
	local sc=${1%@B} tag=$1 run=$2 lg=$work/lg.out be_pids=() helper= t0= first=- ops mode=
	local split=- u0= u1= stalled=- thr=- lcpu=- th0= c0= tl0= lg_args=() uid shares i sw0 sw
	local pods=() y=()
	ARM_KNOBS=${KNOBS:-}
	[ "$tag" = "$sc" ] || ARM_KNOBS=$KNOBS_B
	moatd_pid=
	lc_gid=
	BE=
	BES=()
	if [ "$TREE" = kubelet ]; then
		case $sc in
		none | k8s | moatd-pod)
			BE=kubepods/besteffort/pod$BE_UID/$(ctr 2)
			mk_group "$BE"
			BES=("$BE")
			# none: the LC pod's weight at every level
			local w=2
			[ "$sc" = none ] && w=512
			set_shares kubepods/besteffort "$w"
			set_shares "$(dirname "$BE")" "$w"
			set_shares "$BE" "$w" ;;
		*)
			# burstable batch pods: the tier's weight is the sum of its pods'
			local tier=512
			while read -r uid shares; do
				pods+=("$uid")
				BES+=("kubepods/burstable/pod$uid/$(ctr $((2 + ${#pods[@]})))")
				mk_group "${BES[-1]}"
				set_shares "$(dirname "${BES[-1]}")" "$shares"
				set_shares "${BES[-1]}" "$shares"
				tier=$((tier + shares))
			done < <(batch_pods "$sc")
			set_shares kubepods/burstable "$tier"
			BE=${BES[0]:-} ;;
		esac
		case $sc in
		limit*) lc_limit "$LIMIT" ;;
		esac
		mode=observe
		enforces "$sc" && mode=enforce
		start_moatd "$mode"
		[ "$sc" = limit-moatd-lift ] && ctl set --runtime burst/lift 1 >/dev/null
		if [ "$mode" = enforce ]; then
			for uid in "${pods[@]}"; do
				ctl set --runtime "groups/$uid/class" be >/dev/null
			done
		fi
	else
		BE=be
		BES=(be)
		mk_group be
		if [ "$sc" = k8s ] || [ "$sc" = static ] || [ "$sc" = moatd ] ||
		   [ "$sc" = moatd-pod ]; then
			set_shares be 2
		fi
		case $sc in
		moatd | moatd-only) mode=enforce; start_moatd enforce 1 ;;
		moatd-pod) mode=enforce; start_moatd enforce 0 ;;
		esac
	fi
	lg_args=(-r "$RATE")
	case $sc in
	unlimited | limit*)
		lg_args=(-r "$LIMIT_RATE" -b "$ON_MS:$OFF_MS")
		th0=$(($(cg_throttled "$LC_POD") + $(cg_throttled "$LC"))) ;;
	hungry*)
		lg_args=(-r "$HUNGRY_RATE") ;;
	esac
	sw0=$(lc_switches)
	c0=$(cg_usage_us "$LC_POD")
	tl0=$(now)
	taskset -c "$CLIENT_CPU" "$O/moat-loadgen" "${lg_args[@]}" -d "$SECS" -c 32 \
		-s "$SKIP" 127.0.0.1 "$PORT" /index.html >"$lg" &
	local lg_pid=$!
	sleep "$BE_AT"
	if has_be "$sc"; then
		t0=$(now)
		for i in "${!BES[@]}"; do
			(join_group "${BES[$i]}" "$BASHPID"
			 exec taskset -c "$SHARED_CPU" stress-ng "${stress_args[@]}" \
				--timeout "$((SECS - BE_AT))s" --metrics-brief \
				--yaml "$work/be$i.yaml" >/dev/null 2>&1) &
			be_pids+=($!)
			y+=("$work/be$i.yaml")
		done
		[ "$sc" = static ] && { static_suppress & helper=$!; pids+=("$helper"); }
		case $sc in burst-quota | hungry-moatd-quota) pod_quota "$(dirname "$BE")" ;; esac
		if [ "$sc" = burst-slices ]; then
			set_slices "${LC_SLICE_US:-100}" $(cat "$prefix/$LC/tasks")
			# stress-ng's stressors are its children: once they are up
			nap 0.5
			[ "${BE_SLICE_US:-100}" = 0 ] ||
				set_slices "${BE_SLICE_US:-100}" $(cat "$prefix/$BE/tasks")
		fi
	fi
	if [ "${#BES[@]}" -gt 1 ]; then
		nap "$((SKIP - BE_AT))"
		for i in "${!BES[@]}"; do u0+="$(cg_usage_us "$(dirname "${BES[$i]}")") "; done
	fi
	# TRACE: the scheduler's switches and wake-ups for TRACE seconds from
	# SKIP (perf on the client's CPU, which it disturbs), nginx's waits
	# read from them once the run is done (tools/bench/lcwaits.py)
	local trace_pid=
	if [ -n "${TRACE:-}" ]; then
		(nap "$((SKIP - BE_AT))"
		 exec perf record -q -e sched:sched_switch -e sched:sched_wakeup -a \
			-o "$work/trace.data" -- sleep "$TRACE" >/dev/null 2>&1) &
		trace_pid=$!
	fi
	wait "$lg_pid"
	if [ -n "$trace_pid" ]; then
		wait "$trace_pid" || echo "protect.sh: perf record failed" >&2
		perf script -i "$work/trace.data" -F time,cpu,event,trace 2>/dev/null |
			"$top/tools/bench/lcwaits.py" nginx "$SHARED_CPU" |
			sed "s/^/# trace $tag run $run: /" >&2 || true
		rm -f "$work/trace.data"
	fi
	sw=$(($(lc_switches) - sw0))
	lcpu=$(awk -v a="$c0" -v b="$(cg_usage_us "$LC_POD")" -v t0="$tl0" -v t1="$(now)" \
		'BEGIN { printf "%.3f", (b - a) / 1e6 / (t1 - t0) }')
	if [ -n "$th0" ]; then
		thr=$(($(cg_throttled "$LC_POD") + $(cg_throttled "$LC") - th0))
		# moatd's first burst, from the load's start
		[ "$mode" = enforce ] && first=$(awk -v t0="$tl0" '/burst: group .* throttled by its own/ {
			printf "%.2f", $1 - t0; f = 1; exit } END { if (!f) print "-" }' "$work/moatd.log")
	fi
	if [ "${#BES[@]}" -gt 1 ]; then
		for i in "${!BES[@]}"; do u1+="$(cg_usage_us "$(dirname "${BES[$i]}")") "; done
		split=$(awk -v a="$u0" -v b="$u1" 'BEGIN { n = split(a, x, " "); split(b, y, " ")
			s = ""
			for (i = 2; i <= n; i++) {
				d = y[i] - x[i]
				s = s (i > 2 ? ":" : "") (d > 0 ? sprintf("%.2f", (y[1] - x[1]) / d) : "-")
			}
			print s }')
	fi
	# moatd's first step down, from its log's times.  Not by polling for
	# it during the run: a watcher that woke every 100 ms on the client's
	# CPU, in the scenarios that enforce only, was there for the whole
	# run where moatd does nothing (every fork-free wake-up every 20 ms
	# had made the client's p99 1.6 times k8s's).
	if [ -n "$moatd_pid" ] && [ "$mode" = enforce ] && [ -n "$t0" ]; then
		first=$(awk -v t0="$t0" '/throttle be group/ { printf "%.2f", $1 - t0; f = 1; exit }
			END { if (!f) print "-" }' "$work/moatd.log")
	fi
	# moatd's windows, read once the client is done: no fork during the load
	if [ -n "$lc_gid" ]; then
		awk -v run="$run" -v skip="$SKIP" \
			-v wp="$(ctl get "groups/$lc_gid/rqlat_wp99_us_history")" \
			-v ap="$(ctl get "groups/$lc_gid/rqlat_ap99_us_history")" '
			$1 == "window" && $2 >= skip { t[++n] = $2; c[n] = $4 }
			END { nw = split(wp, w, " "); na = split(ap, a, " ")
			      # the last moatd window ended within the last second of load
			      for (i = 1; i <= n; i++) {
				k = i - n
				print run, t[i], c[i], (nw + k >= 1 ? w[nw + k] : "-"),
				      (na + k >= 1 ? a[na + k] : "-") } }' "$lg" >>"$work/$tag.sig"
		# Windows a stall outside nginx's run queue disturbed: the
		# client's p99 over 50 ms while nginx's ap99 was under 5 ms
		# (this VM stalls every task for ~95 ms now and then).
		stalled=$(awk -v run="$run" '$1 == run && $3 >= 50000 && $5 != "-" && $5 < 5000 { n++ }
			END { print n + 0 }' "$work/$tag.sig")
	fi
	for i in "${be_pids[@]}"; do wait "$i"; done
	[ -n "$helper" ] && { kill "$helper"; wait "$helper" 2>/dev/null || true; }
	# nginx serves every run: its threads' default slice back (0: default)
	[ "$sc" = burst-slices ] && set_slices 0 $(cat "$prefix/$LC/tasks")
	if [ -n "$moatd_pid" ]; then
		grep -h "throttle\|release\|undo\|slice" "$work/moatd.log" | grep -v "levers:" |
			sed "s/^/# $sc: /" >&2 || true
		: >"$work/moatd.log"
		kill "$moatd_pid"
		wait "$moatd_pid" || true
		moatd_pid=
	fi
	for i in "${BES[@]}"; do rm_group "$i"; done
	case $sc in limit*) lc_limit max ;; esac
	[ "$TREE" = kubelet ] && set_shares kubepods/burstable 512
	ops="- -"
	if [ "${#be_pids[@]}" -gt 0 ]; then
		# every batch pod's stressors together
		ops=$(awk '/stressor: cpu/ { s = "cpu" } /stressor: cache/ { s = "cache" }
			/bogo-ops-per-second-real-time/ { v[s] += $2 }
			END { print ("cpu" in v ? v["cpu"] : "-"), ("cache" in v ? v["cache"] : "-") }' "${y[@]}")
		rm -f "${y[@]}"
	fi
	awk -v ops="$ops" -v first="$first" -v be="$BE_AT" -v alone="${ALONE_P99[$(alone_of "$tag")]:-0}" \
		-v bsplit="$split" -v stalled="$stalled" -v thr="$thr" -v lcpu="$lcpu" \
		-v sw="$sw" '
		$1 == "p50_us" { p50 = $2 } $1 == "p99_us" { p99 = $2 }
		$1 == "p999_us" { p999 = $2 } $1 == "errors" { errors = $2 } $1 == "rate" { rate = $2 }
		$1 == "requests" { reqs = $2 }
		$1 == "window" && $2 >= be && rec == "" && alone > 0 && $4 <= 1.5 * alone {
			rec = sprintf("%.0f", $2 + 1 - be) }
		END { if (errors > 0) print "errors", errors > "/dev/stderr"
		      print p50, p99, p999, ops, first, (rec == "" ? "-" : rec), bsplit,
			    stalled, thr, lcpu, rate, (reqs > 0 ? sprintf("%.3f", sw / reqs) : "-") }' "$lg"
}

# HUNGRY_RATE=auto: the rate at which nginx needs HUNGRY_CPU of its CPU
# alone on this machine (machines of this kind serve 30 000 to 120 000
# requests/s on a CPU, a guest under TCG far fewer).  Two short runs,
# the LC alone: at 10 000/s, and at the rate its CPU a request there
# predicts; the second's CPU a request (which falls as the rate rises:
# nginx takes more requests a wake-up) sets the rate, rounded to 100.
hungry_cpu_at() {	# RATE: "CPUs answered_req/s" over a 4 s run
	local c0 t0 lg=$work/cal.out
	c0=$(cg_usage_us "$LC_POD")
	t0=$(now)
	taskset -c "$CLIENT_CPU" "$O/moat-loadgen" -r "$1" -d 4 -c 32 -s 1 \
		127.0.0.1 "$PORT" /index.html >"$lg" || die "moat-loadgen failed calibrating the hungry rate"
	awk -v a="$c0" -v b="$(cg_usage_us "$LC_POD")" -v t0="$t0" -v t1="$(now)" '
		$1 == "rate" { r = $2 }
		END { printf "%.3f %.0f\n", (b - a) / 1e6 / (t1 - t0), r }' "$lg"
}
if [ "$HUNGRY_RATE" = auto ]; then
	case " $SCENARIOS " in
	*" hungry"*)
		cal_r0=10000
		read -r cal_c0 cal_a0 <<<"$(hungry_cpu_at "$cal_r0")"
		# what it answered over the CPU it took: where it fell behind
		# (a slow guest), what it can answer
		awk -v c="$cal_c0" -v a="$cal_a0" 'BEGIN { exit !(c > 0.01 && a > 0) }' ||
			die "HUNGRY_RATE=auto: nginx alone answered $cal_a0 of $cal_r0 requests/s with $cal_c0 CPUs"
		cal_r1=$(awk -v c="$cal_c0" -v a="$cal_a0" -v h="$HUNGRY_CPU" 'BEGIN { printf "%.0f", a * h / c }')
		read -r cal_c1 cal_a1 <<<"$(hungry_cpu_at "$cal_r1")"
		# what it answered, where it fell behind
		HUNGRY_RATE=$(awk -v c="$cal_c1" -v a="$cal_a1" -v h="$HUNGRY_CPU" 'BEGIN {
			r = int(a * h / c / 100 + 0.5) * 100; print r < 100 ? 100 : r }')
		echo "# hungry rate: $HUNGRY_RATE requests/s, for $HUNGRY_CPU of a CPU alone" \
			"(nginx alone: $cal_c0 CPUs at $cal_r0/s; $cal_c1 CPUs answering $cal_a1/s of $cal_r1)" ;;
	*)
		HUNGRY_RATE=- ;;
	esac
fi

median() { sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }'; }

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -r), $NCPUS CPUs, cgroup $([ "$v2" = 1 ] && echo v2 || echo v1)," \
	"$RATE req/s (hungry*: $HUNGRY_RATE), ${SECS} s runs, BE from ${BE_AT} s, latency from ${SKIP} s, $REPS reps," \
	"moatd period ${PERIOD_MS} ms, rqlat target ${TARGET_US} us, BE stressors: $BE_STRESS"
declare -A res ALONE_P99
# KNOBS_B: each scenario's arm B right after its arm A
if [ -n "${KNOBS_B+set}" ]; then
	arms=
	for sc in $SCENARIOS; do arms+="$sc $sc@B "; done
	SCENARIOS=$arms
	echo "# arm A: moatd with KNOBS ($(printf '%s' "${KNOBS:-}" | tr '\n' ';')); arm B (<scenario>@B): KNOBS_B ($(printf '%s' "$KNOBS_B" | tr '\n' ';'))"
fi
for sc in $SCENARIOS; do
	: >"$work/$sc.runs"
	: >"$work/$sc.sig"
done
# Rep by rep, each scenario in turn: this VM's noise drifts over minutes,
# and all of one scenario's runs before the next one's would charge the
# drift to the scenarios.  A run's recovery is against the median of its
# alone runs so far (alone's, or hungry-alone's).
for r in $(seq "$REPS"); do
	for sc in $SCENARIOS; do
		run_one "$sc" "$r" >"$work/line"	# not $(...): its pids stay ours
		line=$(cat "$work/line")
		echo "# $sc run $r: p50 p99 p999 (us), cpu cache (bogo-ops/s), first action (s), recovery (s), BE split, stalled windows, LC throttled periods, LC CPUs, LC req/s, LC switches a request: $line"
		echo "$line" >>"$work/$sc.runs"
		case ${sc%@B} in alone | hungry-alone)
			ALONE_P99[$sc]=$(awk '{ print $2 }' "$work/$sc.runs" | median) ;;
		esac
	done
done
for sc in $SCENARIOS; do
	for f in 1 2 3 4 5 6 7 10 11 12 13; do
		res[$sc,$f]=$(awk -v f=$f '$f != "-" { print $f }' "$work/$sc.runs" | median)
	done
	# the BE split, each pair's median
	res[$sc,8]=$(awk '$8 != "-" { n = split($8, v, ":"); for (i = 1; i <= n; i++) print i, v[i] }' \
		"$work/$sc.runs" | sort -k1,1n -k2,2g | awk '
		{ v[$1, ++c[$1]] = $2; if ($1 > n) n = $1 }
		END { if (!n) { print "-"; exit }
		      for (i = 1; i <= n; i++) s = s (i > 1 ? ":" : "") v[i, int((c[i] + 1) / 2)]
		      print s }')
	# the runs no stall disturbed, and the p99 and p99.9 of those
	res[$sc,calm]=$(awk '$9 == 0' "$work/$sc.runs" | wc -l)
	res[$sc,p99calm]=$(awk '$9 == 0 { print $2 }' "$work/$sc.runs" | median)
	res[$sc,p999calm]=$(awk '$9 == 0 { print $3 }' "$work/$sc.runs" | median)
	# paired: each run's p99, p99.9 and req/s over its alone's in the same round
	a=$(alone_of "$sc")
	for f in 2 3 12; do
		res[$sc,pair$f]=-
		[ -s "$work/$a.runs" ] || continue
		res[$sc,pair$f]=$(awk -v f=$f 'NR == FNR { a[FNR] = $f; next }
			a[FNR] > 0 && $f != "-" { printf "%.2f\n", $f / a[FNR] }' \
			"$work/$a.runs" "$work/$sc.runs" | median)
	done
done

# BE's throughput against the scenario without moat of its kind: burst's,
# burst2's, burst3's and hungry's own, the others' against "none".
# p99/alone and p999/alone are paired, the median of each run's ratio to
# its alone's (hungry-alone's for hungry*) in the same round.
printf '\n%-15s %8s %8s %8s %11s %11s %7s %7s %6s %7s %7s %9s %6s %8s %8s %6s %7s %6s\n' \
	scenario p50_us p99_us p999_us cpu_ops/s cache_ops/s p99/al p999/al BE/ref first_s \
	recov_s BE_split calm calm_p99 calm_999 lc_cpu rps/al sw/req
for sc in $SCENARIOS; do
	case $sc in burst2*) ref=burst2 ;; burst3*) ref=burst3 ;; burst*) ref=burst ;;
	limited-be*) ref=limited-be ;; hungry*) ref=hungry ;; *) ref=none ;; esac
	awk -v sc="$sc" -v p50="${res[$sc,1]}" -v p99="${res[$sc,2]}" -v p999="${res[$sc,3]}" \
		-v cpu="${res[$sc,4]}" -v cache="${res[$sc,5]}" -v first="${res[$sc,6]}" \
		-v rec="${res[$sc,7]}" -v bsplit="${res[$sc,8]}" \
		-v r99="${res[$sc,pair2]}" -v r999="${res[$sc,pair3]}" -v rrate="${res[$sc,pair12]}" \
		-v ncpu="${res[$ref,4]:-}" -v ncache="${res[$ref,5]:-}" -v lcpu="${res[$sc,11]}" \
		-v calm="${res[$sc,calm]}/$REPS" -v c99="${res[$sc,p99calm]}" \
		-v c999="${res[$sc,p999calm]}" -v swr="${res[$sc,13]}" 'BEGIN {
		# over the stressors the runs had (BE_STRESS)
		n = 0; r = 0
		if (ncpu > 0 && cpu != "-") { r += cpu / ncpu; n++ }
		if (ncache > 0 && cache != "-") { r += cache / ncache; n++ }
		be = n ? sprintf("%.2f", r / n) : "-"
		printf "%-15s %8s %8s %8s %11s %11s %7s %7s %6s %7s %7s %9s %6s %8s %8s %6s %7s %6s\n",
			sc, p50, p99, p999, cpu, cache, r99, r999, be, first, rec, bsplit, calm,
			c99, c999, lcpu, rrate, swr }'
done
echo "# calm: runs with no window a stall outside nginx's run queue disturbed (its client p99 over"
echo "# 50 ms, nginx's ap99 under 5 ms); calm_p99, calm_999: their medians. lc_cpu: the LC pod's"
echo "# CPUs over the run; rps/al: its answered requests/s over alone's, paired; sw/req: its context"
echo "# switches a request answered. Every run is listed above."

# KNOBS_B: the arms compared, run by run (each paired with its arm's alone)
if [ -n "${KNOBS_B+set}" ]; then
	echo
	if command -v python3 >/dev/null; then
		for sc in $SCENARIOS; do
			a=A
			[ "${sc%@B}" = "$sc" ] || a=B
			awk -v sc="${sc%@B}" '{ print "# " sc " run " NR ": fields: " $0 }' \
				"$work/$sc.runs" >>"$work/arm.$a"
		done
		python3 "$top/tools/bench/protect_ab.py" "$work/arm.A" -- "$work/arm.B" |
			sed 's/^# A: .*/# A: arm A (KNOBS)/; s/^# B: .*/# B: arm B (KNOBS_B)/'
	else
		echo "# no python3 here: the arms are not compared (tools/bench/protect_ab.py)"
	fi
fi

# nginx held back by its own limit: against unlimited's p99 and limit's
# throttling, and its CPU against the limit.
if [[ " $SCENARIOS " == *" limit"* || " $SCENARIOS " == *" unlimited "* ]]; then
	echo
	echo "# limits.cpu $LIMIT, load $LIMIT_RATE req/s for $ON_MS ms every $((ON_MS + OFF_MS)) ms"
	printf '%-16s %10s %10s %10s %10s %10s %10s %10s %10s %9s\n' scenario p50_us p99_us \
		p999_us p99/unlim p99/limit throttled thr/limit lc_cpus first_s
	for sc in $SCENARIOS; do
		case $sc in unlimited | limit*) ;; *) continue ;; esac
		awk -v sc="$sc" -v p50="${res[$sc,1]}" -v p99="${res[$sc,2]}" -v p999="${res[$sc,3]}" \
			-v u99="${res[unlimited,2]:-}" -v l99="${res[limit,2]:-}" -v thr="${res[$sc,10]}" \
			-v lthr="${res[limit,10]:-}" -v cpu="${res[$sc,11]}" -v first="${res[$sc,6]}" 'BEGIN {
			r = (u99 > 0) ? sprintf("%.2f", p99 / u99) : "-"
			rl = (l99 > 0) ? sprintf("%.2f", p99 / l99) : "-"
			t = (lthr > 0 && thr != "-") ? sprintf("%.3f", thr / lthr) : "-"
			printf "%-16s %10s %10s %10s %10s %10s %10s %10s %10s %9s\n", sc, p50, p99, p999,
				r, rl, thr, t, cpu, first }'
	done
fi

[ "$TREE" = kubelet ] || exit 0
# Does moatd's LC signal agree with the client?  Each signal against the
# client's p99: Spearman's rank correlation over the 1 s windows, over
# the runs (the signal's median window against the run's p99) and over
# the scenarios (medians of those); and how well alone's p99 plus the
# signal predicts a run's p99 (the median of |predicted - p99| / p99).
for sc in $SCENARIOS; do sed "s/^/$sc /" "$work/$sc.sig"; done >"$work/signals"
echo
echo "# signals: scenario run window_s client_p99_us wp99_us ap99_us"
sed 's/^/# /' "$work/signals"
for sc in $SCENARIOS; do echo "$sc ${res[$sc,2]}"; done >"$work/client"
command -v python3 >/dev/null || { echo "# no python3 here: the signals' agreement is not computed"; exit 0; }
python3 - "$work/signals" "$work/client" "${res[alone,2]:-0}" <<'PY'
import statistics as st, sys

def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r

def spearman(x, y):
    if len(x) < 3:
        return float("nan")
    rx, ry = ranks(x), ranks(y)
    mx, my = st.mean(rx), st.mean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return num / den if den else float("nan")

rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
alone = float(sys.argv[3])
runs_p99 = {}
for l in open(sys.argv[2]):
    sc, p99 = l.split()
    runs_p99[sc] = p99
print("\n%-6s %8s %10s %8s %11s %13s" % ("signal", "windows", "rho_window", "rho_run",
                                         "rho_scenario", "run_pred_err"))
for col, name in ((4, "wp99"), (5, "ap99")):
    win = [(float(r[3]), float(r[col])) for r in rows if r[col] != "-"]
    by_run = {}
    for r in rows:
        if r[col] != "-":
            by_run.setdefault((r[0], r[1]), ([], []))
            by_run[(r[0], r[1])][0].append(float(r[3]))
            by_run[(r[0], r[1])][1].append(float(r[col]))
    # a run's client p99: the median of its windows' p99 (its own figure
    # is over all its requests; the windows keep the pairing honest)
    runs = [(st.median(c), st.median(s), k[0]) for k, (c, s) in by_run.items()]
    scen = {}
    for c, s, sc in runs:
        scen.setdefault(sc, ([], []))
        scen[sc][0].append(c)
        scen[sc][1].append(s)
    sc_pairs = [(st.median(c), st.median(s)) for c, s in scen.values()]
    err = [abs(alone + s - c) / c for c, s, _ in runs if c > 0]
    print("%-6s %8d %10.2f %8.2f %11.2f %13.2f" % (
        name, len(win), spearman([a for a, _ in win], [b for _, b in win]),
        spearman([a for a, _, _ in runs], [b for _, b, _ in runs]),
        spearman([a for a, _ in sc_pairs], [b for _, b in sc_pairs]),
        st.median(err) if err else float("nan")))
PY

