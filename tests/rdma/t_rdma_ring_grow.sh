#!/bin/bash
# Guards ring moves over rdma with a link failover in the middle of one: a bulk flow starts on a 256 KiB ring, its ring is offered a larger one while the old one cannot drain, the flow's link fails right then, and the move completes on the surviving link; the ring reaches buffers.ring, every byte arrives intact both ways (sha256) and nothing is reset.
. "$(dirname "$0")/lib.sh"
rt_init "$@"

# 1 MiB rings from 256 KiB: a lone flow's full ring grows straight to the
# part it could hold (buffers.ring here), one move per side. The first ring
# is larger than what the small TCP buffers below absorb, so the stopped
# server cannot drain it and the move stays open.
RING=1048576
# Small TCP buffers while the test runs, so that a stopped server holds
# far less than a ring of buffers.ring (the guest's defaults let its
# socket and daemon B's take megabytes before B's ring fills); put back
# at exit, the guest's other tests share them.
rmem=$(sysctl -n net.ipv4.tcp_rmem) wmem=$(sysctl -n net.ipv4.tcp_wmem)
trap 'rc=$?; sysctl -qw net.ipv4.tcp_rmem="$rmem" net.ipv4.tcp_wmem="$wmem"; (exit $rc); rt_cleanup' EXIT
sysctl -qw net.ipv4.tcp_rmem="4096 16384 32768" net.ipv4.tcp_wmem="4096 16384 32768" ||
	rt_fail "cannot set tcp_rmem and tcp_wmem"
rt_redirect
rt_server_start
rt_config B buffers='{"ring": "1MiB", "ring_initial": "256KiB", "pool": "64MiB"}'
rt_config A buffers='{"ring": "1MiB", "ring_initial": "256KiB", "pool": "64MiB"}' \
	debug='{"fail_link": true}'
rt_start B
rt_start A

# The server stopped before the flow: its socket, then daemon B's ring,
# fill and stay full. B offers a larger ring, and daemon A may switch to it
# only once B consumed every byte of the old one, which it cannot while the
# server sleeps: the move is held open, as long as we like, for the
# failover to hit it.
kill -STOP "$SERVER_PID"
rt_run --flows 1 --size 16MiB --seed 61 --timeout 240 >"$RT_DIR/client.log" 2>&1 &
client=$!
RT_PIDS+=("$client")
rt_wait_stat A flows.active.rdma -eq 1 30 || { kill -CONT "$SERVER_PID"; rt_diag; rt_fail "the flow did not start on rdma"; }

# B's ring bytes in use while a move is open: the old ring and the offered
# one, four times larger (5 x a size class); once switched, one class.
# (A ring of buffers.ring offers no move: then the server took too much.)
pending=
end=$(($(rt_now_ms) + 60000))
while [ "$(rt_now_ms)" -lt $end ]; do
	read -r grown inuse < <(rt_stat B cdc.rings_grown rings.in_use_bytes | tr '\n' ' ')
	for ((s = 16384; s < RING; s *= 4)); do
		[ "${inuse:-0}" -eq $((5 * s)) ] && pending=$s
	done
	[ -n "$pending" ] || [ "${inuse:-0}" -eq $RING ] && break
	sleep 0.2
done
echo "  daemon B with the server stopped: rings_grown $grown, ring bytes in use $inuse"
[ -n "$pending" ] || { kill -CONT "$SERVER_PID"; rt_fail "no ring move held open on daemon B (rings_grown ${grown:-?}, in use ${inuse:-?} bytes): the stopped server absorbed the whole ring"; }

links=$(rt_links A) || rt_fail "links of daemon A"
lgr=$(awk 'NR == 1 { print $1 }' <<<"$links")
read -r victim vflows < <(sort -k5,5nr <<<"$links" | awk 'NR == 1 { print $2, $5 }')
survivor=$((1 - victim))
printf '%s\n' "$links" | sed 's/^/  links A before: /'
[ "$vflows" -eq 1 ] || rt_fail "no link of daemon A carries the flow: $links"
out=$(rt_fail_link A "$lgr" "$victim") || { kill -CONT "$SERVER_PID"; rt_fail "debug fail-link $lgr $victim: $out"; }
echo "  daemon A: debug fail-link $lgr $victim while B's move from $pending to $((pending * 4)) bytes is open: $out"
rt_wait_stat A lgr.flows_moved -eq 1 10 || { kill -CONT "$SERVER_PID"; rt_fail "the flow did not move to link $survivor"; }
kill -CONT "$SERVER_PID"

