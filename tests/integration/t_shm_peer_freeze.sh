#!/bin/bash
# Guards that a frozen peer daemon (SIGSTOP) under mixed traffic ends every flow through it within links.dead_after + 5 s, whatever the flow was doing: 4 KiB ping-pong (a CDC in flight each way), a full ring or a ring move (bulk at full speed), a half-close, an open the peer never answered, a flow parked on the handshake of a new group; twice in a row, as a flow that went over tcp meanwhile (the negative cache) never crossed the frozen peer and is not cut.
# it-timeout: 150
. "$(dirname "$0")/lib.sh"
it_init "$@"
# Test-only short bounds, so that the suite stays fast: the peer is judged
# dead after 2 s, an open or a handshake it does not answer goes to tcp
# after 1 s, and the negative entry that leaves lasts 1 s.
dead_ms=2000
limit_ms=$((dead_ms + 5000))
EPORT=9100	# smcperf serve: echo
it_setup_shm links="{\"dead_after\": \"${dead_ms}ms\"}" \
	fallback='{"connect_timeout": "1s", "negative_ttl": "1s"}'
ip netns exec "$NS_S" "$B/tools/smcperf" serve --listen "0.0.0.0:$EPORT" \
	>"$IT_DIR/echo.log" 2>&1 &
IT_PIDS+=("$!")
it_wait_file "$IT_DIR/echo.log" 'serving' 5 || it_fail "smcperf serve did not start"

# Whether any of the pids still runs.
running() {
	local p
	for p in "$@"; do
		kill -0 "$p" 2>/dev/null && return 0
	done
	return 1
}

# One freeze under load; $1 names the round.
freeze_round() {
	local r=$1 ping bulk half late parked ms n i stopped reset0 silent0 shm
	reset0=$(it_stat lgr.flows_reset)
	silent0=$(it_stat lgr.links_silent)
	# 8 flows writing 4 KiB and reading the echo in a loop (the load this
	# test was written for), 3 bulk flows at full speed (rings full, rings
	# growing), and a flow half-closed (1 byte up and FIN, then 16 MiB down
	# at 1 MiB/s; its companion of 0 bytes ends at once).
	it_c "$B/tools/smcperf" lat --connect "$S4:$EPORT" -s 4096 -c 8 -t 60 \
		>"$IT_DIR/ping.$r.log" 2>&1 &
	ping=$!
	it_run --flows 3 --concurrency 3 --size 256MiB --timeout 60 \
		>"$IT_DIR/bulk.$r.log" 2>&1 &
	bulk=$!
	it_run --flows 2 --concurrency 2 --mode half-client --max-size 16MiB --rate 1MiB \
		--timeout 60 >"$IT_DIR/half.$r.log" 2>&1 &
	half=$!
	IT_PIDS+=("$ping" "$bulk" "$half")
	it_wait_stat flows.active.shm -ge 12 10 ||
		it_fail "round $r: the 12 flows did not start on shm ($(it_stat flows.active.tcp) on tcp)"
	sleep 0.5
	it_ctl flows >"$IT_DIR/flows.$r.txt"
	kill -STOP "$PEER_PID"
	stopped=$(date +%s%N)
	echo "  round $r: peer stopped with $(it_stat flows.active.shm) flows on shm:" \
		"$(awk 'NR > 1 && $3 == "shm" { print $5 }' "$IT_DIR/flows.$r.txt" | sort | uniq -c | xargs)"
	# The group is still up: a new flow's open is never answered, and it
	# goes over tcp after connect_timeout.
	it_run --flows 2 --concurrency 2 --size 64KiB --timeout 30 >"$IT_DIR/late.$r.log" 2>&1 &
	late=$!
	IT_PIDS+=("$late")
	for ((i = 0; i < limit_ms / 100; i++)); do
		shm=$(it_stat flows.active.shm)
		[ "$shm" -eq 0 ] && ! running "$ping" "$bulk" "$half" && break
		sleep 0.1
	done
	ms=$((($(date +%s%N) - stopped) / 1000000))
	if [ "$shm" -ne 0 ] || running "$ping" "$bulk" "$half"; then
		it_ctl flows
		it_ctl links
		kill -CONT "$PEER_PID"
		it_fail "round $r: $shm flows on shm, clients still running, $ms ms after SIGSTOP"
	fi
	echo "  round $r: every flow through the peer ended ${ms} ms after SIGSTOP (bound ${limit_ms} ms)"
	[ "$ms" -le "$limit_ms" ] || it_fail "round $r: $ms ms, more than $limit_ms"
	[ "$ms" -le "$worst" ] || worst=$ms
	it_ctl flows | grep -q ' shm ' && it_fail "round $r: the flows view still lists shm flows"
	grep -q 'errors=8' "$IT_DIR/ping.$r.log" ||
		it_fail "round $r: the ping-pong flows did not all fail: $(cat "$IT_DIR/ping.$r.log")"
	grep -q '^flows: 0 ok, 3 failed' "$IT_DIR/bulk.$r.log" ||
		it_fail "round $r: the bulk flows: $(tail -1 "$IT_DIR/bulk.$r.log")"
	grep -q '^flows: 1 ok, 1 failed' "$IT_DIR/half.$r.log" ||
		it_fail "round $r: the half-closed flow: $(tail -1 "$IT_DIR/half.$r.log")"
	n=$(($(it_stat lgr.flows_reset) - reset0))
	[ "$n" -eq 12 ] || it_fail "round $r: lgr.flows_reset grew by $n, expected 12"
	[ "$(it_stat lgr.links_silent)" -gt "$silent0" ] || it_fail "round $r: no link counted silent"
	# The group is gone: a new flow waits for a handshake the peer never
	# answers, and goes over tcp after connect_timeout.
	it_run_ok "round $r parked" "a flow parked on the handshake to the stopped peer failed" \
		--flows 2 --concurrency 2 --size 64KiB --timeout 30
	wait "$late" || it_fail "round $r: a flow opened on the silent group failed: $(tail -1 "$IT_DIR/late.$r.log")"
	kill -CONT "$PEER_PID"
	sleep 1.2	# the negative entry expires
}

worst=0
freeze_round 1
freeze_round 2
it_pass "two freezes: every flow through the peer ended within $worst ms (bound $limit_ms ms); new flows went over tcp"
