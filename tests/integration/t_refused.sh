#!/bin/bash
# Guards outbound connect failures: a refused destination (closed port) and an unreachable one (no such host, fallback.connect_timeout 500ms) give the client a prompt RST and move connect_failures / connect_timeouts.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_relay fallback='{"connect_timeout": "500ms"}'

read -r f0 t0 < <(it_stat connect_failures connect_timeouts | tr '\n' ' ')

# Refused: nothing listens on the server host's CLOSED_PORT.
it_probe --connect "$S4:$CLOSED_PORT" --expect reset --within 2000 ||
	it_fail "refused IPv4 destination: no prompt reset"
it_probe --connect "[$S6]:$CLOSED_PORT" --expect reset --within 2000 ||
	it_fail "refused IPv6 destination: no prompt reset"
it_wait_stat connect_failures -ge $((f0 + 2)) 3 ||
	it_fail "connect_failures did not move by 2 (was $f0)"

# Unreachable: nobody answers ARP for NX4, so only the 500 ms timeout ends
# the attempt (the kernel would give up after about 3 s).
it_probe --connect "$NX4:$SPORT" --expect reset --within 2000 ||
	it_fail "unreachable destination: no reset within 2 s (connect_timeout 500ms)"
it_wait_stat connect_timeouts -ge $((t0 + 1)) 3 ||
	it_fail "connect_timeouts did not move (was $t0)"

# The daemon still relays after the failures.
it_run --flows 5 --max-size 64KiB --timeout 20 >/dev/null ||
	it_fail "flows fail after the connect failures"
it_wait_stat flows.active.tcp -eq 0 5 || it_fail "failed flows stay active"
read -r f1 t1 < <(it_stat connect_failures connect_timeouts | tr '\n' ' ')
it_pass "connect_failures $f0 -> $f1, connect_timeouts $t0 -> $t1"
