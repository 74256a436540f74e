#!/bin/bash
# Guards dropping root outside systemd (a daemon started so used to keep root), and that a missing service user is never a fallback to root: two daemons started as root with "user": "nobody" run, in every thread, as nobody:nogroup with exactly CAP_NET_ADMIN, CAP_NET_BIND_SERVICE and CAP_IPC_LOCK (effective, permitted, bounding; none inheritable or ambient; no_new_privs), flows still cross over shm (the rendezvous sockets made as nobody) and over the relay (SO_MARK still works), SIGHUP reload still applies a live change, the stats socket keeps answering; a user that does not exist, named or the default's "smcproxy" (the key left out), stops the daemon at start with one clear error line, before it listens; "user": "" runs as root on purpose, saying so at info level with no warning.
. "$(dirname "$0")/lib.sh"
it_init "$@"

USER_NAME=nobody
NB_UID=$(id -u "$USER_NAME" 2>/dev/null) || it_fail "no user $USER_NAME on this host"
NB_GID=$(id -g "$USER_NAME")
# CAP_NET_BIND_SERVICE (10), CAP_NET_ADMIN (12), CAP_IPC_LOCK (14).
CAPS=0000000000005400
# In the eBPF intercept mode the client host's daemon keeps CAP_BPF (39)
# too: it loads and attaches its programs, and reads their maps, as nobody.
CCAPS=$CAPS CCAPS_TEXT=""
if [ "$IT_INTERCEPT" = ebpf ]; then
	CCAPS=0000008000005400 CCAPS_TEXT=", CAP_BPF"
fi

# The daemons make their sockets as nobody, in the test's directory (as
# shm.dir and the stats socket's directory must be writable by the user).
chmod 1777 "$IT_DIR"
it_setup_shm user="\"$USER_NAME\""

# check_creds WHO PID CAPS: every thread of PID as nobody with CAPS.
check_creds() {
	local who=$1 pid=$2 caps=$3 st t n=0 field want got
	for st in /proc/"$pid"/task/*/status; do
		t=${st%/status}
		t=${t##*/}
		n=$((n + 1))
		for field in Uid Gid; do
			want=$NB_UID
			[ $field = Gid ] && want=$NB_GID
			got=$(awk -v f="$field:" '$1 == f { print $2, $3, $4, $5 }' "$st")
			[ "$got" = "$want $want $want $want" ] ||
				it_fail "$who thread $t: $field is '$got', expected $want for real, effective, saved and fs"
		done
		got=$(awk '$1 == "Groups:" { $1 = ""; print }' "$st" | tr -s ' ' | sed 's/^ //; s/ $//')
		[ -z "$got" ] || [ "$got" = "$NB_GID" ] ||
			it_fail "$who thread $t: supplementary groups '$got', expected $USER_NAME's ($NB_GID)"
		for field in CapEff CapPrm CapBnd; do
			got=$(awk -v f="$field:" '$1 == f { print $2 }' "$st")
			[ "$got" = "$caps" ] || it_fail "$who thread $t: $field is $got, expected $caps"
		done
		for field in CapInh CapAmb; do
			got=$(awk -v f="$field:" '$1 == f { print $2 }' "$st")
			[ "$got" = 0000000000000000 ] || it_fail "$who thread $t: $field is $got, expected none"
		done
		got=$(awk '$1 == "NoNewPrivs:" { print $2 }' "$st")
		[ "$got" = 1 ] || it_fail "$who thread $t: NoNewPrivs is '$got', expected 1"
	done
	# The main thread and at least the two workers.
	[ $n -ge 3 ] || it_fail "$who has $n threads, expected the main one and 2 workers"
	echo "  $who: $n threads, uid/gid $NB_UID/$NB_GID, CapEff/CapPrm/CapBnd $caps"
}
check_creds "client daemon" "$DAEMON_PID" "$CCAPS"
check_creds "peer daemon" "$PEER_PID" "$CAPS"
grep -q "running as user $USER_NAME (uid $NB_UID, gid $NB_GID) with CAP_NET_ADMIN CAP_NET_BIND_SERVICE CAP_IPC_LOCK$CCAPS_TEXT only" \
	"$IT_DIR/daemon.log" || it_fail "the daemon did not log whom it runs as"
[ "$(stat -c %u "$SOCK")" = "$NB_UID" ] || it_fail "the stats socket is not $USER_NAME's"

# shm: the rendezvous sockets, made and used as nobody.
it_run_ok shm "flows over shm as $USER_NAME" --flows 20 --max-size 256KiB --seed 71 --timeout 30
read -r shm tcp < <(it_stat flows.closed.shm flows.closed.tcp | tr '\n' ' ')
[ "$shm" -eq 20 ] && [ "$tcp" -eq 0 ] || it_fail "closed.shm $shm closed.tcp $tcp, expected 20 over shm"

