#!/bin/bash
# Guards link-group failure: when the peer daemon is killed mid-transfer its flows are reset at once (not when links.dead_after expires) on the surviving daemon, which keeps serving with new flows falling back to tcp (peer_unreachable), and once the peer is back new flows use shm again.
. "$(dirname "$0")/lib.sh"
it_init "$@"
# links.dead_after 60 s: a reset within 20 s of the kill can only be the
# failure's own, not the liveness timer's (no wall-clock bound: timing).
it_setup_shm fallback='{"connect_timeout": "2s", "negative_ttl": "1s"}' \
	links='{"dead_after": "60s"}'

# 20 flows of 16 MiB each way at 4 MiB/s: all mid-way when the peer dies.
it_run --flows 20 --concurrency 20 --size 16MiB --rate 4MiB --timeout 60 \
	>"$IT_DIR/client.log" 2>&1 &
client=$!
IT_PIDS+=("$client")
it_wait_stat flows.active.shm -ge 20 5 || it_fail "the 20 flows did not start on shm"
sleep 0.5
groups=$(it_stat lgr.handshakes)	# one per worker that carries flows
kill -KILL "$PEER_PID"
killed=$(date +%s%N)
PEER_PID=
for ((i = 0; i < 1000; i++)); do
	kill -0 "$client" 2>/dev/null || break
	sleep 0.02
done
ms=$((($(date +%s%N) - killed) / 1000000))
if kill -0 "$client" 2>/dev/null; then
	cat "$IT_DIR/client.log"
	it_fail "clients still hang 20 s after the peer daemon was killed"
fi
wait "$client"
sed 's/^/  /' "$IT_DIR/client.log" | tail -3
grep -q '^flows: 0 ok, 20 failed' "$IT_DIR/client.log" || it_fail "not every flow was reset"
echo "  all 20 clients saw the end ${ms} ms after SIGKILL"
read -r fails reset < <(it_stat lgr.failures lgr.flows_reset | tr '\n' ' ')
[ "$fails" -eq "$groups" ] || it_fail "lgr.failures is $fails, expected $groups (every group)"
[ "$reset" -eq 20 ] || it_fail "lgr.flows_reset is $reset, expected 20"
it_wait_stat flows.active.shm -eq 0 2 || it_fail "flows of the dead group stay active"

# The surviving daemon serves on: over tcp, the peer being unreachable.
it_run_ok fallback "flows failed while the peer was down" \
	--flows 10 --concurrency 10 --max-size 256KiB --seed 31 --timeout 30
unreach=$(it_stat fallback.peer_unreachable)
[ "$unreach" -eq 10 ] || it_fail "fallback.peer_unreachable is $unreach, expected 10"

it_peer_start
sleep 1.1	# the negative cache entry expires
shm0=$(it_stat flows.closed.shm)
it_run_ok shm-again "flows failed after the peer came back" \
	--flows 10 --concurrency 10 --max-size 256KiB --seed 32 --timeout 30
it_wait_stat flows.closed.shm -eq $((shm0 + 10)) 5 || it_fail "new flows did not use shm again"
read -r hs hits < <(it_stat lgr.handshakes lgr.negative_cache_hits | tr '\n' ' ')
echo "  handshakes $hs, negative cache hits $hits"
it_pass "reset within $ms ms, tcp while the peer was down, shm again after its restart"
