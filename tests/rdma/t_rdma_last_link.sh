#!/bin/bash
# Guards the loss of a group's last rdma link (man/smcproxy-protocol.7, RDMA TRANSPORT, "Link failure and failover"): with the peer's network gone (its control port made unreachable, then both links failed under traffic), the group's flows are reset on both ends at once (not when links.dead_after expires), new flows fall back to tcp with the reason counted, and once the peer is reachable again and fallback.negative_ttl has passed, new flows use a fresh rdma group.
. "$(dirname "$0")/lib.sh"
rt_init "$@"
rt_redirect
rt_server_start
fb='{"connect_timeout": "10s", "negative_ttl": "2s"}'
# links.dead_after 60 s: a reset within 20 s of the last link failing can
# only be the failure's own, not the liveness timer's. (A bound in
# wall-clock seconds would be a timing assertion, and a loaded TCG guest
# takes more than 1 s to show an RST.)
linkcfg='{"per_peer": 2, "dead_after": "60s"}'
rt_config B fallback="$fb" links="$linkcfg"
rt_config A fallback="$fb" links="$linkcfg" debug='{"fail_link": true}'
rt_start B
rt_start A

# fallback.* summed: the flows sent to tcp for any reason.
fallbacks() {
	rt_ctl A --json stats | "$JGET" stats.fallback | tr -c '0-9\n' ' ' |
		awk '{ for (i = 1; i <= NF; i++) s += $i } END { print s + 0 }'
}

# 10 flows of 1 MiB each way at 24 KiB/s: mid-way for many seconds.
# (Rate-limited flows move in small writes, which cost the TCG guest much
# CPU: keep the rate low.)
rt_run --flows 10 --concurrency 10 --size 1MiB --rate 24KiB --seed 61 --timeout 120 \
	>"$RT_DIR/client.log" 2>&1 &
client=$!
RT_PIDS+=("$client")
rt_wait_stat A flows.active.rdma -ge 10 30 || { rt_diag; rt_fail "the 10 flows did not start on rdma"; }
sleep 1
links=$(rt_links A) || rt_fail "links of daemon A"
printf '%s\n' "$links" | sed 's/^/  links A before: /'
lgr=$(awk 'NR == 1 { print $1 }' <<<"$links")
[ -n "$lgr" ] || rt_fail "daemon A lists no link group"
fb0=$(fallbacks)

# The peer's network goes: new handshakes are refused, then both links.
block=(INPUT -p tcp -d "$ADDR" --dport "${RT_CPORT[B]}" -j REJECT --reject-with tcp-reset)
rt_rule_add "${block[@]}" || rt_fail "iptables: cannot block daemon B's control port"
out=$(rt_fail_link A "$lgr" 0) || rt_fail "debug fail-link $lgr 0: $out"
echo "  daemon A: debug fail-link $lgr 0: $out"
out=$(rt_fail_link A "$lgr" 1) || rt_fail "debug fail-link $lgr 1: $out"
failed=$(date +%s%N)
echo "  daemon A: debug fail-link $lgr 1: $out"
for ((i = 0; i < 1000; i++)); do
	kill -0 "$client" 2>/dev/null || break
	sleep 0.02
done
ms=$((($(date +%s%N) - failed) / 1000000))
if kill -0 "$client" 2>/dev/null; then
	cat "$RT_DIR/client.log"
	rt_fail "clients still hang 20 s after the last link failed"
fi
wait "$client"
sed 's/^/  /' "$RT_DIR/client.log" | grep -v '^  FAIL flow' | tail -3
grep -q '^flows: 0 ok, 10 failed' "$RT_DIR/client.log" || rt_fail "not every flow was reset"
echo "  all 10 clients saw the end ${ms} ms after the last link failed"
read -r fails reset fo < <(rt_stat A lgr.failures lgr.flows_reset lgr.link_failovers | tr '\n' ' ')
echo "  daemon A: lgr.failures $fails flows_reset $reset link_failovers $fo"
rt_eq "daemon A: lgr.failures" "$fails" 1
rt_eq "daemon A: lgr.flows_reset" "$reset" 10
rt_eq "daemon A: lgr.link_failovers (link 0's flows moved to link 1 first)" "$fo" 1
rt_wait_stat A flows.active.rdma -eq 0 2 || rt_fail "daemon A: flows of the dead group stay active"
rt_wait_stat B flows.active.rdma -eq 0 2 || rt_fail "daemon B: flows of the dead group stay active"
rt_wait_stat B lgr.failures -eq 1 2 || rt_fail "daemon B's group did not fail"

# While the peer is unreachable: tcp, the reason counted.
rt_run_ok fallback "flows failed while the peer was unreachable" \
	--flows 10 --concurrency 10 --max-size 256KiB --seed 62 --timeout 60
rt_wait_stat A flows.closed.tcp -eq 10 5 || rt_fail "the 10 flows did not go over tcp"
fb1=$(fallbacks)
rt_ctl A --json stats | "$JGET" stats.fallback | sed 's/^/  fallback: /'
rt_eq "fallback reasons counted for the 10 tcp flows" $((fb1 - fb0)) 10

# Reachable again: after negative_ttl, a fresh group.
rt_rule_del "${block[@]}" || rt_fail "iptables: cannot unblock daemon B's control port"
sleep 2.2
hs0=$(rt_stat A lgr.handshakes)
rdma0=$(rt_stat A flows.closed.rdma)
rt_run_ok rdma-again "flows failed after the peer was reachable again" \
	--flows 10 --concurrency 10 --max-size 256KiB --seed 63 --timeout 60
if ! rt_wait_stat A flows.closed.rdma -eq $((rdma0 + 10)) 5; then
	rt_ctl A --json stats | "$JGET" stats.fallback stats.lgr stats.flows | sed 's/^/  A: /'
	rt_ctl A peers | sed 's/^/  A peers: /'
	rt_ctl B --json stats | "$JGET" stats.declines_sent stats.lgr stats.rdma | sed 's/^/  B: /'
	rt_fail "new flows did not use rdma again"
fi
read -r hs tcp < <(rt_stat A lgr.handshakes flows.closed.tcp | tr '\n' ' ')
rt_eq "daemon A: lgr.handshakes (a fresh group)" "$hs" $((hs0 + 1))
rt_eq "daemon A: flows.closed.tcp" "$tcp" 10
rt_pass "reset within $ms ms of the last link, tcp while the peer was unreachable, rdma again after"
