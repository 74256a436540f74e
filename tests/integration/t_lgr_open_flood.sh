#!/bin/bash
# Guards a worker against a peer that floods flow opens (a peer with a link group made the worker dump the host's addresses, milliseconds each with hundreds of links, for every open to an address not its own, before the port policy: a legitimate peer's group failed and its held flows were reset, and the watchdog went unfed): on a host with 500 links, 8 hostile groups x 1,000 opens to addresses that are not the host's leave a legitimate peer's held flows intact, each hostile group that floods declined opens is failed and counted (refused.floods), and the worker's longest heartbeat gap stays well below links.dead_after (smcproxyd(8), LINK GROUPS).
# it-timeout: 240
. "$(dirname "$0")/lib.sh"
it_init "$@"

N_LINKS=500
N_HOSTILE=8
N_OPENS=1000
N_HELD=20
DEAD_AFTER_MS=5000

# The peer daemon has one worker, so that every group shares the loop the
# flood would stall, and the HTTP endpoint, whose heartbeat measures it.
MPORT=9464
it_hosts
it_redirect
it_server_start
# Hundreds of links on the server host, an address each: veth pairs
# (this kernel may have no dummy links), both ends in the host.
{
	for ((i = 0; i < N_LINKS / 2; i++)); do
		echo "link add xa$i type veth peer name xb$i"
		echo "addr add 10.77.$((i / 125)).$((2 * (i % 125) + 1))/32 dev xa$i"
		echo "addr add 10.77.$((i / 125)).$((2 * (i % 125) + 2))/32 dev xb$i"
		echo "link set xa$i up"
		echo "link set xb$i up"
	done
} >"$IT_DIR/links.batch"
ip -n "$NS_S" -batch "$IT_DIR/links.batch" || it_fail "cannot make $N_LINKS dummy links"
echo "  server host: $(ip -n "$NS_S" -o addr show | wc -l) addresses on $(ip -n "$NS_S" -o link show | wc -l) links"

it_shm_daemons workers=1 metrics="{\"listen\": \"127.0.0.1:$MPORT\"}" -- \
	links="{\"dead_after\": \"${DEAD_AFTER_MS}ms\"}"

# The legitimate peer: the client daemon's flows, answered once and held.
ip netns exec "$NS_C" "$FLOWCHECK" hold --connect "$S4:$SPORT" --count $N_HELD --seconds 120 \
	--exchange 256 >"$IT_DIR/hold.out" 2>&1 &
hold=$!
IT_PIDS+=("$hold")
it_wait_file "$IT_DIR/hold.out" '^hold: ([0-9]+ answered once|closed)' 30 ||
	it_fail "the held flows did not answer: $(cat "$IT_DIR/hold.out")"
grep -q "^hold: $N_HELD answered once, 0 failed" "$IT_DIR/hold.out" ||
	it_fail "first answers: $(grep answered "$IT_DIR/hold.out")"
it_eq "held flows on shm" "$(it_stat flows.active.shm)" $N_HELD

# The hostile peers: each its own group, opens to 10.88.x.y:SPORT (an
# allowed port, addresses nobody on the server host has), all at once.
pids=()
for ((h = 0; h < N_HOSTILE; h++)); do
	it_smcpeer_c opens --connect "$S4:$CPORT" --open "10.88.$h.1:$SPORT" --count $N_OPENS \
		--timeout 60000 >"$IT_DIR/hostile.$h" 2>"$IT_DIR/hostile.$h.err" &
	pids+=("$!")
done
for p in "${pids[@]}"; do
	wait "$p" || it_fail "smcpeer opens failed (status $?)"
done
n_closed=0
for ((h = 0; h < N_HOSTILE; h++)); do
	echo "  hostile $h: $(cat "$IT_DIR/hostile.$h")"
	# One whose handshake the daemon could not answer in time is not
	# the test's failure: what the legitimate peer saw is.
	grep -q '^opens sent' "$IT_DIR/hostile.$h" || continue
	grep -q ' accept 0 ' "$IT_DIR/hostile.$h" || it_fail "hostile $h: an open was accepted"
	grep -q ' closed$' "$IT_DIR/hostile.$h" && n_closed=$((n_closed + 1))
done

# The legitimate group is up, its flows answer again.
kill -USR1 "$hold"
wait "$hold"
rc=$?
grep answered "$IT_DIR/hold.out" | sed 's/^/  /'
# The worker's longest heartbeat gap, once a beat ran after the flood
# (every 250 ms with the HTTP endpoint on): a stall shows at the beat
# that follows it.
sleep 0.6
for ((i = 0; i < 50; i++)); do
	out=$(it_peer_ctl --json stats) || it_fail "the peer daemon does not answer: $out"
	read -r floods dest gap < <("$JGET" stats.refused.floods stats.refused.destinations \
		stats.per_worker.0.heartbeat_gap_max_ms <<<"$out" | tr '\n' ' ')
	[ "${gap:-0}" -gt 0 ] && break
	sleep 0.1
done
[ "${gap:-0}" -gt 0 ] || it_fail "the peer daemon's worker measured no heartbeat gap"
read -r cfail creset < <(it_stat lgr.failures lgr.flows_reset | tr '\n' ' ')
echo "  peer daemon: refused.floods $floods, refused.destinations $dest, longest heartbeat gap ${gap} ms"
echo "  client daemon: lgr.failures $cfail, lgr.flows_reset $creset"
[ $rc -eq 0 ] && grep -q "^hold: $N_HELD answered twice, 0 failed" "$IT_DIR/hold.out" ||
	it_fail "the legitimate peer's held flows did not survive the flood (status $rc): $(grep answered "$IT_DIR/hold.out" | tail -1)"
it_eq "client lgr.failures" "$cfail" 0
it_eq "client lgr.flows_reset" "$creset" 0
# A flood of declined opens fails its group, counted once per group.
[ "$n_closed" -ge 1 ] || it_fail "no hostile group was failed for its flood"
it_eq "peer refused.floods (one per hostile group failed)" "$floods" "$n_closed"
# The bound is links.dead_after, which the legitimate peer holds us to
# (generous on a loaded machine: the heartbeat runs every 250 ms); the
# flood took seconds of one loop turn before, past it.
[ -n "$gap" ] && [ "$gap" -lt "$DEAD_AFTER_MS" ] ||
	it_fail "the worker's longest heartbeat gap is ${gap:-?} ms (links.dead_after ${DEAD_AFTER_MS} ms)"
it_pass "$N_HOSTILE x $N_OPENS hostile opens on a host with $N_LINKS links: $n_closed hostile groups failed for flooding, $N_HELD held flows intact, longest heartbeat gap $gap ms"
