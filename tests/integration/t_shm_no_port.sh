#!/bin/bash
# Guards source port exhaustion on the destination host, for real (smcproxyctl(8), connect_no_port): when the client's port is held on the server host (a listener there) the daemon connects from a port of the server host's ip_local_port_range; with that range two ports wide, a third flow held open at once finds none: it is counted (connect_no_port, after connect_port_taken for the first two), said once, and declined to the client host's daemon, which carries it over TCP: every client is answered.
. "$(dirname "$0")/lib.sh"
it_init "$@"

APORT=9010

it_hosts
it_redirect
it_c sysctl -qw net.ipv4.ip_local_port_range="40000 40009"
it_s sysctl -qw net.ipv4.ip_local_port_range="50000 50001"
# Listeners on every port the client host may send from.
ip netns exec "$NS_S" python3 -c '
import socket, sys, time
ls = []
for p in range(40000, 40010):
    s = socket.socket(); s.bind(("0.0.0.0", p)); s.listen(); ls.append(s)
print("held", flush=True)
time.sleep(3600)' >"$IT_DIR/hold.log" 2>&1 &
IT_PIDS+=($!)
ip netns exec "$NS_S" python3 "$IT_LIB_DIR/peer_acl.py" serve $APORT "$C4" "$S4" \
	>"$IT_DIR/acl.log" 2>&1 &
IT_PIDS+=($!)
it_wait_file "$IT_DIR/hold.log" '^held' 5 || it_fail "the port holder did not start: $(cat "$IT_DIR/hold.log")"
it_wait_file "$IT_DIR/acl.log" '^serve: listening' 5 || it_fail "the server did not start"
it_shm_daemons --

# Three connections open at once, each answered before the next opens.
out=$(it_c python3 -c '
import socket, sys
cs = []
for i in range(3):
    c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
    cs.append(c)
    print(c.makefile().readline().strip(), flush=True)
for c in cs:
    c.close()' "$S4" $APORT 2>&1)
echo "  answers: $(tr '\n' ' ' <<<"$out")"
[ "$(grep -c '^allowed$' <<<"$out")" -eq 3 ] || it_fail "not every client was answered: $out"
it_wait_stat flows.closed.tcp -ge 1 5 || it_fail "the declined flow was not carried over TCP"
read -r nport taken host < <(it_peer_stat connect_no_port connect_port_taken connect_host_addr | tr '\n' ' ')
read -r shm ctcp fb < <(it_stat flows.closed.shm flows.closed.tcp fallback | tr '\n' ' ')
echo "  peer: connect_no_port $nport connect_port_taken $taken connect_host_addr $host;" \
	"client: closed.shm $shm closed.tcp $ctcp fallbacks $fb"
it_eq "peer connect_no_port" "$nport" 1
it_eq "peer connect_port_taken" "$taken" 2
it_eq "client flows over tcp (the declined one)" "$ctcp" 1
n=$(grep -c "no free source port" "$IT_DIR/peer.log")
it_eq "log lines about the ports" "$n" 1
it_pass "two flows from the kernel's two ports, the third declined over TCP, counted and said once"
