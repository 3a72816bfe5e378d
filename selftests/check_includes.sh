#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The daemon's modules depend on each other without a cycle: X.c that
# includes Y.h depends on Y (moatd.h is core.c's), and the graph of
# userspace/moatd/ must sort (tsort), while a module's header includes
# only moatd.h, lib headers and system ones (X_priv.h: X.h too); and
# lib/peek.h, the selftests' reads of libmoat's state, is included by
# libmoat and the selftests only.  Prints the cycle or the header that
# breaks the rule.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top/userspace/moatd"
bad=0

# Headers: no module header includes another module's (X_priv.h, what
# the parts of module X share, includes X.h).
for h in *.h; do
	for inc in $(sed -n 's/^#include "\(.*\)"/\1/p' "$h"); do
		if [ "$inc" != moatd.h ] && [ -e "$inc" ] && [ "$h" != "${inc%.h}_priv.h" ]; then
			echo "check_includes: $h includes $inc: a module header includes moatd.h and lib headers only"
			bad=1
		fi
	done
done

# peek.h: not for the daemon, its tools or the benchmarks.
for f in $(grep -l '^#include "peek.h"' *.c *.h "$top"/tools/*/*.c "$top"/tools/*/*.h \
	   2>/dev/null); do
	echo "check_includes: $f includes peek.h: the selftests' reads of libmoat, not its API"
	bad=1
done

# Modules: X -> Y for each X.c including Y.h (Y.c exists, Y is not X).
# (A module header's own includes count: moatd.h, through X.h, is core.)
includes() {
	sed -n 's/^#include "\(.*\)\.h"/\1/p' "$1"
}
edges=$(for c in *.c; do
	x=${c%.c}
	for inc in $(for i in $(includes "$c"); do
			echo "$i"
			[ -e "$i.h" ] && includes "$i.h"
		     done | sort -u); do
		[ "$inc" = moatd ] && inc=core
		if [ "$inc" != "$x" ] && [ -e "$inc.c" ]; then
			echo "$x $inc"
		fi
	done
done)
if ! out=$(printf '%s\n' "$edges" | tsort 2>&1 >/dev/null) || [ -n "$out" ]; then
	echo "check_includes: the modules' dependencies have a cycle:"
	printf '%s\n' "$out" | sed 's/^/    /'
	bad=1
fi
[ "$bad" = 0 ] && echo "check_includes: $(printf '%s\n' "$edges" | wc -l) dependencies among $(ls *.c | wc -l) files, no cycle"
exit $bad
