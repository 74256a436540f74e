#!/bin/bash
# Guards that a server on guest b sees guest a's own address and port through an rdma link group between two kernels (smcproxyd(8), "The client's address"), once `smcproxy-iptables route add` set guest b up: an address ACL lets the client in, 20 flows with sha256 both ways come from it intact, and daemon B counts every connection as made from the client's address; after `route del` and a reload, daemon B says so, the server sees guest b's address (the ACL denies), and no rule or route is left.
. "$(dirname "$0")/lib.sh"
rp_init "$@"

APORT=9010		# the ACL server on guest b
CLIENT=10.78.0.1	# guest a
HELPER=$RT_LIB_DIR/../../contrib/smcproxy-iptables
ACL=$RT_LIB_DIR/../integration/peer_acl.py

helper() { SMCPROXY_IPTABLES_STATE=$RT_DIR/fwmark.state "$HELPER" "$@"; }

# Guest b: the route-back first (the daemon probes it at start), then the
# servers and daemon B; the rules go at exit whatever happens.
ca_b_setup() {
	local out
	out=$(helper route add 2>&1) || rt_fail "route add: $out"
	RT_UNDO+=("SMCPROXY_IPTABLES_STATE=$RT_DIR/fwmark.state $HELPER route del")
	printf '%s\n' "$out" | sed 's/^/  guest b: /'
	python3 "$ACL" serve $APORT "$CLIENT" >"$RT_DIR/acl.log" 2>&1 &
	RT_PIDS+=($!)
	rt_wait_file "$RT_DIR/acl.log" '^serve: listening' 60 ||
		rt_fail "the ACL server did not start: $(cat "$RT_DIR/acl.log")"
	rt_bed B
	grep -q "IPv4: servers here see the clients' own addresses" "$RT_DIR/B.log" ||
		rt_fail "daemon B did not say it uses the clients' addresses: $(grep -i client "$RT_DIR/B.log")"
}
rt_step B ca_b_setup

# Guest a: the ACL port is redirected too.
ca_a_setup() {
	rt_rule_add OUTPUT -t nat -p tcp -d "$SERVER" --dport "$APORT" -m mark ! --mark "$MARK" \
		-j REDIRECT --to-ports "${RT_LPORT[A]}" || rt_fail "iptables REDIRECT of the ACL port"
	rt_bed A
}
rt_step A ca_a_setup

# ca_ask WANT: one connection to the ACL server, its answer WANT; the
# client's port for the other guest ($lport).
ca_ask() {
	local out
	out=$(python3 "$ACL" ask "$SERVER" $APORT) || rt_fail "ask: $out"
	echo "  guest a: $out"
	[ "${out##* }" = "$1" ] || rt_fail "the ACL server answered ${out##* }, not $1"
	lport=$(awk '{ print $2 }' <<<"$out")
	rt_share lport
}

ca_a_flows() {
	ca_ask allowed
	rt_run_ok flows "flowcheck from the client's address" --flows 20 --concurrency 10 \
		--max-size 128KiB --seed "${RT_SEED:-$$}" --timeout 200
	rt_wait_stat A flows.active.rdma -eq 0 20 || rt_fail "daemon A: flows still active"
	read -r rdma tcp < <(rt_stat A flows.closed.rdma flows.closed.tcp | tr '\n' ' ')
	echo "  daemon A: closed.rdma $rdma closed.tcp $tcp"
	rt_eq "daemon A: flows.closed.tcp" "$tcp" 0
	rt_eq "daemon A: flows.closed.rdma" "$rdma" 21
}
rt_step A ca_a_flows

# Guest b: the server saw guest a, and daemon B made every connection
# from the client's address, none from its own.
ca_b_check() {
	local caddr haddr
	grep -q "^peer ${CLIENT//./\\.} $lport\$" "$RT_DIR/acl.log" ||
		rt_fail "the server did not see guest a's address and port $lport: $(tail -2 "$RT_DIR/acl.log")"
	echo "  guest b: the server saw $(grep "^peer .* $lport\$" "$RT_DIR/acl.log")"
	rt_wait_stat B flows.active.rdma -eq 0 20 || rt_fail "daemon B: flows still active"
	read -r caddr haddr < <(rt_stat B connect_client_addr connect_host_addr | tr '\n' ' ')
	echo "  daemon B: connect_client_addr $caddr connect_host_addr $haddr"
	rt_eq "daemon B: connect_client_addr" "$caddr" 21
	rt_eq "daemon B: connect_host_addr" "$haddr" 0
	rt_server_expect " 20 ok, 0 failed, 0 aborted" "the server on guest b"
}
rt_step B ca_b_check

# Guest b without the rules: a reload finds them gone and says so.
ca_b_unroute() {
	local out i
	out=$(helper route del 2>&1) || rt_fail "route del: $out"
	[ -z "$(ip -4 rule list pref 5459)$(ip -6 rule list pref 5459 2>/dev/null)" ] ||
		rt_fail "route del left a rule: $(ip rule list pref 5459)"
	[ -z "$(ip -4 route show table 5459 2>/dev/null)$(ip -6 route show table 5459 2>/dev/null)" ] ||
		rt_fail "route del left a route in table 5459"
	kill -HUP "${RT_PID[B]}"
	for ((i = 0; i < 300; i++)); do
		grep -q "IPv4: servers here see this host's address" "$RT_DIR/B.log" && return 0
		sleep 0.1
	done
	rt_fail "daemon B did not say, after the reload, that servers see its address"
}
rt_step B ca_b_unroute
rt_step A ca_ask denied

ca_b_host() {
	local caddr haddr
	grep -q "^peer 10\.78\.0\.2 [0-9]*\$" "$RT_DIR/acl.log" ||
		rt_fail "the server did not see guest b's own address: $(tail -1 "$RT_DIR/acl.log")"
	read -r caddr haddr < <(rt_stat B connect_client_addr connect_host_addr | tr '\n' ' ')
	echo "  daemon B without the rules: connect_client_addr $caddr connect_host_addr $haddr"
	rt_eq "daemon B: connect_client_addr" "$caddr" 21
	rt_eq "daemon B: connect_host_addr" "$haddr" 1
	rt_stop B || rt_fail "daemon B did not stop cleanly"
	[ -z "$(ip -4 rule list pref 5459)$(ip -4 route show table 5459 2>/dev/null)" ] ||
		rt_fail "a rule or route of table 5459 after daemon B stopped"
}
rt_step B ca_b_host

rt_pass "a server on guest b saw guest a's address and port over rdma (21 connections from it, 20 flows sha256-equal); without the route-back, guest b's own, said at the reload"
