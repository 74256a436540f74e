# shellcheck shell=bash
# The body of the rdma FIN/RST test, on either topology (sourced after
# rt_init or rp_init: tests/rdma/t_rdma_close.sh runs it in one guest,
# tests/rdma/pair/t_pair_close.sh between two; steps as in
# tests/rdma/lib.sh, Scenarios).
rt_setup

cl_half() {
	rt_run_ok half-client "client FIN first over rdma: the down stream did not arrive whole" \
		--mode half-client --flows 20 --concurrency 20 --max-size 256KiB --seed 11 --timeout 90
	rt_run_ok half-server "server FIN first over rdma: the down stream did not arrive whole" \
		--mode half-server --flows 20 --concurrency 20 --max-size 256KiB --seed 12 --timeout 90
	rt_wait_stat A flows.active.rdma -eq 0 20 || rt_fail "half-closed flows stay active on daemon A after both FINs"
}
rt_step A cl_half
cl_b_half() { rt_wait_stat B flows.active.rdma -eq 0 20 || rt_fail "daemon B keeps half-closed flows"; }
rt_step B cl_b_half

# The bound on the reset's delay only tells a reset from a flow left
# hanging or ended by EOF, not speed: the client floods the up direction
# until the RST, and on a loaded machine the RST was seen to take 3 s to
# reach the client (flowcheck's own default is 2 s).
cl_reset() {
	local before after ardma atcp afail
	before=$(rt_stat A resets) || rt_fail "no resets counter"
	rt_run_ok "server RST" "a server RST did not reach the client as an ECONNRESET" \
		--mode reset --flows 10 --concurrency 10 --size 512KiB --reset-within 30000 --seed 21 --timeout 90
	rt_run_ok "client RST" "client-reset flows failed on the client side" \
		--mode client-reset --flows 10 --concurrency 10 --size 512KiB --seed 22 --timeout 90
	rt_wait_stat A flows.active.rdma -eq 0 20 || rt_fail "reset flows stay active on daemon A"
	after=$(rt_stat A resets)
	read -r ardma atcp afail < <(rt_stat A flows.closed.rdma flows.closed.tcp lgr.failures | tr '\n' ' ')
	echo "  daemon A: closed.rdma $ardma closed.tcp $atcp failures $afail resets $before -> $after"
	rt_eq "daemon A: flows.closed.tcp" "$atcp" 0
	rt_eq "daemon A: flows.closed.rdma" "$ardma" 60
	rt_eq "daemon A: lgr.failures" "$afail" 0
	[ "$after" -ge $((before + 20)) ] || rt_fail "daemon A: resets moved from $before to $after, expected +20"
}
rt_step A cl_reset

cl_b_end() {
	local brdma btcp bfail
	rt_wait_stat B flows.active.rdma -eq 0 20 || rt_fail "daemon B keeps reset flows"
	read -r brdma btcp bfail < <(rt_stat B flows.closed.rdma flows.closed.tcp lgr.failures | tr '\n' ' ')
	echo "  daemon B: closed.rdma $brdma closed.tcp $btcp failures $bfail"
	rt_eq "daemon B: flows.closed.tcp" "$btcp" 0
	rt_eq "daemon B: flows.closed.rdma" "$brdma" 60
	rt_eq "daemon B: lgr.failures" "$bfail" 0
	rt_server_expect " 60 ok, 0 failed, 0 aborted" \
		"the server saw a failure (a client RST must arrive as ECONNRESET)"
}
rt_step B cl_b_end

rt_pass "FIN both ways and RST both ways over rdma $RT_WHERE, 60 flows"
