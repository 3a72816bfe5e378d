#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Run each libFuzzer target (selftests/fuzz/, built by make san into
# $O/san/fuzz) for FUZZ_SECONDS from its seed corpus, two at a time on
# this 2-CPU kind of machine.  The seeds in selftests/fuzz/corpus/<name>
# are only read; what a run adds goes to $O/fuzz/corpus/<name> and is
# kept for the next run.  A crash, a sanitizer report or a broken
# invariant leaves its input in $O/fuzz/artifacts/ and fails the run,
# with the command that reproduces it.
#
#   selftests/fuzz.sh                    every target, FUZZ_SECONDS (60)
#   FUZZ_SECONDS=30 selftests/fuzz.sh    (make check: 30)
#   selftests/fuzz.sh fuzz_config ...    some targets
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
bin="$O/san/fuzz"
secs=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-2}
out="$O/fuzz"

[ -d "$bin" ] || { echo "fuzz.sh: $bin missing: run make san first" >&2; exit 2; }
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cd "$bin" && ls)
mkdir -p "$out/artifacts" "$out/logs"

# One target: its summary line on stdout; its log in $out/logs.
one() {
	local t=$1 name=${1#fuzz_} log="$out/logs/$1.log" rc
	local seeds="$top/selftests/fuzz/corpus/$name"

	mkdir -p "$out/corpus/$name"
	[ -d "$seeds" ] || { echo "fuzz: $t: no seed corpus $seeds"; return 1; }
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
	UBSAN_OPTIONS=print_stacktrace=1 \
	"$bin/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" \
		"$out/corpus/$name" "$seeds" >"$log" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ]; then
		printf 'fuzz: %s: %s runs in %s s, %s inputs in its corpus, nothing found\n' \
			"$t" "$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")" \
			"$secs" "$(find "$out/corpus/$name" -type f | wc -l)"
		return 0
	fi
	echo "fuzz: $t: FOUND something (exit $rc); its log, $log, ends:"
	grep -v '^#\|^INFO\|^stat::' "$log" | tail -n 40 | sed 's/^/    /'
	ls "$out/artifacts/$t-"* 2>/dev/null | sed "s|^|    reproduce: $bin/$t |"
	return 1
}

failed=0 running=0
pids=()
for t in "${targets[@]}"; do
	[ -x "$bin/$t" ] || { echo "fuzz: $t: no such target in $bin"; failed=1; continue; }
	one "$t" >"$out/logs/$t.summary" &
	pids+=("$!:$t")
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n || failed=1
		running=$((running - 1))
	fi
done
while [ "$running" -gt 0 ]; do
	wait -n || failed=1
	running=$((running - 1))
done
for p in "${pids[@]}"; do
	cat "$out/logs/${p#*:}.summary"
done
n=${#targets[@]}
if [ "$failed" -ne 0 ]; then
	echo "fuzz: $n targets, something found (above)"
	exit 1
fi
echo "fuzz: $n targets, ${secs} s each, nothing found"
