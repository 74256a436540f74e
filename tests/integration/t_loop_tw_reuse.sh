#!/bin/bash
# Guards the loop check against a false positive: a client that reuses the 4-tuple of the daemon's own outbound socket, in TIME_WAIT before the daemon has read the server's FIN, is a new client, not a loop.
#
# The kernel puts our outbound socket in TIME_WAIT when the server's FIN
# arrives (we sent ours first), before the daemon reads the EOF and frees
# the flow; a client host that reuses TIME_WAIT tuples (tcp_tw_reuse=1, as
# busy clients and the bench run) can connect from that very tuple in
# between (Redis with a connection per request did). The test widens that
# window by stopping the daemon (SIGSTOP) while the server answers and the
# second client connects, and leaves the client host a single ephemeral
# port, so that the second client must take the tuple of the daemon's
# first outbound socket.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
it_redirect
EPORT=41000		# the client host's only ephemeral port
APORT=9100		# the test's server

it_c sysctl -qw net.ipv4.tcp_tw_reuse=1 "net.ipv4.ip_local_port_range=$EPORT $EPORT" ||
	it_fail "cannot set the client host's port range"

# The server: the first connection gets "done" and a FIN once the client
# sent its FIN and the file "reply" exists; later ones get "pong" for
# "ping". It prints each peer's port.
ip netns exec "$NS_S" python3 -u "$IT_LIB_DIR/tuple_peer.py" server "$S4" "$APORT" \
	--first "fin-after:$IT_DIR/reply" >"$IT_DIR/server.log" 2>&1 &
IT_PIDS+=($!)
it_wait_file "$IT_DIR/server.log" '^listening' 5 || it_fail "server did not start"

it_config
it_daemon_start

# The first client takes a port outside the range: the daemon's outbound
# socket gets the only ephemeral one. The second connects (while the
# daemon is stopped), then waits for the file "go" to send.
before=$(it_stat loops_refused) || it_fail "no loops_refused counter"
ip netns exec "$NS_C" python3 -u "$IT_LIB_DIR/tuple_peer.py" hold "$S4" "$APORT" \
	--bind "$C4:30000" >"$IT_DIR/c1.log" 2>&1 &
IT_PIDS+=($!)
it_wait_file "$IT_DIR/server.log" '^eof' 10 || it_fail "the server did not see the first client's FIN"
out_port=$(awk '/^peer/ { print $2; exit }' "$IT_DIR/server.log")
[ "$out_port" = "$EPORT" ] ||
	it_fail "set-up: the daemon's outbound socket used port ${out_port:-none}, not $EPORT"

kill -STOP "$DAEMON_PID"
touch "$IT_DIR/reply"
it_wait_file "$IT_DIR/server.log" '^replied' 10 || { kill -CONT "$DAEMON_PID"; it_fail "the server did not reply"; }
# TIME_WAIT reuse needs the tuple's last timestamp a second old.
sleep 2.2
it_c ss -tanH "sport = :$EPORT" | grep -q TIME-WAIT ||
	{ kill -CONT "$DAEMON_PID"; it_fail "set-up: our outbound socket is not in TIME_WAIT"; }
ip netns exec "$NS_C" python3 -u "$IT_LIB_DIR/tuple_peer.py" client "$S4" "$APORT" \
	--wait "$IT_DIR/go" >"$IT_DIR/c2.log" 2>&1 &
c2_pid=$!
IT_PIDS+=("$c2_pid")
it_wait_file "$IT_DIR/c2.log" '^(port|error) ' 10 || { kill -CONT "$DAEMON_PID"; it_fail "the second client hangs"; }
# The daemon's connect for the second client needs a port of its own.
it_c sysctl -qw "net.ipv4.ip_local_port_range=$EPORT $((EPORT + 9))"
kill -CONT "$DAEMON_PID"
touch "$IT_DIR/go"
wait "$c2_pid"
grep -q "^port $EPORT" "$IT_DIR/c2.log" ||
	it_fail "set-up: the second client did not reuse port $EPORT: $(cat "$IT_DIR/c2.log")"
after=$(it_stat loops_refused)
grep -q '^got pong' "$IT_DIR/c2.log" ||
	it_fail "the second client was not served ($(tail -1 "$IT_DIR/c2.log"); loops_refused $before -> $after)"
[ "$after" = "$before" ] || it_fail "loops_refused moved $before -> $after"
it_pass "a client on the TIME_WAIT tuple of our outbound socket is served"
