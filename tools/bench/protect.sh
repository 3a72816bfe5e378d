#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The Heracles-style experiment: does moatd keep an LC service's tail
# latency while BE work runs next to it, and what does the BE work keep?
#
#   tools/bench/protect.sh [REPS] [SECONDS]      (root; default 3, 12)
#
# LC: Debian's nginx, one worker, serving a small file on loopback from
# its own cgroup, driven by build/moat-loadgen (open loop, fixed rate,
# latency from each request's due time).  BE: stress-ng, one CPU and one
# cache stressor, in their own cgroup, started BE_AT seconds into the
# load.  nginx and stress-ng share the last CPU; the load generator and
# moatd run on the first, so the client measures without competing.
#
# Scenarios, each REPS times, medians reported:
#   alone    LC only
#   none     LC + BE, no isolation
#   k8s      LC + BE with Kubernetes' defaults for besteffort pods:
#            cpu.shares=2 (v1) / cpu.weight=1 (v2)
#   static   k8s, plus a koordlet-style static suppress: BE's CPU budget
#            = shared CPUs x 65% - LC usage, recomputed every second
#   moatd    k8s, plus moatd in enforce mode; the BE cgroup is a rule's,
#            so moatd may lower its CPU priority (cpu.idle) first
#   moatd-pod  k8s, plus moatd with enforce/cpu_priority = 0: what moatd
#            may do to a kubelet pod, whose weight it leaves to kubelet
#   moatd-only  moatd in enforce mode without Kubernetes' defaults: the
#            controller alone, so that it has something to do
# static and moatd start from Kubernetes' defaults because that is where
# koordlet and moatd run: on nodes where kubelet already set them.
#
# LC latency is over the requests due from BE_AT + 2 s to the end, the
# same steady-state window for every scenario; the reaction (time to
# moatd's first action, time until the LC p99 over 1 s windows is back
# under 1.5x alone) is reported on its own.  BE throughput is stress-ng's
# bogo-ops per second of wall time, per stressor.
#
# Environment: RATE (requests/s, 4000: nginx needs ~35% of a CPU, enough
# to lose its wake-up preemption to a hog), PERIOD_MS (moatd, 500),
# TARGET_US (moatd's lc/rqlat_p99_target_us, 500), SCENARIOS.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-$top/build}
REPS=${1:-3}
SECS=${2:-12}
RATE=${RATE:-4000}
PERIOD_MS=${PERIOD_MS:-500}
TARGET_US=${TARGET_US:-500}
SCENARIOS=${SCENARIOS:-alone none k8s static moatd moatd-pod moatd-only}
BE_AT=2
SKIP=$((BE_AT + 2))
PORT=18080

