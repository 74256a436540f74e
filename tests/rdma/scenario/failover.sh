# shellcheck shell=bash
# The body of the rdma link failover test, on either topology (sourced
# after rt_init or rp_init: tests/rdma/t_rdma_failover.sh runs it in one
# guest, tests/rdma/pair/t_pair_failover.sh between two; steps as in
# tests/rdma/lib.sh, Scenarios).

# Daemon B has debug.fail_link false.
rt_step B rt_bed B
rt_step A rt_bed A debug='{"fail_link": true}'

# Refused before anything is looked up (checked at the end: daemon B
# sees only the one failure, daemon A's).
fo_refused() {
	local out rc
	out=$(rt_ctl B debug fail-link 0123 0 2>&1)
	rc=$?
	echo "  daemon B (debug.fail_link false): exit $rc: $out"
	[ $rc -eq 1 ] || rt_fail "daemon B without debug.fail_link: exit $rc: $out"
	grep -q 'not allowed' <<<"$out" || rt_fail "daemon B without debug.fail_link did not say why: $out"
}
rt_step B fo_refused

# 10 flows of 1 MiB each way at $RT_SLOW_RATE (24 KiB/s in one guest:
# about 43 s each), all mid-way when the link fails, even on a loaded
# machine where each query of the daemons below takes seconds (at 512 KiB
# they were seen to end first). Rate-limited flows move in small writes,
# which cost the TCG guest much CPU: keep the rate low. No more queries
# than needed until the link fails: the flows must still be running.
fo_fail() {
	local links out
	rt_run --flows 10 --concurrency 10 --size 1MiB --rate "$RT_SLOW_RATE" --seed 51 --timeout 240 \
		>"$RT_DIR/client.log" 2>&1 &
	client=$!
	RT_PIDS+=("$client")
	rt_wait_stat A flows.active.rdma -ge 10 30 || { rt_diag; rt_fail "the 10 flows did not start on rdma"; }
	links=$(rt_links A) || rt_fail "links of daemon A"
	lgr=$(awk 'NR == 1 { print $1 }' <<<"$links")
	# The victim: the link with the most flows; both must carry some.
	read -r victim vflows < <(sort -k5,5nr <<<"$links" | awk 'NR == 1 { print $2, $5 }')
	survivor=$((1 - victim))
	out=$(rt_fail_link A "$lgr" "$victim") || rt_fail "debug fail-link $lgr $victim: $out"
	rt_share victim vflows
	at_fail=$(rt_links A) || rt_fail "links of daemon A after the failure"
	printf '%s\n' "$links" | sed 's/^/  links A before: /'
	echo "  daemon A: debug fail-link $lgr $victim ($vflows flows): $out"
	[ "$(grep -c . <<<"$links")" -eq 2 ] || rt_fail "daemon A did not list 2 links"
	[ "$(awk '$5 > 0' <<<"$links" | grep -c .)" -eq 2 ] ||
		rt_fail "the flows were not spread over both links: $links"
	printf '%s\n' "$at_fail" | sed 's/^/  links A at the failure: /'
	[ "$(awk -v l="$victim" '$2 == l { print $3 }' <<<"$at_fail")" = down ] ||
		rt_fail "the failed link $victim does not show down: $at_fail"
	[ "$(awk -v l="$survivor" '$2 == l { print $3 }' <<<"$at_fail")" = active ] ||
		rt_fail "the surviving link $survivor is not active: $at_fail"
	# All 10 flows, still running, are on the survivor now.
	read -r s_flows s_tx0 < <(awk -v l="$survivor" '$2 == l { print $5, $6 }' <<<"$at_fail")
	[ "$s_flows" -eq 10 ] || rt_fail "flows on the surviving link right after the failure: $s_flows, expected 10" \
		"(if the flows had ended: the guests were too slow for this test's timing)"
}
rt_step A fo_fail

# Daemon B learns it by rdma_cm; its link of the same index goes down
# too, the other stays up.
fo_b_down() {
	local blinks i
	for ((i = 0; i < 100; i++)); do
		blinks=$(rt_links B)
		[ "$(awk -v l="$victim" '$2 == l { print $3 }' <<<"$blinks")" = down ] && break
		sleep 0.1
	done
	printf '%s\n' "$blinks" | sed 's/^/  links B after the failure: /'
	[ "$(awk -v l="$victim" '$2 == l { print $3 }' <<<"$blinks")" = down ] ||
		rt_fail "daemon B's link $victim is not down 10 s after daemon A failed it"
	[ "$(awk -v l="$((1 - victim))" '$2 == l { print $3 }' <<<"$blinks")" = active ] ||
		rt_fail "daemon B's other link is not active"
}
rt_step B fo_b_down

