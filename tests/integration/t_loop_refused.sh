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
# direct connections at once are all refused and counted, and lines are
# dropped (at most 10 per 5 s window). How many windows the burst spans
# depends on the machine's load, so no count of lines is a bound; what
# is exact is the account: a window's dropped lines are reported ("N
# similar messages suppressed") when the next window opens, so once one
# more refusal has opened a new window, the lines logged plus those
# reported dropped are the refusals, and some were dropped.
probes=()
for _ in $(seq 40); do
	it_probe --connect "127.0.0.1:$LPORT" --expect reset,eof --within 5000 >/dev/null &
	probes+=($!)
done
for p in "${probes[@]}"; do
	wait "$p" || it_fail "a direct connection was not closed"
done
it_wait_stat loops_refused -ge $((before + 42)) 10 || it_fail "not every direct connection was counted"
# Lines dropped in the last window are reported when the next opens: one
# more refusal a second until the account closes (bounded: a window is
# 5 s, so 6 tries open one; 20 only turn a limiter that loses count into
# a failure).
account() {
	refused=$(($(it_stat loops_refused) - before))
	lines=$(grep -c "refused connection" "$IT_DIR/daemon.log")
	dropped=$(sed -n 's/.* \([0-9][0-9]*\) similar messages suppressed.*/\1/p' "$IT_DIR/daemon.log" |
		awk '{ n += $1 } END { print n + 0 }')
	[ $((lines + dropped)) -eq "$refused" ]
}
for ((i = 0; i < 20; i++)); do
	account && break
	it_probe --connect "127.0.0.1:$LPORT" --expect reset,eof --within 5000 >/dev/null ||
		it_fail "a direct connection was not closed"
	sleep 1
done
echo "  $refused refused: $lines logged, $dropped dropped"
[ "$dropped" -gt 0 ] || it_fail "no line dropped for $refused refused connections: not rate-limited"
[ $((lines + dropped)) -eq "$refused" ] ||
	it_fail "$lines lines logged and $dropped dropped for $refused refused connections"

# Redirected traffic still works.
it_run --flows 5 --max-size 64KiB --timeout 20 >/dev/null || it_fail "relay broken after loops"
it_pass "loops_refused $before -> $(it_stat loops_refused)"
