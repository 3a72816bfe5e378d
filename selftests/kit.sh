#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The operator's kit, each piece checked by the tool that consumes it
# (Documentation/operations.rst): the systemd unit by systemd-analyze and
# by running moatd under its capability set; the man pages by mandoc,
# and against each program's --help and moatd's knob tree; bash
# completion against a running moatd; the example config by loading it;
# the Prometheus rules by promtool; make install's layout; deploy/ by
# kubectl kustomize, Kubernetes' schemas, yamllint and moatd's own flags
# (Documentation/deploy.rst); the container image by building it and
# running it with runc as the DaemonSet would.  Prints
# Criterion's format, so that check.sh adds it up: [PASS], [FAIL] with
# its reasons, [SKIP] with its reason, and a Synthesis line.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-$top/build}
work=$(mktemp -d /tmp/moat-kit.XXXXXX)
pass=0 fail=0 skip=0 moatd_pid=

# What a check left: it runs in a subshell, so the moatd it started and
# its cgroup are named in files, and gone after each check.
leftovers() {
	local pid
	if [ -s "$work/moatd.pid" ]; then
		pid=$(cat "$work/moatd.pid")
		kill "$pid" 2>/dev/null
		while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	fi
	[ -s "$work/container" ] && runc delete --force "$(cat "$work/container")" 2>/dev/null
	[ -s "$work/cg" ] && find "$(cat "$work/cg")" -depth -type d -exec rmdir {} + 2>/dev/null
	rm -f "$work/moatd.pid" "$work/cg" "$work/sock" "$work/container"
}
cleanup() {
	leftovers
	rm -rf "$work"
}
trap cleanup EXIT

# why REASON: the running check fails for it (checks run in a subshell
# for their output: reasons travel back through a file).
why() { echo "selftests/kit.sh:${BASH_LINENO[0]}: $*" >>"$work/why"; }
# run_check NAME FUNCTION: [PASS], or [FAIL] with each why(); a function
# that returns 77 skips, its output the reason.
run_check() {
	local name=$1 fn=$2 out rc
	rm -f "$work/why"
	echo "[RUN ] kit::$name"
	out=$("$fn" 2>&1)
	rc=$?
	leftovers
	if [ "$rc" = 77 ]; then
		echo "[SKIP] kit::$name: $out"
		skip=$((skip + 1))
		return
	fi
	[ -n "$out" ] && sed 's/^/[----]   /' <<<"$out"
	[ "$rc" != 0 ] && [ ! -s "$work/why" ] && why "exit status $rc"
	if [ ! -s "$work/why" ]; then
		echo "[PASS] kit::$name"
		pass=$((pass + 1))
	else
		sed 's/^/[----] /' "$work/why"
		echo "[FAIL] kit::$name"
		fail=$((fail + 1))
	fi
}

# The page as text, wide: what a reader sees.
page() { mandoc -T ascii -O width=300 "$O/man/$1" | col -bx; }

# --- the systemd unit ---------------------------------------------------
unit_verify() {
	command -v systemd-analyze >/dev/null || { echo "no systemd-analyze (tools/deps.sh installs systemd)"; return 77; }
	# the built programs where the unit names them, the built man pages
	# for its Documentation= lines
	sed "s|^ExecStart=[^ ]*/moatd|ExecStart=$O/moatd|" "$O/dist/moatd.service" >"$work/moatd.service"
	MANPATH=$O/man-tree systemd-analyze verify "$work/moatd.service" || why "systemd-analyze verify failed"
}

unit_security() {
	command -v systemd-analyze >/dev/null || { echo "no systemd-analyze"; return 77; }
	local out score
	out=$(systemd-analyze security --offline=yes "$O/dist/moatd.service" 2>&1)
	score=$(sed -n 's/.*Overall exposure level for moatd.service: \([0-9.]*\).*/\1/p' <<<"$out")
	echo "exposure $score (0 safest, 10 least; the reasons: Documentation/operations.rst)"
	[ -n "$score" ] || { why "no exposure level: $out"; return; }
	# recorded in Documentation/operations.rst: a change that raises it
	# must say why there
	awk -v s="$score" 'BEGIN { exit !(s <= 3.1) }' || why "exposure $score is over the 3.1 recorded"
}

# The unit's capability set is enough: moatd under it (setpriv, as
# systemd would start it: root, that bounding set, no new privileges)
# loads its BPF programs and serves.
unit_capabilities() {
	[ "$(id -u)" = 0 ] || { echo "not root"; return 77; }
	local caps
	caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$O/dist/moatd.service" |
	       tr 'A-Z' 'a-z' | sed 's/cap_//g; s/ /,+/g')
	start_moatd setpriv --no-new-privs --inh-caps=-all --bounding-set="-all,+$caps" -- || return
	local src
	src=$("$O/moatctl" -s "$work/sock" get rqlat/active_source)
	echo "bounding set +$caps: rqlat source $src"
	[ "$src" = bpf ] || why "under the unit's capabilities rqlat/active_source is '$src', not bpf"
	grep -q "attached tp_btf\|attaching tp_btf\|raw_tp" "$work/log" || why "no BPF program attached: $(cat "$work/log")"
	stop_moatd
}