fo_a_end() {
	local rc up down end v_state v_flows v_tx v_tx0 s_state s_tx fo moved freset fails resets ain aout lf
	wait "$client"
	rc=$?
	sed 's/^/  /' "$RT_DIR/client.log" | grep -v '^  FAIL flow' | tail -4
	grep -E '^FAIL flow' "$RT_DIR/client.log" | head -10
	[ $rc -eq 0 ] || rt_fail "flows failed across the link failover: $(grep -E '^flows:' "$RT_DIR/client.log")"
	read -r up down < <(awk '/^bytes:/ { print $3, $5 }' "$RT_DIR/client.log")

	end=$(rt_links A) || rt_fail "links of daemon A at the end"
	printf '%s\n' "$end" | sed 's/^/  links A at the end: /'
	read -r v_state v_flows v_tx < <(awk -v l="$victim" '$2 == l { print $3, $5, $6 }' <<<"$end")
	read -r s_state s_tx < <(awk -v l="$survivor" '$2 == l { print $3, $6 }' <<<"$end")
	read -r v_tx0 < <(awk -v l="$victim" '$2 == l { print $6 }' <<<"$at_fail")
	[ "$v_state" = down ] || rt_fail "the failed link is $v_state at the end"
	rt_eq "flows on the failed link at the end" "$v_flows" 0
	rt_eq "bytes sent on the failed link after it went down" "$v_tx" "$v_tx0"
	[ "$s_state" = active ] || rt_fail "the surviving link is $s_state at the end"
	[ "$s_tx" -gt "$s_tx0" ] || rt_fail "the surviving link carried nothing after the failure"
	# Every byte the clients sent crossed one link or the other (replays
	# from the last confirmed cursor count again on the survivor).
	[ $((s_tx + v_tx)) -ge "$up" ] ||
		rt_fail "the links sent $((s_tx + v_tx)) bytes in all, the clients $up"

	read -r fo moved freset fails resets ain aout lf < <(rt_stat A lgr.link_failovers lgr.flows_moved \
		lgr.flows_reset lgr.failures resets bytes.in bytes.out rdma.link_failures | tr '\n' ' ')
	echo "  daemon A: link_failovers $fo flows_moved $moved flows_reset $freset failures $fails resets $resets rdma.link_failures $lf"
	rt_eq "daemon A: rdma.link_failures" "$lf" 1
	rt_eq "daemon A: lgr.link_failovers" "$fo" 1
	rt_eq "daemon A: lgr.flows_moved (the flows on link $victim)" "$moved" "$vflows"
	rt_eq "daemon A: lgr.flows_reset" "$freset" 0
	rt_eq "daemon A: lgr.failures (the group must survive)" "$fails" 0
	rt_eq "daemon A: resets" "$resets" 0
	rt_eq "daemon A: bytes.in" "$ain" "$up"
	rt_eq "daemon A: bytes.out" "$aout" "$down"
}
rt_step A fo_a_end

# New flows go on the surviving link of the same group.
fo_a_after() {
	local ardma atcp hs
	rt_run_ok after "new flows after the failover failed" \
		--flows 10 --concurrency 10 --max-size 256KiB --seed 52 --timeout 90
	rt_wait_stat A flows.active.rdma -eq 0 20 || rt_fail "daemon A: flows still active"
	read -r ardma atcp hs < <(rt_stat A flows.closed.rdma flows.closed.tcp lgr.handshakes | tr '\n' ' ')
	rt_eq "daemon A: flows.closed.rdma" "$ardma" 20
	rt_eq "daemon A: flows.closed.tcp" "$atcp" 0
	rt_eq "daemon A: lgr.handshakes (the group lived on)" "$hs" 1
}
rt_step A fo_a_after

fo_b_end() {
	local bfo bmoved bfails bresets blf brdma btcp
	rt_wait_stat B flows.active.rdma -eq 0 20 || rt_fail "daemon B: flows still active"
	read -r bfo bmoved bfails bresets blf brdma btcp < <(rt_stat B lgr.link_failovers lgr.flows_moved \
		lgr.failures resets rdma.link_failures flows.closed.rdma flows.closed.tcp | tr '\n' ' ')
	echo "  daemon B: link_failovers $bfo flows_moved $bmoved failures $bfails resets $bresets" \
		"rdma.link_failures $blf closed.rdma $brdma closed.tcp $btcp"
	rt_eq "daemon B: lgr.link_failovers (the one link A failed; the refused command did nothing)" "$bfo" 1
	[ "$bmoved" -ge 1 ] || rt_fail "daemon B moved no flow off its failed link"
	rt_eq "daemon B: lgr.failures (the group must survive)" "$bfails" 0
	rt_eq "daemon B: resets" "$bresets" 0
	rt_eq "daemon B: rdma.link_failures" "$blf" 1
	rt_eq "daemon B: flows.closed.rdma" "$brdma" 20
	rt_eq "daemon B: flows.closed.tcp" "$btcp" 0
	rt_server_expect " 20 ok, 0 failed, 0 aborted" "server side"
}
rt_step B fo_b_end

rt_pass "link $victim failed under $vflows of 10 flows $RT_WHERE: all moved and completed intact, 10 more on the survivor; refused without debug.fail_link"
