#!/bin/bash
# Guards a fixed bug (the shm rendezvous admitted a hello on the link group id alone, which crosses the network in clear in the ACCEPT) (man/smcproxy-protocol.7, Authentication and SHM TRANSPORT): with auth.psk_file, a hello that names a group in rendezvous but does not prove the group's secret is refused and counted, the group still comes up for its real peer, and daemons that share the secret carry flows over shm.
. "$(dirname "$0")/lib.sh"
it_init "$@"

auth=$(it_psk psk) || it_fail "cannot write $IT_DIR/psk"
it_setup_shm_split auth="$auth" -- auth="$auth"

# The handshake with the right secret, then a hello without the proof.
read -r auth0 acc0 < <(it_peer_stat refused.auth lgr.accepted | tr '\n' ' ')
out=$(it_smcpeer_c propose --connect "$S4:$CPORT" --psk "$IT_DIR/psk" --rv-no-proof)
echo "  hello with the group id but no proof: $out"
case $out in
closed | timeout) ;;
*) it_fail "a rendezvous hello without the group secret got '$out'" ;;
esac
read -r auth1 acc1 < <(it_peer_stat refused.auth lgr.accepted | tr '\n' ' ')
it_eq "peer refused.auth for the unproven hello" $((auth1 - auth0)) 1
it_eq "peer link groups accepted from it" $((acc1 - acc0)) 0

# The same with the proof: the group comes up.
out=$(it_smcpeer_c propose --connect "$S4:$CPORT" --psk "$IT_DIR/psk")
echo "  hello with the proof: $out"
[ "$out" = established ] || it_fail "a rendezvous hello with the group secret got '$out'"

it_run_ok flows "flows between daemons that share the secret" --flows 8 --max-size 256KiB
read -r shm < <(it_stat flows.closed.shm)
it_eq "client flows.closed.shm" "$shm" 8

it_pass "a hello without the group secret is refused; with it the group comes up"
