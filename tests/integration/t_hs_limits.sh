#!/bin/bash
# Guards a fixed bug (with auth.psk_file the acceptor allocated a link group, its memfd and eventfds at PROPOSAL and judged the secret only at CONFIRM: 1,100 proposals without the key took 1,024 group slots and 4,000 fds and a peer holding the key was refused; silent connections were not limited per source address) (man/smcproxy-protocol.7, Authentication; smcproxyd(8), LINK GROUPS): proposals that claim the secret without proving it are declined at once, cost no fds, are counted and logged at a bounded rate, and a peer with the key still gets its link group; silent handshakes are limited per source address.
. "$(dirname "$0")/lib.sh"
it_init "$@"

auth=$(it_psk psk) || it_fail "cannot write $IT_DIR/psk"
it_setup_shm_split auth="$auth" -- auth="$auth"
it_run_ok before "flows between daemons that share the secret" --flows 2 --max-size 64KiB

fds0=$(ls /proc/"$PEER_PID"/fd | wc -l)
read -r auth0 < <(it_peer_stat refused.auth)

# ---------------------------------------------------------------------
# (a) 1,100 proposals that claim the secret with a MAC of zeros, all held
# open together; meanwhile the client daemon, which has the key, opens
# flows to the same peer.
(ulimit -n 8192; it_smcpeer_c flood --connect "$S4:$CPORT" --count 1100 --hold 3000 \
	>"$IT_DIR/flood.out" 2>"$IT_DIR/flood.err") &
flood=$!
sleep 1.5
fds1=$(ls /proc/"$PEER_PID"/fd | wc -l)
read -r shm0 < <(it_stat flows.closed.shm)
it_run_ok during "flows from the peer with the key during the flood" --flows 4 --max-size 64KiB
read -r shm1 < <(it_stat flows.closed.shm)
wait $flood || it_fail "smcpeer flood: $(cat "$IT_DIR/flood.err")"
out=$(cat "$IT_DIR/flood.out")
echo "  (a) flood of 1100 unproven proposals: $out"
echo "  (a) peer daemon fds: $fds0 before, $fds1 during the flood"
read -r _ acc _ pol _ mf _ _ _ _ _ cl _ none <<<"$out"
it_eq "(a) proposals without the key accepted" "$acc" 0
it_eq "(a) proposals without the key refused (policy or max_flows)" $((pol + mf)) 1100
[ $((fds1 - fds0)) -lt 64 ] ||
	it_fail "(a) the peer daemon held $((fds1 - fds0)) more fds during the flood"
read -r auth1 < <(it_peer_stat refused.auth)
it_eq "(a) peer refused.auth" $((auth1 - auth0)) "$pol"
it_eq "(a) client flows over shm during the flood" $((shm1 - shm0)) 4

# ---------------------------------------------------------------------
# (b) 40 silent connections from one address: each worker takes at most
# 8 handshakes in progress from it (2 workers), the rest are declined.
read -r hsr0 < <(it_peer_stat refused.handshakes)
out=$(it_smcpeer_c flood --connect "$S4:$CPORT" --count 40 --silent --hold 1000)
echo "  (b) 40 silent connections: $out"
read -r _ acc _ pol _ mf _ _ _ _ _ cl _ none <<<"$out"
[ "$none" -le 16 ] || it_fail "(b) $none silent handshakes from one address held at once"
[ "$mf" -ge 24 ] || it_fail "(b) only $mf silent connections declined as max_flows"
read -r hsr1 < <(it_peer_stat refused.handshakes)
it_eq "(b) peer refused.handshakes" $((hsr1 - hsr0)) "$mf"

# Once they are gone, the peer with the key is welcome again.
sleep 2.5
it_run_ok after "flows after the silent connections" --flows 2 --max-size 64KiB

# ---------------------------------------------------------------------
# (c) Every refusal was logged, at a bounded rate.
n=$(grep -c "refused peer" "$IT_DIR/peer.log")
echo "  (c) peer log: $n 'refused peer' lines, $(grep -c suppressed "$IT_DIR/peer.log") 'suppressed'"
[ "$n" -ge 1 ] || it_fail "(c) no refusal logged"
[ "$n" -le 60 ] || it_fail "(c) $n refusal lines: the log is not rate-limited"
grep -q "did not prove the auth.psk_file secret" "$IT_DIR/peer.log" ||
	it_fail "(c) no log line names the missing proof"

it_pass "unproven proposals are declined before allocating, silent handshakes are limited per address"
