#!/bin/bash
# Guards the fair ring budget: a peer holding the server daemon's whole buffers.pool with idle flows leaves a second peer rings for its flows (on the old code it got none and went over tcp); the shortage is logged once per episode with the budget that ran out, the peer above its share is the one refused, and stats and peers show the budget.
. "$(dirname "$0")/lib.sh"
it_init "$@"

# Three hosts: A (the usual client host), B (a second client host on its
# own veth to the server host, 10.66.2.0/24) and the server host with the
# daemon that accepts both peers' link groups. The server's pool is small,
# 4 MiB in one worker: 256 rings of 16 KiB, the last 32 kept for peers
# below their share.
it_setup_two_clients

# A holds 400 idle flows: more than the server's pool has rings.
it_hold_idle a "$NS_C" "$S4:$SPORT" 400 it_stat
hold_a=$HOLD_PID shm=$HOLD_SHM tcp=$HOLD_TCP
echo "  peer A: 400 idle flows, $shm on shm, $tcp on tcp"
[ $((shm + tcp)) -eq 400 ] || it_fail "A's held flows: $shm on shm, $tcp on tcp"
[ "$shm" -eq 224 ] || it_fail "A got $shm rings of the server's 256, wanted 224 (all but the reserve)"

# B comes later: its flows still get rings, from the reserve.
out=$(ip netns exec "$NS_B" "$FLOWCHECK" run --connect "$SB4:$SPORT" --flows 100 \
	--concurrency 20 --size 16KiB --timeout 60)
rc=$?
printf '%s\n' "$out" | grep -E '^flows:' | sed 's/^/  peer B: /'
[ $rc -eq 0 ] || it_fail "B's flows failed: $(printf '%s\n' "$out" | head -3)"
read -r bshm btcp < <(b_stat flows.closed.shm flows.closed.tcp | tr '\n' ' ')
echo "  peer B: closed.shm $bshm closed.tcp $btcp"
[ "$bshm" -eq 100 ] && [ "$btcp" -eq 0 ] ||
	it_fail "B's flows: $bshm on shm, $btcp on tcp; B's fallback: $(SOCK=$BSOCK it_ctl --json stats | tr -d '\n ' | grep -o '"fallback":{[^}]*}')"

# The server told the shortage once, naming the budget, not once per
# refused flow (176 of A's flows got no ring).
read -r refused shortages < <(it_peer_stat rings.refused rings.shortages | tr '\n' ' ')
echo "  server: rings refused $refused, shortages $shortages"
[ "$refused" -eq 176 ] || it_fail "rings.refused is $refused, wanted 176"
n=$(grep -c 'ring budget short' "$IT_DIR/peer.log")
[ "$n" -eq 1 ] || it_fail "'ring budget short' logged $n times: $(grep 'ring budget' "$IT_DIR/peer.log" | head -3)"
grep -q "ring budget short: peer 10.66.1.1 holds 3584 KiB, all of this worker's share of buffers.pool (4096 KiB) but the eighth kept for other peers" \
	"$IT_DIR/peer.log" ||
	it_fail "the log does not name the budget: $(grep 'ring budget' "$IT_DIR/peer.log" | head -1)"

# B holds 20 idle flows; A, above its share, is the one refused now.
ip netns exec "$NS_B" "$FLOWCHECK" hold --connect "$SB4:$SPORT" --count 20 --seconds 120 \
	>"$IT_DIR/hold_b.out" 2>&1 &
hold_b=$!
IT_PIDS+=("$hold_b")
for ((i = 0; i < 100; i++)); do
	[ "$(b_stat flows.active.shm)" -eq 20 ] && break
	sleep 0.1
done
[ "$(b_stat flows.active.shm)" -eq 20 ] || it_fail "B's held flows are not on shm"
it_run_ok "peer A" "A's flows next to the full pool failed" --flows 10 --concurrency 10 \
	--size 1KiB --timeout 30
share=$(it_peer_stat rings.refused_share)
[ "$share" -eq 10 ] || it_fail "rings.refused_share is $share, wanted A's 10 flows"
grep -q 'ring budget short: peer 10.66.1.1 holds 3584 KiB, above its fair share (2048 KiB' \
	"$IT_DIR/peer.log" || it_fail "the log does not say A is above its share: $(grep 'ring budget' "$IT_DIR/peer.log")"

# The budget in the stats and the peers view.
json=$(it_peer_ctl --json stats) || it_fail "stats: $json"
by=$(tr -d ' \n' <<<"$json" | grep -o '"by_size":{[^}]*}')
echo "  server rings by size: $by"
grep -q '"16KiB":{"used":244' <<<"$by" || it_fail "rings.by_size: $by"
peers=$(it_peer_ctl --json peers | tr -d ' \n') || it_fail "peers: $peers"
grep -q '"peer_ring_bytes":3670016' <<<"$peers" && grep -q '"peer_ring_bytes":327680' <<<"$peers" &&
	grep -q '"peer_share_bytes":2097152' <<<"$peers" && grep -q '"peer_groups":1' <<<"$peers" ||
	it_fail "peers does not show each peer's account: $peers"
it_peer_ctl peers | sed 's/^/  /'
it_peer_ctl stats | grep -A5 'ring size' | sed 's/^/  /'

# A's idle flows end: the episode ends, told once.
kill "$hold_a" "$hold_b" 2>/dev/null
wait "$hold_a" "$hold_b" 2>/dev/null
for ((i = 0; i < 100; i++)); do
	grep -q 'ring budget has room again' "$IT_DIR/peer.log" && break
	sleep 0.1
done
n=$(grep -c 'ring budget has room again' "$IT_DIR/peer.log")
[ "$n" -ge 1 ] || it_fail "the end of the shortage was not logged"
n=$(grep -c 'ring budget' "$IT_DIR/peer.log")
[ "$n" -le 4 ] || it_fail "the shortage was logged $n times"
it_pass "A held 224 of 256 rings, B still got rings for all its flows; 176 + 10 refusals, $n log lines"
