#!/bin/bash
# Guards the timeouts for slow and half-open peers: relay.idle_timeout
# resets a flow that moved nothing for that long (and counts it), while a
# busy flow outlives it; relay.keepalive finds a destination that vanished
# without a word (its host drops everything) and resets the client.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_relay relay='{"idle_timeout": "700ms", "keepalive": "1s"}'

# A flow that keeps moving (1 MiB at 256 KiB/s, 4 s) is never idle.
it_run --flows 1 --size 1MiB --rate 262144 --seed 31 --timeout 20 >"$IT_DIR/busy.out" 2>&1 &
busy=$!

# An idle connection is reset after ~700 ms.
it_probe --connect "$S4:$SPORT" --expect reset --within 3000 ||
	it_fail "an idle flow was not reset by relay.idle_timeout"
[ "$(it_stat idle_timeouts)" -ge 1 ] || it_fail "idle_timeouts did not count it"
wait "$busy" || it_fail "a busy flow was cut by the idle timeout: $(cat "$IT_DIR/busy.out")"

# Half-open destination: no idle timeout now, only keepalive.
it_config relay='{"idle_timeout": "0", "keepalive": "1s"}'
it_ctl reload >/dev/null || it_fail "reload failed"
"${IT_APP[@]}" "$FLOWCHECK" hold --connect "$S4:$SPORT" --count 1 --seconds 30 >"$IT_DIR/hold.out" 2>&1 &
hold=$!
IT_PIDS+=("$hold")
it_wait_stat flows.active.tcp -eq 1 5 || it_fail "the held flow did not start"
resets_before=$(it_stat resets)
# The server host goes silent: no RST, no FIN, nothing.
it_s iptables -A INPUT -p tcp --dport "$SPORT" -j DROP
t0=$(date +%s)
# idle 1 s + 4 probes 1 s apart: about 5 s.
it_wait_stat flows.active.tcp -eq 0 15 || it_fail "keepalive did not end the half-open flow"
t=$(($(date +%s) - t0))
[ "$(it_stat resets)" -gt "$resets_before" ] || it_fail "the half-open flow did not end in a reset"
kill "$hold" 2>/dev/null
it_pass "idle flow reset, busy flow intact, half-open destination detected in ${t}s"
