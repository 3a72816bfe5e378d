# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash disable=SC2154  # $work and the rest: the caller's
#
# What selftests/vmtest.sh and selftests/nodetest.sh share, sourced by
# both: a Debian kernel by its series, downloaded and unpacked (never
# installed); the modules a guest loads, in order; a guest booted under
# QEMU and watched until it powers off or is judged hung.  The caller
# sets $work (where kernels are unpacked), die(), SILENCE, KVM_CPU and
# BOOTED (a line of the guest's that says its init ran), and may set
# QEMU_EXTRA (an array: more of QEMU's arguments, a disk).

# The Debian package behind a series: "6.1" -> linux-image-6.1.0-57-amd64.
# (awk reads to the end: one that exits early can SIGPIPE the writer,
# which pipefail and set -e turn into the script's death, now and then.)
debian_package() {
	local meta pkg

	case "$1" in
	6.1) meta=linux-image-amd64 ;;
	*) meta=linux-image-$1-amd64 ;;
	esac
	pkg=$(apt-cache depends "$meta" 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/ && !n++ { print $2 }')
	if [ -z "$pkg" ] && [ "$(id -u)" -eq 0 ]; then
		apt-get update -q >/dev/null 2>&1 || true
		pkg=$(apt-cache depends "$meta" 2>/dev/null |
			awk '/Depends: linux-image-[0-9]/ && !n++ { print $2 }')
	fi
	[ -n "$pkg" ] || die "kernel $1: apt-cache knows no $meta (run apt-get update)"
	echo "$pkg"
}

# Unpack a Debian kernel package into $work/<package>, once.
debian_kernel() {
	local pkg=$1

	if [ ! -d "$work/$pkg" ]; then
		rm -rf "$work/deb" "$work/$pkg.tmp" && mkdir -p "$work/deb"
		(cd "$work/deb" && apt-get download -q "$pkg" >/dev/null 2>&1) ||
			die "apt-get download $pkg failed"
		dpkg -x "$work"/deb/*.deb "$work/$pkg.tmp"
		mv "$work/$pkg.tmp" "$work/$pkg"
		rm -rf "$work/deb"
	fi
}

# The module file of @name under the kernel tree @kdir, or nothing.
module_file() {
	find "$2" \( -name "$1.ko" -o -name "$1.ko.xz" -o -name "$1.ko.zst" \) |
		sort | head -n 1
}

# Print @name's dependencies, then @name, as module files in load order.
# A module built into this kernel has no file and nothing to load.
module_closure() {
	local name=$1 kdir=$2 file dep

	file=$(module_file "$name" "$kdir")
	[ -n "$file" ] || return 0
	for dep in $(module_text "$file" | tr '\0' '\n' |
		     sed -n 's/^depends=//p' | tr ',' ' '); do
		module_closure "$dep" "$kdir"
	done
	echo "$file"
}

module_text() {
	case "$1" in
	*.xz) xz -dc "$1" ;;
	*.zst) zstd -dcq "$1" ;;
	*) cat "$1" ;;
	esac
}

# The modules @names (from @3 on) and those they depend on, each once,
# decompressed into @dir as NN-name.ko, NN their load order.
modules_in_order() {
	local dir=$1 kdir=$2 i=0 f name want loaded=" "

	shift 2
	for want in "$@"; do
		for f in $(module_closure "$want" "$kdir"); do
			name=$(basename "$f"); name=${name%%.ko*}
			case "$loaded" in *" $name "*) continue ;; esac
			loaded="$loaded$name "
			i=$((i + 1))
			module_text "$f" >"$dir/$(printf %02d $i)-$name.ko"
		done
	done
}

# Boot @kernel with @initrd under @accel, the console in @log (and on
# stderr).  Returns when the guest powers off, or when it is judged hung:
# no line from init in BOOT_TIMEOUT seconds, no output at all for
# SILENCE, or @marker seen (then it is done).  Prints nothing; the
# caller reads @log.
boot() {
	local kernel=$1 initrd=$2 accel=$3 log=$4 append=$5 marker=$6 limit=$7
	local cpu=max qpid tpid size last=-1 quiet=0 t=0 booted=0

	[ "${accel%%,*}" = kvm ] && cpu=$KVM_CPU
	: >"$log"
	# (in a subshell, so that a QEMU that aborts is said in @log).  Both
	# QEMU and this loop write @log, so both append: QEMU's own offset
	# would write its last words over the loop's "hung" line.
	(qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -m 2048 -smp 2 \
		-kernel "$kernel" -initrd "$initrd" "${QEMU_EXTRA[@]}" \
		-append "console=ttyS0 loglevel=5 panic=-1 oops=panic softlockup_panic=1 $append" \
		-nographic -no-reboot -nodefaults -serial stdio) </dev/null >>"$log" 2>&1 &
	qpid=$!
	if [ -z "$marker" ]; then
		tail -n +1 -f --pid="$qpid" "$log" >&2 &
		tpid=$!
	fi
	while kill -0 "$qpid" 2>/dev/null; do
		sleep 1
		t=$((t + 1))
		size=$(stat -c %s "$log")
		if [ "$size" -ne "$last" ]; then
			last=$size quiet=0
		else
			quiet=$((quiet + 1))
		fi
		[ "$booted" = 1 ] || ! grep -q "$BOOTED" "$log" || booted=1
		if [ -n "$marker" ] && grep -q "$marker" "$log"; then
			break
		elif [ "$booted" = 0 ] && [ "$t" -ge "$limit" ]; then
			echo "vmtest.sh: no line from the guest's init in ${limit}s: hung" >>"$log"
			break
		elif [ "$quiet" -ge "$SILENCE" ]; then
			echo "vmtest.sh: the guest printed nothing for ${SILENCE}s: hung" >>"$log"
			break
		fi
	done
	kill "$qpid" 2>/dev/null || true
	wait "$qpid" 2>/dev/null || true
	[ -z "$marker" ] && wait "$tpid" 2>/dev/null
	return 0
}

# @log's lines as text: no terminal escapes, no blank lines.
console_text() {
	sed -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g' -e 's/\x1bc//g' "$1" | tr -d '\r' |
		tr -cd '[:print:]\n' | grep -v '^ *$' || true
}
