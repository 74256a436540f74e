#!/bin/bash
# Guards pods behind a node daemon, IPv4 and IPv6: connections that pods (network namespaces behind a bridge, and on each node one behind a routed veth) open to pods of another node are taken by the node's daemon (smcproxy-iptables tproxy: TPROXY, or REDIRECT for bridged pods under br_netfilter), carried over the link group to the other node's daemon (peers[].via), which connects to the pod (serve), from the client pod's own address once `route add` is set up: the tproxy listener, its connections and the connections to pods carry "mark", a REDIRECTed connection's later packets skip the tproxy chain's socket lookup, sha256 both ways over many flows, FIN and RST, a pod prefix whose daemon does not answer falls back to TCP, so does a pod's connection to a plain host with no daemon at all (reason peer_unreachable, bytes intact), an address outside serve is declined, same-node pod traffic is left alone, the daemon's own connections to its pods are never taken again, and after `tproxy del` pods talk directly.
#
#   pod pa (10.244.1.10)            pod pb (10.244.2.10)  pod pr (10.244.2.20)
#      | bridge br0 10.244.1.1         | bridge br0 10.244.2.1   | routed veth
#   (and pa2 .11 on it; par .20      (and px 10.244.3.10 on a routed veth)
#    on a routed veth)
#   node A (NS_C) 10.66.1.1 ------------ node B (NS_S) 10.66.1.2
#     smcproxyd: tproxy :7003,            smcproxyd: tproxy :7003,
#     peers 10.244.2.0/24 via 10.66.1.2   peers 10.244.1.0/24 via 10.66.1.1,
#     serve 10.244.1.0/24                 serve 10.244.2.0/24
#   bridge-nf-call-iptables=0 (TPROXY)  =1, as kubeadm wants (REDIRECT)
#     |
#   host ph 10.66.2.2 (no daemon), on a veth of node A's (10.66.2.1)
#
# The link between the two node daemons is shm (both run on this machine):
# what is under test is interception, the via daemon and serve; the data
# path is the one every shm test covers.
. "$(dirname "$0")/lib.sh"
it_init "$@"
HELPER=$IT_LIB_DIR/../../contrib/smcproxy-iptables
TPORT=7003
NS_PA=smcp-pa-$$
NS_PB=smcp-pb-$$
NS_PR=smcp-pr-$$
NS_PX=smcp-px-$$
NS_PA2=smcp-pa2-$$
NS_PAR=smcp-par-$$
NS_PH=smcp-ph-$$
IT_NS_EXTRA+=("$NS_PA" "$NS_PB" "$NS_PR" "$NS_PX" "$NS_PA2" "$NS_PAR" "$NS_PH")
PA=10.244.1.10
PB=10.244.2.10
PR=10.244.2.20
PX=10.244.3.10		# behind node B, but not in its serve
PA2=10.244.1.11		# a second pod on node A's bridge
PAR=10.244.1.20		# node A's pod on a routed veth (its /32 beats br0's /24)
PH=10.66.2.2		# a plain host beside node A: no daemon, nothing on the control port
PB6=fd44:2::10
PA6=fd44:1::10

# pod_bridge NODE_NS POD_NS CIDR_PREFIX (10.244.1) POD_ADDR NET6 (fd44:1):
# a pod behind the node's bridge br0 (made on first use, .1 and ::1 on the
# node), IPv4 and IPv6.
pod_bridge() {
	local node=$1 pod=$2 net=$3 addr=$4 net6=$5
	ip netns add "$pod" || it_fail "ip netns add $pod"
	ip -n "$pod" link set lo up
	if ! ip -n "$node" link show br0 >/dev/null 2>&1; then
		ip -n "$node" link add br0 type bridge || it_fail "bridge on $node"
		ip -n "$node" addr add "$net.1/24" dev br0
		ip -n "$node" addr add "$net6::1/64" dev br0 nodad
		ip -n "$node" link set br0 up
	fi
	ip -n "$node" link add "v$pod" type veth peer name eth0 netns "$pod" || it_fail "veth $pod"
	ip -n "$node" link set "v$pod" master br0 up
	ip -n "$pod" addr add "$addr/24" dev eth0
	ip -n "$pod" link set eth0 up
	ip -n "$pod" addr add "$net6::${addr##*.}/64" dev eth0 nodad
	ip -n "$pod" route add default via "$net.1"
	ip -n "$pod" -6 route add default via "$net6::1"
}