# --- a moatd on a cgroup of its own, with a rule group -------------------
start_moatd() {
	local v2=/sys/fs/cgroup/cgroup.controllers mnt
	if [ -r $v2 ] && grep -qw cpu $v2; then
		mnt=/sys/fs/cgroup
	else
		# proc(5): the fields after " - " are type, source, super options
		mnt=$(awk '{ for (i = 7; i < NF && $i != "-"; i++) ;
			     if ($(i + 1) == "cgroup" && $(i + 3) ~ /(^|,)cpu(,|$)/) { print $5; exit } }' \
			/proc/self/mountinfo)
	fi
	[ -n "$mnt" ] || { why "no cpu controller hierarchy"; return 1; }
	local cg=$mnt/moat-kit-$$
	mkdir -p "$cg/kit-a" && echo "$cg" >"$work/cg"
	[ -e "$work/conf" ] || : >"$work/conf"
	"$@" "$O/moatd" --foreground --socket "$work/sock" --state-dir "$work/state" \
		--listen 127.0.0.1:0 --cgroup-root "/moat-kit-$$" \
		--config "${CONF:-$work/conf}" 2>"$work/log" &
	moatd_pid=$!
	echo "$moatd_pid" >"$work/moatd.pid"
	for _ in $(seq 200); do
		[ -S "$work/sock" ] && return 0
		kill -0 "$moatd_pid" 2>/dev/null || break
		sleep 0.05
	done
	why "moatd did not start: $(tail -n 5 "$work/log")"
	return 1
}
stop_moatd() {
	kill "$moatd_pid" && wait "$moatd_pid"
	moatd_pid=
	rm -f "$work/sock" "$work/moatd.pid"
}

# --- the man pages ---------------------------------------------------------
man_lint() {
	command -v mandoc >/dev/null || { echo "no mandoc (tools/deps.sh installs it)"; return 77; }
	local m
	for m in "$O"/man/*; do
		mandoc -T lint "$m" || why "mandoc -T lint $m"
	done
}

# The documentation as docutils (rst2man's, Sphinx's parser) reads it: a
# short underline, a broken table or a :doc: to no page is a reader's
# broken page, and docutils only warns.
docs_rst() {
	python3 -c 'import docutils' 2>/dev/null ||
		{ echo "no docutils (tools/deps.sh installs python3-docutils)"; return 77; }
	local out
	out=$("$top/selftests/rst_check.py" "$top"/Documentation/*.rst "$top"/Documentation/man/*.rst) ||
		why "docutils reports: $out"
}

# --- the benchmarks' tools ------------------------------------------------
# protect_ab.py on made-up logs (selftests/fixtures/protect): a scenario
# whose every run on one side is under every run on the other is told
# apart, one whose runs are the same values dealt otherwise is not, and
# a run line with a latency that is not a number is refused by its file
# and line, nothing printed for the rest.
protect_ab() {
	local f=$top/selftests/fixtures/protect out
	out=$(python3 "$top/tools/bench/protect_ab.py" "$f/a.log" -- "$f/b.log" 2>&1) ||
		{ why "protect_ab.py on a.log and b.log failed: $out"; return; }
	grep -qE '^burst3-moatd +p99 +6 +420 +6 +1220 .* A lower$' <<<"$out" ||
		why "burst3-moatd's p99, 400-450 against 1200-1250 us, not told apart: $out"
	grep -qE '^burst2-moatd +p99 +6 +300 +6 +300 .* not distinguishable$' <<<"$out" ||
		why "burst2-moatd's p99, the same runs dealt otherwise, told apart: $out"
	grep -qE '^# burst3-moatd p99 A: 400 410 420 430 440 450; B: 1200 ' <<<"$out" ||
		why "the runs are not listed: $out"
	out=$(python3 "$top/tools/bench/protect_ab.py" "$f/a.log" -- "$f/bad.log" 2>&1) &&
		why "a log with a latency 'fast' was taken: $out"
	grep -q "bad.log:3: a latency that is not a number" <<<"$out" ||
		why "the refusal does not name the file and line: $out"
	! grep -q "^scenario" <<<"$out" || why "a table printed beside the refusal: $out"
}

man_options() {
	command -v mandoc >/dev/null || { echo "no mandoc"; return 77; }
	local p o text
	for p in moatd moatctl moat-rqlat; do
		text=$(page "$p.8")
		for o in $("$O/$p" --help 2>&1 | grep -oE -- '(^|[ [,])--?[a-zA-Z][a-zA-Z-]*' | sed 's/^[ [,]//' | sort -u); do
			grep -qF -- "$o" <<<"$text" || why "$p(8) does not say $o, which $p --help lists"
		done
	done
	text=$(page moatctl.8)
	for o in ls get set tree config status restore reset; do
		grep -qE "^ *$o( |$)" <<<"$text" || why "moatctl(8) does not describe the verb $o"
	done
}

man_knobs() {
	command -v mandoc >/dev/null || { echo "no mandoc"; return 77; }
	[ "$(id -u)" = 0 ] || { echo "not root"; return 77; }
	printf 'rules/kit = kit-* be\n' >"$work/conf"
	start_moatd || return
	local text k n=0
	text=$(page moat.conf.5)
	for k in $("$O/moatctl" -s "$work/sock" tree | sed 's/ = .*//; s/ =$//' |
		   sed -E 's|^groups/[^/]+/|groups/<id>/|; s|^rules/.*|rules/<name>|; s|^enforce/history/[0-9]+$|enforce/history/<n>|' | sort -u); do
		n=$((n + 1))
		grep -qF -- "$k" <<<"$text" || why "moat.conf(5) does not describe the knob $k"
	done
	grep -q "groups/<id>/path" <<<"$text" || why "no group's knobs were checked"
	echo "$n knobs (a group's once), all in moat.conf(5)"
	stop_moatd
}

