#!/bin/bash
# Guards the decline of a draining peer (it was "internal", so a rolling restart of the peer read as a fault): flows opened over a link group while the peer daemon drains after SIGTERM are declined with reason stopping, counted here as fallback.stopping and declines_received.stopping and there as declines_sent.stopping, never as internal, go over TCP intact, and the group stays up (no protocol error) until the peer's orderly stop closes it.
. "$(dirname "$0")/lib.sh"
it_init "$@"
# One worker each: one link group, so that every flow opened during the
# drain goes to it (a worker without a group would find the peer's
# control port closed: peer_unreachable, not what this test is about).
it_setup_shm workers=1 shutdown='{"drain_timeout": "60s"}'

it_run_ok warm "flows over shm failed" --flows 8 --concurrency 8 --max-size 64KiB --seed 61 --timeout 30
it_eq "lgr.handshakes" "$(it_stat lgr.handshakes)" 1
it_eq "flows.closed.shm" "$(it_stat flows.closed.shm)" 8
# One flow held open keeps the peer draining until it ends.
it_c "$FLOWCHECK" hold --connect "$S4:$SPORT" --count 1 --seconds 60 >"$IT_DIR/hold.out" 2>&1 &
hold=$!
IT_PIDS+=("$hold")
it_wait_stat flows.active.shm -eq 1 5 || it_fail "the held flow is not on shm"
read -r stop0 int0 tcp0 < <(it_stat fallback.stopping fallback.internal flows.closed.tcp | tr '\n' ' ')

kill -TERM "$PEER_PID"
for ((i = 0; i < 100; i++)); do
	grep -q 'stopping: draining 1 flows' "$IT_DIR/peer.log" && break
	sleep 0.1
done
grep -q 'stopping: draining 1 flows' "$IT_DIR/peer.log" || it_fail "the peer does not say it drains its held flow"

n=16
it_run_ok draining "flows opened while the peer drains failed" \
	--flows $n --concurrency 8 --max-size 256KiB --seed 62 --timeout 30
it_wait_stat flows.closed.tcp -eq $((tcp0 + n)) 5 || it_fail "the flows opened during the drain did not go over TCP"
read -r stop int recv recv_int < <(it_stat fallback.stopping fallback.internal \
	declines_received.stopping declines_received.internal | tr '\n' ' ')
read -r sent sent_int < <(it_peer_stat declines_sent.stopping declines_sent.internal | tr '\n' ' ')
echo "  during the drain: $((stop - stop0)) fallbacks stopping, $((int - int0)) internal; the peer sent $sent stopping, $sent_int internal"
it_eq "fallback.stopping" $((stop - stop0)) $n
it_eq "fallback.internal" $((int - int0)) 0
it_eq "declines_received.stopping" "$recv" $n
it_eq "declines_received.internal" "$recv_int" 0
it_eq "the peer's declines_sent.stopping" "$sent" $n
it_eq "the peer's declines_sent.internal" "$sent_int" 0
prom=$(it_ctl --prometheus stats) || it_fail "stats --prometheus: $prom"
grep -qx "smcproxy_fallbacks_total{reason=\"stopping\"} $n" <<<"$prom" &&
	grep -qx 'smcproxy_fallbacks_total{reason="internal"} 0' <<<"$prom" ||
	it_fail "Prometheus does not show the stopping fallbacks: $(grep '^smcproxy_fallbacks_total' <<<"$prom")"
it_ctl stats | grep -qE '^stopping +'"$n"'$' ||
	it_fail "smcproxyctl stats shows no row 'stopping $n': $(it_ctl stats | grep -i -A12 'fallback reason')"
read -r bad fails < <(it_stat refused.bad_messages lgr.failures | tr '\n' ' ')
it_eq "refused.bad_messages" "$bad" 0
it_eq "lgr.failures" "$fails" 0
it_eq "flows.active.shm (the held flow)" "$(it_stat flows.active.shm)" 1

# The held flow ends: the peer's drain is done, it stops in order.
kill -TERM "$hold" 2>/dev/null
wait "$hold" 2>/dev/null
it_peer_stop 15 || it_fail "the peer daemon did not stop cleanly (status $?)"
it_wait_stat lgr.peer_closes -eq 1 5 || it_fail "the peer's group was not closed as an orderly stop"
it_eq "lgr.failures" "$(it_stat lgr.failures)" 0
it_pass "$n flows opened during the peer's drain: declined stopping, over TCP intact, none internal"
