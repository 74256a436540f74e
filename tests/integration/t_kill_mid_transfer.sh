#!/bin/bash
# Guards against hung clients: when the daemon is killed (SIGKILL) mid-transfer, every client flow ends promptly with a reset or EOF error instead of hanging.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_relay

# 20 flows of 16 MiB each way at 4 MiB/s: about 4 s each, so all are mid-way
# when the daemon dies after about 1 s.
it_run --flows 20 --concurrency 20 --size 16MiB --rate 4MiB --timeout 60 \
	>"$IT_DIR/client.log" 2>&1 &
client=$!
IT_PIDS+=("$client")
it_wait_stat flows.active.tcp -ge 20 5 || it_fail "the 20 flows did not start"
sleep 0.5
kill -KILL "$DAEMON_PID"
killed=$(date +%s%N)
DAEMON_PID=

for ((i = 0; i < 100; i++)); do
	kill -0 "$client" 2>/dev/null || break
	sleep 0.05
done
if kill -0 "$client" 2>/dev/null; then
	cat "$IT_DIR/client.log"
	it_fail "clients still hang 5 s after the daemon was killed"
fi
wait "$client"
ms=$((($(date +%s%N) - killed) / 1000000))
sed 's/^/  /' "$IT_DIR/client.log" | tail -8
grep -q '^flows: 0 ok, 20 failed' "$IT_DIR/client.log" ||
	it_fail "expected all 20 flows cut: $(grep '^flows:' "$IT_DIR/client.log")"
grep -E '^failures:' "$IT_DIR/client.log" | grep -qE 'timeout|mismatch|protocol' &&
	it_fail "flows ended other than by reset/EOF: $(grep '^failures:' "$IT_DIR/client.log")"
it_pass "all 20 clients saw reset/EOF within ${ms} ms of SIGKILL"