# --- the example config ------------------------------------------------------
example_config() {
	[ "$(id -u)" = 0 ] || { echo "not root"; return 77; }
	local ex=$top/dist/moat.conf written commented
	# as installed: every line commented out, it loads
	CONF=$ex start_moatd || return
	"$O/moatctl" -s "$work/sock" config | sed 's/ = .*//' | grep -v '^http/listen$' | sort >"$work/writable"
	stop_moatd
	# every writable knob is in it, each at its default
	# (an empty value: "key =", as moatctl config prints it less its space)
	commented=$(sed -nE 's/^#([a-z][a-z0-9_/]*) =( .*)?$/\1/p' "$ex" | sort -u)
	comm -23 "$work/writable" <(echo "$commented") | while read -r k; do
		why "the example config lacks $k"
	done
	sed -E 's/^#([a-z][a-z0-9_/]* =)/\1/' "$ex" >"$work/uncommented"
	CONF=$work/uncommented start_moatd || return
	"$O/moatctl" -s "$work/sock" config | grep -v '^http/listen ' | sed 's/ *$//' |
		sort >"$work/running"
	grep -E '^[a-z]' "$work/uncommented" | grep -v '^http/listen ' | sort >"$work/wanted"
	diff "$work/wanted" "$work/running" >"$work/diff" ||
		why "the example's values, uncommented, are not what moatd runs with: $(cat "$work/diff")"
	echo "$(wc -l <"$work/wanted") settings, loaded and running"
	stop_moatd
}