die() { echo "protect.sh: $*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "must run as root (cgroups, BPF)"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "REPS: '$REPS' is not a positive integer"
[[ "$SECS" =~ ^[1-9][0-9]*$ ]] && [ "$SECS" -gt $((SKIP + 2)) ] ||
	die "SECONDS: '$SECS' must be an integer over $((SKIP + 2))"
command -v nginx >/dev/null && command -v stress-ng >/dev/null ||
	die "needs nginx and stress-ng: run tools/deps.sh --bench"
[ -x "$O/moatd" ] && [ -x "$O/moat-loadgen" ] || make -C "$top" O="$O" >/dev/null
[ "$(nproc)" -ge 2 ] || die "needs 2 CPUs: one shared by LC and BE, one for the client"

CLIENT_CPU=0
SHARED_CPU=$(($(nproc) - 1))
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
		for d in be lc ""; do
			[ -d "$m/$name/$d" ] && rmdir "$m/$name/$d" 2>/dev/null
		done
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
# mk_group NAME: the cgroup in every hierarchy; join_group NAME PID.
mk_group() { mkdir "$prefix/$1"; [ -z "$acct_mnt" ] || mkdir "$acct_mnt/$name/$1"; }
join_group() {
	echo "$2" >"$prefix/$1/cgroup.procs"
	[ -z "$acct_mnt" ] || echo "$2" >"$acct_mnt/$name/$1/cgroup.procs"
}
rm_group() { rmdir "$prefix/$1"; [ -z "$acct_mnt" ] || rmdir "$acct_mnt/$name/$1"; }
mkdir "$prefix"
[ -z "$acct_mnt" ] || mkdir "$acct_mnt/$name"
[ "$v2" = 1 ] && echo "+cpu +memory" >"$prefix/cgroup.subtree_control"
mk_group lc
(join_group lc "$BASHPID"
 exec taskset -c "$SHARED_CPU" nginx -c "$work/nginx.conf" -e "$work/nginx.err") &
pids+=($!)
for _ in $(seq 50); do
	(echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
	sleep 0.1
done

# LC CPU usage in CPUs over the last @1 seconds, from its tasks' times.
lc_ticks() {
	local p t=0
	for p in $(cat "$prefix/lc/cgroup.procs"); do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo "$t"
}

set_quota() {	# CPUs
	local q
	q=$(awk -v c="$1" 'BEGIN { q = int(c * 100000); print q < 1000 ? 1000 : q }')
	if [ "$v2" = 1 ]; then echo "$q 100000" >"$prefix/be/cpu.max"
	else echo "$q" >"$prefix/be/cpu.cfs_quota_us"; fi
}

# koordlet's BE suppress: budget = capacity x 65% - LC usage, every second.
static_suppress() {
	local hz before after usage
	hz=$(getconf CLK_TCK)
	before=$(lc_ticks)
	while sleep 1; do
		after=$(lc_ticks)
		usage=$(awk -v d=$((after - before)) -v hz="$hz" 'BEGIN { print d / hz }')
		before=$after
		set_quota "$(awk -v u="$usage" 'BEGIN { b = 1 * 0.65 - u; print (b > 0 ? b : 0) }')"
	done
}

start_moatd() {
	printf 'period_ms = %s\nrules/lc = lc lc\nrules/be = be be\nlc/rqlat_p99_target_us = %s\nenforce/cpu_priority = %s\n' \
		"$PERIOD_MS" "$TARGET_US" "$1" >"$work/moat.conf"
	rm -rf "$work/state"
	taskset -c "$CLIENT_CPU" "$O/moatd" --foreground --mode enforce \
		--config "$work/moat.conf" --cgroup-root "/$name" \
		--state-dir "$work/state" --socket "$work/sock" --listen 127.0.0.1:0 \
		2>>"$work/moatd.log" &
	moatd_pid=$!
	pids+=("$moatd_pid")
	for _ in $(seq 100); do
		[ "$("$O/moatctl" --socket "$work/sock" ls groups 2>/dev/null | wc -l)" -ge 2 ] && return
		sleep 0.1
	done
	die "moatd did not find the lc and be groups: $(tail -5 "$work/moatd.log")"
}

now() { date +%s.%N; }

# One run: "p50 p99 p999 cpu_ops cache_ops first_action_s recovery_s".
run_one() {
	local sc=$1 lg=$work/lg.out be_pid= helper= t0 first=- ops
	moatd_pid=
	mk_group be
	if [ "$sc" = k8s ] || [ "$sc" = static ] || [ "$sc" = moatd ] ||
	   [ "$sc" = moatd-pod ]; then
		if [ "$v2" = 1 ]; then echo 1 >"$prefix/be/cpu.weight"
		else echo 2 >"$prefix/be/cpu.shares"; fi
	fi
	case $sc in
	moatd | moatd-only) start_moatd 1 ;;
	moatd-pod) start_moatd 0 ;;
	esac
	taskset -c "$CLIENT_CPU" "$O/moat-loadgen" -r "$RATE" -d "$SECS" -c 32 \
		-s "$SKIP" 127.0.0.1 "$PORT" /index.html >"$lg" &
	local lg_pid=$!
	sleep "$BE_AT"
	if [ "$sc" != alone ]; then
		t0=$(now)
		(join_group be "$BASHPID"
		 exec taskset -c "$SHARED_CPU" stress-ng --cpu 1 --cache 1 \
			--timeout "$((SECS - BE_AT))s" --metrics-brief \
			--yaml "$work/be.yaml" >/dev/null 2>&1) &
		be_pid=$!
		[ "$sc" = static ] && { static_suppress & helper=$!; pids+=("$helper"); }
		# moatd's first write creates its journal: watch for that,
		# not poll moatctl, whose fork and exec would load the client.
		if [ -n "$moatd_pid" ]; then
			while kill -0 "$be_pid" 2>/dev/null; do
				if [ -e "$work/state/journal" ]; then
					first=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
					break
				fi
				sleep 0.02
			done
		fi
	fi
	wait "$lg_pid"
	[ -n "$be_pid" ] && wait "$be_pid"
	[ -n "$helper" ] && { kill "$helper"; wait "$helper" 2>/dev/null || true; }
	if [ -n "$moatd_pid" ]; then
		grep -h "throttle\|release\|undo" "$work/moatd.log" | sed "s/^/# $sc: /" >&2 || true
		: >"$work/moatd.log"
		kill "$moatd_pid"
		wait "$moatd_pid" || true
		moatd_pid=
	fi
	rm_group be
	ops="- -"
	if [ -n "$be_pid" ]; then
		ops=$(awk '/stressor: cpu/ { s = "cpu" } /stressor: cache/ { s = "cache" }
			/bogo-ops-per-second-real-time/ { v[s] = $2 }
			END { print v["cpu"], v["cache"] }' "$work/be.yaml")
	fi
	awk -v ops="$ops" -v first="$first" -v be="$BE_AT" -v alone="${ALONE_P99:-0}" '
		$1 == "p50_us" { p50 = $2 } $1 == "p99_us" { p99 = $2 }
		$1 == "p999_us" { p999 = $2 } $1 == "errors" { errors = $2 }
		$1 == "window" && $2 >= be && rec == "" && alone > 0 && $4 <= 1.5 * alone {
			rec = sprintf("%.0f", $2 + 1 - be) }
		END { if (errors > 0) print "errors", errors > "/dev/stderr"
		      print p50, p99, p999, ops, first, (rec == "" ? "-" : rec) }' "$lg"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }'; }

echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -r), $(getconf _NPROCESSORS_ONLN) CPUs, cgroup $([ "$v2" = 1 ] && echo v2 || echo v1)," \
	"$RATE req/s, ${SECS} s runs, BE from ${BE_AT} s, latency from ${SKIP} s, $REPS reps," \
	"moatd period ${PERIOD_MS} ms, rqlat target ${TARGET_US} us"
