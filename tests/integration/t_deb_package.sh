#!/bin/bash
# Guards the Debian package (debian/): dpkg-buildpackage -us -uc -b builds smcproxy_*.deb, lintian reports no error, and in a clean root (an overlay of this system in a private mount and network namespace, so the host is left untouched) `apt-get install ./smcproxy_*.deb` installs the binaries, unit, man pages and the conffile, the unit verifies, the daemon starts as the unit starts it (ExecStart as an unprivileged user with the unit's capabilities and RuntimeDirectory), reloads and stops cleanly, an edited conffile survives reinstall and remove, and purge leaves nothing.
#
# Usage: tests/integration/t_deb_package.sh BUILD_DIR
# What this does NOT test: systemd itself starting the unit. These machines
# have no systemd as PID 1 (ps -p 1), so the unit's ExecStart line is run
# by hand with the unit's User-less equivalent (a spare uid, the ambient
# capabilities, LimitMEMLOCK/LimitNOFILE, RuntimeDirectory, UMask); the
# sandboxing directives are checked by `systemd-analyze verify` here and by
# t_systemd_unit, not enforced.
#
# The package is built once per source tree (tests/systemd/build-deb keeps
# it in BUILD_DIR/deb/<hash of the sources>/), so a second run only checks
# and installs (about 40 s; the build adds 60 to 90 s on a 2-CPU machine).
# it-timeout: 300
set -u

name=t_deb_package
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-}

fail() {
	if [ -n "${log:-}" ] && [ -s "$log" ]; then
		echo "--- last lines of $log:"
		tail -n 25 "$log"
	fi
	echo "FAIL $name: $*"
	exit 1
}

[ -n "$build" ] || fail "usage: $0 BUILD_DIR"
build=$(cd "$build" 2>/dev/null && pwd) || fail "no build directory '$1'"
[ "$(id -u)" -eq 0 ] || fail "needs root (mount and network namespaces, chroot)"
for c in dpkg-buildpackage dh lintian unshare chroot setpriv prlimit; do
	command -v "$c" >/dev/null || fail "$c is missing (contrib/install-deps)"
done

tmp=$(mktemp -d /tmp/smcp-deb.XXXXXX) || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
log=

# --- build (or reuse this source tree's build)
log=$tmp/build-deb.log
deb=$("$top/tests/systemd/build-deb" "$build" 2>"$log") || fail "the package did not build"
sed 's/^build-deb: /  /' "$log" | grep -v '^  |'
log=
echo "  package: $(basename "$deb") ($(stat -c %s "$deb") bytes)"

# --- what is in it
contents=$(dpkg-deb -c "$deb" | awk '{print $NF}')
for f in ./usr/sbin/smcproxyd ./usr/bin/smcproxyctl ./usr/sbin/smcproxy-iptables \
	 ./lib/systemd/system/smcproxyd.service ./lib/systemd/system/smcproxyd.socket \
	 ./etc/smcproxy/smcproxyd.json ./usr/share/man/man8/smcproxyd.8.gz \
	 ./usr/share/man/man8/smcproxyctl.8.gz ./usr/share/man/man8/smcproxy-iptables.8.gz \
	 ./usr/share/man/man5/smcproxyd.json.5.gz \
	 ./usr/share/man/man7/smcproxy-protocol.7.gz ./usr/share/doc/smcproxy/copyright; do
	printf '%s\n' "$contents" | grep -qxF "$f" || fail "the package lacks $f"
done
dpkg-deb -f "$deb" Depends | grep -q libmicrohttpd || fail "Depends lacks libmicrohttpd"
dpkg-deb -I "$deb" conffiles 2>/dev/null | grep -qx /etc/smcproxy/smcproxyd.json ||
	fail "/etc/smcproxy/smcproxyd.json is not a conffile"

# --- lintian: no errors (warnings are listed, not fatal)
lintian --tag-display-limit 0 "$deb" >"$tmp/lintian.log" 2>&1
grep -E '^[EW]: ' "$tmp/lintian.log" | sed 's/^/  lintian: /'
if grep -q '^E: ' "$tmp/lintian.log"; then
	fail "lintian reports errors: $(grep '^E: ' "$tmp/lintian.log" | head -3 | tr '\n' ' ')"
fi

# --- install, start, reload, stop, remove, purge in a clean root
mkdir -p "$tmp/ov"
cp "$deb" "$tmp/ov.deb"
cat >"$tmp/inroot.sh" <<'EOS'
# Runs in a private mount and network namespace, chrooted into an overlay
# of /. Prints "OK" last if every step passed.
set -u
die() { echo "inroot: $*"; [ -n "${dpid:-}" ] && kill -KILL "$dpid" 2>/dev/null; exit 1; }
export DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin
ip link set lo up || die "lo"
dpkg -s smcproxy >/dev/null 2>&1 && { dpkg --purge smcproxy >/dev/null || die "old smcproxy"; }
apt-get install -y -q --no-install-recommends /pkg/smcproxy.deb >/tmp/apt.log 2>&1 ||
	{ cat /tmp/apt.log; die "apt-get install ./smcproxy.deb failed"; }
dpkg -s smcproxy | grep -q '^Status: install ok installed' || die "not installed"
[ "$(dpkg-query -W -f='${Conffiles}' smcproxy | awk '{print $1}')" = /etc/smcproxy/smcproxyd.json ] ||
	die "conffile not registered"
