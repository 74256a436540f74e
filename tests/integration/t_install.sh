#!/bin/bash
# Guards `make install` / `make uninstall` with DESTDIR and PREFIX: every file lands where the packaging expects it, with the unit's ExecStart rewritten to PREFIX's sbin, an admin's edited config survives a reinstall and an uninstall, and the installed example config passes --check-config.
#
# Usage: tests/integration/t_install.sh BUILD_DIR
# Runs make from the repository root (found from this script's location)
# with B=BUILD_DIR, so nothing is rebuilt elsewhere; installs only into a
# temporary DESTDIR. Needs neither root nor network namespaces.
set -u

name=t_install
top=$(cd "$(dirname "$0")/../.." && pwd)
prefix=/usr

fail() {
	if [ -n "${log:-}" ] && [ -s "$log" ]; then
		echo "--- last lines of the make output:"
		tail -n 20 "$log"
	fi
	echo "FAIL $name: $*"
	exit 1
}

[ $# -ge 1 ] || fail "usage: $0 BUILD_DIR"
build=$(cd "$1" 2>/dev/null && pwd) || fail "no build directory '$1'"
[ -x "$build/smcproxyd" ] && [ -x "$build/smcproxyctl" ] ||
	fail "$build/smcproxyd or smcproxyctl is not built (run make)"

tmp=$(mktemp -d /tmp/smcp-install.XXXXXX) || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/root
log=$tmp/make.log

mk() { make -C "$top" --no-print-directory B="$build" DESTDIR="$dest" PREFIX="$prefix" "$@"; }

# What the Makefile promises for PREFIX=/usr. The unit and the config do
# not move with PREFIX: systemd and admins look for them in fixed places.
sbin=$prefix/sbin
declare -A want=(
	[$sbin/smcproxyd]="755 $build/smcproxyd"
	[$prefix/bin/smcproxyctl]="755 $build/smcproxyctl"
	[$sbin/smcproxy-iptables]="755 $top/contrib/smcproxy-iptables"
	[/lib/systemd/system/smcproxyd.service]="644 -"
	[/lib/systemd/system/smcproxyd.socket]="644 $top/systemd/smcproxyd.socket"
	[$prefix/share/man/man8/smcproxyd.8]="644 $top/man/smcproxyd.8"
	[$prefix/share/man/man8/smcproxyctl.8]="644 $top/man/smcproxyctl.8"
	[$prefix/share/man/man8/smcproxy-iptables.8]="644 $top/man/smcproxy-iptables.8"
	[$prefix/share/man/man5/smcproxyd.json.5]="644 $top/man/smcproxyd.json.5"
	[$prefix/share/man/man7/smcproxy-protocol.7]="644 $top/man/smcproxy-protocol.7"
	[/etc/smcproxy/smcproxyd.json]="644 $top/contrib/smcproxyd.json"
)
config=/etc/smcproxy/smcproxyd.json

mk install >"$log" 2>&1 || fail "make install DESTDIR=$dest PREFIX=$prefix failed"

# Exactly these files, nothing else.
got=$(cd "$dest" && find . -type f -o -type l | sed 's|^\.||' | sort)
expected=$(printf '%s\n' "${!want[@]}" | sort)
[ "$got" = "$expected" ] ||
	fail "installed files differ from the expected set:$(diff <(echo "$expected") <(echo "$got") | grep '^[<>]' | tr '\n' ' ')"

for f in "${!want[@]}"; do
	read -r mode src <<<"${want[$f]}"
	m=$(stat -c %a "$dest$f")
	[ "$m" = "$mode" ] || fail "$f has mode $m, expected $mode"
	[ "$src" = - ] || cmp -s "$src" "$dest$f" || fail "$f is not a copy of $src"
done

# The unit: ExecStart points into PREFIX's sbin, and that is the only
# change from systemd/smcproxyd.service.
unit=$dest/lib/systemd/system/smcproxyd.service
grep -qx "ExecStart=$sbin/smcproxyd .*" "$unit" ||
	fail "ExecStart is not $sbin/smcproxyd: $(grep ExecStart "$unit")"
! grep -q /usr/local "$unit" || fail "the unit still names /usr/local: $(grep /usr/local "$unit")"
diff <(sed "s|/usr/local/sbin|$sbin|g" "$top/systemd/smcproxyd.service") "$unit" >/dev/null ||
	fail "the installed unit differs from the source beyond the ExecStart path"

# The installed programs run, and the daemon accepts the installed config.
"$dest$sbin/smcproxyd" --version >/dev/null 2>&1 || fail "installed smcproxyd --version failed"
"$dest$prefix/bin/smcproxyctl" --version >/dev/null 2>&1 || fail "installed smcproxyctl --version failed"
out=$("$dest$sbin/smcproxyd" --check-config -c "$dest$config" 2>&1) ||
	fail "the installed example config does not pass --check-config: $out"
# The man pages are man pages.
for f in "${!want[@]}"; do
	case $f in
	*/man/man[0-9]/*)
		head -c 4096 "$dest$f" | grep -qE '^\.(TH|Dd)' || fail "$f does not look like a man page"
		;;
	esac
done

# A reinstall (an upgrade) keeps the admin's edits to the config.
echo '{"log": {"level": "debug"}}' >"$dest$config"
edited=$(cat "$dest$config")
mk install >>"$log" 2>&1 || fail "the second make install failed"
[ "$(cat "$dest$config")" = "$edited" ] || fail "make install overwrote an existing $config"

# Uninstall removes every file it installed, and nothing of the admin's.
mk uninstall >>"$log" 2>&1 || fail "make uninstall failed"
left=$(cd "$dest" && find . -type f -o -type l | sed 's|^\.||' | sort)
[ "$left" = "$config" ] || fail "after make uninstall, left: $(echo "$left" | tr '\n' ' ') (expected only $config)"
[ "$(cat "$dest$config")" = "$edited" ] || fail "make uninstall changed $config"

echo "PASS $name: ${#want[@]} files installed under PREFIX=$prefix, unit ExecStart=$sbin/smcproxyd, config kept on reinstall and uninstall"