# --- bash completion ---------------------------------------------------------
completion() {
	[ "$(id -u)" = 0 ] || { echo "not root"; return 77; }
	printf 'rules/kit = kit-* be\n' >"$work/conf"
	start_moatd || return
	local bc=/usr/share/bash-completion/bash_completion
	[ -r $bc ] || bc=/dev/null
	# expect WANT WORDS...: the completions of the last word, sorted
	expect() {
		local want=$1 got
		shift
		got=$(PATH=$O:$PATH bash -c '
			source "$1"; source "$2"; shift 2
			COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
			_moatctl moatctl "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"
			((${#COMPREPLY[@]})) && printf "%s\n" "${COMPREPLY[@]}"' _ "$bc" "$top/dist/bash-completion/moatctl" "$@" | sort | tr '\n' ' ')
		[ "$got" = "$want" ] || why "completing '$*': got '$got', want '$want'"
	}
	local s=$work/sock
	expect "get " moatctl --socket "$s" ge
	expect "reset restore " moatctl --socket "$s" res
	expect "restore " moatctl --socket "$s" rest
	expect "--help --json --socket --timeout " moatctl --
	expect "enforce/ " moatctl --socket "$s" get enf
	expect "enforce/cpu_decrease_pct " moatctl --socket "$s" get enforce/cpu_dec
	expect "groups/kit.kit-a/ " moatctl --socket "$s" get groups/
	expect "groups/kit.kit-a/class groups/kit.kit-a/class_source " moatctl --socket "$s" get groups/kit.kit-a/cla
	expect "mode " moatctl -s "$s" set --runtime mo
	expect "observe " moatctl -s "$s" set mode ""
	expect "--runtime " moatctl -s "$s" set --r
	expect "" moatctl -s "$s" ls enforce/ extra
	stop_moatd
}

# --- Prometheus rules --------------------------------------------------------
rules() {
	command -v promtool >/dev/null || { echo "no promtool (tools/deps.sh installs prometheus)"; return 77; }
	cd "$top/contrib/prometheus" || return
	promtool check rules moat.rules.yml || why "promtool check rules"
	promtool test rules moat.rules.test.yml || why "promtool test rules"
	# every alert with its runbook entry, and a test that it fires
	local a
	while read -r a; do
		grep -q "^\`\`$a\`\` (" "$top/Documentation/operations.rst" ||
			why "alert $a: no entry in operations.rst's \"Alerts and what to do\""
		grep -q "alertname: $a\$" moat.rules.test.yml ||
			why "alert $a: no test in moat.rules.test.yml"
	done < <(sed -n 's/^ *- alert: *//p' moat.rules.yml)
	command -v jq >/dev/null && for d in "$top"/contrib/grafana/*.json; do
		jq -e '.panels | length > 0' "$d" >/dev/null || why "$d: no panels"
	done
	# the descheduler's example policy asks for a series the rules record
	python3 - "$top/contrib/descheduler/policy.yaml" moat.rules.yml >"$work/out" 2>&1 <<-'PY' ||
		import sys, yaml
		pol = yaml.safe_load(open(sys.argv[1]))
		records = {r["record"] for g in yaml.safe_load(open(sys.argv[2]))["groups"]
		           for r in g["rules"] if "record" in r}
		cfg = {c["name"]: c.get("args", {}) for p in pol["profiles"] for c in p["pluginConfig"]}
		lnu = cfg["LowNodeUtilization"]
		q = lnu["metricsUtilization"]["prometheus"]["query"]
		assert q in records, "query %s is no recording rule of moat.rules.yml" % q
		assert set(lnu["thresholds"]) == {"MetricResource"} == set(lnu["targetThresholds"])
		assert lnu["thresholds"]["MetricResource"] < lnu["targetThresholds"]["MetricResource"]
		sel = cfg["DefaultEvictor"]["labelSelector"]["matchLabels"]
		assert sel == {"moat.io/class": "be"}, "the evictor may take more than BE pods: %s" % sel
		print("contrib/descheduler/policy.yaml: %s, BE pods only" % q)
	PY
		why "contrib/descheduler/policy.yaml: $(cat "$work/out")"
	tail -n 1 "$work/out"
	# crane-scheduler's policy, as its v1alpha1 types and its plugin take it
	python3 - "$top/contrib/crane/policy.yaml" "$top/userspace/lib/nodepatch.h" \
		>"$work/out" 2>&1 <<-'PY' ||
		import re, sys, yaml
		pol = yaml.safe_load(open(sys.argv[1]))
		key = re.search(r'#define MOAT_CRANE_KEY\s+"([^"]+)"', open(sys.argv[2]).read())[1]
		assert pol["apiVersion"] == "scheduler.policy.crane.io/v1alpha1", pol["apiVersion"]
		assert pol["kind"] == "DynamicSchedulerPolicy"
		fields = {"syncPolicy": {"name": str, "period": str},
		          "predicate": {"name": str, "maxLimitPecent": float},
		          "priority": {"name": str, "weight": float},
		          "hotValue": {"timeRange": str, "count": int}}
		spec = pol["spec"]
		assert set(spec) <= set(fields), "fields crane does not know: %s" % (set(spec) - set(fields))
		dur = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$")	# Go's time.ParseDuration
		for lst, typ in fields.items():
		    for e in spec.get(lst, []):
		        assert set(e) == set(typ), "%s entry %s: fields %s" % (lst, e, set(typ))
		        for f, t in typ.items():
		            assert isinstance(e[f], t), "%s.%s = %r is no %s" % (lst, f, e[f], t.__name__)
		            if f in ("period", "timeRange"):
		                assert dur.match(e[f]), "%s.%s = %s is no duration" % (lst, f, e[f])
		synced = {e["name"] for e in spec["syncPolicy"]}
		for lst in ("predicate", "priority"):
		    names = {e["name"] for e in spec[lst]}
		    # without a syncPolicy period the plugin skips the entry
		    assert names <= synced, "%s without a syncPolicy period: %s" % (lst, names - synced)
		    assert key in names, "moat's %s is not in %s" % (key, lst)
		lim = [e["maxLimitPecent"] for e in spec["predicate"] if e["name"] == key][0]
		assert 0 < lim <= 1, "moat's value is in [0, 1]; maxLimitPecent %s" % lim
		print("contrib/crane/policy.yaml: %s synced, a predicate at %s and a priority" % (key, lim))
	PY
		why "contrib/crane/policy.yaml: $(cat "$work/out")"
	tail -n 1 "$work/out"
}

# --- make install --------------------------------------------------------------
install_layout() {
	local d=$work/root f
	make -s -C "$top" O="$O" install DESTDIR="$d" PREFIX=/usr >"$work/install.log" 2>&1 ||
		{ why "make install: $(tail -n 5 "$work/install.log")"; return; }
	for f in usr/sbin/moatd usr/sbin/moatctl usr/sbin/moat-rqlat \
		 usr/lib/systemd/system/moatd.service \
		 usr/share/man/man8/moatd.8 usr/share/man/man8/moatctl.8 \
		 usr/share/man/man8/moat-rqlat.8 usr/share/man/man5/moat.conf.5 \
		 usr/share/bash-completion/completions/moatctl \
		 etc/moat/moat.conf usr/share/doc/moat/examples/moat.conf \
		 usr/share/moat/prometheus/moat.rules.yml \
		 usr/share/moat/grafana/moat-node.json usr/share/moat/grafana/moat-fleet.json; do
		[ -f "$d/$f" ] || why "make install DESTDIR=... PREFIX=/usr: no $f"
	done
	echo "$(find "$d" -type f | wc -l) files"
	# built with the default PREFIX, installed with another: the unit
	# starts the moatd it installed
	grep -qx "ExecStart=/usr/sbin/moatd .*" "$d/usr/lib/systemd/system/moatd.service" ||
		why "the installed unit does not start /usr/sbin/moatd: $(grep ^ExecStart "$d/usr/lib/systemd/system/moatd.service")"
	# an admin's config survives a second install
	echo "mode = enforce" >"$d/etc/moat/moat.conf"
	make -s -C "$top" O="$O" install DESTDIR="$d" PREFIX=/usr >/dev/null 2>&1
	grep -q "^mode = enforce" "$d/etc/moat/moat.conf" || why "make install overwrote /etc/moat/moat.conf"
}

# man pages where man(1) and systemd-analyze look: $O/man-tree/man8/...
mkdir -p "$O/man-tree/man5" "$O/man-tree/man8"
cp "$O"/man/*.5 "$O/man-tree/man5/" && cp "$O"/man/*.8 "$O/man-tree/man8/"

echo "[====] Running the operator's kit checks:"
# --- deploy/: rendered, valid Kubernetes, and what moatd accepts -------------
render() {
	command -v kubectl >/dev/null ||
		{ echo "no kubectl (tools/deps.sh installs kubernetes-client)"; return 77; }
	kubectl kustomize "$top/deploy" >"$work/deploy.yaml" 2>"$work/kustomize.err" ||
		{ why "kubectl kustomize deploy/ failed: $(cat "$work/kustomize.err")"; return 1; }
	kubectl kustomize "$top/deploy/policy" >"$work/policy.yaml" 2>"$work/kustomize.err" ||
		{ why "kubectl kustomize deploy/policy/ failed: $(cat "$work/kustomize.err")"; return 1; }
	kubectl kustomize "$top/deploy/cleanup" >"$work/cleanup.yaml" 2>"$work/kustomize.err" ||
		{ why "kubectl kustomize deploy/cleanup/ failed: $(cat "$work/kustomize.err")"; return 1; }
}

deploy_schema() {
	render || return
	local check=$top/selftests/deploy_check.py schema=$top/deploy/schema/kubernetes.json
	"$check" schema "$schema" <"$work/deploy.yaml" >"$work/out" ||
		why "deploy/ against Kubernetes $(jq -r .kubernetes "$schema")'s schemas: $(cat "$work/out")"
	tail -n 1 "$work/out"
	"$check" schema "$schema" <"$work/policy.yaml" >"$work/out" ||
		why "deploy/policy/ against Kubernetes $(jq -r .kubernetes "$schema")'s schemas: $(cat "$work/out")"
	tail -n 1 "$work/out"
	"$check" schema "$schema" <"$work/cleanup.yaml" >"$work/out" ||
		why "deploy/cleanup/ against Kubernetes $(jq -r .kubernetes "$schema")'s schemas: $(cat "$work/out")"
	tail -n 1 "$work/out"
	# what the check is for: a misspelt field, a string for a number
	sed 's/hostPID: true/hostPid: true/; s/terminationGracePeriodSeconds: 60/terminationGracePeriodSeconds: "60"/' \
		"$work/deploy.yaml" | "$check" schema "$schema" >"$work/bad" &&
		why "a misspelt field and a mistyped one passed"
	grep -q "'hostPid' was unexpected" "$work/bad" || why "hostPid not caught: $(cat "$work/bad")"
	grep -q "'60' is not of type 'integer'" "$work/bad" || why "a string for an integer not caught: $(cat "$work/bad")"
}

# deploy/components/prometheus-operator in an overlay of deploy/, as
# deploy.rst says: valid against Kubernetes' and the operator's CRDs'
# schemas; the ServiceMonitor finds moatd's Service as the job "moatd"
# with the node's name; the PrometheusRule holds moat.rules.yml's groups
prometheus_operator() {
	command -v kubectl >/dev/null ||
		{ echo "no kubectl (tools/deps.sh installs kubernetes-client)"; return 77; }
	local check=$top/selftests/deploy_check.py o=$work/overlay
	mkdir -p "$o"
	# kustomize takes no absolute root: the paths relative to the overlay
	printf 'resources:\n  - %s\ncomponents:\n  - %s\n' \
		"$(realpath --relative-to="$o" "$top/deploy")" \
		"$(realpath --relative-to="$o" "$top/deploy/components/prometheus-operator")" \
		>"$o/kustomization.yaml"
	kubectl kustomize "$o" >"$work/po.yaml" 2>"$work/kustomize.err" ||
		{ why "the overlay with the component failed: $(cat "$work/kustomize.err")"; return; }
	"$check" schema "$top/deploy/schema/kubernetes.json" \
		"$top/deploy/schema/prometheus-operator.json" <"$work/po.yaml" >"$work/out" ||
		why "deploy/ with the prometheus-operator component: $(cat "$work/out")"
	tail -n 1 "$work/out"
	# what the check is for: a field the CRD does not have
	sed 's/scrapeTimeout:/scrapeTimout:/' "$work/po.yaml" | "$check" schema \
		"$top/deploy/schema/kubernetes.json" "$top/deploy/schema/prometheus-operator.json" \
		>"$work/bad" && why "a misspelt ServiceMonitor field passed"
	grep -q "'scrapeTimout' was unexpected" "$work/bad" || why "scrapeTimout not caught: $(cat "$work/bad")"
	python3 - "$work/po.yaml" "$top/contrib/prometheus/moat.rules.yml" >"$work/out" 2>&1 <<-'PY' ||
		import sys, yaml
		objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
		one = lambda k: [o for o in objs if o["kind"] == k][0]
		svc, sm, pr = one("Service"), one("ServiceMonitor"), one("PrometheusRule")
		sel = sm["spec"]["selector"]["matchLabels"]
		labels = svc["metadata"].get("labels", {})
		assert all(labels.get(k) == v for k, v in sel.items()), "selects %s, the Service has %s" % (sel, labels)
		ns = sm["spec"]["namespaceSelector"]["matchNames"]
		assert svc["metadata"]["namespace"] in ns, "namespaces %s" % ns
		ports = {p["name"] for p in svc["spec"]["ports"]}
		ep = sm["spec"]["endpoints"]
		assert all(e["port"] in ports for e in ep), "ports %s, the Service has %s" % ([e["port"] for e in ep], ports)
		# the job is the Service's name unless jobLabel says otherwise
		assert "jobLabel" not in sm["spec"] and svc["metadata"]["name"] == "moatd", "job is not moatd"
		assert all({"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node",
		            "action": "replace"} in e.get("relabelings", []) for e in ep), "no node label"
		groups = yaml.safe_load(open(sys.argv[2]))["groups"]
		assert pr["spec"]["groups"] == groups, "the PrometheusRule is not moat.rules.yml: run tools/prometheusrule.py"
		print("ServiceMonitor: job moatd, port %s, a node label; PrometheusRule: %d rules" %
		      (ep[0]["port"], sum(len(g["rules"]) for g in groups)))
	PY
		why "deploy/components/prometheus-operator: $(cat "$work/out")"
	tail -n 1 "$work/out"
}

# deploy/policy's CEL, evaluated against example requests, each with the
# answer it must get (selftests/fixtures/own-node-requests.json)
CEL_JS=/usr/local/lib/moat-ci/node_modules/@marcbachmann/cel-js/lib/index.js
policy_cel() {
	command -v node >/dev/null || { echo "no node (Node.js 20.19 or later runs the CEL evaluator)"; return 77; }
	[ -e "$CEL_JS" ] || { echo "no CEL evaluator: $CEL_JS (tools/deps.sh installs it where Node.js 20.19+ is)"; return 77; }
	render || return
	python3 -c 'import json, sys, yaml; json.dump([o for o in yaml.safe_load_all(sys.stdin) if o], sys.stdout)' \
		<"$work/policy.yaml" >"$work/policy.json"
	node "$top/selftests/policy_check.mjs" "$CEL_JS" "$work/policy.json" \
		"$top/selftests/fixtures/own-node-requests.json" >"$work/out" ||
		why "deploy/policy/ answers wrong: $(cat "$work/out")"
	tail -n 1 "$work/out"
	# what the check is for: a NoExecute taint let through must be caught
	sed "s/PreferNoSchedule'/NoExecute'/" "$work/policy.json" >"$work/bad.json"
	if node "$top/selftests/policy_check.mjs" "$CEL_JS" "$work/bad.json" \
		"$top/selftests/fixtures/own-node-requests.json" >"$work/bad"; then
		why "a policy that lets a NoExecute taint through passed"
	fi
}

# kubectl delete -k deletes in the rendered order: the uninstall that
# deploy.rst gives (the DaemonSet first, waited for) is needed, and names
# the DaemonSet the render has
deploy_uninstall() {
	render || return
	python3 - "$work/deploy.yaml" "$top/Documentation/deploy.rst" >"$work/out" 2>&1 <<-'PY' ||
		import re, sys, yaml
		objs = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
		kinds = [o["kind"] for o in objs]
		ds = next(o for o in objs if o["kind"] == "DaemonSet")
		rbac = [k for k in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding") if k in kinds]
		before = [k for k in rbac if kinds.index(k) < kinds.index("DaemonSet")]
		doc = open(sys.argv[2]).read()
		cmd = "kubectl -n %s delete daemonset %s --cascade=foreground --wait" % (
			ds["metadata"]["namespace"], ds["metadata"]["name"])
		assert cmd in doc, "deploy.rst does not give: " + cmd
		assert before, "the render puts the DaemonSet first: deploy.rst's two steps are no longer needed"
		assert "kubectl delete -k deploy/`` alone deletes in kustomize's order" in doc
		print("rendered order %s: %s before the DaemonSet; deploy.rst deletes it first" %
		      (", ".join(kinds), ", ".join(before)))
	PY
		why "the uninstall: $(cat "$work/out")"
	tail -n 1 "$work/out"
}

deploy_lint() {
	command -v yamllint >/dev/null || { echo "no yamllint (tools/deps.sh installs it)"; return 77; }
	yamllint -s -c "$top/deploy/.yamllint" "$top/deploy" || why "yamllint: deploy/ (above)"
}

deploy_moatd() {
	[ "$(id -u)" = 0 ] || { echo "not root"; return 77; }
	render || return
	local check=$top/selftests/deploy_check.py kube=$top/userspace/moatd/kube.c
	"$O/moatd" --help >"$work/help"
	"$check" moatd "$work/help" "$kube" <"$work/deploy.yaml" >"$work/out" ||
		why "deploy/ and moatd disagree: $(cat "$work/out")"
	tail -n 1 "$work/out"
	sed 's/$(POD_IP):9590/$(POD_IP):9591/; s/- --foreground/- --frobnicate/; s/fieldPath: spec.nodeName/fieldPath: metadata.name/; /- list$/d; s/- patch$/- list/' \
		"$work/deploy.yaml" | "$check" moatd "$work/help" "$kube" >"$work/bad" &&
		why "a wrong port, flag, node name and verb passed"
	for want in "--frobnicate: moatd --help has no such option" "NODE_NAME is not" \
		    "--listen port 9591" "lacks nodes patch" "grants nodes/status list"; do
		grep -q -- "$want" "$work/bad" || why "not caught: $want: $(cat "$work/bad")"
	done
	# deploy/cleanup/ asks of moatd what it accepts, where the DaemonSet keeps the journal
	"$check" cleanup "$work/help" "$work/deploy.yaml" <"$work/cleanup.yaml" >"$work/out" ||
		why "deploy/cleanup/ and moatd disagree: $(cat "$work/out")"
	tail -n 1 "$work/out"
	sed 's/- --stay/- --frobnicate/; s|path: /var/lib/moat|path: /var/lib/moat2|; /automountServiceAccountToken/d' \
		"$work/cleanup.yaml" | "$check" cleanup "$work/help" "$work/deploy.yaml" >"$work/bad" &&
		why "deploy/cleanup/: a wrong flag, journal and token passed"
	for want in "main container: no --stay" "no option --frobnicate" "is host /var/lib/moat2" \
		    "mounts a ServiceAccount token"; do
		grep -q -- "$want" "$work/bad" || why "deploy/cleanup/ not caught: $want: $(cat "$work/bad")"
	done
	# its moat.conf is one moatd loads, with the values it says
	CONF=$top/deploy/moat.conf start_moatd || return
	[ "$("$O/moatctl" -s "$work/sock" get mode)" = observe ] || why "deploy/moat.conf: mode is not observe"
	[ "$("$O/moatctl" -s "$work/sock" get kube/publish)" = 0 ] || why "deploy/moat.conf: kube/publish is not 0 (observe writes nothing)"
	stop_moatd
}

# --- the container image, run as the DaemonSet runs it ------------------------
image_runs() {
	[ "$(id -u)" = 0 ] || { echo "not root"; return 77; }
	local t id=moat-kit-$$ sock=$work/run/moatd.sock port mnt cg
	local pod=aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee
	for t in mmdebstrap umoci runc promtool; do
		command -v $t >/dev/null || { echo "no $t (tools/deps.sh installs it)"; return 77; }
	done
	render || return
	if ! make -s -C "$top" O="$O" image >"$work/image.log" 2>&1; then
		if grep -q "Failed to fetch\|Temporary failure resolving\|Could not resolve" "$work/image.log"; then
			echo "no Debian mirror reachable for mmdebstrap: $(grep -m 1 "Failed\|resolv" "$work/image.log")"
			return 77
		fi
		why "make image failed: $(tail -n 5 "$work/image.log")"
		return 1
	fi
	tail -n 2 "$work/image.log"
	umoci unpack --image "$O/image/oci:latest" "$work/bundle" >/dev/null ||
		{ why "umoci unpack of the image failed"; return 1; }
	# a cgroup for moatd to look below, as start_moatd's
	mnt=$(awk '{ for (i = 7; i < NF && $i != "-"; i++) ;
		     if (($(i + 1) == "cgroup" && $(i + 3) ~ /(^|,)cpu(,|$)/) ||
			 ($(i + 1) == "cgroup2" && $5 == "/sys/fs/cgroup")) { print $5; exit } }' /proc/self/mountinfo)
	cg=$mnt/moat-kit-$$
	# a besteffort pod as kubelet's cgroupfs driver makes it
	mkdir -p "$cg/kubepods/besteffort/pod$pod" && echo "$cg" >"$work/cg"
	mkdir -p "$work/state" "$work/run" "$work/config" "$work/sa"
	cp "$top/deploy/moat.conf" "$work/config/"
	echo kit-token >"$work/sa/token"
	: >"$work/sa/ca.crt"
	"$top/selftests/oci_config.py" "$work/deploy.yaml" "$work/bundle/config.json" "$work" "/host$cg" ||
		{ why "the DaemonSet as an OCI config failed"; return 1; }
	echo "$id" >"$work/container"
	runc run --detach --bundle "$work/bundle" "$id" </dev/null >"$work/clog" 2>&1 ||
		{ why "runc run: $(cat "$work/clog")"; return 1; }
	for _ in $(seq 200); do
		[ -S "$sock" ] && break
		sleep 0.05
	done
	[ -S "$sock" ] || { why "moatd in the image opened no socket: $(tail -n 5 "$work/clog")"; return 1; }
	port=$("$O/moatctl" -s "$sock" get http/port) || { why "moatctl on the node: no answer"; return 1; }
	curl -fsS "http://127.0.0.1:$port/healthz" >"$work/healthz" 2>&1 ||
		why "/healthz: $(cat "$work/healthz")"
	curl -fsS "http://127.0.0.1:$port/metrics" >"$work/metrics" || why "/metrics: no answer"
	promtool check metrics <"$work/metrics" >"$work/promtool" 2>&1 ||
		why "promtool check metrics: $(head -n 5 "$work/promtool")"
	runc exec "$id" /usr/sbin/moatctl -s /run/moat/moatd.sock status >"$work/status" 2>&1 ||
		why "moatctl in the container: $(cat "$work/status")"
	grep -q "^$pod  *be  *pod" "$work/status" || why "moatctl status in the container does not show the BE pod: $(cat "$work/status")"
	grep -q "host root /host" "$work/clog" || why "moatd did not say its host root: $(cat "$work/clog")"
	# the pod source (deploy/moat.conf: kube/pods on, the publisher
	# off): the API client makes its first request
	for _ in $(seq 40); do
		grep -q "kube: GET https://127.0.0.1:1/api/v1/pods?" "$work/clog" && break
		sleep 0.05
	done
	grep -q "kube: GET https://127.0.0.1:1/api/v1/pods?" "$work/clog" ||
		why "the pod source made no request: $(grep kube "$work/clog")"
	grep -q "kube: GET https://127.0.0.1:1/api/v1/nodes/" "$work/clog" &&
		why "deploy/moat.conf, in observe, asked for the Node: $(grep kube "$work/clog")"
	grep -q "pmu: libpfm.so.4 (libpfm4" "$work/clog" && why "libpfm4 did not load: $(grep pmu "$work/clog")"
	runc kill "$id" TERM
	for _ in $(seq 200); do
		runc state "$id" 2>/dev/null | grep -q '"status": "stopped"' && break
		sleep 0.05
	done
	runc delete --force "$id" && rm -f "$work/container"
	grep -q "moatd stops\|stopped" "$work/clog" || true
	echo "in the image: /healthz '$(cat "$work/healthz")', $(grep -c '^# TYPE' "$work/metrics") metric families; moatctl status in it:"
	cat "$work/status"
}

run_check image_builds_and_runs_as_the_daemonset_runs_it image_runs
run_check deploy_renders_and_passes_the_kubernetes_schemas deploy_schema
run_check the_prometheus_operator_component_passes_its_crds prometheus_operator
run_check the_admission_policy_holds_moatd_to_its_own_node policy_cel
run_check deploy_passes_yamllint deploy_lint
run_check the_documented_uninstall_deletes_the_daemonset_before_its_rbac deploy_uninstall
run_check deploy_asks_of_moatd_what_it_accepts deploy_moatd
run_check unit_passes_systemd_analyze_verify unit_verify
run_check unit_exposure_is_the_one_recorded unit_security
run_check moatd_runs_with_the_units_capabilities unit_capabilities
run_check man_pages_pass_mandoc_lint man_lint
run_check docs_parse_as_restructuredtext docs_rst
run_check man_pages_name_every_option_and_verb man_options
run_check protect_ab_tells_apart_only_what_the_runs_do protect_ab
run_check moat_conf_5_names_every_knob man_knobs
run_check example_config_loads_and_holds_every_knob_at_its_default example_config
run_check bash_completion_completes_verbs_knobs_and_values completion
run_check prometheus_rules_check_and_pass_their_tests rules
run_check make_install_lays_out_debians_places install_layout
echo "[====] Synthesis: Tested: $((pass + fail + skip)) | Passing: $pass | Failing: $fail | Crashing: 0"
[ "$fail" = 0 ]
