#!/bin/bash
# Guards graceful shutdown: on SIGTERM the daemon stops accepting (new connections are refused) while an active flow finishes with every byte intact, then exits 0.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_relay shutdown='{"drain_timeout": "20s"}'

# One flow, 16 MiB each way at 2 MiB/s: about 8 s, so that it is still
# mid-way at SIGTERM when a loaded machine (or TSan) makes the stats poll
# below take seconds (a 3 s flow once ended before the signal came).
it_run --flows 1 --size 16MiB --rate 2MiB --seed 31 --timeout 40 >"$IT_DIR/client.log" 2>&1 &
client=$!
IT_PIDS+=("$client")
it_wait_stat flows.active.tcp -eq 1 5 || it_fail "the flow did not start"
sleep 0.5
kill -TERM "$DAEMON_PID"
sleep 0.3
kill -0 "$DAEMON_PID" 2>/dev/null || it_fail "the daemon exited at once instead of draining"

it_probe --connect "$S4:$SPORT" --expect refused,reset,eof --within 2000 ||
	it_fail "a new connection was not refused while draining"
kill -0 "$DAEMON_PID" 2>/dev/null || it_fail "the daemon exited before the flow was done"

wait "$client"
rc=$?
sed 's/^/  /' "$IT_DIR/client.log"
[ $rc -eq 0 ] || it_fail "the draining flow did not complete intact"

# The last flow is done: the daemon should be gone well before the 20 s.
it_daemon_stop 5
rc=$?
[ $rc -ne 124 ] || it_fail "the daemon did not exit within 5 s of its last flow"
[ $rc -eq 0 ] || it_fail "the daemon exited with status $rc after SIGTERM"
it_pass "flow drained intact, new connection refused, exit 0"