unit=/lib/systemd/system/smcproxyd.service
exec_start=$(sed -n 's/^ExecStart=//p' $unit)
case $exec_start in /usr/sbin/smcproxyd\ *) ;; *) die "ExecStart is '$exec_start'" ;; esac
# Not enabled: the administrator edits the config, then enable --now.
[ ! -e /etc/systemd/system/multi-user.target.wants/smcproxyd.service ] || die "enabled on install"
out=$(systemd-analyze verify $unit 2>&1) && [ -z "$out" ] || die "systemd-analyze verify: $out"
/usr/sbin/smcproxyd -c /etc/smcproxy/smcproxyd.json --check-config >/dev/null || die "check-config"
man -w smcproxyd.json >/dev/null 2>&1 || [ -f /usr/share/man/man5/smcproxyd.json.5.gz ] || die "man page"

# Start as the unit does: its ExecStart, not as root, with its ambient
# capabilities and limits, in its RuntimeDirectory (mode 0750) and UMask.
uid=64999
install -d -m 0750 -o $uid -g $uid /run/smcproxy
caps=+net_admin,+net_bind_service,+ipc_lock
# LimitMEMLOCK=infinity and LimitNOFILE=1048576 where this machine lets
# root raise them (a container may not): else the hard limits it has.
ml=unlimited nf=1048576
prlimit --memlock=$ml true 2>/dev/null || ml=$(ulimit -Hl)
prlimit --nofile=$nf true 2>/dev/null || nf=$(ulimit -Hn)
(umask 0077; exec prlimit --memlock=$ml --nofile=$nf \
	setpriv --reuid=$uid --regid=$uid --clear-groups --inh-caps=$caps --ambient-caps=$caps \
	--bounding-set=-all,$caps $exec_start) >/tmp/daemon.log 2>&1 &
dpid=$!
for i in $(seq 100); do
	/usr/bin/smcproxyctl stats >/dev/null 2>&1 && break
	kill -0 $dpid 2>/dev/null || { cat /tmp/daemon.log; die "smcproxyd exited at start"; }
	sleep 0.1
done
/usr/bin/smcproxyctl stats >/dev/null || { cat /tmp/daemon.log; die "no stats answer"; }
[ "$(stat -c %a /run/smcproxy/smcproxyd.sock)" = 660 ] || die "socket mode"
kill -HUP $dpid	# ExecReload
sleep 0.5
/usr/bin/smcproxyctl --json stats | grep -q '"reloads": 1' || die "reload did not apply"
kill -TERM $dpid
for i in $(seq 100); do kill -0 $dpid 2>/dev/null || break; sleep 0.1; done
kill -0 $dpid 2>/dev/null && die "did not stop within 10 s"
wait $dpid || { cat /tmp/daemon.log; die "exit status $?"; }
grep -q 'ready:' /tmp/daemon.log && grep -q 'stopped' /tmp/daemon.log || { cat /tmp/daemon.log; die "log"; }
dpid=

# An edited conffile survives a reinstall and a remove; purge removes it.
echo '{"log": {"level": "debug"}}' >/etc/smcproxy/smcproxyd.json
dpkg -i --force-confold /pkg/smcproxy.deb >/dev/null 2>&1 || die "reinstall"
grep -q debug /etc/smcproxy/smcproxyd.json || die "reinstall replaced the edited conffile"
dpkg -r smcproxy >/dev/null 2>&1 || die "remove"
[ ! -e /usr/sbin/smcproxyd ] || die "remove left /usr/sbin/smcproxyd"
grep -q debug /etc/smcproxy/smcproxyd.json || die "remove dropped the edited conffile"
dpkg --purge smcproxy >/dev/null 2>&1 || die "purge"
for f in /usr/sbin/smcproxyd /usr/bin/smcproxyctl /usr/sbin/smcproxy-iptables $unit \
	 /etc/smcproxy/smcproxyd.json /usr/share/man/man8/smcproxyd.8.gz; do
	[ ! -e "$f" ] || die "purge left $f"
done
dpkg -s smcproxy >/dev/null 2>&1 && die "still known to dpkg after purge"
echo OK
EOS
unshare -m -n bash -c '
	set -e
	ov=$1
	mount -t tmpfs tmpfs "$ov"
	mkdir "$ov/u" "$ov/w" "$ov/root"
	mount -t overlay overlay -o "lowerdir=/,upperdir=$ov/u,workdir=$ov/w" "$ov/root"
	mount -t proc proc "$ov/root/proc"
	mount --rbind /dev "$ov/root/dev"
	mount -t sysfs sysfs "$ov/root/sys"
	mount -t tmpfs tmpfs "$ov/root/run"
	mount -t tmpfs tmpfs "$ov/root/tmp"
	mkdir -p "$ov/root/pkg"
	cp "$2" "$ov/root/pkg/smcproxy.deb"
	cp "$3" "$ov/root/tmp/inroot.sh"
	exec chroot "$ov/root" bash /tmp/inroot.sh
' inroot "$tmp/ov" "$tmp/ov.deb" "$tmp/inroot.sh" >"$tmp/inroot.log" 2>&1
sed 's/^/  /' "$tmp/inroot.log" | grep -v '^  OK$' | tail -20
[ "$(tail -1 "$tmp/inroot.log")" = OK ] ||
	fail "in the clean root: $(grep '^inroot:' "$tmp/inroot.log" | tail -1)"
echo "PASS $name: built, lintian without errors, installed, started, reloaded, stopped, purged in a clean root"
