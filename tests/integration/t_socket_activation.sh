#!/bin/bash
# Guards socket activation: smcproxyd adopts the listening sockets it is
# passed (sd_listen_fds) for its listen addresses instead of binding, serves
# the connection that woke it from the backlog, and closes a passed socket
# that matches no listen address. systemd-socket-activate stands in for
# systemd. Also checks that systemd/smcproxyd.socket parses.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
it_redirect
it_server_start
it_config

# Documentation= is checked by t_systemd_unit.sh against the man tree;
# here only the socket's own settings matter.
grep -v '^Documentation=' "$IT_LIB_DIR/../../systemd/smcproxyd.socket" \
	>"$IT_DIR/smcproxyd.socket"
out=$(systemd-analyze verify "$IT_DIR/smcproxyd.socket" 2>&1 | grep -v "smcproxyd.service") ||
	true
[ -z "$out" ] || it_fail "systemd-analyze verify smcproxyd.socket: $out"

# The activator listens and starts the daemon at the first connection.
ip netns exec "$NS_C" systemd-socket-activate \
	-l "127.0.0.1:$LPORT" -l "[::1]:$LPORT" -l 127.0.0.1:7099 \
	"$SMCPROXYD" -c "$IT_CFG" --foreground >>"$IT_DIR/daemon.log" 2>&1 &
DAEMON_PID=$!
IT_PIDS+=("$DAEMON_PID")
sleep 0.3

# This flow's connection wakes the daemon; it must be carried, not lost.
it_run --flows 4 --concurrency 4 --max-size 1MiB --seed 21 --timeout 20 ||
	it_fail "the flows that started the daemon failed"
grep -q "socket activation: using 2 of 3 passed sockets" "$IT_DIR/daemon.log" ||
	it_fail "the daemon did not adopt exactly the two matching sockets"
grep -q "match no \"listen\" address" "$IT_DIR/daemon.log" ||
	it_fail "no warning about the passed socket that matches nothing"
it_run --flows 10 --concurrency 10 --max-size 256KiB --seed 22 --quiet ||
	it_fail "flows after activation failed"
[ "$(it_stat flows.accepted)" -ge 14 ] || it_fail "flows did not cross the daemon"
it_pass "adopted 2 of 3 passed sockets, served the waking connection"
