#!/bin/bash
# Guards pods between two hosts over rdma: a pod on guest a (a network namespace behind a bridge) opens flows to a pod on guest b (one on a routed veth) with no change to either pod; guest a's daemon takes them (smcproxy-iptables tproxy), carries them over the rdma link group to guest b's daemon (peers[].via), which connects to the pod (serve) from the client pod's own address (route add): sha256 both ways, FIN and RST, every flow on rdma on both daemons, and guest b's daemon never takes its own connections again.
#
#   pod pa 10.245.1.10                      pod pb 10.245.2.10
#     | bridge brpods 10.245.1.1              | routed veth (/32)
#   guest a 10.78.0.1 ===== rxe0 -- wire -- rxe0 ===== guest b 10.78.0.2
#     daemon A: tproxy :7003,                 daemon B: tproxy :7003,
#     10.245.2.0/24 via 10.78.0.2             serve 10.245.2.0/24
. "$(dirname "$0")/lib.sh"
rp_init "$@"
HELPER=$RT_LIB_DIR/../../contrib/smcproxy-iptables
TPORT=7003
POD_NS=smcp-pod-$$
PA=10.245.1.10
PB=10.245.2.10
FLOWS=60
HELPER_STATE=$RT_DIR/fwmark.state

helper() { SMCPROXY_IPTABLES_STATE=$HELPER_STATE "$HELPER" "$@" >/dev/null; }
in_pod() { ip netns exec "$POD_NS" "$@"; }

# This guest's pod, torn down with everything the helper set up (the
# tests share one boot of the guests).
pod_make() {
	local kind=$1 addr=$2 gw=$3 ok=1
	RT_UNDO+=("ip netns del $POD_NS" "ip link del brpods" "ip link del v$POD_NS"
		"ip route del 10.245.1.0/24" "ip route del 10.245.2.0/24"
		"SMCPROXY_IPTABLES_STATE=$HELPER_STATE $HELPER tproxy del --all"
		"SMCPROXY_IPTABLES_STATE=$HELPER_STATE $HELPER route del")
	sysctl -qw net.ipv4.ip_forward=1 || ok=0
	ip netns add "$POD_NS" || ok=0
	ip -n "$POD_NS" link set lo up
	ip link add "v$POD_NS" type veth peer name eth0 netns "$POD_NS" || ok=0
	ip -n "$POD_NS" link set eth0 up
	if [ "$kind" = bridge ]; then
		ip link add brpods type bridge || ok=0
		ip addr add "$gw/24" dev brpods
		ip link set brpods up
		ip link set "v$POD_NS" master brpods up
		ip -n "$POD_NS" addr add "$addr/24" dev eth0
		ip -n "$POD_NS" route add default via "$gw" || ok=0
	else
		ip link set "v$POD_NS" up
		ip route add "$addr/32" dev "v$POD_NS" || ok=0
		ip -n "$POD_NS" addr add "$addr/32" dev eth0
		ip -n "$POD_NS" route add "$gw" dev eth0
		ip -n "$POD_NS" route add default via "$gw" dev eth0 || ok=0
		ip -n "$POD_NS" neigh replace "$gw" dev eth0 nud permanent \
			lladdr "$(ip -br link show "v$POD_NS" | awk '{ print $3 }')" || ok=0
	fi
	[ $ok -eq 1 ] || rt_fail "cannot make the $kind pod $addr"
}

