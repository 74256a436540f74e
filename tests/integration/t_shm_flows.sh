#!/bin/bash
# Guards the SMC data plane over a same-host shm link group: 1000 concurrent flows with random sizes cross two daemons with the sha256 of every byte equal both ways, all in mode shm on one link group (no fallback), with byte counters equal to what moved on both daemons, and links/peers/flows views showing it.
. "$(dirname "$0")/lib.sh"
it_init "$@"
# 1000 flows on one group: 2 links of up to 500 flows, rings small enough
# that 1000 of them fit the pool on each side.
it_setup_shm workers=1 links='{"per_peer": 2, "max_flows_per_link": 500}' \
	buffers='{"ring": "64KiB", "pool": "128MiB"}'

# A held flow first: it shows in `flows` as shm, and brings the group up.
"${IT_APP[@]}" "$FLOWCHECK" hold --connect "$S4:$SPORT" --count 1 --seconds 30 \
	>/dev/null 2>&1 &
hold=$!
IT_PIDS+=("$hold")
it_wait_stat flows.active.shm -eq 1 5 || it_fail "the held flow is not on shm"
json=$(it_ctl --json flows) || it_fail "flows --json: $json"
grep -Eq '"mode": *"shm"' <<<"$json" && grep -Eq '"reason": *"none"' <<<"$json" ||
	it_fail "flows does not show the flow as shm: $json"
# An idle flow on its first rings: ring_initial's 16 KiB both ways.
grep -Eq '"rx_ring": *16384' <<<"$json" && grep -Eq '"tx_ring": *16384' <<<"$json" ||
	it_fail "flows does not show the held flow's 16 KiB rings: $json"
links=$(it_ctl --json links) || it_fail "links: $links"
[ "$(grep -c '"transport": *"shm"' <<<"$links")" -eq 2 ] ||
	it_fail "links does not show 2 shm links: $links"
peers=$(it_peer_ctl --json peers) || it_fail "peer's peers: $peers"
grep -Eq '"role": *"server"' <<<"$peers" && grep -Eq '"state": *"active"' <<<"$peers" ||
	it_fail "the peer daemon does not show an active server group: $peers"
it_ctl links | sed 's/^/  /'
kill "$hold" 2>/dev/null
wait "$hold" 2>/dev/null
it_wait_stat flows.active.shm -eq 0 5 || it_fail "the held flow did not end"

seed=${IT_SEED:-$$}
out=$(it_run --flows 1000 --concurrency 1000 --max-size 1MiB --seed "$seed" --timeout 100)
rc=$?
printf '%s\n' "$out" | grep -vE '^FAIL flow' | sed 's/^/  /'
printf '%s\n' "$out" | grep -E '^FAIL flow' | head -20
[ $rc -eq 0 ] || it_fail "flowcheck (seed $seed): $(printf '%s\n' "$out" | grep -E '^(flows|failures):' | tr '\n' ' ')"
read -r up down < <(printf '%s\n' "$out" | awk '/^bytes:/ { print $3, $5 }')

it_wait_stat flows.active.shm -eq 0 10 || it_fail "flows still active after every client finished"
SOCK=$PSOCK it_wait_stat flows.active.shm -eq 0 10 || it_fail "peer flows still active"
read -r cshm ctcp bin bout hs < <(it_stat flows.closed.shm flows.closed.tcp bytes.in bytes.out \
	lgr.handshakes | tr '\n' ' ')
read -r pshm pin pout acc < <(it_peer_stat flows.closed.shm bytes.in bytes.out lgr.accepted | tr '\n' ' ')
echo "  client daemon: closed.shm $cshm closed.tcp $ctcp bytes.in $bin bytes.out $bout handshakes $hs"
echo "  peer daemon:   closed.shm $pshm bytes.in $pin bytes.out $pout groups accepted $acc"
[ "$cshm" -eq 1001 ] || it_fail "client daemon: flows.closed.shm is $cshm, expected 1001"
[ "$ctcp" -eq 0 ] || it_fail "client daemon: $ctcp flows fell back to tcp"
[ "$pshm" -eq 1001 ] || it_fail "peer daemon: flows.closed.shm is $pshm, expected 1001"
[ "$hs" -eq 1 ] || it_fail "client daemon did $hs handshakes: flows must share one link group"
[ "$bin" -eq "$up" ] || it_fail "client daemon bytes.in is $bin, the clients sent $up"
[ "$bout" -eq "$down" ] || it_fail "client daemon bytes.out is $bout, the clients received $down"
[ "$pin" -eq "$up" ] || it_fail "peer daemon bytes.in is $pin, the clients sent $up"
[ "$pout" -eq "$down" ] || it_fail "peer daemon bytes.out is $pout, the clients received $down"

it_server_expect " 1000 ok, 0 failed, 1 aborted" "server side (the held flow ends aborted)"
it_pass "1000 flows over one shm link group, $((up >> 20)) MiB up, $((down >> 20)) MiB down, sha256 equal both ways"