# pod_routed NODE_NS POD_NS POD_ADDR: a pod on a veth of its own, routed by
# the node (a /32 route to it; the pod's default route through a link
# address that stands for the node's end of the veth: proxy ARP answers
# it in Calico, a static neighbour here, so no ARP timing is involved).
pod_routed() {
	local node=$1 pod=$2 addr=$3
	ip netns add "$pod" || it_fail "ip netns add $pod"
	ip -n "$pod" link set lo up
	ip -n "$node" link add "v$pod" type veth peer name eth0 netns "$pod" || it_fail "veth $pod"
	ip -n "$pod" addr add "$addr/32" dev eth0
	ip -n "$pod" link set eth0 up
	ip -n "$node" link set "v$pod" up
	ip -n "$node" route add "$addr/32" dev "v$pod"
	ip -n "$pod" route add 169.254.1.1 dev eth0
	ip -n "$pod" route add default via 169.254.1.1 dev eth0
	ip -n "$pod" neigh replace 169.254.1.1 dev eth0 nud permanent \
		lladdr "$(ip -n "$node" -br link show "v$pod" | awk '{ print $3 }')"
}

it_hosts
for ns in "$NS_C" "$NS_S"; do
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.forwarding=1
done
# br_netfilter calling iptables for bridged packets (Kubernetes' usual
# net.bridge.bridge-nf-call-iptables=1) runs the PREROUTING hooks inside
# the bridge, before ip_rcv(), which drops the socket TPROXY assigned: the
# helper REDIRECTs those packets instead. Node A turns it off (per netns):
# its bridged pods are TPROXY'd; node B turns it on: its bridged pod is
# REDIRECTed, its routed pod (no bridge) TPROXY'd all the same. Both
# settings are under test, so br_netfilter must be there.
modprobe br_netfilter 2>/dev/null
[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ] ||
	it_fail "br_netfilter is not available (modprobe br_netfilter): bridged pods under it cannot be tested"
ip netns exec "$NS_C" sysctl -qw net.bridge.bridge-nf-call-iptables=0 \
	net.bridge.bridge-nf-call-ip6tables=0 >/dev/null ||
	it_fail "cannot turn bridge-nf-call-iptables off on node A"
ip netns exec "$NS_S" sysctl -qw net.bridge.bridge-nf-call-iptables=1 \
	net.bridge.bridge-nf-call-ip6tables=1 >/dev/null ||
	it_fail "cannot turn bridge-nf-call-iptables on on node B"
pod_bridge "$NS_C" "$NS_PA" 10.244.1 "$PA" fd44:1
pod_bridge "$NS_C" "$NS_PA2" 10.244.1 "$PA2" fd44:1
pod_bridge "$NS_S" "$NS_PB" 10.244.2 "$PB" fd44:2
pod_routed "$NS_S" "$NS_PR" "$PR"
pod_routed "$NS_C" "$NS_PAR" "$PAR"
pod_routed "$NS_S" "$NS_PX" "$PX"
# The plain host: its own link to node A, and node A its way out.
ip netns add "$NS_PH" || it_fail "ip netns add $NS_PH"
ip -n "$NS_PH" link set lo up
ip -n "$NS_C" link add vph type veth peer name eth0 netns "$NS_PH" || it_fail "veth to the plain host"
ip -n "$NS_C" addr add 10.66.2.1/24 dev vph
ip -n "$NS_PH" addr add "$PH/24" dev eth0
ip -n "$NS_C" link set vph up
ip -n "$NS_PH" link set eth0 up
ip -n "$NS_PH" route add default via 10.66.2.1
ip -n "$NS_C" neigh replace "$PH" dev vph nud permanent \
	lladdr "$(ip -n "$NS_PH" -br link show eth0 | awk '{ print $3 }')"
ip -n "$NS_PH" neigh replace 10.66.2.1 dev eth0 nud permanent \
	lladdr "$(ip -n "$NS_C" -br link show vph | awk '{ print $3 }')"
