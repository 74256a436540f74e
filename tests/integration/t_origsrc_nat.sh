#!/bin/bash
# Guards origdst_src(), which the loop check asks before it refuses a connection whose peer address is one of our outbound tuples: for a redirected connection whose source port NAT changed, conntrack's original source, not the peer address accept() gives.
#
# NAT changes a redirected connection's source port when its reply tuple
# (our listener -> the client) would clash with an older entry's. Here two
# clients bound to one port connect to two destinations; both are
# redirected to one listener, so the second one's reply tuple clashes
# with the first's and NAT gives it another port. ctsrc asks conntrack
# with the daemon's own code, as flow_open() does.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
it_redirect
CTSRC=$B/tools/ctsrc
[ -x "$CTSRC" ] || it_fail "$CTSRC is missing (make tools)"
CPORT=30500

cat >"$IT_DIR/pair.py" <<PY
import socket, time
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", $LPORT))
l.listen(8)
held = []
for dport in (5001, 5002):
    c = socket.socket()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    c.bind(("$C4", $CPORT))
    c.connect(("$S4", dport))
    a, peer = l.accept()
    held += [c, a]
    print("peer", dport, peer[1], flush=True)
time.sleep(30)
PY
ip netns exec "$NS_C" python3 -u "$IT_DIR/pair.py" >"$IT_DIR/pair.log" 2>&1 &
IT_PIDS+=($!)
it_wait_file "$IT_DIR/pair.log" '^peer 5002 ' 10 ||
	it_fail "set-up: the two clients were not both redirected: $(cat "$IT_DIR/pair.log")"
p1=$(awk '$2 == 5001 { print $3 }' "$IT_DIR/pair.log")
p2=$(awk '$2 == 5002 { print $3 }' "$IT_DIR/pair.log")
[ "$p1" = "$CPORT" ] || it_fail "set-up: the first client's peer port is $p1, not $CPORT"
[ "$p2" != "$CPORT" ] || it_fail "set-up: NAT did not change the second client's source port"

got=$(it_c "$CTSRC" "127.0.0.1:$LPORT" "$C4:$p1" 2>&1) || it_fail "ctsrc, first client: $got"
[ "$got" = "$C4:$CPORT" ] || it_fail "first client: original source $got, expected $C4:$CPORT"
got=$(it_c "$CTSRC" "127.0.0.1:$LPORT" "$C4:$p2" 2>&1) || it_fail "ctsrc, second client: $got"
[ "$got" = "$C4:$CPORT" ] ||
	it_fail "second client (peer port $p2 after NAT): original source $got, expected $C4:$CPORT"
got=$(it_c "$CTSRC" "127.0.0.1:$LPORT" "$C4:$((p2 + 1))" 2>&1) &&
	it_fail "a tuple with no conntrack entry gave $got"
it_pass "NAT moved the second client from port $CPORT to $p2; conntrack's original source says $CPORT"
