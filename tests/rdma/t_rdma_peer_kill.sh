#!/bin/bash
# Guards rdma link-group failure when the peer daemon dies: SIGKILL of daemon B under traffic resets the group's flows on daemon A at once (not when links.dead_after expires) and fails its group; A keeps serving over tcp (peer_unreachable) while B is down, and once B is back and fallback.negative_ttl has passed, new flows use rdma again.
. "$(dirname "$0")/lib.sh"
rt_init "$@"
rt_setup fallback='{"connect_timeout": "10s", "negative_ttl": "1s"}' \
	links='{"per_peer": 2, "dead_after": "60s"}'

# 10 flows of 1 MiB each way at 24 KiB/s: all mid-way when B dies.
# (Rate-limited flows move in small writes, which cost the TCG guest much
# CPU: keep the rate low.)
rt_run --flows 10 --concurrency 10 --size 1MiB --rate 24KiB --seed 71 --timeout 120 \
	>"$RT_DIR/client.log" 2>&1 &
client=$!
RT_PIDS+=("$client")
rt_wait_stat A flows.active.rdma -ge 10 30 || { rt_diag; rt_fail "the 10 flows did not start on rdma"; }
sleep 1
rt_links A | sed 's/^/  links A before: /'
groups=$(rt_stat A lgr.handshakes)
rt_eq "daemon A: lgr.handshakes" "$groups" 1
# The reset must come from the failure itself, not from the liveness
# timer: links.dead_after is 60 s here, so a reset within 20 s can only be
# the event's. (A bound in wall-clock seconds would be a timing assertion,
# and a loaded TCG guest takes more than 1 s to show an RST.)
kill -KILL "${RT_PID[B]}"
killed=$(date +%s%N)
for ((i = 0; i < 1000; i++)); do
	kill -0 "$client" 2>/dev/null || break
	sleep 0.02
done
ms=$((($(date +%s%N) - killed) / 1000000))
wait "${RT_PID[B]}" 2>/dev/null
RT_PID[B]=
if kill -0 "$client" 2>/dev/null; then
	cat "$RT_DIR/client.log"
	rt_fail "clients still hang 20 s after daemon B was killed"
fi
wait "$client"
sed 's/^/  /' "$RT_DIR/client.log" | grep -v '^  FAIL flow' | tail -3
grep -q '^flows: 0 ok, 10 failed' "$RT_DIR/client.log" || rt_fail "not every flow was reset"
echo "  all 10 clients saw the end ${ms} ms after SIGKILL"
read -r fails reset < <(rt_stat A lgr.failures lgr.flows_reset | tr '\n' ' ')
echo "  daemon A: lgr.failures $fails flows_reset $reset"
rt_eq "daemon A: lgr.failures" "$fails" 1
rt_eq "daemon A: lgr.flows_reset" "$reset" 10
rt_wait_stat A flows.active.rdma -eq 0 2 || rt_fail "flows of the dead group stay active"
links=$(rt_links A)
[ -z "$links" ] || rt_fail "daemon A still lists links of the dead group: $links"

# A serves on over tcp while B is down.
rt_run_ok fallback "flows failed while daemon B was down" \
	--flows 10 --concurrency 10 --max-size 256KiB --seed 72 --timeout 60
read -r unreach tcp < <(rt_stat A fallback.peer_unreachable flows.closed.tcp | tr '\n' ' ')
rt_eq "daemon A: fallback.peer_unreachable" "$unreach" 10
rt_eq "daemon A: flows.closed.tcp" "$tcp" 10

rt_start B
sleep 1.2	# the negative cache entry expires
rdma0=$(rt_stat A flows.closed.rdma)
rt_run_ok rdma-again "flows failed after daemon B came back" \
	--flows 10 --concurrency 10 --max-size 256KiB --seed 73 --timeout 60
if ! rt_wait_stat A flows.closed.rdma -eq $((rdma0 + 10)) 5; then
	rt_ctl A --json stats | "$JGET" stats.fallback stats.lgr stats.flows | sed 's/^/  A: /'
	rt_ctl B --json stats | "$JGET" stats.declines_sent stats.lgr | sed 's/^/  B: /'
	rt_fail "new flows did not use rdma again"
fi
read -r hs tcp < <(rt_stat A lgr.handshakes flows.closed.tcp | tr '\n' ' ')
rt_eq "daemon A: lgr.handshakes (a fresh group)" "$hs" 2
rt_eq "daemon A: flows.closed.tcp" "$tcp" 10
rt_wait_stat B flows.closed.rdma -eq 10 5 || rt_fail "the restarted daemon B did not carry the 10 flows"
rt_links A | sed 's/^/  links A after: /'
summary=$(rt_server_stop)
echo "  $summary"
case $summary in
*"serve: 30 connections, 20 ok,"*) ;;
*) rt_fail "server side: expected 30 connections, 20 ok: $summary" ;;
esac
rt_pass "reset within $ms ms of SIGKILL, tcp while B was down, rdma again after its restart"