ip -n "$NS_C" route add 10.244.2.0/24 via "$S4"
ip -n "$NS_C" route add 10.244.3.0/24 via "$S4"
ip -n "$NS_S" route add 10.244.1.0/24 via "$C4"
ip -n "$NS_C" -6 route add fd44:2::/64 via "$S6"
ip -n "$NS_S" -6 route add fd44:1::/64 via "$C6"

serve_in() {
	local ns=$1 log=$2
	ip netns exec "$ns" "$FLOWCHECK" serve --listen "0.0.0.0:$SPORT" --listen "[::]:$SPORT" \
		>"$IT_DIR/$log" 2>&1 &
	IT_PIDS+=("$!")
	it_wait_file "$IT_DIR/$log" '^serve: listening' 5 ||
		it_fail "flowcheck serve in $ns did not start: $(cat "$IT_DIR/$log")"
}
serve_in "$NS_PB" pb.log
serve_in "$NS_PR" pr.log
serve_in "$NS_PX" px.log
serve_in "$NS_PH" ph.log
pa_run() { ip netns exec "$NS_PA" "$FLOWCHECK" run "$@"; }

# Before any rule: pod to pod directly (the routing is right).
out=$(pa_run --connect "$PB:$SPORT" --flows 2 --size 64KiB) ||
	it_fail "pods do not reach each other without the proxy: $out"

