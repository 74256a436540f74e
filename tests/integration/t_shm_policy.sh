#!/bin/bash
# Guards the rule that the control port is not an open relay, and (d) the destination policy (a fixed bug: a FLOW_OPEN reached a port the server host's firewall drops, coming from the host itself) (smcproxyd(8), LINK GROUPS; man/smcproxy-protocol.7, Authentication): proposals from outside the peer prefixes, or without the shared secret, are declined with policy and counted (the flows go over TCP, bytes intact), and a peer inside the prefix can open flows only to the acceptor host's own addresses: never loopback, another host, or the acceptor's redirect listener.
. "$(dirname "$0")/lib.sh"
it_init "$@"

DS_POLICY='declines_sent.policy|stats.declines.sent.policy'
DR_POLICY='declines_received.policy|stats.declines.received.policy'
LO_PORT=9002		# a service on the server host's loopback only
FW_PORT=9003		# a service the server host's firewall closes to the network

# ---------------------------------------------------------------------
# (a) The peer daemon's prefixes leave the client host out. (Its control
# port is IPv4, as the default "0.0.0.0:7002": IPv4 flows only.)
it_setup_shm_split peers='[{"prefix": "10.66.1.128/25"}, {"prefix": "fd66::8000/113"}]' --

out=$(it_smcpeer_c propose --connect "$S4:$CPORT")
echo "  (a) smcpeer from $C4: $out"
[ "$out" = "declined-handshake policy" ] ||
	it_fail "a proposal from outside the peer prefixes got '$out', not a policy decline"
it_run_ok a4 "flows to a peer that refuses us must go over TCP intact" --flows 4 --max-size 64KiB
read -r ctcp cshm cfb crecv < <(it_stat flows.closed.tcp flows.closed.shm fallback.policy \
	"$DR_POLICY" | tr '\n' ' ')
read -r prefused psent pacc < <(it_peer_stat refused.proposals "$DS_POLICY" lgr.accepted |
	tr '\n' ' ')
echo "  (a) client daemon: closed.tcp $ctcp closed.shm $cshm fallback.policy $cfb declines received (policy) $crecv"
echo "  (a) peer daemon: proposals refused $prefused, policy declines sent $psent, groups accepted $pacc"
it_eq "(a) client flows.closed.tcp" "$ctcp" 4
it_eq "(a) client flows.closed.shm" "$cshm" 0
it_eq "(a) client fallback.policy" "$cfb" 4
# One proposal per worker that had a flow (each keeps its own groups).
[ "$crecv" -ge 1 ] || it_fail "(a) the client daemon received no policy decline"
it_eq "(a) peer refused.proposals (the client daemon's and smcpeer's)" "$prefused" $((crecv + 1))
it_eq "(a) peer policy declines sent" "$psent" "$prefused"
it_eq "(a) peer groups accepted" "$pacc" 0

# ---------------------------------------------------------------------
# (b) auth.psk_file: the same secret on both daemons, then different ones.
auth_a=$(it_psk psk-a) || it_fail "cannot write $IT_DIR/psk-a"
auth_b=$(it_psk psk-b) || it_fail "cannot write $IT_DIR/psk-b"

# (b0) a secret other users can read is refused at
# start, as ssh refuses such a key.
chmod 644 "$IT_DIR/psk-a"
it_daemon_stop || it_fail "smcproxyd did not stop cleanly (status $?)"
it_peer_stop || it_fail "the peer smcproxyd did not stop cleanly (status $?)"
it_peer_config transport='"auto"' control="\"0.0.0.0:$CPORT\"" \
	peers="[{\"prefix\": \"$C4/32\", \"allow\": $ALLOW}]" auth="$auth_a"
timeout 10 ip netns exec "$NS_S" "$SMCPROXYD" -c "$PEER_CFG" --foreground >"$IT_DIR/psk644.log" 2>&1
rc=$?
echo "  (b0) psk file mode 644: exit $rc: $(grep -m1 psk_file "$IT_DIR/psk644.log")"
[ $rc -ne 0 ] && [ $rc -ne 124 ] || it_fail "(b0) the daemon started with a psk file others can read (exit $rc)"
grep -q "no other user can read" "$IT_DIR/psk644.log" ||
	it_fail "(b0) no clear error for the psk file: $(cat "$IT_DIR/psk644.log")"
chmod 600 "$IT_DIR/psk-a" "$IT_DIR/psk-b"
it_shm_daemons --

