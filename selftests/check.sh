#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# make check: the daemon's modules checked for dependency cycles; the
# whole suite on this machine; again built with AddressSanitizer and
# UndefinedBehaviorSanitizer ($O/san, make san); every fuzzer for
# FUZZ_SECONDS (30), then the operator's kit (selftests/kit.sh), both
# beside the node guest (selftests/nodetest.sh); the suite on real
# cgroup v2 kernels under QEMU (selftests/vmtest.sh: Debian's 6.1 and
# 6.12, or VMTEST_KERNELS); then a line for each with the seconds it
# took, and one that adds them up.
# Exits non-zero when anything failed.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
strip() { sed 's/\x1b\[[0-9;]*m//g' "$@"; }

# "Synthesis: Tested: 61 | Passing: 61 | Failing: 0 | Crashing: 0", and
# the tests that skipped themselves, each with its reason ("[SKIP] name:
# reason"; "Test is disabled" is a --filter's, not a skip).
counts() {
	strip "$1" |
		awk '/Synthesis: Tested:/ { t = $4; p = $7 }
		     /^\[SKIP\]/ && !/Test is disabled/ { s++ }
		     END { printf "%d %d %d\n", p, t - p, s }'
}

# The failed tests again, with their assertions, where a log's tail
# (all that CI keeps) shows them.
failures() {
	strip "$2" |
		awk -v where="$1" '/^\[RUN \]/ { n = 0; on = 0 }
		     /^\[----\] .*:[0-9]+: / { on = 1 }
		     on && /^\[----\]/ && !/^\[----\] *$/ && n < 8 { a[++n] = $0 }
		     /^\[(FAIL|CRASH)\]/ {
			print where ": " $0
			for (i = 1; i <= n; i++) print "    " a[i]
			n = 0; on = 0 }'
}

summary=() total_pass=0 total_fail=0 total_skip=0 rc=0
check_start=$(date +%s)

# Seconds since @1 (date +%s).
took() { echo "$(($(date +%s) - $1)) s"; }

# The skips of a suite's log that selftests/skips.expected does not list
# for @where (host, guest, kit), as "[SKIP] test: reason" lines.
unexpected_skips() {
	strip "$2" | awk -v where="$1" '
		FILENAME != "-" { if ($0 !~ /^#/ && NF >= 3 && $1 == where) {
				n++; test[n] = $2; why[n] = $3
				for (i = 4; i <= NF; i++) why[n] = why[n] " " $i }
			  next }
		/^\[SKIP\]/ && !/Test is disabled/ {
			line = $0; sub(/^\[SKIP\] /, "", line)
			ok = 0
			for (i = 1; i <= n; i++)
				if (index(line, test[i] ": " why[i]) == 1) ok = 1
			if (!ok) print "[SKIP] " line }' "$top/selftests/skips.expected" -
}

# Add up a suite's log: its line for the summary, its failures (an
# unexpected skip is one).
suite_done() {
	local name=$1 log=$2 status=$3 extra=${4:-} where=${5:-host} pass fail skip
	local unexpected

	read -r pass fail skip < <(counts "$log")
	unexpected=$(unexpected_skips "$where" "$log")
	if [ -n "$unexpected" ]; then
		fail=$((fail + $(wc -l <<<"$unexpected")))
		status=1
		sed "s/^/$name: unexpected skip (selftests\/skips.expected): /" \
			<<<"$unexpected" >>"$logs/failures"
	fi
	[ "$status" -ne 0 ] && [ "$fail" -eq 0 ] && fail=1
	[ "$status" -ne 0 ] && rc=1
	total_pass=$((total_pass + pass)) total_fail=$((total_fail + fail))
	total_skip=$((total_skip + skip))
	summary+=("$name: $pass passed, $fail failed, $skip skipped$extra")
	failures "$name" "$log" >>"$logs/failures"
}

suite() {
	MOAT_FIXTURES="$top/selftests/fixtures" MOAT_BUILD="$1" \
		"$1/selftests/moat-selftests" --jobs 1 --verbose 2>&1
}

echo "== the daemon's modules: their dependencies =="
if "$top/selftests/check_includes.sh" | tee "$logs/includes"; then
	summary+=("$(tail -n 1 "$logs/includes")")
else
	rc=1
	cat "$logs/includes" >>"$logs/failures"
	summary+=("check_includes: a cycle or a header out of place (above)")
fi

echo "== the suite on this machine =="
t=$(date +%s)
suite "$O" | tee "$logs/host"
suite_done host "$logs/host" "${PIPESTATUS[0]}" "; $(took "$t")"

# Every process the suite starts (moatd, moatctl, the tests) writes its
# sanitizer reports to files here: any is a failure, even where the test
# that started the process passed.
echo "== the suite built with AddressSanitizer and UndefinedBehaviorSanitizer =="
t=$(date +%s)
reports="$O/san/reports"
rm -rf "$reports" && mkdir -p "$reports"
ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1" \
UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1" \
	suite "$O/san" | tee "$logs/san"
