#!/bin/bash
# Guards the rdma data plane between two hosts (two kernels, a wire between their rxe devices): 100 concurrent flows with random sizes from an app on guest a, redirected into daemon A, to a server on guest b behind daemon B, sha256 of every byte equal both ways, every flow on rdma on both daemons, one link group of two links both carrying bytes, and each daemon's byte counters equal to what the apps moved.
. "$(dirname "$0")/lib.sh"
rp_init "$@"
rt_setup

fl_run() {
	local seed=${RT_SEED:-$$} out rc
	out=$(rt_run --flows 100 --concurrency 100 --max-size 256KiB --seed "$seed" --timeout 200)
	rc=$?
	printf '%s\n' "$out" | grep -vE '^FAIL flow' | sed 's/^/  /'
	printf '%s\n' "$out" | grep -E '^FAIL flow' | head -20
	[ $rc -eq 0 ] || { rt_diag; rt_fail "flowcheck (seed $seed): $(printf '%s\n' "$out" | grep -E '^(flows|failures):' | tr '\n' ' ')"; }
	read -r up down < <(printf '%s\n' "$out" | awk '/^bytes:/ { print $3, $5 }')
	rt_share up down
}
rt_step A fl_run

# fl_check D GROUP_STAT TX RX: daemon D's counters against what the apps
# moved ($up from the clients, $down back to them): every flow closed on
# rdma, one group (GROUP_STAT: handshakes on A, accepted on B), and two
# active links that both carried bytes each way, TX and RX in all.
fl_check() {
	local d=$1 group=$2 want_tx=$3 want_rx=$4 rdma tcp in out groups fail links tx rx
	rt_wait_stat "$d" flows.active.rdma -eq 0 20 || rt_fail "daemon $d: flows still active after every client finished"
	read -r rdma tcp in out groups fail < <(rt_stat "$d" flows.closed.rdma flows.closed.tcp bytes.in \
		bytes.out "$group" lgr.failures | tr '\n' ' ')
	echo "  daemon $d: closed.rdma $rdma closed.tcp $tcp bytes.in $in bytes.out $out $group $groups failures $fail"
	rt_eq "daemon $d: flows.closed.tcp" "$tcp" 0
	rt_eq "daemon $d: flows.closed.rdma" "$rdma" 100
	rt_eq "daemon $d: $group (the flows must share one group)" "$groups" 1
	rt_eq "daemon $d: lgr.failures" "$fail" 0
	rt_eq "daemon $d: bytes.in (the clients sent $up)" "$in" "$up"
	rt_eq "daemon $d: bytes.out (the clients received $down)" "$out" "$down"
	links=$(rt_links "$d") || rt_fail "links of daemon $d"
	printf '%s\n' "$links" | sed "s/^/  links $d: /"
	[ "$(awk '$3 == "active" && $4 == "rdma" && $6 > 0 && $7 > 0' <<<"$links" | grep -c .)" -eq 2 ] ||
		rt_fail "daemon $d: not two active rdma links that both carried bytes each way"
	read -r tx rx < <(awk '{ tx += $6; rx += $7 } END { print tx + 0, rx + 0 }' <<<"$links")
	rt_eq "daemon $d: bytes_tx summed over the links" "$tx" "$want_tx"
	rt_eq "daemon $d: bytes_rx summed over the links" "$rx" "$want_rx"
}
# What daemon A sends is what the clients sent; daemon B sends it back.
rt_step A fl_check A lgr.handshakes "$up" "$down"
fl_b_check() {
	fl_check B lgr.accepted "$down" "$up"
	rt_server_expect " 100 ok, 0 failed, 0 aborted" "the server on guest b"
}
rt_step B fl_b_check

rt_pass "100 flows between two guests over one rdma group of 2 links, $((up >> 10)) KiB up, $((down >> 10)) KiB down, sha256 equal both ways"
