#!/bin/bash
# Guards that a server on the destination host sees the client host's own address and port through a link group, as over plain TCP (smcproxyd(8), "The client's address"): an ACL that allows only the client host answers through the link over IPv4 and IPv6 once `smcproxy-iptables route add` set the host up; without the rules the daemon says so once (at start or reload), connects from its own address and counts it; the helper's route add is idempotent and its route del leaves nothing behind.
. "$(dirname "$0")/lib.sh"
it_init "$@"

APORT=9010		# the ACL server
HELPER=$IT_LIB_DIR/../../contrib/smcproxy-iptables
STATE=$IT_DIR/fwmark.state

helper_s() { it_s env SMCPROXY_IPTABLES_STATE="$STATE" "$HELPER" "$@"; }
# Lines of the peer daemon's log that say the host's address is used.
said_host() { grep -c "servers here see this host's address" "$IT_DIR/peer.log"; }

it_hosts
it_redirect
it_s sysctl -qw net.ipv4.tcp_fwmark_accept=0
helper_s route add >"$IT_DIR/route1.log" 2>&1 || it_fail "route add: $(cat "$IT_DIR/route1.log")"
helper_s route add >"$IT_DIR/route2.log" 2>&1 || it_fail "route add again: $(cat "$IT_DIR/route2.log")"
[ -s "$IT_DIR/route2.log" ] && it_fail "a second route add changed something: $(cat "$IT_DIR/route2.log")"
for f in 4 6; do
	n=$(it_s ip -$f rule list pref 5459 | grep -c "fwmark 0x53 lookup 5459")
	it_eq "IPv$f rules of preference 5459" "$n" 1
	n=$(it_s ip -$f route show table 5459 | grep -c "^local .* dev lo")
	it_eq "IPv$f local routes in table 5459" "$n" 1
done
it_eq "tcp_fwmark_accept" "$(it_s cat /proc/sys/net/ipv4/tcp_fwmark_accept)" 1

ip netns exec "$NS_S" python3 "$IT_LIB_DIR/peer_acl.py" serve $APORT "$C4" "$C6" \
	>"$IT_DIR/acl.log" 2>&1 &
IT_PIDS+=($!)
it_wait_file "$IT_DIR/acl.log" '^serve: listening' 5 || it_fail "the ACL server did not start"
# A dual-stack control port: IPv6 flows go over the link too (t_shm_ipv6).
it_shm_daemons control="\"[::]:$CPORT\"" --
grep -q "IPv4: servers here see the clients' own addresses" "$IT_DIR/peer.log" ||
	it_fail "the peer daemon did not say it uses the clients' addresses: $(grep -i client "$IT_DIR/peer.log")"

# The client's address, and its port, at the server.
for dst in "$S4" "[$S6]"; do
	host=${dst#[}
	host=${host%]}
	out=$(it_c python3 "$IT_LIB_DIR/peer_acl.py" ask "$host" $APORT) || it_fail "ask $host: $out"
	echo "  $host: $out; server: $(tail -1 "$IT_DIR/acl.log")"
	[ "${out##* }" = allowed ] || it_fail "the ACL denied the client through the link ($out)"
	lport=$(awk '{ print $2 }' <<<"$out")
	grep -q "^peer \(${C4//./\\.}\|$C6\) $lport\$" "$IT_DIR/acl.log" ||
		it_fail "the server did not see the client's address and port $lport: $(tail -2 "$IT_DIR/acl.log")"
done
# The flows' ends are counted once both legs closed: wait for them.
it_wait_stat flows.closed.shm -ge 2 5 || it_fail "the two flows did not go over shm"
read -r shm ctcp < <(it_stat flows.closed.shm flows.closed.tcp | tr '\n' ' ')
read -r caddr haddr < <(it_peer_stat connect_client_addr connect_host_addr | tr '\n' ' ')
echo "  client daemon: closed.shm $shm closed.tcp $ctcp; peer: connect_client_addr $caddr connect_host_addr $haddr"
it_eq "client flows.closed.tcp" "$ctcp" 0
it_eq "peer connect_client_addr" "$caddr" 2
it_eq "client flows.closed.shm" "$shm" 2
it_eq "peer connect_host_addr" "$haddr" 0

# Without the rules: said once at the reload, the host's own address, counted.
helper_s route del >"$IT_DIR/route3.log" 2>&1 || it_fail "route del: $(cat "$IT_DIR/route3.log")"
for f in 4 6; do
	[ -z "$(it_s ip -$f rule list pref 5459)" ] || it_fail "IPv$f: route del left a rule"
	[ -z "$(it_s ip -$f route show table 5459)" ] || it_fail "IPv$f: route del left a route"
done
it_eq "tcp_fwmark_accept after route del" "$(it_s cat /proc/sys/net/ipv4/tcp_fwmark_accept)" 0
[ "$(said_host)" -eq 0 ] || it_fail "the peer daemon spoke of the host's address too early"
kill -HUP "$PEER_PID"
for ((i = 0; i < 50; i++)); do
	[ "$(said_host)" -ge 1 ] && break
	sleep 0.1
done
it_eq "notices of the host's address after the reload" "$(said_host)" 2
for dst in "$S4" "$S6" "$S4" "$S6"; do
	out=$(it_c python3 "$IT_LIB_DIR/peer_acl.py" ask "$dst" $APORT) || it_fail "ask $dst: $out"
	[ "${out##* }" = denied ] || it_fail "the server saw the client without the rules ($out)"
done
grep -q "^peer $S4 " "$IT_DIR/acl.log" || it_fail "the server did not see the host's IPv4 address"
grep -q "^peer $S6 " "$IT_DIR/acl.log" || it_fail "the server did not see the host's IPv6 address"
read -r caddr haddr < <(it_peer_stat connect_client_addr connect_host_addr | tr '\n' ' ')
echo "  without the rules: connect_client_addr $caddr connect_host_addr $haddr"
it_eq "peer connect_host_addr" "$haddr" 4
it_eq "notices after four flows (IPv4, IPv6: once each)" "$(said_host)" 2

# Stopping leaves nothing behind: the daemon itself adds no rule.
it_daemon_stop || it_fail "smcproxyd did not stop cleanly"
it_peer_stop || it_fail "the peer smcproxyd did not stop cleanly"
[ -z "$(it_s ip rule list pref 5459)$(it_s ip route show table 5459)" ] ||
	it_fail "rules left after the daemons stopped"
it_pass "the server saw the client's address over IPv4 and IPv6; without the rules the host's, said once per family"
