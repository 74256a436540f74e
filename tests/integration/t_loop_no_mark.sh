#!/bin/bash
# Guards against the redirect loop of a rule that forgets the daemon's mark:
# our own outbound connection comes back to our listener. It must be
# refused (and the flow reset) instead of multiplying flows until the
# daemon runs out of file descriptors.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
it_server_start
# The broken rule: no "-m mark ! --mark" exemption.
it_c iptables -t nat -A OUTPUT -p tcp -d "$NET4" -j REDIRECT --to-ports "$LPORT" ||
	it_fail "iptables REDIRECT"
it_daemon_start

it_probe --connect "$S4:$SPORT" --expect reset,eof --within 2000 ||
	it_fail "the client did not get a prompt reset"
it_wait_stat loops_refused -ge 1 3 || it_fail "the loop was not refused"
it_wait_stat flows.active.tcp -eq 0 3 || it_fail "flows still active after the refused loop"
accepted=$(it_stat flows.accepted)
# One flow from the client, one looped back: a handful, never thousands.
# With several workers the looped connection may reach a worker that has
# not yet recorded the outbound connection of another (it records it just
# after connect() returns), which lets the loop go a hop further, each
# time with a chance of about a quarter: allow a few.
[ "$accepted" -le 8 ] || it_fail "$accepted flows accepted: the loop multiplied"
kill -0 "$DAEMON_PID" || it_fail "the daemon died"
grep -q "redirected back" "$IT_DIR/daemon.log" || it_fail "no log line naming the missing mark"
it_pass "loop refused after $accepted accepts; client reset"