it_shm_daemons_restart auth="$auth_a" -- auth="$auth_a"
it_run_ok b1 "flows between daemons with the same secret" --flows 4 --max-size 64KiB
read -r cshm ctcp cauth < <(it_stat flows.closed.shm flows.closed.tcp refused.auth | tr '\n' ' ')
echo "  (b) same secret: client closed.shm $cshm closed.tcp $ctcp auth failures $cauth"
it_eq "(b) same secret: client flows.closed.shm" "$cshm" 4
it_eq "(b) same secret: client flows.closed.tcp" "$ctcp" 0
it_eq "(b) same secret: client auth failures" "$cauth" 0

# smcpeer as a third proposer: the right secret, none, a wrong one. The
# peer daemon is the side that checks in the last two.
for psk in a none b; do
	args=()
	[ $psk = none ] || args=(--psk "$IT_DIR/psk-$psk")
	out=$(it_smcpeer_c propose --connect "$S4:$CPORT" "${args[@]}" 2>"$IT_DIR/smcpeer.err")
	echo "  (b) smcpeer with secret $psk: $out"
	case $psk in
	a) [ "$out" = established ] || it_fail "(b) smcpeer with the right secret got '$out'" ;;
	*) [ "$out" = "declined-handshake policy" ] ||
		it_fail "(b) smcpeer with secret $psk got '$out', not a policy decline" ;;
	esac
done
# The wrong secret is judged at the proposal, so
# smcpeer never sees an accept to check.
! grep -q "MAC does not verify" "$IT_DIR/smcpeer.err" ||
	it_fail "(b) the peer daemon accepted a proposal made with the wrong secret"
read -r pauth psent pacc < <(it_peer_stat refused.auth "$DS_POLICY" lgr.accepted | tr '\n' ' ')
echo "  (b) peer daemon: auth failures $pauth, policy declines sent $psent, groups accepted $pacc"
it_eq "(b) peer auth failures (no proof, wrong proof)" "$pauth" 2
it_eq "(b) peer policy declines sent" "$psent" 2

it_shm_daemons_restart auth="$auth_a" -- auth="$auth_b"
it_run_ok b2 "flows between daemons with different secrets must go over TCP intact" \
	--flows 4 --max-size 64KiB
read -r ctcp cshm cfb cauth crecv chs < <(it_stat flows.closed.tcp flows.closed.shm \
	fallback.policy refused.auth "$DR_POLICY" lgr.handshakes | tr '\n' ' ')
read -r pauth psent pacc < <(it_peer_stat refused.auth "$DS_POLICY" lgr.accepted | tr '\n' ' ')
echo "  (b) different secrets: client closed.tcp $ctcp closed.shm $cshm fallback.policy $cfb auth failures $cauth policy declines received $crecv"
echo "  (b) different secrets: peer auth failures $pauth policy declines sent $psent groups accepted $pacc"
it_eq "(b) different secrets: client flows.closed.tcp" "$ctcp" 4
it_eq "(b) different secrets: client flows.closed.shm" "$cshm" 0
it_eq "(b) different secrets: client fallback.policy" "$cfb" 4
# The acceptor judges the proposal's proof before anything else.
[ "$pauth" -ge 1 ] || it_fail "(b) the peer daemon, which checks the proposal MAC, counted no auth failure"
it_eq "(b) peer policy declines sent" "$psent" "$pauth"
it_eq "(b) client policy declines received" "$crecv" "$pauth"
it_eq "(b) client auth failures (it never judged a proof)" "$cauth" 0
it_eq "(b) client link groups up" "$chs" 0
it_eq "(b) peer groups accepted" "$pacc" 0

# ---------------------------------------------------------------------
# (c) Where a peer inside the prefix may open flows to. The peer daemon's
# redirect listener answers on every IPv4 address of its host and on its
# IPv6 address; a service on its loopback must stay out of reach.
# --verbose: the canary logs every connection it gets.
ip netns exec "$NS_S" "$FLOWCHECK" serve --verbose --listen "127.0.0.1:$LO_PORT" \
	>"$IT_DIR/lo.log" 2>&1 &
IT_PIDS+=("$!")
it_wait_file "$IT_DIR/lo.log" '^serve: listening' 5 || it_fail "loopback flowcheck did not start"
it_shm_daemons_restart listen="[\"0.0.0.0:$LPORT\", \"[$S6]:$LPORT\"]" --

# DEST EXPECTED: the server host's own addresses are served; loopback
# (IPv4, IPv6, v4-mapped), the unspecified addresses, other hosts (one on
# the link, the client itself) and the redirect listener are not.
checks=(
	"$S4:$SPORT accept"
	"[$S6]:$SPORT accept"
	"[::ffff:$S4]:$SPORT accept"
	"127.0.0.1:$LO_PORT policy"
	"127.1.2.3:$LO_PORT policy"
	"[::1]:$LO_PORT policy"
	"[::ffff:127.0.0.1]:$LO_PORT policy"
	"0.0.0.0:$LO_PORT policy"
	"[::]:$LO_PORT policy"
	"$NX4:$SPORT policy"
	"$C4:$SPORT policy"
	"[$C6]:$SPORT policy"
	"[fd66::99]:$SPORT policy"
	"$S4:$LPORT policy"
	"[$S6]:$LPORT policy"
)
args=()
for c in "${checks[@]}"; do
	args+=(--open "${c% *}")
