#!/bin/bash
# Guards short connections through a link group to a server host on its defaults (smcproxyd(8), "The client's address"): the destination daemon closes first when the client did, so the TIME_WAITs are on the server host; before, each took a port of the server host's ip_local_port_range on one address pair (10.66.1.2 -> 10.66.1.2:port) and a connection per request collapsed to the range over 60 s. Now the daemon binds the client's port and takes its own TIME_WAIT of the tuple over: 2000 connections from a client host tuned as such clients must be (1000 ports, tcp_tw_reuse) all succeed, over shm, and the server host keeps at most about as many TIME_WAITs as the client host has ports.
. "$(dirname "$0")/lib.sh"
it_init "$@"

APORT=9010
N=2000
PORTS=1000

it_hosts
it_redirect
it_c sysctl -qw net.ipv4.ip_local_port_range="40000 $((40000 + PORTS - 1))"
it_c sysctl -qw net.ipv4.tcp_tw_reuse=1
ip netns exec "$NS_S" python3 "$IT_LIB_DIR/peer_acl.py" serve $APORT "$C4" "$S4" \
	>"$IT_DIR/acl.log" 2>&1 &
IT_PIDS+=($!)
it_wait_file "$IT_DIR/acl.log" '^serve: listening' 5 || it_fail "the server did not start"
it_shm_daemons --

out=$(it_c python3 "$IT_LIB_DIR/peer_acl.py" ask "$S4" $APORT $N)
rc=$?
tw=$(it_s ss -Htan state time-wait | wc -l)
read -r shm ctcp < <(it_stat flows.closed.shm flows.closed.tcp | tr '\n' ' ')
read -r nport taken host < <(it_peer_stat connect_no_port connect_port_taken connect_host_addr | tr '\n' ' ')
echo "  $out; server host TIME_WAIT $tw; client closed.shm $shm closed.tcp $ctcp;" \
	"peer connect_host_addr $host connect_port_taken $taken connect_no_port $nport"
[ $rc -eq 0 ] || it_fail "short connections failed: $(tail -3 <<<"$out")"
it_eq "client flows.closed.tcp" "$ctcp" 0
it_eq "peer connect_no_port" "$nport" 0
[ "$tw" -le $((PORTS + 50)) ] ||
	it_fail "the server host holds $tw TIME_WAITs for $N connections from $PORTS client ports"
it_pass "$N short connections, server host TIME_WAIT $tw (client ports $PORTS)"
