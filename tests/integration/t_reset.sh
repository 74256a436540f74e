#!/bin/bash
# Guards RST propagation: a server RST mid-stream reaches the client as ECONNRESET within 2 s, a client RST reaches the server, and the resets counter moves.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_relay

before=$(it_stat resets) || it_fail "no resets counter"

# The server sends half its down stream, reads some of the client's, then
# closes with SO_LINGER 0 while the client is still sending.
it_run_ok "server RST" "a server RST did not reach the client as a prompt ECONNRESET" \
	--mode reset --flows 10 --concurrency 10 --size 1MiB --reset-within 2000 --seed 21 --timeout 30

# The client sends half its up stream, then resets while the server sends.
it_run_ok "client RST" "client-reset flows failed on the client side" \
	--mode client-reset --flows 10 --concurrency 10 --size 1MiB --seed 22 --timeout 30

it_wait_stat flows.active.tcp -eq 0 5 || it_fail "reset flows stay active"
it_server_expect " 20 ok, 0 failed, 0 aborted" \
	"a client RST did not reach the server as ECONNRESET"

after=$(it_stat resets)
echo "  resets: $before -> $after"
[ "$after" -ge $((before + 20)) ] || it_fail "resets moved from $before to $after, expected +20"
it_pass "server RST and client RST propagated, resets +$((after - before))"
