#!/bin/bash
# Guards the detaching start (no --foreground): the command returns 0 only
# once the daemon answers, and returns the daemon's failure status (1 for a
# listen address in use) instead of 0 when it cannot start. The second half
# is a regression test: the status used to come from the middle fork.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
it_config

it_c "$SMCPROXYD" -c "$IT_CFG" || it_fail "detaching start returned $?"
# Answering right away: no polling needed.
pid=$(it_stat pid) || it_fail "the detached daemon does not answer right after start"
IT_PIDS+=("$pid")
# Detached: a session of its own (setsid), not ours.
[ "$(ps -o sid= -p "$pid" | tr -d ' ')" != "$(ps -o sid= -p $$ | tr -d ' ')" ] ||
	it_fail "the daemon is still in our session"

# The same config again: the listen address and the stats socket are taken.
rc=0
it_c "$SMCPROXYD" -c "$IT_CFG" 2>"$IT_DIR/second.err" || rc=$?
[ $rc = 1 ] || it_fail "a start that cannot listen returned $rc, wanted 1"
grep -q "Address already in use\|another smcproxyd" "$IT_DIR/second.err" ||
	it_fail "no reason on stderr: $(cat "$IT_DIR/second.err")"

stop_detached() {
	kill -TERM "$1"
	for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
	it_fail "the detached daemon ignored SIGTERM"
}
stop_detached "$pid"

# Regression: a relative -c must still be found by a reload after the
# daemon went to "/", and closed stdio must not end up under libuv's fds.
(cd "$IT_DIR" && it_c "$SMCPROXYD" -c "$(basename "$IT_CFG")" <&- >&- 2>&-) ||
	it_fail "detaching start with closed stdio and a relative -c returned $?"
pid=$(it_stat pid) || it_fail "the daemon started with closed stdio does not answer"
IT_PIDS+=("$pid")
out=$(it_ctl reload 2>&1) || it_fail "reload after a relative -c failed: $out"
[ "$(it_stat reloads)" = 1 ] || it_fail "the reload did not count"
stop_detached "$pid"
it_pass "detached start: 0 when ready, 1 when it cannot listen; relative -c reloads; closed stdio"