# The ring grows on to buffers.ring: each stop of the server fills it
# again, and B offers the next size (the flow goes on meanwhile).
for ((n = 0; n < 3; n++)); do
	inuse=$(rt_stat B rings.in_use_bytes) || break
	[ "$inuse" -eq $RING ] && break
	kill -STOP "$SERVER_PID"
	end=$(($(rt_now_ms) + 60000))
	while [ "$(rt_now_ms)" -lt $end ]; do
		inuse=$(rt_stat B rings.in_use_bytes) || break
		held=
		for ((s = 16384; s < RING; s *= 4)); do
			[ "$inuse" -eq $((5 * s)) ] && held=$s
		done
		[ -n "$held" ] || [ "$inuse" -eq $RING ] || [ "$inuse" -eq 0 ] && break
		sleep 0.2
	done
	kill -CONT "$SERVER_PID"
	echo "  daemon B, server stopped again: ring bytes in use $inuse${held:+ (a move from $held bytes)}"
done

wait "$client"
rc=$?
sed 's/^/  /' "$RT_DIR/client.log" | grep -v '^  FAIL flow' | tail -3
grep -E '^FAIL flow' "$RT_DIR/client.log" | head -5
[ $rc -eq 0 ] || rt_fail "the flow failed across the move and the failover: $(grep -E '^(flows|FAIL)' "$RT_DIR/client.log" | head -2 | tr '\n' ' ')"

end=$(rt_links A) || rt_fail "links of daemon A at the end"
printf '%s\n' "$end" | sed 's/^/  links A at the end: /'
[ "$(awk -v l="$victim" '$2 == l { print $3 }' <<<"$end")" = down ] || rt_fail "the failed link is not down: $end"
[ "$(awk -v l="$survivor" '$2 == l { print $3 }' <<<"$end")" = active ] || rt_fail "the surviving link is not active: $end"

rt_wait_stat A flows.active.rdma -eq 0 10 || rt_fail "daemon A: the flow is still active"
rt_wait_stat B rings.in_use_bytes -eq 0 10 || rt_fail "daemon B still holds rings after the flow"
read -r agrown arefused fo moved freset fails resets ardma atcp < <(rt_stat A cdc.rings_grown \
	cdc.ring_moves_refused lgr.link_failovers lgr.flows_moved lgr.flows_reset lgr.failures resets \
	flows.closed.rdma flows.closed.tcp | tr '\n' ' ')
read -r bgrown brefused bfo bfails bresets bcarved < <(rt_stat B cdc.rings_grown \
	cdc.ring_moves_refused lgr.link_failovers lgr.failures resets rings.carved_bytes | tr '\n' ' ')
echo "  daemon A: rings_grown $agrown ring_moves_refused $arefused link_failovers $fo flows_moved $moved flows_reset $freset failures $fails resets $resets"
echo "  daemon B: rings_grown $bgrown ring_moves_refused $brefused link_failovers $bfo failures $bfails resets $bresets rings carved $bcarved bytes"
# B's ring went 256 KiB -> 1 MiB: one move, each ring carved once (the
# flow held two at a time, never more).
rt_eq "daemon B: rings_grown (256 KiB to buffers.ring)" "$bgrown" 1
rt_eq "daemon B: ring bytes carved (256 KiB + 1 MiB)" "$bcarved" $((262144 + RING))
rt_eq "daemon A: ring_moves_refused" "$arefused" 0
rt_eq "daemon B: ring_moves_refused" "$brefused" 0
rt_eq "daemon A: lgr.link_failovers" "$fo" 1
rt_eq "daemon A: lgr.flows_moved" "$moved" 1
rt_eq "daemon A: lgr.flows_reset" "$freset" 0
rt_eq "daemon A: lgr.failures" "$fails" 0
rt_eq "daemon A: resets" "$resets" 0
rt_eq "daemon B: lgr.failures" "$bfails" 0
rt_eq "daemon B: resets" "$bresets" 0
rt_eq "daemon A: flows.closed.rdma" "$ardma" 1
rt_eq "daemon A: flows.closed.tcp" "$atcp" 0
rt_server_expect " 1 ok, 0 failed, 0 aborted" "server side"
rt_pass "a move from $pending to $((pending * 4)) bytes held open across a link failover; the ring grew to 1 MiB in $bgrown moves, 16 MiB each way intact"
