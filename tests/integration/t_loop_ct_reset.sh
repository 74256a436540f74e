#!/bin/bash
# Guards the relay against a stale redirect: after the daemon reset a client (its server reset), a later outbound connection of the daemon on that client's 4-tuple must reach the server, not be redirected back to the daemon.
#
# The client's connection was redirected: its conntrack entry carries the
# REDIRECT. A reset sent toward the client leaves that entry in CLOSE for
# a while, and the kernel then treats a new SYN on the same tuple as part
# of the old connection, NAT included, whatever the SYN's mark. A busy
# host hits this with Redis, a connection per request (the bench did).
# contrib/smcproxy-iptables therefore tracks the daemon's connections (its
# mark) in a conntrack zone of their own; the test redirects with its
# rules. It leaves the client host one ephemeral port, the first client's,
# so the daemon's outbound socket for the second client takes its tuple.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
APORT=9100		# the test's server
C1PORT=30000		# the first client's port
C2PORT=30001
it_c "$IT_LIB_DIR/../../contrib/smcproxy-iptables" add --port "$APORT" --dest "$S4" \
	--to-port "$LPORT" --mark "$MARK" >/dev/null || it_fail "smcproxy-iptables add failed"

# The server resets its first connection once it has the request; later
# ones get "pong" for "ping". It prints each peer's port.
ip netns exec "$NS_S" python3 -u "$IT_LIB_DIR/tuple_peer.py" server "$S4" "$APORT" \
	--first reset >"$IT_DIR/server.log" 2>&1 &
IT_PIDS+=($!)
it_wait_file "$IT_DIR/server.log" '^listening' 5 || it_fail "server did not start"

it_config
it_daemon_start

# client PORT: connects from PORT, sends "ping", prints what came back.
client() {
	it_c python3 -u "$IT_LIB_DIR/tuple_peer.py" client "$S4" "$APORT" --bind "$C4:$1"
}
before=$(it_stat loops_refused) || it_fail "no loops_refused counter"
client "$C1PORT" >"$IT_DIR/c1.log" 2>&1
grep -q '^error' "$IT_DIR/c1.log" ||
	it_fail "set-up: the first client was not reset: $(cat "$IT_DIR/c1.log")"
it_wait_file "$IT_DIR/server.log" '^reset' 5 || it_fail "set-up: the server did not reset"
it_c grep -q " CLOSE src=$C4 dst=$S4 sport=$C1PORT dport=$APORT " /proc/net/nf_conntrack ||
	it_fail "set-up: the first client's conntrack entry is not in CLOSE ($(it_c grep "sport=$C1PORT" /proc/net/nf_conntrack | tr '\n' ' '))"

# The daemon's outbound socket for the next client can only take the
# first client's port.
it_c sysctl -qw "net.ipv4.ip_local_port_range=$C1PORT $C1PORT" ||
	it_fail "cannot set the client host's port range"
client "$C2PORT" >"$IT_DIR/c2.log" 2>&1
after=$(it_stat loops_refused)
grep -q '^got pong' "$IT_DIR/c2.log" ||
	it_fail "the second client was not served ($(tail -1 "$IT_DIR/c2.log"); loops_refused $before -> $after; server: $(tail -2 "$IT_DIR/server.log" | tr '\n' ' '))"
out_port=$(awk '/^peer/ { p = $2 } END { print p }' "$IT_DIR/server.log")
[ "$out_port" = "$C1PORT" ] ||
	it_fail "set-up: the daemon's outbound socket used port ${out_port:-none}, not $C1PORT"
[ "$after" = "$before" ] || it_fail "loops_refused moved $before -> $after"
it_pass "an outbound connection on the tuple of a client we reset reaches the server"
