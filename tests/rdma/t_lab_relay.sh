#!/bin/bash
# Guards the rdma test bed itself, so that a failing rdma test points at the transport and not at the guest: inside the lab guest the nat REDIRECT catches the apps' flows to 10.77.0.1:9000 into daemon A, which relays them over TCP (transport tcp) with its mark set so they are not caught again; sha256 both ways; and a daemon with transport rdma starts and sees rxe0.
. "$(dirname "$0")/lib.sh"
rt_init "$@"
rt_redirect
rt_server_start
rt_config A transport='"tcp"' peers='[]' control='""'
rt_start A

rt_run_ok relay "flows through the redirect and the relay failed" \
	--flows 40 --concurrency 40 --max-size 256KiB --seed 1 --timeout 60
read -r acc tcp loops < <(rt_stat A flows.accepted flows.closed.tcp loops_refused | tr '\n' ' ')
echo "  daemon A: accepted $acc closed.tcp $tcp loops_refused $loops"
rt_eq "flows.accepted (the redirect into daemon A)" "$acc" 40
rt_wait_stat A flows.closed.tcp -eq 40 10 || rt_fail "the relayed flows did not all close"
rt_eq "loops_refused (the mark must exempt the daemon's own connects)" "$loops" 0
rt_server_expect " 40 ok, 0 failed, 0 aborted" "server side"
rt_stop A || rt_fail "daemon A did not stop cleanly (status $?)"

# Daemon B alone with transport rdma: it must come up on this host.
rt_config B
rt_start B
rt_stop B || rt_fail "daemon B (transport rdma) did not stop cleanly (status $?)"
if grep -qiE 'no (rdma )?device|rdma.*(unavailable|disabled)' "$RT_DIR/B.log"; then
	rt_fail "daemon B found no RDMA device: $(grep -iE 'device|rdma' "$RT_DIR/B.log" | head -3)"
fi
rt_pass "40 flows redirected into daemon A and relayed, sha256 both ways; a transport rdma daemon starts"