# Guest b: the server pod on a routed veth, daemon B serving it, its
# tproxy rules (which also deliver the pod's replies to connections from
# the client pod's address) and the route back.
pods_b() {
	pod_make routed "$PB" 169.254.1.1
	ip route add 10.245.1.0/24 via 10.78.0.1 || rt_fail "route to guest a's pods"
	ip netns exec "$POD_NS" "$FLOWCHECK" serve --listen "0.0.0.0:$SPORT" >"$RT_DIR/server.log" 2>&1 &
	SERVER_PID=$!
	RT_PIDS+=("$SERVER_PID")
	rt_wait_file "$RT_DIR/server.log" '^serve: listening' 10 ||
		rt_fail "flowcheck serve in the pod did not start: $(cat "$RT_DIR/server.log")"
	helper route add || rt_fail "route add on guest b"
	helper tproxy add --port "$SPORT" --dest 10.245.1.0/24 || rt_fail "tproxy add on guest b"
	rt_config B tproxy="[\"0.0.0.0:$TPORT\"]" serve='["10.245.2.0/24"]' \
		peers="[{\"prefix\": \"$NET\", \"control_port\": 7002, \"allow\": [\"1024-65535\"]},
			{\"prefix\": \"10.245.1.0/24\", \"via\": \"10.78.0.1\", \"control_port\": 7002}]"
	rt_start B
	grep -q "IPv4: servers here see the clients' own addresses" "$RT_DIR/B.log" ||
		rt_fail "daemon B does not use the clients' addresses: $(grep -i client "$RT_DIR/B.log")"
}
rt_step B pods_b

# Guest a: the client pod behind a bridge, daemon A and its tproxy rules
# for guest b's pod prefix.
pods_a() {
	pod_make bridge "$PA" 10.245.1.1
	ip route add 10.245.2.0/24 via 10.78.0.2 || rt_fail "route to guest b's pods"
	# The pods reach each other directly before any rule.
	local out
	out=$(in_pod "$FLOWCHECK" run --connect "$PB:$SPORT" --flows 2 --size 64KiB --timeout 60) ||
		rt_fail "the pods do not reach each other without the proxy: $out"
	helper tproxy add --port "$SPORT" --dest 10.245.2.0/24 || rt_fail "tproxy add on guest a"
	rt_config A tproxy="[\"0.0.0.0:$TPORT\"]" serve='["10.245.1.0/24"]' \
		peers="[{\"prefix\": \"10.245.2.0/24\", \"via\": \"10.78.0.2\", \"control_port\": 7002},
			{\"prefix\": \"$NET\", \"control_port\": 7002, \"allow\": [\"1024-65535\"]}]"
	rt_start A
}
rt_step A pods_a

# A held flow: guest b's pod must see the client pod as its peer.
hold_start() {
	ip netns exec "$POD_NS" "$FLOWCHECK" hold --connect "$PB:$SPORT" --count 1 --seconds 120 >/dev/null 2>&1 &
	HOLD_PID=$!
	RT_PIDS+=("$HOLD_PID")
	rt_wait_stat A flows.active.rdma -eq 1 60 || rt_fail "the held pod flow is not on rdma: $(rt_ctl A flows)"
}
rt_step A hold_start
hold_seen() {
	local seen i
	for ((i = 0; i < 100; i++)); do
		seen=$(in_pod ss -Htn state established "( sport = :$SPORT )")
		[ -n "$seen" ] && break
		sleep 0.2
	done
	echo "  the server pod sees: $seen"
	grep -q " $PA:" <<<"$seen" || rt_fail "the server pod does not see the client pod's address: $seen"
}
rt_step B hold_seen
hold_stop() {
	kill "$HOLD_PID" 2>/dev/null
	wait "$HOLD_PID" 2>/dev/null
	rt_wait_stat A flows.active.rdma -eq 0 60 || rt_fail "the held flow did not end"
}
rt_step A hold_stop

# Flows from pod to pod, random sizes, sha256 both ways, then FIN and RST
# ends.
pods_run() {
	local seed=${RT_SEED:-$$} out m rc rdma tcp
	out=$(in_pod "$FLOWCHECK" run --connect "$PB:$SPORT" --flows "$FLOWS" --concurrency 30 \
		--max-size 256KiB --seed "$seed" --timeout 200)
	rc=$?
	printf '%s\n' "$out" | grep -vE '^FAIL flow' | sed 's/^/  /'
	[ $rc -eq 0 ] || { rt_diag; rt_fail "pod to pod (seed $seed): $(grep -E '^FAIL' <<<"$out" | head -5)"; }
	for m in half-client half-server reset client-reset; do
		out=$(in_pod "$FLOWCHECK" run --connect "$PB:$SPORT" --flows 5 --size 128KiB \
			--mode "$m" --timeout 100) || rt_fail "mode $m pod to pod: $out"
	done
	rt_wait_stat A flows.active.rdma -eq 0 60 || rt_fail "daemon A: flows still active"
	read -r rdma tcp < <(rt_stat A flows.closed.rdma flows.closed.tcp | tr '\n' ' ')
	echo "  daemon A: closed.rdma $rdma closed.tcp $tcp"
	rt_eq "daemon A: flows over rdma (held, $FLOWS, 20 FIN/RST)" "$rdma" $((FLOWS + 21))
	rt_eq "daemon A: flows over tcp" "$tcp" 0
}
rt_step A pods_run

pods_b_check() {
	local rdma tcp acc caddr
	rt_wait_stat B flows.active.rdma -eq 0 60 || rt_fail "daemon B: flows still active"
	read -r rdma tcp acc caddr < <(rt_stat B flows.closed.rdma flows.closed.tcp flows.accepted \
		connect_client_addr | tr '\n' ' ')
	echo "  daemon B: closed.rdma $rdma closed.tcp $tcp accepted $acc connect_client_addr $caddr"
	rt_eq "daemon B: flows over rdma" "$rdma" $((FLOWS + 21))
	rt_eq "daemon B: connections from the client pod's address" "$caddr" $((FLOWS + 21))
	rt_eq "daemon B: connections it took (its own to the pod would count)" "$acc" 0
}
rt_step B pods_b_check

rt_pass "pod to pod between two guests over rdma: $((FLOWS + 21)) flows, sha256 both ways, FIN and RST, the server pod sees the client pod"
