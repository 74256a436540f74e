#!/bin/bash
# Guards RST propagation: a server RST mid-stream reaches the client as ECONNRESET within 2 s, a client RST reaches the server, and the resets counter moves.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
it_redirect
it_server_start
it_config
it_daemon_start

before=$(it_stat resets) || it_fail "no resets counter"

# The server sends half its down stream, reads some of the client's, then
# closes with SO_LINGER 0 while the client is still sending.
out=$(it_run --mode reset --flows 10 --concurrency 10 --size 1MiB --reset-within 2000 --seed 21 --timeout 30)
rc=$?
printf '%s\n' "$out" | sed 's/^/  server RST: /' | head -20
[ $rc -eq 0 ] || it_fail "a server RST did not reach the client as a prompt ECONNRESET"

# The client sends half its up stream, then resets while the server sends.
out=$(it_run --mode client-reset --flows 10 --concurrency 10 --size 1MiB --seed 22 --timeout 30)
rc=$?
printf '%s\n' "$out" | sed 's/^/  client RST: /' | head -20
[ $rc -eq 0 ] || it_fail "client-reset flows failed on the client side"

it_wait_stat flows.active.tcp -eq 0 5 || it_fail "reset flows stay active"
summary=$(it_server_stop)
echo "  $summary"
case $summary in
*" 20 ok, 0 failed, 0 aborted"*) ;;
*) it_fail "a client RST did not reach the server as ECONNRESET: $summary" ;;
esac

after=$(it_stat resets)
echo "  resets: $before -> $after"
[ "$after" -ge $((before + 20)) ] || it_fail "resets moved from $before to $after, expected +20"
it_pass "server RST and client RST propagated, resets +$((after - before))"
