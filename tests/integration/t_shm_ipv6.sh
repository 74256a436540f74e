#!/bin/bash
# Guards the dual-stack control port: with control "[::]:PORT" one port takes proposals over IPv6 and over IPv4 (whose peers arrive v4-mapped and must still match their IPv4 prefix), so IPv6 and IPv4 flows both go over shm.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_shm workers=1 control="\"[::]:$CPORT\""

it_run_ok v6 "IPv6 flows over shm failed" --connect "[$S6]:$SPORT" \
	--flows 20 --concurrency 20 --max-size 512KiB --seed 61 --timeout 30
it_run_ok v4 "IPv4 flows over shm failed" \
	--flows 20 --concurrency 20 --max-size 512KiB --seed 62 --timeout 30
read -r shm tcp hs < <(it_stat flows.closed.shm flows.closed.tcp lgr.handshakes | tr '\n' ' ')
read -r acc refused < <(it_peer_stat lgr.accepted refused.proposals | tr '\n' ' ')
echo "  client daemon: closed.shm $shm closed.tcp $tcp handshakes $hs; peer: accepted $acc refused $refused"
[ "$tcp" -eq 0 ] || it_fail "$tcp flows fell back to tcp"
[ "$shm" -eq 40 ] || it_fail "flows.closed.shm is $shm, expected 40"
[ "$acc" -eq 2 ] || it_fail "the peer accepted $acc link groups, expected 2 (one per family)"
[ "$refused" -eq 0 ] || it_fail "the peer refused $refused proposals"
it_server_expect " 40 ok, 0 failed" "server side"
it_pass "IPv6 and IPv4 flows over shm through one dual-stack control port"
