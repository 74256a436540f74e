#!/bin/bash
# Guards the stats socket's access control: its file mode is the configured one, and SO_PEERCRED refuses a uid that is neither root nor in the socket's group, even when the file mode lets it connect.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
# A copy of smcproxyctl that "nobody" can surely execute.
install -m 0755 "$SMCPROXYCTL" "$IT_DIR/smcproxyctl"
as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$IT_DIR/smcproxyctl" --socket "$SOCK" "$@"
}
check_refused() { # $1 = label
	local out rc
	out=$(as_nobody stats 2>&1)
	rc=$?
	echo "  nobody ($1): exit $rc: $out"
	[ $rc -ne 0 ] || it_fail "$1: smcproxyctl as nobody succeeded"
	printf '%s' "$out" | grep -qi "permission denied" ||
		it_fail "$1: smcproxyctl as nobody did not say 'permission denied': $out"
	case $out in *'"flows"'*|*accepted*) it_fail "$1: stats leaked to nobody: $out" ;; esac
}
start_with_mode() { # $1 = the stats socket's mode, e.g. 0660
	local mode
	it_config stats="{\"socket\": \"$SOCK\", \"mode\": \"$1\"}"
	it_daemon_start
	mode=$(stat -c %a "$SOCK")
	[ "$mode" = "${1#0}" ] || it_fail "socket mode is $mode, configured $1"
}

# 1. the default mode, 0660
start_with_mode 0660
check_refused "mode 0660"
it_ctl stats >/dev/null || it_fail "root cannot read stats"
# A process whose group is the socket's group is let in.
grp=$(stat -c %g "$SOCK")
out=$(setpriv --reuid=nobody --regid="$grp" --clear-groups \
	"$IT_DIR/smcproxyctl" --socket "$SOCK" stats 2>&1) ||
	it_fail "a member of the socket's group (gid $grp) was refused: $out"
it_daemon_stop || it_fail "daemon did not stop cleanly"

# 2. a world-writable socket file: the kernel lets nobody connect, so only
#    the daemon's SO_PEERCRED check stands in the way.
rm -f "$SOCK"
start_with_mode 0666
check_refused "mode 0666, SO_PEERCRED"
it_ctl stats >/dev/null || it_fail "root cannot read stats"
# A supplementary member of the socket's group is let in (SO_PEERGROUPS).
grp=$(stat -c %g "$SOCK")
out=$(setpriv --reuid=nobody --regid=nogroup --groups="$grp" \
	"$IT_DIR/smcproxyctl" --socket "$SOCK" stats 2>&1) ||
	it_fail "a supplementary member of the socket's group (gid $grp) was refused: $out"
it_pass "modes 0660/0666 as configured, nobody refused by SO_PEERCRED"
