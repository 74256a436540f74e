#!/bin/bash
# Guards the rdma data plane between two hosts (two kernels, a wire between their rxe devices): 100 concurrent flows with random sizes from an app on guest a, redirected into daemon A, to a server on guest b behind daemon B, sha256 of every byte equal both ways, every flow on rdma on both daemons, one link group of two links both carrying bytes, and each daemon's byte counters equal to what the apps moved.
. "$(dirname "$0")/lib.sh"
rp_init "$@"
rp_setup

if [ "$ROLE" = b ]; then
	read -r up down < <(rp_get finished 300) || rt_fail "guest a's flows did not finish"
	rt_wait_stat B flows.active.rdma -eq 0 20 || rt_fail "daemon B: flows still active after the clients finished"
	read -r brdma btcp bin bout acc bfail < <(rt_stat B flows.closed.rdma flows.closed.tcp bytes.in \
		bytes.out lgr.accepted lgr.failures | tr '\n' ' ')
	echo "  daemon B: closed.rdma $brdma closed.tcp $btcp bytes.in $bin bytes.out $bout accepted $acc failures $bfail"
	rt_eq "daemon B: flows.closed.tcp" "$btcp" 0
	rt_eq "daemon B: flows.closed.rdma" "$brdma" 100
	rt_eq "daemon B: lgr.accepted" "$acc" 1
	rt_eq "daemon B: lgr.failures" "$bfail" 0
	rt_eq "daemon B: bytes.in (the clients on guest a sent $up)" "$bin" "$up"
	rt_eq "daemon B: bytes.out (the clients on guest a received $down)" "$bout" "$down"
	links=$(rt_links B) || rt_fail "links of daemon B"
	printf '%s\n' "$links" | sed 's/^/  links B: /'
	[ "$(awk '$3 == "active" && $4 == "rdma" && $6 > 0 && $7 > 0' <<<"$links" | grep -c .)" -eq 2 ] ||
		rt_fail "daemon B: not two active rdma links that both carried bytes each way"
	read -r tx rx < <(awk '{ tx += $6; rx += $7 } END { print tx + 0, rx + 0 }' <<<"$links")
	rt_eq "daemon B: bytes_tx summed over the links" "$tx" "$down"
	rt_eq "daemon B: bytes_rx summed over the links" "$rx" "$up"
	rt_server_expect " 100 ok, 0 failed, 0 aborted" "the server on guest b"
	rt_pass "daemon B: 100 rdma flows, counters equal to what crossed"
fi

seed=${RT_SEED:-$$}
out=$(rt_run --flows 100 --concurrency 100 --max-size 256KiB --seed "$seed" --timeout 200)
rc=$?
printf '%s\n' "$out" | grep -vE '^FAIL flow' | sed 's/^/  /'
printf '%s\n' "$out" | grep -E '^FAIL flow' | head -20
[ $rc -eq 0 ] || { rt_diag; rt_fail "flowcheck (seed $seed): $(printf '%s\n' "$out" | grep -E '^(flows|failures):' | tr '\n' ' ')"; }
read -r up down < <(printf '%s\n' "$out" | awk '/^bytes:/ { print $3, $5 }')
rp_put finished "$up $down"

rt_wait_stat A flows.active.rdma -eq 0 20 || rt_fail "daemon A: flows still active after every client finished"
read -r ardma atcp ain aout hs afail < <(rt_stat A flows.closed.rdma flows.closed.tcp bytes.in \
	bytes.out lgr.handshakes lgr.failures | tr '\n' ' ')
echo "  daemon A: closed.rdma $ardma closed.tcp $atcp bytes.in $ain bytes.out $aout handshakes $hs failures $afail"
rt_eq "daemon A: flows.closed.tcp" "$atcp" 0
rt_eq "daemon A: flows.closed.rdma" "$ardma" 100
rt_eq "daemon A: lgr.handshakes (the flows must share one group)" "$hs" 1
rt_eq "daemon A: lgr.failures" "$afail" 0
rt_eq "daemon A: bytes.in (the clients sent $up)" "$ain" "$up"
rt_eq "daemon A: bytes.out (the clients received $down)" "$aout" "$down"
links=$(rt_links A) || rt_fail "links of daemon A"
printf '%s\n' "$links" | sed 's/^/  links A: /'
[ "$(awk '$3 == "active" && $4 == "rdma" && $6 > 0 && $7 > 0' <<<"$links" | grep -c .)" -eq 2 ] ||
	rt_fail "daemon A: not two active rdma links that both carried bytes each way"
read -r tx rx < <(awk '{ tx += $6; rx += $7 } END { print tx + 0, rx + 0 }' <<<"$links")
rt_eq "daemon A: bytes_tx summed over the links" "$tx" "$up"
rt_eq "daemon A: bytes_rx summed over the links" "$rx" "$down"
# Guest b judges its daemon and the server; this half waits for it, so
# that daemon A is still up while B checks its group.
rp_get exit 300 >/dev/null
rt_pass "100 flows between two guests over one rdma group of 2 links, $((up >> 10)) KiB up, $((down >> 10)) KiB down, sha256 equal both ways"
