#!/bin/bash
# Guards FIN and RST across a shm link group: after either side's FIN the other direction still arrives whole, a server RST reaches the client as a prompt ECONNRESET and a client RST reaches the server, and every flow ends on both daemons.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_shm

it_run_ok half-client "client FIN first over shm: the down stream did not arrive whole" \
	--mode half-client --flows 20 --concurrency 20 --max-size 2MiB --seed 11 --timeout 30
it_run_ok half-server "server FIN first over shm: the down stream did not arrive whole" \
	--mode half-server --flows 20 --concurrency 20 --max-size 2MiB --seed 12 --timeout 30
it_wait_stat flows.active.shm -eq 0 5 || it_fail "half-closed flows stay active after both FINs"
SOCK=$PSOCK it_wait_stat flows.active.shm -eq 0 5 || it_fail "the peer keeps half-closed flows"

before=$(it_stat resets) || it_fail "no resets counter"
it_run_ok "server RST" "a server RST did not reach the client as a prompt ECONNRESET" \
	--mode reset --flows 10 --concurrency 10 --size 1MiB --reset-within 2000 --seed 21 --timeout 30
it_run_ok "client RST" "client-reset flows failed on the client side" \
	--mode client-reset --flows 10 --concurrency 10 --size 1MiB --seed 22 --timeout 30
it_wait_stat flows.active.shm -eq 0 5 || it_fail "reset flows stay active"
SOCK=$PSOCK it_wait_stat flows.active.shm -eq 0 5 || it_fail "the peer keeps reset flows"
after=$(it_stat resets)

read -r shm tcp < <(it_stat flows.closed.shm flows.closed.tcp | tr '\n' ' ')
echo "  client daemon: closed.shm $shm closed.tcp $tcp resets $before -> $after"
[ "$tcp" -eq 0 ] || it_fail "$tcp flows fell back to tcp"
[ "$shm" -eq 60 ] || it_fail "flows.closed.shm is $shm, expected 60"
[ "$after" -ge $((before + 20)) ] || it_fail "resets moved from $before to $after, expected +20"
it_server_expect " 60 ok, 0 failed, 0 aborted" \
	"the server saw a failure (a client RST must arrive as ECONNRESET)"
it_pass "FIN both ways and RST both ways over shm, 60 flows"
