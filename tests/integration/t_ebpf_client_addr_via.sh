#!/bin/bash
# Guards that in ebpf mode (the app's socket is loopback to loopback) a server on the destination host still sees the client host's address and the app's port when its IPv6 destination is served over a link group whose control connection is IPv4 (a peers entry whose "via" is the other family): the daemon asks the kernel for its route's source toward that destination, once for the group, and both flows (IPv4 and IPv6, one group) are counted connect_client_addr.
IT_INTERCEPT=ebpf
. "$(dirname "$0")/lib.sh"
it_init "$@"

APORT=9010
HELPER=$IT_LIB_DIR/../../contrib/smcproxy-iptables

it_hosts
it_redirect
it_s env SMCPROXY_IPTABLES_STATE="$IT_DIR/fwmark.state" "$HELPER" route add >"$IT_DIR/route.log" 2>&1 ||
	it_fail "route add: $(cat "$IT_DIR/route.log")"
ip netns exec "$NS_S" python3 "$IT_LIB_DIR/peer_acl.py" serve $APORT "$C4" "$C6" \
	>"$IT_DIR/acl.log" 2>&1 &
IT_PIDS+=($!)
it_wait_file "$IT_DIR/acl.log" '^serve: listening' 5 || it_fail "the ACL server did not start"
it_peer_config transport='"auto"' control="\"0.0.0.0:$CPORT\"" \
	peers="[{\"prefix\": \"$C4/32\", \"allow\": $ALLOW}, {\"prefix\": \"$C6/128\", \"allow\": $ALLOW}]"
it_peer_start
# The IPv6 destination's daemon is reached at its IPv4 address: one group,
# an IPv4 control connection, for both families.
it_config transport='"auto"' \
	peers="[{\"prefix\": \"$S4/32\", \"control_port\": $CPORT}, {\"prefix\": \"$S6/128\", \"via\": \"$S4\", \"control_port\": $CPORT}]"
it_daemon_start

for dst in "$S4" "$S6" "$S6"; do
	out=$(it_app -- python3 "$IT_LIB_DIR/peer_acl.py" ask "$dst" $APORT) || it_fail "ask $dst: $out"
	echo "  $dst: $out; server: $(tail -1 "$IT_DIR/acl.log")"
	[ "${out##* }" = allowed ] || it_fail "the ACL denied the client at $dst through the link ($out)"
	lport=$(awk '{ print $2 }' <<<"$out")
	grep -q "^peer \(${C4//./\\.}\|$C6\) $lport\$" "$IT_DIR/acl.log" ||
		it_fail "the server did not see the client's address and port $lport: $(tail -2 "$IT_DIR/acl.log")"
done
grep -q "^peer $C6 " "$IT_DIR/acl.log" || it_fail "the server did not see the client's IPv6 address"
grep -q "link group to ${S4//./\\.}:$CPORT up" "$IT_DIR/daemon.log" || it_fail "no link group to $S4 came up"
! grep -q "link group to \[" "$IT_DIR/daemon.log" ||
	it_fail "a link group went to an IPv6 control address: $(grep 'link group to \[' "$IT_DIR/daemon.log")"
it_wait_stat flows.closed.shm -ge 3 5 || it_fail "the three flows did not go over shm"
read -r caddr haddr < <(it_peer_stat connect_client_addr connect_host_addr | tr '\n' ' ')
echo "  peer: connect_client_addr $caddr connect_host_addr $haddr"
it_eq "peer connect_client_addr" "$caddr" 3
it_eq "peer connect_host_addr" "$haddr" 0
it_daemon_stop || it_fail "smcproxyd did not stop cleanly"
it_peer_stop || it_fail "the peer smcproxyd did not stop cleanly"
it_s env SMCPROXY_IPTABLES_STATE="$IT_DIR/fwmark.state" "$HELPER" route del >/dev/null 2>&1
it_pass "the server saw the client host's IPv4 and IPv6 addresses over one group with an IPv4 control connection"
