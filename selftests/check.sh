#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# make check: the whole suite on this machine, then the same suite on a
# real cgroup v2 kernel under QEMU (selftests/vmtest.sh), then one line
# that adds them up.  Exits non-zero when anything failed.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
host_log=$(mktemp)
vm_log=$(mktemp)
trap 'rm -f "$host_log" "$vm_log"' EXIT

# "Synthesis: Tested: 61 | Passing: 61 | Failing: 0 | Crashing: 0", and
# the tests that skipped themselves, each with its reason ("[SKIP] name:
# reason"; "Test is disabled" is a --filter's, not a skip).
counts() {
	sed 's/\x1b\[[0-9;]*m//g' "$1" |
		awk '/Synthesis: Tested:/ { t = $4; p = $7 }
		     /^\[SKIP\]/ && !/Test is disabled/ { s++ }
		     END { printf "%d %d %d\n", p, t - p, s }'
}

MOAT_FIXTURES="$top/selftests/fixtures" MOAT_BUILD="$O" \
	"$O/selftests/moat-selftests" --jobs 1 --verbose 2>&1 | tee "$host_log"
host_rc=${PIPESTATUS[0]}
read -r host_pass host_fail host_skip < <(counts "$host_log")

vm_rc=0 vm_pass=0 vm_fail=0 vm_skip=0
if command -v qemu-system-x86_64 >/dev/null; then
	echo "== the same suite on cgroup v2, under QEMU =="
	O="$O" "$top/selftests/vmtest.sh" 2>&1 | tee "$vm_log"
	vm_rc=${PIPESTATUS[0]}
	read -r vm_pass vm_fail vm_skip < <(counts "$vm_log")
	[ "$vm_rc" -ne 0 ] && [ "$vm_fail" -eq 0 ] && vm_fail=1
else
	echo "vmtest: skipped: qemu-system-x86_64 not found (tools/deps.sh installs it)"
fi

# The failed tests again, with their assertions, where a log's tail
# (all that CI keeps) shows them.
failures() {
	sed 's/\x1b\[[0-9;]*m//g' "$2" |
		awk -v where="$1" '/^\[RUN \]/ { n = 0; on = 0 }
		     /^\[----\] .*:[0-9]+: / { on = 1 }
		     on && /^\[----\]/ && !/^\[----\] *$/ && n < 8 { a[++n] = $0 }
		     /^\[(FAIL|CRASH)\]/ {
			print where ": " $0
			for (i = 1; i <= n; i++) print "    " a[i]
			n = 0; on = 0 }'
}
failures host "$host_log"
[ -s "$vm_log" ] && failures "cgroup v2 VM" "$vm_log"

[ "$host_rc" -ne 0 ] && [ "$host_fail" -eq 0 ] && host_fail=1
echo "host $host_pass passed, $host_fail failed, $host_skip skipped; cgroup v2 VM $vm_pass passed, $vm_fail failed, $vm_skip skipped"
echo "check: $((host_pass + vm_pass)) passed, $((host_fail + vm_fail)) failed, $((host_skip + vm_skip)) skipped (each with its reason above)"
[ "$host_rc" -eq 0 ] && [ "$vm_rc" -eq 0 ]
