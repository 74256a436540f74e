#!/bin/bash
# Guards half-close in both directions: after the client's FIN the whole down stream still arrives, and after the server's FIN the whole up stream still arrives; the flow ends only when both directions are done.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_relay

# half-client: the server sends nothing until it has read the client's EOF.
it_run_ok half-client "client FIN first: the down stream did not arrive whole" \
	--mode half-client --flows 20 --concurrency 20 --max-size 2MiB --seed 11 --timeout 30

# half-server: the server sends down and its FIN at once; the client sends
# up only after that EOF, and the server checks it against the seed.
it_run_ok half-server "server FIN first: the down stream did not arrive whole" \
	--mode half-server --flows 20 --concurrency 20 --max-size 2MiB --seed 12 --timeout 30

# A flow whose two directions are done must be gone from the daemon.
it_wait_stat flows.active.tcp -eq 0 5 || it_fail "half-closed flows stay active after both FINs"

it_server_expect " 40 ok, 0 failed, 0 aborted" \
	"server FIN first: the up stream after the server's FIN did not arrive whole"
it_pass "client FIN first and server FIN first, 20 flows each"