declare -A res
for sc in $SCENARIOS; do
	: >"$work/$sc.runs"
	for r in $(seq "$REPS"); do
		run_one "$sc" >"$work/line"	# not $(...): its pids stay ours
		line=$(cat "$work/line")
		echo "# $sc run $r: p50 p99 p999 (us), cpu cache (bogo-ops/s), first action (s), recovery (s): $line"
		echo "$line" >>"$work/$sc.runs"
	done
	for f in 1 2 3 4 5 6 7; do
		res[$sc,$f]=$(awk -v f=$f '$f != "-" { print $f }' "$work/$sc.runs" | median)
	done
	[ "$sc" = alone ] && ALONE_P99=${res[alone,2]}
done

printf '\n%-10s %10s %10s %10s %12s %12s %8s %8s %9s %9s\n' scenario p50_us p99_us \
	p999_us cpu_ops/s cache_ops/s p99/alone BE/none first_s recover_s
for sc in $SCENARIOS; do
	awk -v sc="$sc" -v p50="${res[$sc,1]}" -v p99="${res[$sc,2]}" -v p999="${res[$sc,3]}" \
		-v cpu="${res[$sc,4]}" -v cache="${res[$sc,5]}" -v first="${res[$sc,6]}" \
		-v rec="${res[$sc,7]}" -v a99="${res[alone,2]:-}" \
		-v ncpu="${res[none,4]:-}" -v ncache="${res[none,5]:-}" 'BEGIN {
		r = (a99 > 0) ? sprintf("%.2f", p99 / a99) : "-"
		be = (ncpu > 0 && cpu != "-") ? sprintf("%.2f", (cpu / ncpu + cache / ncache) / 2) : "-"
		printf "%-10s %10s %10s %10s %12s %12s %8s %8s %9s %9s\n", sc, p50, p99, p999,
			cpu, cache, r, be, first, rec }'
done
