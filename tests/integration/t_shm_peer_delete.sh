#!/bin/bash
# Guards the orderly stop: a peer daemon that stops (SIGTERM, drain) tells us with DELETE_LINK, and we close its link groups at info level, counted in lgr.peer_closes and not as failures, the flows it left open reset with a reason of their own (its drain's ABORT says it stops: lgr.flows_reset_peer_stopped, not lgr.flows_reset); a peer killed without a word (SIGKILL) still fails its groups, with the warning, counted in lgr.failures.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_shm shutdown='{"drain_timeout": "1s"}'

# Groups on both workers, idle: each worker that carried a flow has one.
it_run_ok warm "flows over shm failed" --flows 16 --concurrency 16 --max-size 64KiB --seed 51 --timeout 30
groups=$(it_stat lgr.handshakes)
[ "$groups" -ge 1 ] || it_fail "no link group came up"
it_eq "flows.closed.shm" "$(it_stat flows.closed.shm)" 16
# One flow held open across the stop: the peer's drain gives up on it
# after drain_timeout and resets it.
it_c "$FLOWCHECK" hold --connect "$S4:$SPORT" --count 1 --seconds 60 >"$IT_DIR/hold.out" 2>&1 &
hold=$!
IT_PIDS+=("$hold")
it_wait_stat flows.active.shm -eq 1 5 || it_fail "the held flow is not on shm"
reset0=$(it_stat lgr.flows_reset)

it_peer_stop 15 || it_fail "the peer daemon did not stop cleanly (status $?)"
it_wait_stat lgr.peer_closes -ge "$groups" 5 || it_fail "the peer's groups were not closed as an orderly stop"
read -r closes fails < <(it_stat lgr.peer_closes lgr.failures | tr '\n' ' ')
echo "  peer stopped: $closes groups closed orderly, $fails failures"
it_eq "lgr.peer_closes" "$closes" "$groups"
it_eq "lgr.failures" "$fails" 0
prom=$(it_ctl --prometheus stats) || it_fail "stats --prometheus: $prom"
grep -qx "smcproxy_lgr_peer_closes $groups" <<<"$prom" && grep -qx 'smcproxy_lgr_failures 0' <<<"$prom" ||
	it_fail "Prometheus does not show the orderly closes: $(grep '^smcproxy_lgr_' <<<"$prom")"
it_wait_stat flows.active.shm -eq 0 5 || it_fail "the held flow stays open after the peer stopped"
# The held flow was reset by the peer's stop (its drain's ABORT says so),
# not as after a failure nor as its application's reset.
it_wait_stat lgr.flows_reset_peer_stopped -eq 1 5 ||
	it_fail "lgr.flows_reset_peer_stopped is $(it_stat lgr.flows_reset_peer_stopped), expected 1 (the held flow)"
it_eq "lgr.flows_reset" "$(it_stat lgr.flows_reset)" "$reset0"
grep -q 'info: .*link group to .* closed: the peer daemon stopped' "$IT_DIR/daemon.log" ||
	it_fail "no info line for the orderly close"
grep -q 'info: .*link group from .* closed: this daemon stops (the peer was told)' "$IT_DIR/peer.log" ||
	it_fail "the stopping daemon does not say it told its peer"
grep -E 'warning: .*link group .* failed' "$IT_DIR/daemon.log" &&
	it_fail "an orderly stop was logged as a failure"
grep -q 'bad_messages\|protocol error' "$IT_DIR/daemon.log" && it_fail "the DELETE_LINK was taken as a protocol error"
it_eq "refused.bad_messages" "$(it_stat refused.bad_messages)" 0

# A peer that vanishes without a word: a failure, with its warning.
it_peer_start
sleep 1.1	# any negative entry expires (fallback.negative_ttl is 30 s: none was made)
it_run_ok again "flows over shm failed after the peer came back" \
	--flows 16 --concurrency 16 --max-size 64KiB --seed 52 --timeout 30
groups=$(($(it_stat lgr.handshakes) - groups))
[ "$groups" -ge 1 ] || it_fail "no new link group came up"
kill -KILL "$PEER_PID"
wait "$PEER_PID" 2>/dev/null
PEER_PID=
it_wait_stat lgr.failures -ge "$groups" 5 || it_fail "the killed peer's groups did not fail"
it_eq "lgr.peer_closes" "$(it_stat lgr.peer_closes)" "$closes"
grep -qE 'warning: .*link group to .* failed: Connection reset by peer' "$IT_DIR/daemon.log" ||
	it_fail "no warning for the killed peer"

# Our own stop, seen from the peer: the flow our drain resets is counted
# there as reset by our stop (our group's ACCEPT said the peer takes it).
it_peer_start
sleep 1.1
it_run_ok third "flows over shm failed after the peer came back again" \
	--flows 4 --concurrency 4 --max-size 64KiB --seed 53 --timeout 30
it_c "$FLOWCHECK" hold --connect "$S4:$SPORT" --count 1 --seconds 60 >"$IT_DIR/hold2.out" 2>&1 &
IT_PIDS+=($!)
it_wait_stat flows.active.shm -eq 1 5 || it_fail "the second held flow is not on shm"
it_daemon_stop 15 || it_fail "smcproxyd did not stop cleanly (status $?)"
SOCK=$PSOCK it_wait_stat lgr.flows_reset_peer_stopped -eq 1 5 ||
	it_fail "the peer counts $(it_peer_stat lgr.flows_reset_peer_stopped) flows reset by our stop, expected 1"
read -r pfails preset < <(it_peer_stat lgr.failures lgr.flows_reset | tr '\n' ' ')
it_eq "the peer's lgr.failures" "$pfails" 0
it_eq "the peer's lgr.flows_reset" "$preset" 0
it_pass "stop: $closes groups closed at info, 0 failures; kill -9: $groups failed with a warning; our stop's reset counted by the peer"