# Node B's daemon: link groups from node A, flows into its pods (serve).
# The routed pod's /32 (the longest prefix holding it, so flow_route takes it)
# names a control port where nothing listens: its flows fall back.
it_peer_config transport='"auto"' control="\"[::]:$CPORT\"" \
	tproxy="[\"0.0.0.0:$TPORT\", \"[::]:$TPORT\"]" serve='["10.244.2.0/24", "fd44:2::/64"]' \
	peers="[{\"prefix\": \"$C4/32\", \"allow\": $ALLOW}, {\"prefix\": \"$C6/128\", \"allow\": $ALLOW},
		{\"prefix\": \"10.244.1.0/24\", \"via\": \"$C4\", \"control_port\": $CPORT},
		{\"prefix\": \"fd44:1::/64\", \"via\": \"$C6\", \"control_port\": $CPORT}]"
it_peer_start
# Node A's daemon.
it_config transport='"auto"' control="\"[::]:$CPORT\"" \
	tproxy="[\"0.0.0.0:$TPORT\", \"[::]:$TPORT\"]" serve='["10.244.1.0/24", "fd44:1::/64"]' \
	peers="[{\"prefix\": \"fd44:2::/64\", \"via\": \"$S6\", \"control_port\": $CPORT},
		{\"prefix\": \"$S6/128\", \"allow\": $ALLOW},
		{\"prefix\": \"$PR/32\", \"via\": \"$S4\", \"control_port\": 7999},
		{\"prefix\": \"10.244.2.0/24\", \"via\": \"$S4\", \"control_port\": $CPORT},
		{\"prefix\": \"10.244.3.0/24\", \"via\": \"$S4\", \"control_port\": $CPORT},
		{\"prefix\": \"$S4/32\", \"allow\": $ALLOW},
		{\"prefix\": \"10.66.2.0/24\", \"control_port\": $CPORT}]"
it_daemon_start
grep -q "listening on 0.0.0.0:$TPORT (tproxy)" "$IT_DIR/daemon.log" ||
	it_fail "the daemon does not say it listens on the tproxy port: $(cat "$IT_DIR/daemon.log")"

ip netns exec "$NS_C" "$HELPER" tproxy add --port "$SPORT" --dest 10.244.2.0/24 \
	--dest 10.244.3.0/24 --dest fd44:2::/64 --dest "$PH/32" >/dev/null ||
	it_fail "tproxy add on node A"
ip netns exec "$NS_S" "$HELPER" tproxy add --port "$SPORT" --dest 10.244.1.0/24 \
	--dest fd44:1::/64 >/dev/null ||
	it_fail "tproxy add on node B"
list=$(ip netns exec "$NS_C" "$HELPER" tproxy list)
grep -q "tproxy tcp to 10.244.2.0/24 port $SPORT -> local port $TPORT" <<<"$list" ||
	it_fail "tproxy list does not show the rule: $list"

# A held flow: taken by node A's daemon from the pod's own address, carried
# over shm, and on node B connected to the pod from node B.
ip netns exec "$NS_PA" "$FLOWCHECK" hold --connect "$PB:$SPORT" --count 1 --seconds 30 \
	>/dev/null 2>&1 &
hold=$!
IT_PIDS+=("$hold")
it_wait_stat flows.active.shm -eq 1 5 || { ip netns exec "$NS_C" iptables -t mangle -L -v -n; ip -n "$NS_C" rule; ip -n "$NS_C" route show table 5460; it_stat flows.accepted; it_ctl flows; ip netns exec "$NS_C" ss -tnap; it_fail "the pod flow is not on shm"; }
json=$(it_ctl --json flows) || it_fail "flows: $json"
grep -q "\"$PA:" <<<"$json" || it_fail "flows does not show the client pod's address: $json"
grep -q "\"$PB:$SPORT\"" <<<"$json" || it_fail "flows does not show the server pod's address: $json"
peers=$(it_ctl --json peers) || it_fail "peers: $peers"
grep -q "$S4:$CPORT" <<<"$peers" || it_fail "the group is not to node B's daemon: $peers"
seen=$(ip netns exec "$NS_PB" ss -Htn state established "( sport = :$SPORT )")
# Until the daemon connects from the client's own address, the server
# pod sees node B's (its address on the bridge), not the client pod's.
grep -q " 10.244.2.1:" <<<"$seen" || it_fail "the server pod does not see node B as its client: $seen"
# The daemons' sockets of the flow carry "mark" (0x43): node A's tproxy
# listener, hence the connection it accepted from the pod (a listener
# without a mark gives its connections their SYN's TPROXY bit once
# tcp_fwmark_accept is 1), and node B's connection to its pod (a serve
# address: never client_mark, which routes to this host).
fw=$(printf 'fwmark:0x%x' "$MARK")
ip netns exec "$NS_C" ss -Htlne "( sport = :$TPORT )" | grep -q "$fw" ||
	it_fail "node A's tproxy listener has no $fw: $(ip netns exec "$NS_C" ss -Htlne "( sport = :$TPORT )")"
seen=$(ip netns exec "$NS_C" ss -Htne state established dst "$PA")
grep -q "$fw" <<<"$seen" || it_fail "node A's connection from the pod has no $fw: $seen"
seen=$(ip netns exec "$NS_S" ss -Htne state established dst "$PB")
grep -q "$fw" <<<"$seen" || it_fail "node B's connection to its pod has no $fw: $seen"
kill "$hold" 2>/dev/null
wait "$hold" 2>/dev/null
it_wait_stat flows.active.shm -eq 0 5 || it_fail "the held flow did not end"

# The route back on node B (route add, then a reload): node B's daemon
# connects from the client pod's own address, and the server pod's
# replies to it, bridged (through br_netfilter) or routed, are marked by
# the tproxy chain's socket rule and delivered to the daemon. Every flow
# from here on goes so.
said() { grep -c "IPv4: servers here see the clients' own addresses" "$IT_DIR/peer.log"; }
said0=$(said)
ip netns exec "$NS_S" env SMCPROXY_IPTABLES_STATE="$IT_DIR/fwmark.state" "$HELPER" route add \
	>/dev/null || it_fail "route add on node B"
kill -HUP "$PEER_PID"
for ((i = 0; i < 50; i++)); do
	[ "$(said)" -gt "$said0" ] && break
	sleep 0.1
done
[ "$(said)" -gt "$said0" ] || it_fail "node B's daemon does not use the clients' addresses after route add"
read -r caddr0 < <(it_peer_stat connect_client_addr)
ip netns exec "$NS_PA" "$FLOWCHECK" hold --connect "$PB:$SPORT" --count 1 --seconds 30 \
	>/dev/null 2>&1 &
hold=$!
IT_PIDS+=("$hold")
it_wait_stat flows.active.shm -eq 1 5 || it_fail "the second held pod flow is not on shm"
for ((i = 0; i < 50; i++)); do
	seen=$(ip netns exec "$NS_PB" ss -Htn state established "( sport = :$SPORT )")
	[ -n "$seen" ] && break
	sleep 0.1
done
grep -q " $PA:" <<<"$seen" || it_fail "the server pod does not see the client pod's address: $seen"
# From the client pod's address, still with "mark", not client_mark.
seen=$(ip netns exec "$NS_S" ss -Htne state established src "$PA" dst "$PB")
grep -q "$fw" <<<"$seen" || it_fail "node B's connection from the client pod's address has no $fw: $seen"
kill "$hold" 2>/dev/null
wait "$hold" 2>/dev/null
it_wait_stat flows.active.shm -eq 0 5 || it_fail "the second held flow did not end"
read -r caddr1 < <(it_peer_stat connect_client_addr)
it_eq "node B's connections from the client pod's address" "$((caddr1 - caddr0))" 1

# Many flows, random sizes, sha256 both ways, normal (FIN) ends.
seed=${IT_SEED:-$$}
out=$(pa_run --connect "$PB:$SPORT" --flows 1000 --concurrency 100 --max-size 128KiB \
	--seed "$seed" --timeout 100)
rc=$?
printf '%s\n' "$out" | grep -vE '^FAIL flow' | sed 's/^/  many: /'
[ $rc -eq 0 ] || it_fail "1000 pod-to-pod flows (seed $seed): $(printf '%s\n' "$out" | grep -E '^FAIL' | head -5)"
for m in half-client half-server reset client-reset; do
	out=$(pa_run --connect "$PB:$SPORT" --flows 10 --size 128KiB --mode "$m" --timeout 30) ||
		it_fail "mode $m pod to pod: $out"
done
it_wait_stat flows.active.shm -eq 0 10 || it_fail "flows still active after the runs"
read -r shm tcp < <(it_stat flows.closed.shm flows.closed.tcp | tr '\n' ' ')
it_eq "node A flows over shm (the two held, 1000, 40 half-close and reset)" "$shm" 1042
SOCK=$PSOCK it_wait_stat flows.active.shm -eq 0 10 || it_fail "node B's flows still active"
read -r pshm caddr2 < <(it_peer_stat flows.closed.shm connect_client_addr | tr '\n' ' ')
it_eq "node B flows over shm" "$pshm" 1042
it_eq "node B's flows from the client pod's address" "$((caddr2 - caddr0))" 1041

# The other way, node B's routed pod (TPROXY) and its bridged pod
# (br_netfilter on: REDIRECT) to node A's pod, IPv4 and IPv6, sha256 both
# ways, FIN and RST.
serve_in "$NS_PA" pa.log
out=$(ip netns exec "$NS_PR" "$FLOWCHECK" run --connect "$PA:$SPORT" --flows 20 --size 64KiB --timeout 30) ||
	it_fail "routed pod on node B to pod on node A: $out"
read -r pshm2 < <(it_peer_stat flows.closed.shm)
[ "$pshm2" -ge $((pshm + 20)) ] || it_fail "the routed pod's flows did not go over the link ($pshm -> $pshm2)"
pb_run() { ip netns exec "$NS_PB" "$FLOWCHECK" run "$@"; }
ip netns exec "$NS_PB" "$FLOWCHECK" hold --connect "$PA:$SPORT" --count 1 --seconds 30 \
	>/dev/null 2>&1 &
hold=$!
IT_PIDS+=("$hold")
SOCK=$PSOCK it_wait_stat flows.active.shm -eq 1 5 ||
	it_fail "the bridged pod's flow under br_netfilter is not on shm: $(it_peer_ctl flows)"
json=$(it_peer_ctl --json flows) || it_fail "flows: $json"
grep -q "\"$PB:" <<<"$json" || it_fail "node B's flows does not show the bridged client pod: $json"
grep -q "\"$PA:$SPORT\"" <<<"$json" || it_fail "node B's flows does not show the server pod: $json"
kill "$hold" 2>/dev/null
wait "$hold" 2>/dev/null
SOCK=$PSOCK it_wait_stat flows.active.shm -eq 0 5 || it_fail "the bridged pod's held flow did not end"
# rule_pkts NS WORDS: the packets the mangle chain's rule whose listing
# has WORDS (a regex) took.
rule_pkts() {
	ip netns exec "$1" iptables -w 5 -t mangle -L SMCPROXY_TP -v -n -x | awk -v w="$2" '$0 ~ w { print $1; exit }'
}
ip netns exec "$NS_S" iptables -w 5 -t mangle -Z SMCPROXY_TP
out=$(pb_run --connect "$PA:$SPORT" --flows 200 --concurrency 50 --max-size 128KiB \
	--seed "$seed" --timeout 60) ||
	it_fail "bridged pod on node B (br_netfilter) to pod on node A (seed $seed): $(grep -E '^FAIL' <<<"$out" | head -5)"
# Each REDIRECTed connection's packets after its SYN return at the chain's
# DNAT test, before the socket lookup: only the SYNs (and a retransmitted
# one) reach the bridge test behind it.
dnat=$(rule_pkts "$NS_S" 'ctstate DNAT')
bridged=$(rule_pkts "$NS_S" 'PHYSDEV match --physdev-is-in')
[ "${dnat:-0}" -ge 200 ] && [ "${bridged:-999}" -le 400 ] ||
	it_fail "the bridged pod's later packets were not returned before the socket lookup (DNAT test ${dnat:-?}, bridge test ${bridged:-?} packets, for 200 connections)"
for m in half-client half-server reset client-reset; do
	out=$(pb_run --connect "$PA:$SPORT" --flows 5 --size 128KiB --mode "$m" --timeout 30) ||
		it_fail "mode $m, bridged pod under br_netfilter: $out"
done
out=$(pb_run --connect "[$PA6]:$SPORT" --flows 20 --size 64KiB --timeout 30) ||
	it_fail "IPv6 bridged pod under br_netfilter to pod on node A: $out"
SOCK=$PSOCK it_wait_stat flows.active.shm -eq 0 10 || it_fail "node B's flows still active"
read -r pshm3 < <(it_peer_stat flows.closed.shm)
it_eq "node B's flows over shm from its bridged pod" "$((pshm3 - pshm2))" 241

# Node A's routed pod to node B's bridged pod, over the link.
read -r shm8 < <(it_stat flows.closed.shm)
out=$(ip netns exec "$NS_PAR" "$FLOWCHECK" run --connect "$PB:$SPORT" --flows 20 --size 64KiB --timeout 30) ||
	it_fail "routed pod on node A to pod on node B: $out"
read -r shm9 < <(it_stat flows.closed.shm)
it_eq "node A's routed pod's flows over shm" "$((shm9 - shm8))" 20

# The routed pod: its via names a port where no daemon answers, so node A's
# daemon carries the flows over TCP to the pod's own address.
out=$(pa_run --connect "$PR:$SPORT" --flows 10 --size 64KiB --timeout 30) ||
	it_fail "pod to the routed pod (fallback): $out"
read -r tcp2 < <(it_stat flows.closed.tcp)
[ "$tcp2" -ge $((tcp + 10)) ] || it_fail "the routed pod's flows did not fall back to TCP ($tcp -> $tcp2)"

# A plain host with no daemon: its peer entry (no via) offers the flows to
# a daemon at the host's own address, whose control port refuses, so node
# A's daemon carries them over TCP to the host itself, sha256 both ways,
# each counted with its reason (peer_unreachable: the first from the
# refused handshake, the others from the negative entry it left).
read -r tcp5 pu0 < <(it_stat flows.closed.tcp fallback.peer_unreachable | tr '\n' ' ')
out=$(pa_run --connect "$PH:$SPORT" --flows 10 --size 64KiB --timeout 30) ||
	it_fail "pod to a plain host without a daemon (fallback): $out"
read -r tcp6 pu1 < <(it_stat flows.closed.tcp fallback.peer_unreachable | tr '\n' ' ')
it_eq "node A's TCP flows to the plain host" "$((tcp6 - tcp5))" 10
it_eq "fallback.peer_unreachable for the plain host" "$((pu1 - pu0))" 10
peers=$(it_ctl --json peers) || it_fail "peers: $peers"
grep -q "$PH" <<<"$peers" && grep -Eq '"reason": *"peer_unreachable"' <<<"$peers" ||
	it_fail "peers does not show the plain host's negative entry: $peers"

# Node B's daemon took only its pods' connections (20 + 1 + 240): its own
# connections to its pods, for node A's flows, were never taken again.
read -r pacc < <(it_peer_stat flows.accepted)
it_eq "connections node B's daemon took (its own would be more)" "$pacc" 261

# IPv6: pod to pod over a group to node B's daemon at its IPv6 address.
read -r shm6 < <(it_stat flows.closed.shm)
out=$(pa_run --connect "[$PB6]:$SPORT" --flows 20 --size 64KiB --timeout 30) ||
	it_fail "IPv6 pod to pod: $out"
read -r shm7 < <(it_stat flows.closed.shm)
it_eq "IPv6 pod-to-pod flows over shm" "$((shm7 - shm6))" 20
peers=$(it_ctl --json peers) || it_fail "peers: $peers"
grep -q "\[$S6\]:$CPORT" <<<"$peers" || it_fail "no group to node B's IPv6 daemon address: $peers"

# A pod that connects to the tproxy listener itself (node A's bridge
# address, port 7003) is refused: nothing diverted it, so it has no
# original destination.
read -r lr0 < <(it_stat loops_refused)
ip netns exec "$NS_PA" "$FLOWCHECK" probe --connect "10.244.1.1:$TPORT" --expect reset,eof >/dev/null ||
	it_fail "a direct connection to the tproxy listener was not refused"
it_wait_stat loops_refused -eq $((lr0 + 1)) 5 || it_fail "the direct connection was not counted"

# Pod to pod on the same node: not intercepted (only the other nodes' pod
# CIDRs are), so node A's daemon takes nothing.
serve_in "$NS_PA2" pa2.log
read -r acc0 < <(it_stat flows.accepted)
out=$(pa_run --connect "$PA2:$SPORT" --flows 10 --size 64KiB) || it_fail "same-node pods: $out"
read -r acc1 < <(it_stat flows.accepted)
it_eq "same-node pod connections taken" "$((acc1 - acc0))" 0

# A pod address node B does not serve: node B declines each open
# (refused.destinations), node A carries the flows over TCP directly.
read -r dref < <(it_peer_stat refused.destinations)
read -r tcp3 < <(it_stat flows.closed.tcp)
out=$(pa_run --connect "$PX:$SPORT" --flows 5 --size 64KiB --timeout 30) ||
	it_fail "pod to a pod node B does not serve: $out"
read -r dref2 < <(it_peer_stat refused.destinations)
read -r tcp4 < <(it_stat flows.closed.tcp)
it_eq "node B's refused.destinations for an address outside serve" "$((dref2 - dref))" 5
it_eq "node A's TCP flows to it" "$((tcp4 - tcp3))" 5

# Rules removed: pods talk directly, the daemons take nothing more.
ip netns exec "$NS_C" "$HELPER" tproxy del --port "$SPORT" --dest 10.244.2.0/24 \
	--dest 10.244.3.0/24 --dest fd44:2::/64 --dest "$PH/32" >/dev/null ||
	it_fail "tproxy del on node A"
ip netns exec "$NS_S" "$HELPER" tproxy del --all >/dev/null || it_fail "tproxy del --all on node B"
for ns in "$NS_C" "$NS_S"; do
	left=$(for t in mangle nat; do
		ip netns exec "$ns" iptables -t $t -S
		ip netns exec "$ns" ip6tables -t $t -S
	done | grep -c SMCPROXY_TP)
	[ "$left" -eq 0 ] || it_fail "tproxy rules left on $ns"
	ip -n "$ns" rule list | grep -q "lookup 5460" && it_fail "policy rule left on $ns"
	ip -n "$ns" -6 rule list | grep -q "lookup 5460" && it_fail "IPv6 policy rule left on $ns"
done
read -r acc < <(it_stat flows.accepted)
out=$(pa_run --connect "$PB:$SPORT" --flows 20 --size 64KiB) || it_fail "pods after tproxy del: $out"
out=$(pa_run --connect "[$PB6]:$SPORT" --flows 5 --size 64KiB) || it_fail "IPv6 pods after tproxy del: $out"
read -r acc2 < <(it_stat flows.accepted)
it_eq "connections taken after tproxy del" "$((acc2 - acc))" 0
it_pass
