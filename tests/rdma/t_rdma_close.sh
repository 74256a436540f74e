#!/bin/bash
# Guards FIN and RST across an rdma link group: after either side's FIN the other direction still arrives whole, a server RST reaches the client as an ECONNRESET and a client RST reaches the server, and every flow ends on both daemons, all over rdma.
. "$(dirname "$0")/lib.sh"
rt_init "$@"
rt_setup

rt_run_ok half-client "client FIN first over rdma: the down stream did not arrive whole" \
	--mode half-client --flows 20 --concurrency 20 --max-size 256KiB --seed 11 --timeout 60
rt_run_ok half-server "server FIN first over rdma: the down stream did not arrive whole" \
	--mode half-server --flows 20 --concurrency 20 --max-size 256KiB --seed 12 --timeout 60
rt_wait_stat A flows.active.rdma -eq 0 10 || rt_fail "half-closed flows stay active on daemon A after both FINs"
rt_wait_stat B flows.active.rdma -eq 0 10 || rt_fail "daemon B keeps half-closed flows"

before=$(rt_stat A resets) || rt_fail "no resets counter"
# The bound on the reset's delay only tells a reset from a flow left
# hanging or ended by EOF, not speed: with the client flooding the up
# direction, the RST was seen to take 3 s on a loaded machine.
rt_run_ok "server RST" "a server RST did not reach the client as an ECONNRESET" \
	--mode reset --flows 10 --concurrency 10 --size 512KiB --reset-within 30000 --seed 21 --timeout 60
rt_run_ok "client RST" "client-reset flows failed on the client side" \
	--mode client-reset --flows 10 --concurrency 10 --size 512KiB --seed 22 --timeout 60
rt_wait_stat A flows.active.rdma -eq 0 10 || rt_fail "reset flows stay active on daemon A"
rt_wait_stat B flows.active.rdma -eq 0 10 || rt_fail "daemon B keeps reset flows"
after=$(rt_stat A resets)

read -r ardma atcp < <(rt_stat A flows.closed.rdma flows.closed.tcp | tr '\n' ' ')
read -r brdma btcp < <(rt_stat B flows.closed.rdma flows.closed.tcp | tr '\n' ' ')
echo "  daemon A: closed.rdma $ardma closed.tcp $atcp resets $before -> $after"
echo "  daemon B: closed.rdma $brdma closed.tcp $btcp"
rt_eq "daemon A: flows.closed.tcp" "$atcp" 0
rt_eq "daemon B: flows.closed.tcp" "$btcp" 0
rt_eq "daemon A: flows.closed.rdma" "$ardma" 60
rt_eq "daemon B: flows.closed.rdma" "$brdma" 60
[ "$after" -ge $((before + 20)) ] || rt_fail "daemon A: resets moved from $before to $after, expected +20"
rt_server_expect " 60 ok, 0 failed, 0 aborted" \
	"the server saw a failure (a client RST must arrive as ECONNRESET)"
rt_pass "FIN both ways and RST both ways over rdma, 60 flows"
