#!/bin/bash
# Guards rdma link failover between two hosts: with flows mid-transfer on both links of a group between guest a and guest b, one link failed on daemon A (`debug fail-link`) is seen down by daemon B through rdma_cm across the wire, its flows move to the survivor and resume from the last confirmed cursor on both sides: every flow completes with its sha256 intact, none is reset, the group lives on and carries new flows.
. "$(dirname "$0")/lib.sh"
rp_init "$@"
rp_setup debug='{"fail_link": true}'

if [ "$ROLE" = b ]; then
	victim=$(rp_get failed 200) || rt_fail "guest a did not fail a link"
	# Daemon B learns it by rdma_cm, over the wire; its link of the same
	# index goes down too, the other stays up.
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
	rp_get finished 300 >/dev/null || rt_fail "guest a's flows did not finish"
	rt_wait_stat B flows.active.rdma -eq 0 20 || rt_fail "daemon B: flows still active"
	read -r bfo bmoved bfails bresets blf brdma btcp < <(rt_stat B lgr.link_failovers lgr.flows_moved \
		lgr.failures resets rdma.link_failures flows.closed.rdma flows.closed.tcp | tr '\n' ' ')
	echo "  daemon B: link_failovers $bfo flows_moved $bmoved failures $bfails resets $bresets" \
		"rdma.link_failures $blf closed.rdma $brdma closed.tcp $btcp"
	rt_eq "daemon B: lgr.link_failovers" "$bfo" 1
	[ "$bmoved" -ge 1 ] || rt_fail "daemon B moved no flow off its failed link"
	rt_eq "daemon B: lgr.failures (the group must survive)" "$bfails" 0
	rt_eq "daemon B: resets" "$bresets" 0
	rt_eq "daemon B: rdma.link_failures" "$blf" 1
	rt_eq "daemon B: flows.closed.rdma" "$brdma" 20
	rt_eq "daemon B: flows.closed.tcp" "$btcp" 0
	rt_server_expect " 20 ok, 0 failed, 0 aborted" "the server on guest b"
	rt_pass "daemon B: link $victim down by rdma_cm, flows moved, none reset"
fi

# 10 flows of 1 MiB each way at 16 KiB/s: about 64 s each, all mid-way
# when the link fails. (Each guest of a pair has one vCPU: the queries
# before the failure take seconds, and the flows must outlast them.)
rt_run --flows 10 --concurrency 10 --size 1MiB --rate 16KiB --seed 51 --timeout 240 \
	>"$RT_DIR/client.log" 2>&1 &
client=$!
RT_PIDS+=("$client")
rt_wait_stat A flows.active.rdma -ge 10 30 || { rt_diag; rt_fail "the 10 flows did not start on rdma"; }
links=$(rt_links A) || rt_fail "links of daemon A"
lgr=$(awk 'NR == 1 { print $1 }' <<<"$links")
# The victim: the link with the most flows; both must carry some.
read -r victim vflows < <(sort -k5,5nr <<<"$links" | awk 'NR == 1 { print $2, $5 }')
survivor=$((1 - victim))
out=$(rt_ctl A debug fail-link "$lgr" "$victim" 2>&1) || rt_fail "debug fail-link $lgr $victim: $out"
rp_put failed "$victim"
at_fail=$(rt_links A) || rt_fail "links of daemon A after the failure"
printf '%s\n' "$links" | sed 's/^/  links A before: /'
echo "  daemon A: debug fail-link $lgr $victim ($vflows flows): $out"
[ "$(awk '$5 > 0' <<<"$links" | grep -c .)" -eq 2 ] ||
	rt_fail "the flows were not spread over both links: $links"
printf '%s\n' "$at_fail" | sed 's/^/  links A at the failure: /'
[ "$(awk -v l="$victim" '$2 == l { print $3 }' <<<"$at_fail")" = down ] ||
	rt_fail "the failed link $victim does not show down: $at_fail"
[ "$(awk -v l="$survivor" '$2 == l { print $3 }' <<<"$at_fail")" = active ] ||
	rt_fail "the surviving link $survivor is not active: $at_fail"
read -r s_flows s_tx0 < <(awk -v l="$survivor" '$2 == l { print $5, $6 }' <<<"$at_fail")
[ "$s_flows" -eq 10 ] || rt_fail "flows on the surviving link right after the failure: $s_flows, expected 10" \
	"(if the flows had ended: the guests were too slow for this test's timing)"

wait "$client"
rc=$?
sed 's/^/  /' "$RT_DIR/client.log" | grep -v '^  FAIL flow' | tail -4
grep -E '^FAIL flow' "$RT_DIR/client.log" | head -10
[ $rc -eq 0 ] || rt_fail "flows failed across the link failover: $(grep -E '^flows:' "$RT_DIR/client.log")"
read -r up down < <(awk '/^bytes:/ { print $3, $5 }' "$RT_DIR/client.log")

end=$(rt_links A) || rt_fail "links of daemon A at the end"
printf '%s\n' "$end" | sed 's/^/  links A at the end: /'
read -r v_state v_flows < <(awk -v l="$victim" '$2 == l { print $3, $5 }' <<<"$end")
read -r s_state s_tx < <(awk -v l="$survivor" '$2 == l { print $3, $6 }' <<<"$end")
[ "$v_state" = down ] || rt_fail "the failed link is $v_state at the end"
rt_eq "flows on the failed link at the end" "$v_flows" 0
[ "$s_state" = active ] || rt_fail "the surviving link is $s_state at the end"
[ "$s_tx" -gt "$s_tx0" ] || rt_fail "the surviving link carried nothing after the failure"
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

# New flows go on the surviving link of the same group.
rt_run_ok after "new flows after the failover failed" \
	--flows 10 --concurrency 10 --max-size 256KiB --seed 52 --timeout 90
rt_wait_stat A flows.active.rdma -eq 0 20 || rt_fail "daemon A: flows still active"
rp_put finished
read -r ardma atcp hs < <(rt_stat A flows.closed.rdma flows.closed.tcp lgr.handshakes | tr '\n' ' ')
rt_eq "daemon A: flows.closed.rdma" "$ardma" 20
rt_eq "daemon A: flows.closed.tcp" "$atcp" 0
rt_eq "daemon A: lgr.handshakes (the group lived on)" "$hs" 1
rp_get exit 300 >/dev/null
rt_pass "link $victim failed under $vflows of 10 flows between two guests: all moved and completed intact, 10 more on the survivor"
