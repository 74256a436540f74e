#!/bin/bash
# Guards the hardening of systemd/smcproxyd.service: `systemd-analyze
# security --offline=yes` must rate its exposure at most 2.5, and
# `systemd-analyze verify` must print nothing about it; the same for the
# unit with the eBPF intercept's drop-in (systemd/smcproxyd-ebpf.conf,
# CAP_BPF and bpf()) applied.
#
# Usage: tests/integration/t_systemd_unit.sh BUILD_DIR
# Exit 0 with one "PASS" line, or 1 with "FAIL: why" (details above it).
#
# Neither check needs systemd running as PID 1. verify wants ExecStart's
# binary to exist and the Documentation= man pages to be found, so it runs
# on a copy of the unit whose ExecStart points into BUILD_DIR (as `make
# install` rewrites /usr/local/sbin to SBINDIR) and with MANPATH set to a
# man tree built from man/. Nothing is installed.
set -u

name=t_systemd_unit
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-}
max_exposure=2.5

fail() { echo "FAIL: $name: $*"; exit 1; }

[ -n "$build" ] || fail "usage: $0 BUILD_DIR"
build=$(cd "$build" 2>/dev/null && pwd) || fail "no build directory '$1'"
unit_src=$top/systemd/smcproxyd.service
[ -f "$unit_src" ] || fail "$unit_src is missing"
[ -x "$build/smcproxyd" ] || fail "$build/smcproxyd is not built (run make)"
command -v systemd-analyze >/dev/null || fail "systemd-analyze is not installed"

tmp=$(mktemp -d /tmp/smcp-unit.XXXXXX) || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT

# The unit file keeps its name: verify derives the unit name from it.
unit=$tmp/smcproxyd.service
sed "s|/usr/local/sbin/smcproxyd|$build/smcproxyd|g" "$unit_src" >"$unit"

# Man pages as `make install` lays them out, so that `man smcproxyd(8)`
# resolves. Without man(1) at all, verify cannot check Documentation=; then
# the copy drops it and says so (the pages are linted by make lint-man).
mkdir -p "$tmp/man/man5" "$tmp/man/man7" "$tmp/man/man8"
for page in "$top"/man/*.[0-9]; do
	[ -f "$page" ] || continue
	cp "$page" "$tmp/man/man${page##*.}/"
done
if ! command -v man >/dev/null; then
	echo "note: man(1) is not installed; Documentation= is not checked"
	sed -i '/^Documentation=/d' "$unit"
fi

# check UNIT LABEL: verify and security of one unit file.
check() {
	local unit=$1 label=$2
	# 1. verify: every line it prints about this unit, or about no unit in
	# particular, is a defect. Lines about other units of the host (verify
	# loads dependencies such as network-online.target) are shown, not held
	# against us.
	verify_out=$(cd "$tmp" && MANPATH=$tmp/man SYSTEMD_LOG_COLOR=0 \
		systemd-analyze verify "$unit" 2>&1)
	verify_rc=$?
	unit_re='^(/[^ :]*/)?([^/ :]+\.(service|socket|target|mount|path|timer|slice|scope|device|swap|automount))(:|$)'
	ours="" others=""
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		if [[ $line =~ $unit_re ]] && [ "${BASH_REMATCH[2]}" != smcproxyd.service ]; then
			others+="$line"$'\n'
		else
			ours+="$line"$'\n'
		fi
	done <<<"$verify_out"
	# A failing verify that printed nothing is a defect too; one that failed
	# only over other units is the host's business.
	if [ -n "$ours" ] || { [ $verify_rc -ne 0 ] && [ -z "$others" ]; }; then
		printf '%s' "$ours" "$others" | sed 's/^/  verify: /'
		fail "$label: systemd-analyze verify reports problems (exit $verify_rc)"
	fi
	[ -z "$others" ] || printf '%s' "$others" | sed 's/^/  verify (other units, ignored): /'

	# 2. security: parse "-> Overall exposure level for smcproxyd.service: 1.9 OK".
	sec_out=$(SYSTEMD_LOG_COLOR=0 systemd-analyze security --offline=yes \
		--no-pager "$unit" 2>&1)
	exposure=$(printf '%s\n' "$sec_out" |
		sed -n 's/.*Overall exposure level for [^:]*: *\([0-9][0-9.]*\).*/\1/p' | tail -n 1)
	if [ -z "$exposure" ]; then
		printf '%s\n' "$sec_out" | tail -n 20 | sed 's/^/  security: /'
		fail "$label: no 'Overall exposure level' line from systemd-analyze security"
	fi
	if ! awk -v e="$exposure" -v m="$max_exposure" 'BEGIN { exit !(e + 0 <= m + 0) }'; then
		printf '%s\n' "$sec_out" | grep '✗' | sed 's/^/  security: /'
		fail "$label: exposure $exposure is above $max_exposure"
	fi

	echo "  $label: verify clean, exposure $exposure"
}
check "$unit" unit
# The drop-in appended to a copy: the same lines, in the same order, as
# systemd reads a drop-in after the unit.
mkdir -p "$tmp/ebpf"
cat "$unit" "$top/systemd/smcproxyd-ebpf.conf" >"$tmp/ebpf/smcproxyd.service"
(unit=$tmp/ebpf/smcproxyd.service; cd "$tmp" && check "$unit" "with the ebpf drop-in") || exit 1
grep -Eq '^(CapabilityBoundingSet|AmbientCapabilities)=CAP_BPF$' "$top/systemd/smcproxyd-ebpf.conf" ||
	fail "the ebpf drop-in does not grant CAP_BPF"
echo "PASS: $name: verify clean, exposure $exposure (limit $max_exposure), also with the ebpf drop-in"
exit 0
