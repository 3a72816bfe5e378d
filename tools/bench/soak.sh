#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# moatd under churn, for leaks: GROUPS BE cgroups made and removed in a
# loop for SECONDS while moatd enforces on them.  An LC hog and a few BE
# hogs share one CPU, so the LC group is in violation all along and
# moatd throttles the BE groups that hold the CPU; the others come and
# go empty.  Each pass removes the oldest group (and its hog) and makes a
# new one; a hog is started in every 30th.
#
#   tools/bench/soak.sh [SECONDS] [GROUPS]     (root; default 60, 300)
#
# Prints moatd's RSS (VmRSS) and open fds once all GROUPS first exist and
# once the churn is over and every group is gone, the groups made and
# removed, moatd's throttles and journal entries, and the journal's end
# line after SIGTERM.  Targets: fds back to where they were, RSS growth
# under 1 MiB, an empty journal.  Exits 1 when one is missed.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-$top/build}
SECS=${1:-60}
N=${2:-300}

die() { echo "soak.sh: $*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "must run as root (cgroups, BPF)"
[[ "$SECS" =~ ^[1-9][0-9]*$ ]] || die "SECONDS: '$SECS' is not a positive integer"
[[ "$N" =~ ^[1-9][0-9]*$ ]] || die "GROUPS: '$N' is not a positive integer"
[ -x "$O/moatd" ] && [ -x "$O/moatctl" ] || make -C "$top" O="$O" >/dev/null

cpu_mnt=$(awk '$9 == "cgroup" && $NF ~ /(^|,)cpu(,|$)/ { print $5; exit }' /proc/self/mountinfo)
[ -n "$cpu_mnt" ] || cpu_mnt=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$cpu_mnt" ] || die "no cgroup hierarchy with the cpu controller"
cpu=$(($(nproc) - 1))

work=$(mktemp -d)
prefix="$cpu_mnt/moat-soak-$$"
moatd_pid= hogs=()
declare -A hog_of
cleanup() {
	local p

	for p in "${hogs[@]}" "${hog_of[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	if [ -n "$moatd_pid" ]; then
		kill "$moatd_pid" 2>/dev/null || true
		wait "$moatd_pid" 2>/dev/null || true
	fi
	sleep 0.2
	if [ -d "$prefix" ]; then
		find "$prefix" -mindepth 1 -maxdepth 1 -type d -exec rmdir {} + 2>/dev/null || true
		rmdir "$prefix" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A busy loop in cgroup @1, on the soak's CPU; its pid.
hog() {
	local pid

	# (its stdout not the caller's: $(hog ...) would wait for its end)
	taskset -c "$cpu" sh -c 'while :; do :; done' >/dev/null 2>&1 &
	pid=$!
	echo "$pid" >"$1/cgroup.procs"
	echo "$pid"
}

fds() { find "/proc/$moatd_pid/fd" -mindepth 1 | wc -l; }
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$moatd_pid/status"; }

mkdir "$prefix" "$prefix/web-lc"
cat >"$work/moat.conf" <<EOF
period_ms = 100
rules/web = web-* lc
rules/batch = batch-* be
lc/rqlat_p99_target_us = 1000
enforce/min_waits = 5
http/listen =
EOF
"$O/moatd" --foreground --mode enforce --config "$work/moat.conf" \
	--cgroup-root "/moat-soak-$$" --state-dir "$work" \
	--socket "$work/moatd.sock" 2>"$work/moatd.log" &
moatd_pid=$!
for _ in $(seq 100); do [ -S "$work/moatd.sock" ] && break; sleep 0.05; done
[ -S "$work/moatd.sock" ] || { cat "$work/moatd.log" >&2; die "moatd did not start"; }
hogs+=("$(hog "$prefix/web-lc")")

made=0 removed=0 next=0 oldest=0
make_group() {
	local g="$prefix/batch-$next"

	mkdir "$g"
	[ $((next % 30)) -eq 0 ] && hog_of[$next]=$(hog "$g")
	next=$((next + 1)) made=$((made + 1))
}
remove_group() {
	local g="$prefix/batch-$oldest" p=${hog_of[$oldest]:-}

	if [ -n "$p" ]; then
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
		unset "hog_of[$oldest]"
	fi
	while ! rmdir "$g" 2>/dev/null; do sleep 0.01; done	# its task's exit
	oldest=$((oldest + 1)) removed=$((removed + 1))
}

sleep 2
fds_none0=$(fds) rss_none0=$(rss)	# the LC group alone
for _ in $(seq "$N"); do make_group; done
sleep 3	# found, watched, throttled: moatd's steady state
fds0=$(fds) rss0=$(rss)
end=$((SECONDS + SECS))
while [ "$SECONDS" -lt "$end" ]; do
	remove_group
	make_group
done
sleep 3	# the same number of groups as before the churn
fds1=$(fds) rss1=$(rss)
entries_during=$("$O/moatctl" --socket "$work/moatd.sock" get enforce/journal_entries)
while [ "$oldest" -lt "$next" ]; do remove_group; done
sleep 3	# the removals seen, the groups dropped
fds_none1=$(fds) rss_none1=$(rss)
throttles=$("$O/moatctl" --socket "$work/moatd.sock" get enforce/throttles)
entries=$("$O/moatctl" --socket "$work/moatd.sock" get enforce/journal_entries)
kill "${hogs[@]}"
kill "$moatd_pid"
wait "$moatd_pid" || die "moatd exited $? at SIGTERM"
moatd_pid=
journal_end=$(tail -n 1 "$work/journal" 2>/dev/null || echo "no journal")

echo "soak: $SECS s, $N groups alive at a time, on cgroup $(stat -fc %T "$cpu_mnt")"
echo "groups_made $made"
echo "groups_removed $removed"
echo "throttles $throttles"
echo "journal_entries $entries_during with $N groups, $entries once all were gone"
echo "journal_after_sigterm $journal_end"
echo "fds, $N groups: $fds0 -> $fds1 after the churn"
echo "fds, no BE group: $fds_none0 -> $fds_none1 after the churn"
echo "rss_kib, $N groups: $rss0 -> $rss1 ($((rss1 - rss0)) KiB)"
echo "rss_kib, no BE group: $rss_none0 -> $rss_none1 ($((rss_none1 - rss_none0)) KiB)"
fail=0
[ "$fds1" -le "$fds0" ] && [ "$fds_none1" -le "$fds_none0" ] ||
	{ echo "soak: MISSED: fds grew"; fail=1; }
[ $((rss1 - rss0)) -lt 1024 ] || { echo "soak: MISSED: RSS grew by 1 MiB or more"; fail=1; }
case "$journal_end" in "end 0 "*|"no journal") ;; *) echo "soak: MISSED: the journal is not empty"; fail=1 ;; esac
[ "$throttles" -gt 0 ] || { echo "soak: MISSED: nothing was throttled: no enforcement under churn"; fail=1; }
exit $fail
