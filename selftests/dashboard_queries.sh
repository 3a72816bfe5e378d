#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# selftests/dashboard_queries.sh PROM_PORT MOAT_PORT: every query of the
# Grafana dashboards in contrib/grafana/ run with promtool against the
# Prometheus on 127.0.0.1:PROM_PORT (which scrapes the moatd whose HTTP
# is on MOAT_PORT).  Each must parse and run; one whose metrics moatd
# serves now must return series.  Grafana's variables become what "All"
# means ($instance: .*) and $__rate_interval one minute.  Run by the
# test moatd::prometheus_scrapes_moatd; exits 1 when any query fails.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
prom=http://127.0.0.1:$1
metrics=$(curl -sf "http://127.0.0.1:$2/metrics") || {
	echo "dashboards: moatd's /metrics on port $2 did not answer"
	exit 1
}
bad=0 n=0 with_data=0

while IFS=$'\t' read -r file title expr; do
	n=$((n + 1))
	q=${expr//\$__rate_interval/1m}
	q=${q//\$instance/.*}
	if ! out=$(promtool query instant "$prom" "$q" 2>&1); then
		echo "dashboards: $file: \"$title\": $expr: $out"
		bad=1
		continue
	fi
	# the metrics it reads, and whether moatd serves each now
	served=1
	for m in $(grep -oE '\b(moat_[a-z0-9_]+|up)\b' <<<"$q" | sort -u); do
		[ "$m" = up ] && continue
		grep -qE "^$m[{ ]" <<<"$metrics" || served=0
	done
	if [ "$served" = 1 ]; then
		with_data=$((with_data + 1))
		if [ -z "$out" ]; then
			echo "dashboards: $file: \"$title\": $q: no series, though moatd serves its metrics"
			bad=1
		fi
	fi
done < <(cd "$top/contrib/grafana" &&
	 jq -r '.panels[] as $p | $p.targets[] | [input_filename, $p.title, .expr] | @tsv' *.json)

echo "dashboards: $n queries ran, $with_data of them on metrics moatd serves now"
[ "$n" -gt 0 ] || bad=1
exit $bad