status=${PIPESTATUS[0]}
nreports=$(find "$reports" -type f | wc -l)
if [ "$nreports" -ne 0 ]; then
	status=1
	for f in "$reports"/*; do
		echo "sanitizer report $f:"
		grep -m 12 -v '^$' "$f" | sed 's/^/    /'
	done | tee -a "$logs/failures"
fi
suite_done "host, sanitized" "$logs/san" "$status" "; $nreports sanitizer reports; $(took "$t")"

# The node guest (selftests/nodetest.sh) runs beside the fuzzers, one
# at a time then, then beside the kit, each on a CPU of its own: the
# guest is one emulation thread, and neither measures time.  Its log is
# printed after them.
node_pid=
if command -v qemu-system-x86_64 >/dev/null; then
	node_start=$(date +%s)
	O="$O" "$top/selftests/nodetest.sh" >"$logs/node" 2>&1 &
	node_pid=$!
fi

echo "== the fuzzers, ${FUZZ_SECONDS:=30} s each =="
t=$(date +%s)
FUZZ_JOBS=${FUZZ_JOBS:-$([ -n "$node_pid" ] && echo 1 || echo 2)} \
FUZZ_SECONDS=$FUZZ_SECONDS O="$O" "$top/selftests/fuzz.sh" | tee "$logs/fuzz"
if [ "${PIPESTATUS[0]}" -ne 0 ]; then
	rc=1
	grep -A 60 "FOUND" "$logs/fuzz" >>"$logs/failures"
fi
summary+=("$(tail -n 1 "$logs/fuzz"); $(took "$t")")

echo "== the operator's kit: unit, man pages, completion, config, rules =="
t=$(date +%s)
O="$O" "$top/selftests/kit.sh" | tee "$logs/kit"
suite_done "operator's kit" "$logs/kit" "${PIPESTATUS[0]}" "; $(took "$t")" kit

if [ -n "$node_pid" ]; then
	echo "== the node guest: systemd, containerd, runc, moatd.service (selftests/nodetest.sh) =="
	wait "$node_pid"
	node_rc=$?
	cat "$logs/node"
	npass=$(grep -c '^node: ok' "$logs/node")
	nfail=$(grep -c '^node: FAIL' "$logs/node")
	if [ "$node_rc" -ne 0 ]; then
		rc=1
		[ "$nfail" -eq 0 ] && nfail=1
		grep '^node: FAIL\|^nodetest' "$logs/node" | sed 's/^/node guest: /' >>"$logs/failures"
	fi
	total_pass=$((total_pass + npass)) total_fail=$((total_fail + nfail))
	summary+=("node guest: $npass passed, $nfail failed, 0 skipped; $(($(date +%s) - node_start)) s")
else
	summary+=("node guest: skipped: qemu-system-x86_64 not found (tools/deps.sh installs it)")
	total_skip=$((total_skip + 1))
fi

if command -v qemu-system-x86_64 >/dev/null; then
	echo "== the suite on cgroup v2 kernels, under QEMU =="
	t=$(date +%s)
	O="$O" "$top/selftests/vmtest.sh" 2>&1 | tee "$logs/vm"
	vm_rc=${PIPESTATUS[0]}
	# One log per kernel, from its "== vmtest: NAME ==" line on.
	strip "$logs/vm" | awk -v dir="$logs" '
		/^== vmtest: .* ==$/ { name = $3; next }
		name { print > (dir "/vm-" name) }'
	grep -a '^vmtest: accelerator' "$logs/vm" >>"$logs/accel"
	guests=0
	for k in $(strip "$logs/vm" | sed -n 's/^== vmtest: \(.*\) ==$/\1/p'); do
		guests=$((guests + 1))
		result=$(sed -n "s/^vmtest: $k: result //p" "$logs/vm-$k")
		st=0
		[ "$result" = 0 ] || st=1
		extra=
		[ "$result" = none ] && extra="; the guest gave no result"
		suite_done "cgroup v2 VM $k" "$logs/vm-$k" "$st" "$extra" guest
	done
	[ "$vm_rc" -ne 0 ] && rc=1
	summary+=("cgroup v2 VMs, side by side: $(took "$t")")
	if [ "$vm_rc" -eq 2 ]; then
		summary+=("cgroup v2 VM: vmtest.sh could not run (above)")
	elif [ "$vm_rc" -ne 0 ] && [ "$guests" -eq 0 ]; then
		summary+=("cgroup v2 VM: vmtest.sh exited $vm_rc before any guest ran (above)")
		total_fail=$((total_fail + 1))
	fi
else
	summary+=("cgroup v2 VM: skipped: qemu-system-x86_64 not found (tools/deps.sh installs it)")
	total_skip=$((total_skip + 1))
fi

echo "== summary =="
cat "$logs/failures" 2>/dev/null
cat "$logs/accel" 2>/dev/null
printf '%s\n' "${summary[@]}"
echo "check: $total_pass passed, $total_fail failed, $total_skip skipped (each with its reason above); $(took "$check_start")"
exit $rc
