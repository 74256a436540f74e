#!/bin/bash
# Guards loop refusal: a connection made straight to the daemon's listener (not redirected) is closed and counted in loops_refused, for IPv4 and IPv6.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_relay

before=$(it_stat loops_refused) || it_fail "no loops_refused counter"
it_probe --connect "127.0.0.1:$LPORT" --expect reset,eof --within 2000 ||
	it_fail "direct IPv4 connection to the listener was not closed"
it_probe --connect "[::1]:$LPORT" --expect reset,eof --within 2000 ||
	it_fail "direct IPv6 connection to the listener was not closed"
it_wait_stat loops_refused -ge $((before + 2)) 3 ||
	it_fail "loops_refused did not move by 2 (was $before)"
it_wait_stat flows.active.tcp -eq 0 3 || it_fail "refused loops left active flows"

# A local user hammering the listener cannot flood the log: 40 more
# direct connections are all refused and counted, but at most 10 lines
# (the burst of the 5 s window) say so.
for _ in $(seq 40); do
	it_probe --connect "127.0.0.1:$LPORT" --expect reset,eof --within 2000 >/dev/null ||
		it_fail "a direct connection was not closed"
done
it_wait_stat loops_refused -ge $((before + 42)) 3 || it_fail "not every direct connection was counted"
lines=$(grep -c "refused connection" "$IT_DIR/daemon.log")
[ "$lines" -le 10 ] || it_fail "$lines log lines for 42 refused connections: not rate-limited"

# Redirected traffic still works.
it_run --flows 5 --max-size 64KiB --timeout 20 >/dev/null || it_fail "relay broken after loops"
it_pass "loops_refused $before -> $(it_stat loops_refused)"
