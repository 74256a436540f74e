#!/bin/bash
# Guards fd exhaustion (like libuv's test-emfile): with RLIMIT_NOFILE 96 and more connections than fds, the daemon pauses accepting instead of spinning, counts accept_pauses, and serves new flows once the fds are free again.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
it_redirect
it_server_start
it_config workers=1
# 96: the daemon's own fds (two event loops, the stats socket, pipes kept
# for reuse: about 20) leave room for the five concurrent flows of the
# recovery run, while 100 held flows need 200.
it_daemon_start prlimit --nofile=96:96 --

# 100 connections kept open: each relayed flow needs 2 fds, so the daemon
# runs out long before it has accepted them all.
# ip netns exec directly, not it_c: $! must be flowcheck itself.
"${IT_APP[@]}" "$FLOWCHECK" hold --connect "$S4:$SPORT" --count 100 --seconds 60 \
	>"$IT_DIR/hold.log" 2>&1 &
hold=$!
IT_PIDS+=("$hold")
it_wait_file "$IT_DIR/hold.log" '^hold: [0-9]+ connected' 10 || it_fail "hold did not connect"
sed 's/^/  /' "$IT_DIR/hold.log"
sleep 0.5
kill -0 "$DAEMON_PID" 2>/dev/null || it_fail "the daemon died at fd exhaustion"

c0=$(it_cpu_ticks "$DAEMON_PID")
sleep 2
c1=$(it_cpu_ticks "$DAEMON_PID")
ticks=$((c1 - c0))
hz=$(getconf CLK_TCK)
echo "  daemon CPU over 2 s at fd exhaustion: $ticks ticks (of $((2 * hz)))"
# A busy loop burns all 2 s; back-off polling costs a few ticks at most.
[ "$ticks" -le $((hz / 5)) ] || it_fail "the daemon spins at EMFILE: $ticks ticks of CPU in 2 s"

kill -TERM "$hold"
wait "$hold"
it_wait_stat flows.active.tcp -eq 0 15 || {
	it_ctl flows | head -20
	it_fail "held flows did not end after their clients closed"
}
pauses=$(it_stat accept_pauses)
echo "  accept_pauses: $pauses"
[ "$pauses" -gt 0 ] || it_fail "accept_pauses is 0 after fd exhaustion"

out=$(it_run --flows 20 --concurrency 5 --max-size 256KiB --seed 41 --timeout 30)
rc=$?
printf '%s\n' "$out" | sed 's/^/  /' | tail -4
[ $rc -eq 0 ] || it_fail "new flows fail after the fds were freed"
it_pass "no spin ($ticks ticks in 2 s), accept_pauses $pauses, recovered"