# A reload as nobody: the peers go (a live key), so flows take the relay,
# whose outbound sockets need SO_MARK (CAP_NET_ADMIN).
it_config transport='"auto"' user="\"$USER_NAME\"" peers='[]'
kill -HUP "$DAEMON_PID"
it_wait_stat reloads -eq 1 10 || it_fail "SIGHUP did not reload: $(tail -3 "$IT_DIR/daemon.log")"
grep -q 'reloaded .*applied: peers' "$IT_DIR/daemon.log" ||
	it_fail "the reload did not apply peers: $(grep reload "$IT_DIR/daemon.log" | tail -2)"
it_run_ok relay "flows over the relay after the reload" --flows 20 --max-size 256KiB --seed 72 --timeout 30
read -r shm tcp < <(it_stat flows.closed.shm flows.closed.tcp | tr '\n' ' ')
[ "$shm" -eq 20 ] && [ "$tcp" -eq 20 ] || it_fail "closed.shm $shm closed.tcp $tcp, expected 20 and 20"
check_creds "client daemon after the reload" "$DAEMON_PID" "$CCAPS"
it_daemon_stop || it_fail "the daemon did not stop cleanly as $USER_NAME (status $?)"

# A user that does not exist: a clear error, before anything is set up.
it_config user='"no-such-user-smcp"'
out=$(timeout 10 ip netns exec "$NS_C" "$SMCPROXYD" -c "$IT_CFG" --foreground 2>&1)
rc=$?
[ $rc -eq 1 ] || it_fail "with a user that does not exist the daemon exited $rc, expected 1: $out"
grep -q 'user "no-such-user-smcp" does not exist: create it' <<<"$out" ||
	it_fail "no clear error for a user that does not exist: $out"
grep -q 'listening on' <<<"$out" && it_fail "it listened before judging the user: $out"

# The default's user, "smcproxy", missing: as strict as a named one (it
# used to warn and stay root). The key is left out, and the daemon sees
# a user database without "smcproxy", whatever this host has: a private
# mount namespace with a copy of /etc/passwd bind-mounted over it, and
# an nsswitch.conf that reads only the files (not systemd's dynamic
# users, say).
grep -v '^smcproxy:' /etc/passwd >"$IT_DIR/passwd"
printf 'passwd: files\ngroup: files\n' >"$IT_DIR/nsswitch.conf"
chmod 644 "$IT_DIR/passwd" "$IT_DIR/nsswitch.conf"
it_config user=
grep -q '"user"' "$IT_CFG" && it_fail "it_config user= left the key in: $(cat "$IT_CFG")"
out=$(timeout 10 ip netns exec "$NS_C" unshare --mount sh -c \
	'mount --bind "$1" /etc/passwd && mount --bind "$2" /etc/nsswitch.conf &&
	 exec "$3" -c "$4" --foreground' sh \
	"$IT_DIR/passwd" "$IT_DIR/nsswitch.conf" "$SMCPROXYD" "$IT_CFG" 2>&1)
rc=$?
[ $rc -eq 1 ] || it_fail "without the default's user the daemon exited $rc, expected 1: $out"
[ "$(grep -c . <<<"$out")" -eq 1 ] || it_fail "expected one line, got: $out"
grep -qx 'smcproxyd: error: user "smcproxy" does not exist: create it (useradd --system --no-create-home --shell /usr/sbin/nologin smcproxy), or name another in "user", or set "user": "" to run as root on purpose; exiting' <<<"$out" ||
	it_fail "no clear error for the default's missing user: $out"

# "user": "" is root on purpose: an info line, no warning.
it_config user='""'
it_daemon_start
it_run_ok root "flows as root on purpose" --flows 5 --max-size 64KiB --seed 73 --timeout 30
it_daemon_stop || it_fail "the daemon run as root did not stop cleanly (status $?)"
grep -q 'info: running as root with every capability, as "user": "" asks' "$IT_DIR/daemon.log" ||
	it_fail "root on purpose was not said at info level: $(head -5 "$IT_DIR/daemon.log")"
grep 'running as root' "$IT_DIR/daemon.log" | grep -v ': info: ' &&
	it_fail "root on purpose was said above info level"

it_server_expect " 45 ok, 0 failed" "server side"
it_pass "both daemons run as $USER_NAME with the unit's 3 capabilities in every thread; 20 flows over shm, a reload, 20 over the relay; an unknown user, or the default's missing one, stops the start in one line; \"\" runs as root at info level"
