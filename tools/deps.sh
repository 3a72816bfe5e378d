#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# Install every Debian package moat's build, tests and benchmarks need.
# Idempotent: asks apt-get only for what is missing.  Needs root when
# something is missing.
#
#   tools/deps.sh            install what is missing
#   tools/deps.sh --check    list what is missing; exit 1 if anything is
#   tools/deps.sh --bench    also what tools/bench/ runs: nginx and
#                            stress-ng (protect.sh, stamp.sh; on a systemd
#                            machine Debian's nginx package starts its own
#                            service on port 80; the benchmark runs a
#                            private instance), and libbpf-tools, bcc's
#                            runqlat, overhead.sh's anchor
#
# And from the npm registry, where Node.js 20.19 or later is installed: the
# CEL evaluator make check runs deploy/policy/'s admission policy with
# (@marcbachmann/cel-js, pinned; npm checks it against the registry's
# integrity hash), in /usr/local/lib/moat-ci.
#
# The tests run Debian's prometheus (and its promtool) as a private
# instance on a free loopback port.  The package starts a service of its
# own on port 9090 of every address: when this script installed it, it
# stops and disables that service again.
set -eu

PACKAGES="
	make gcc pkg-config
	clang llvm bpftool libclang-rt-14-dev
	libbpf-dev libelf-dev zlib1g-dev
	libjson-c-dev libmicrohttpd-dev libgnutls28-dev libpfm4-dev
	libcriterion-dev libfuse3-dev fuse3
	linux-perf jq
	qemu-system-x86 busybox-static cpio xz-utils procps
	prometheus curl openssl
	python3-docutils mandoc bash-completion systemd
	yamllint python3-yaml python3-jsonschema mmdebstrap umoci runc
"
# kubectl renders deploy/ (kubectl kustomize): Debian's kubernetes-client,
# unless a kubectl is installed already (the Kubernetes project's kubectl
# package holds the same file)
command -v kubectl >/dev/null || PACKAGES="$PACKAGES kubernetes-client"

if [ "${1:-}" = "--bench" ]; then
	PACKAGES="$PACKAGES nginx-light stress-ng libbpf-tools"
	shift
fi

CEL_JS_VERSION=8.0.0
CEL_JS_DIR=/usr/local/lib/moat-ci
cel_js() {
	[ -e "$CEL_JS_DIR/node_modules/@marcbachmann/cel-js/package.json" ] &&
		grep -q "\"version\": \"$CEL_JS_VERSION\"" \
			"$CEL_JS_DIR/node_modules/@marcbachmann/cel-js/package.json" && return 0
	command -v node >/dev/null && command -v npm >/dev/null || return 0
	node -e 'const [a, b] = process.versions.node.split(".").map(Number);
		 process.exit(a > 20 || (a == 20 && b >= 19) ? 0 : 1)' || return 0
	if [ "${1:-}" = "--check" ]; then
		echo "missing from the npm registry: @marcbachmann/cel-js@$CEL_JS_VERSION"
		return 1
	fi
	echo "deps.sh: installing @marcbachmann/cel-js@$CEL_JS_VERSION in $CEL_JS_DIR"
	mkdir -p "$CEL_JS_DIR"
	npm install --no-audit --no-fund --silent --prefix "$CEL_JS_DIR" \
		"@marcbachmann/cel-js@$CEL_JS_VERSION"
}

missing=
for p in $PACKAGES; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	case "$status" in
	ii*) ;;
	*) missing="$missing $p" ;;
	esac
done

if [ -z "$missing" ]; then
	[ "$(id -u)" -ne 0 ] && [ "${1:-}" != "--check" ] && exit 0
	cel_js "${1:-}"
	exit
fi
if [ "${1:-}" = "--check" ]; then
	echo "missing packages:$missing"
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing packages:$missing; run tools/deps.sh as root" >&2
	exit 1
fi

echo "deps.sh: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists yet; refresh them once, then retry.
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing ||
	{ apt-get update -q && apt-get install -y -q --no-install-recommends $missing; }
case " $missing " in
*" prometheus "*)
	if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
		systemctl disable --now prometheus.service >/dev/null 2>&1 || true
		echo "deps.sh: stopped and disabled prometheus.service (the tests run their own)"
	fi
	;;
esac
cel_js
