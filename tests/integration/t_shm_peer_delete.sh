#!/bin/bash
# Guards the orderly stop: a peer daemon that stops (SIGTERM, drain) tells us with DELETE_LINK, and we close its link groups at info level, counted in lgr.peer_closes and not as failures, resetting flows it left open; a peer killed without a word (SIGKILL) still fails its groups, with the warning, counted in lgr.failures.
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
read -r reset stop_reset < <(it_stat lgr.flows_reset lgr.flows_reset_peer_stopped | tr '\n' ' ')
[ $((reset + stop_reset)) -le $((reset0 + 1)) ] || it_fail "more flows reset than were open"
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
it_pass "stop: $closes groups closed at info, 0 failures; kill -9: $groups failed with a warning"