done
mapfile -t got < <(it_smcpeer_c propose --connect "$S4:$CPORT" "${args[@]}")
[ ${#got[@]} -eq ${#checks[@]} ] ||
	it_fail "(c) smcpeer printed ${#got[@]} answers for ${#checks[@]} opens: ${got[*]}"
n_policy=0
for i in "${!checks[@]}"; do
	dest=${checks[$i]% *}
	want=${checks[$i]##* }
	printf '  (c) FLOW_OPEN %-24s %s\n' "$dest" "${got[$i]}"
	case $want in
	accept) [[ ${got[$i]} == "accept "* ]] || it_fail "(c) $dest: '${got[$i]}', expected accept" ;;
	*) [ "${got[$i]}" = "decline $want" ] || it_fail "(c) $dest: '${got[$i]}', expected decline $want"
	   n_policy=$((n_policy + 1)) ;;
	esac
done
read -r pdest psent < <(it_peer_stat refused.destinations "$DS_POLICY" | tr '\n' ' ')
echo "  (c) peer daemon: destinations refused $pdest, policy declines sent $psent"
it_eq "(c) peer refused.destinations" "$pdest" "$n_policy"
it_eq "(c) peer policy declines sent" "$psent" "$n_policy"

# Regression: destinations that slipped past the checks (a v4-mapped any
# address reached loopback-only services, a v4-mapped listener address,
# broadcast and multicast got "internal"), and the peer's control port.
hostile=(
	"[::ffff:0.0.0.0]:$LO_PORT"
	"[::ffff:$S4]:$LPORT"
	"10.66.1.255:$SPORT"
	"224.0.0.1:$SPORT"
	"$S4:$CPORT"
)
args=()
for d in "${hostile[@]}"; do
	args+=(--open "$d")
done
mapfile -t got < <(it_smcpeer_c propose --connect "$S4:$CPORT" "${args[@]}")
for i in "${!hostile[@]}"; do
	printf '  (c) FLOW_OPEN %-24s %s\n' "${hostile[$i]}" "${got[$i]:-}"
done
[ "${got[0]:-}" = "decline policy" ] ||
	it_fail "(c) [::ffff:0.0.0.0]:$LO_PORT (loopback through a v4-mapped any) must be declined with policy, got '${got[0]:-}'"
sleep 0.2
[ -z "$(grep -vE '^serve: listening' "$IT_DIR/lo.log")" ] ||
	it_fail "(c) a flow reached the loopback-only service: $(grep -vE '^serve: listening' "$IT_DIR/lo.log" | head -3)"
[ "${got[1]:-}" = "decline policy" ] ||
	it_fail "(c) [::ffff:$S4]:$LPORT (the redirect listener, v4-mapped) must be declined with policy, got '${got[1]:-}'"
[ "${got[2]:-}" = "decline policy" ] ||
	it_fail "(c) 10.66.1.255 (broadcast) must be declined with policy, got '${got[2]:-}'"
[ "${got[3]:-}" = "decline policy" ] ||
	it_fail "(c) 224.0.0.1 (multicast) must be declined with policy, got '${got[3]:-}'"
[ "${got[4]:-}" = "decline policy" ] ||
	it_fail "(c) $S4:$CPORT (the peer's own control port) must be declined with policy, got '${got[4]:-}'"
read -r pdest2 < <(it_peer_stat refused.destinations)
[ $((pdest2 - pdest)) -eq ${#hostile[@]} ] ||
	it_fail "(c) refused.destinations counted $((pdest2 - pdest)) of ${#hostile[@]}"

# The honest path is unharmed: the client daemon's flows go over shm.
it_run_ok c "flows through the client daemon after the hostile opens" --flows 4 --max-size 64KiB
read -r cshm ctcp < <(it_stat flows.closed.shm flows.closed.tcp | tr '\n' ' ')
it_eq "(c) client flows.closed.shm" "$cshm" 4
it_eq "(c) client flows.closed.tcp" "$ctcp" 0
it_ctl --json stats >/dev/null && it_peer_ctl --json stats >/dev/null ||
	it_fail "a daemon stopped answering"

# ---------------------------------------------------------------------
# (d) The destination policy: the peer daemon allows the client host
# SPORT only. A service on FW_PORT, which the server host's INPUT chain
# drops for packets from the network, must stay out of reach of a peer
# inside the prefix, as it is out of reach of a plain TCP client.
ip netns exec "$NS_S" "$FLOWCHECK" serve --verbose --listen "$S4:$FW_PORT" \
	>"$IT_DIR/fw.log" 2>&1 &
IT_PIDS+=("$!")
it_wait_file "$IT_DIR/fw.log" '^serve: listening' 5 || it_fail "firewalled flowcheck did not start"
it_s iptables -A INPUT -i veth1 -p tcp --dport "$FW_PORT" -j DROP || it_fail "iptables INPUT"
it_shm_daemons_restart \
	peers="[{\"prefix\": \"$C4/32\", \"allow\": [\"$SPORT\"]}, {\"prefix\": \"10.66.0.0/16\"}]" --
mapfile -t got < <(it_smcpeer_c propose --connect "$S4:$CPORT" --open "$S4:$SPORT" \
	--open "$S4:$FW_PORT" --open "$S4:$FW_PORT" --open "$S4:$CLOSED_PORT")
printf '  (d) FLOW_OPEN %s\n' "$S4:$SPORT ${got[0]:-}" "$S4:$FW_PORT ${got[1]:-}" \
	"$S4:$FW_PORT ${got[2]:-}" "$S4:$CLOSED_PORT ${got[3]:-}"
[[ ${got[0]:-} == "accept "* ]] || it_fail "(d) $S4:$SPORT is allowed, got '${got[0]:-}'"
for i in 1 2 3; do
	[ "${got[$i]:-}" = "decline policy" ] ||
		it_fail "(d) open $i to a port outside the allow list got '${got[$i]:-}', not a policy decline"
done
sleep 0.2
[ -z "$(grep -vE '^serve: listening' "$IT_DIR/fw.log")" ] ||
	it_fail "(d) a flow reached the firewalled service: $(grep -vE '^serve: listening' "$IT_DIR/fw.log" | head -3)"
out=$(it_peer_ctl --json stats) || it_fail "(d) peer stats: $out"
read -r pports pfw pclosed < <("$JGET" stats.refused.ports "stats.refused.by_port.$FW_PORT" \
	"stats.refused.by_port.$CLOSED_PORT" <<<"$out" | tr '\n' ' ')
echo "  (d) peer daemon: refused.ports $pports, by_port $FW_PORT: $pfw, $CLOSED_PORT: $pclosed"
it_eq "(d) peer refused.ports" "$pports" 3
it_eq "(d) peer refused.by_port.$FW_PORT" "$pfw" 2
it_eq "(d) peer refused.by_port.$CLOSED_PORT" "$pclosed" 1
# The longest prefix decides: the /16 without an allow list does not
# widen the /32's. The honest path to the allowed port is unharmed.
it_run_ok d "flows to the allowed port" --flows 4 --max-size 64KiB
read -r cshm ctcp < <(it_stat flows.closed.shm flows.closed.tcp | tr '\n' ' ')
it_eq "(d) client flows.closed.shm" "$cshm" 4
it_eq "(d) client flows.closed.tcp" "$ctcp" 0

# ---------------------------------------------------------------------
# (e) a reload that takes the client host out of the
# peer daemon's prefixes cuts it off at once: its link group is closed,
# and its next flows go over TCP.
read -r pfail0 < <(it_peer_stat lgr.failures)
out=$(it_peer_ctl --json peers)
grep -Eq '"state": *"active"' <<<"$out" || it_fail "(e) no active group before the reload: $out"
it_peer_config transport='"auto"' control="\"0.0.0.0:$CPORT\"" \
	peers='[{"prefix": "10.66.1.128/25", "allow": ["1024-65535"]}]'
out=$(it_peer_ctl reload 2>&1) || it_fail "(e) reload: $out"
sleep 0.3
out=$(it_peer_ctl --json peers)
read -r pfail1 < <(it_peer_stat lgr.failures)
echo "  (e) after the reload: peer lgr.failures $pfail0 -> $pfail1"
grep -Eq '"state": *"active"' <<<"$out" && it_fail "(e) the removed peer's group is still active: $out"
[ "$pfail1" -gt "$pfail0" ] || it_fail "(e) no link group failed at the reload"
it_run_ok e "flows after the peer was removed must go over TCP intact" --flows 2 --max-size 16KiB
read -r ctcp < <(it_stat flows.closed.tcp)
it_eq "(e) client flows.closed.tcp" "$ctcp" 2

it_pass "outsiders declined ($prefused proposals), PSK mismatch declined both ways, $n_policy forbidden destinations declined and counted, ports outside the allow list declined and counted by port, a removed peer cut off at reload"
