#!/bin/bash
# Guards the orderly stop over rdma: daemon B stopped with SIGTERM posts DELETE_LINK on both links of its group and waits for the sends to complete before its queue pairs go, and daemon A closes the group at info level, counted in lgr.peer_closes, with no failure, no failover and no bad message; the flow B's drain left is reset by B's ABORT saying it stops, counted by A in lgr.flows_reset_peer_stopped, not lgr.flows_reset.
. "$(dirname "$0")/lib.sh"
rt_init "$@"
rt_setup links='{"per_peer": 2}' shutdown='{"drain_timeout": "1s"}'

rt_run_ok warm "flows over rdma failed" --flows 4 --concurrency 4 --max-size 64KiB --seed 81 --timeout 120
rt_eq "daemon A: flows.closed.rdma" "$(rt_stat A flows.closed.rdma)" 4
rt_eq "daemon A: lgr.handshakes" "$(rt_stat A lgr.handshakes)" 1
# One flow held across the stop: B's drain gives up on it after
# drain_timeout and resets it.
"$FLOWCHECK" hold --connect "$ADDR:$SPORT" --count 1 --seconds 60 >/dev/null 2>&1 &
RT_PIDS+=($!)
rt_wait_stat A flows.active.rdma -eq 1 20 || rt_fail "the held flow is not on rdma"

rt_stop B 30 || rt_fail "daemon B did not stop cleanly (status $?)"
rt_wait_stat A lgr.peer_closes -ge 1 20 || { rt_diag; rt_fail "daemon A did not close the group as an orderly stop"; }
read -r closes fails fo bad < <(rt_stat A lgr.peer_closes lgr.failures lgr.link_failovers \
	refused.bad_messages | tr '\n' ' ')
echo "  daemon A: peer_closes $closes failures $fails link_failovers $fo bad_messages $bad"
rt_eq "daemon A: lgr.peer_closes" "$closes" 1
rt_eq "daemon A: lgr.failures" "$fails" 0
rt_eq "daemon A: lgr.link_failovers" "$fo" 0
rt_eq "daemon A: refused.bad_messages" "$bad" 0
rt_wait_stat A lgr.flows_reset_peer_stopped -eq 1 10 ||
	rt_fail "daemon A did not count the held flow as reset by B's stop"
rt_eq "daemon A: lgr.flows_reset" "$(rt_stat A lgr.flows_reset)" 0
grep -q 'info: .*link group to .* closed: the peer daemon stopped' "$RT_DIR/A.log" ||
	rt_fail "daemon A logged no info line for the orderly close"
grep -q 'info: .*link group from .* closed: this daemon stops (the peer was told)' "$RT_DIR/B.log" ||
	rt_fail "daemon B does not say it told its peer"
if grep -E 'warning: .*link group' "$RT_DIR/A.log"; then
	rt_fail "daemon A logged the orderly stop as a failure"
fi
rt_pass "B's stop closed A's group at info: 1 orderly close, 0 failures, 0 failovers, its drain's reset counted as B's stop"
