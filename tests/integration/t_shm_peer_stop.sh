#!/bin/bash
# Guards a fixed bug (a frozen peer left flows hanging for ever): with the peer daemon stopped (SIGSTOP) under traffic, every flow through it is reset within links.dead_after plus slack and counted, new flows use tcp while it stays silent, and after SIGCONT new flows use shm again.
. "$(dirname "$0")/lib.sh"
it_init "$@"
dead_ms=3000
it_setup_shm links="{\"dead_after\": \"${dead_ms}ms\"}" \
	fallback='{"connect_timeout": "1s", "negative_ttl": "2s"}'

# 8 flows of 16 MiB each way at 1 MiB/s: all mid-way when the peer stops.
it_run --flows 8 --concurrency 8 --size 16MiB --rate 1MiB --timeout 60 \
	>"$IT_DIR/client.log" 2>&1 &
client=$!
IT_PIDS+=("$client")
it_wait_stat flows.active.shm -ge 8 5 || it_fail "the 8 flows did not start on shm"
sleep 0.5
kill -STOP "$PEER_PID"
stopped=$(date +%s%N)
# The bound, a probe's sweep (100 ms) and the clients' own reaction.
limit_ms=$((dead_ms + 1500))
for ((i = 0; i < limit_ms / 50 + 40; i++)); do
	kill -0 "$client" 2>/dev/null || break
	sleep 0.05
done
ms=$((($(date +%s%N) - stopped) / 1000000))
if kill -0 "$client" 2>/dev/null; then
	kill -CONT "$PEER_PID"
	cat "$IT_DIR/client.log"
	it_fail "clients still hang $ms ms after the peer daemon was stopped"
fi
wait "$client"
sed 's/^/  /' "$IT_DIR/client.log" | tail -3
grep -q '^flows: 0 ok, 8 failed' "$IT_DIR/client.log" || it_fail "not every flow was reset"
echo "  all 8 clients saw the end ${ms} ms after SIGSTOP (dead_after ${dead_ms} ms)"
[ "$ms" -le "$limit_ms" ] || it_fail "flows took $ms ms to reset, more than $limit_ms ms"
read -r silent reset < <(it_stat lgr.links_silent lgr.flows_reset | tr '\n' ' ')
[ "$silent" -ge 1 ] || it_fail "lgr.links_silent is $silent, expected at least 1"
[ "$reset" -eq 8 ] || it_fail "lgr.flows_reset is $reset, expected 8"
grep -q 'the peer said nothing for 3000 ms (links.dead_after)' "$IT_DIR/daemon.log" ||
	it_fail "the log does not say the peer was silent"

# The peer stays stopped: new flows go over tcp (its handshake times out).
tcp0=$(it_stat flows.closed.tcp)
it_run_ok fallback "flows failed while the peer was stopped" \
	--flows 6 --concurrency 6 --max-size 256KiB --seed 41 --timeout 30
it_wait_stat flows.closed.tcp -eq $((tcp0 + 6)) 5 || it_fail "new flows did not use tcp"

kill -CONT "$PEER_PID"
sleep 2.1	# the negative cache entry expires
shm0=$(it_stat flows.closed.shm)
it_run_ok shm-again "flows failed after the peer resumed" \
	--flows 6 --concurrency 6 --max-size 256KiB --seed 42 --timeout 30
it_wait_stat flows.closed.shm -eq $((shm0 + 6)) 5 || it_fail "new flows did not use shm again"
it_pass "reset within $ms ms (dead_after $dead_ms ms), tcp while stopped, shm after SIGCONT"
