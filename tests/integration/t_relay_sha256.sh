#!/bin/bash
# Guards the relay data path: 200 concurrent flows with random sizes up to 8 MiB each way cross REDIRECT + smcproxyd with the sha256 of every byte matching both ways, and the flow and byte counters account for exactly what moved.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_relay

seed=${IT_SEED:-$$}
out=$(it_run --flows 200 --concurrency 200 --max-size 8MiB --seed "$seed" --timeout 100)
rc=$?
printf '%s\n' "$out" | grep -vE '^FAIL flow' | sed 's/^/  /'
printf '%s\n' "$out" | grep -E '^FAIL flow' | head -20
[ $rc -eq 0 ] || it_fail "flowcheck (seed $seed): $(printf '%s\n' "$out" | grep -E '^(flows|failures):' | tr '\n' ' ')"

read -r up down < <(printf '%s\n' "$out" | awk '/^bytes:/ { print $3, $5 }')
it_wait_stat flows.active.tcp -eq 0 5 || it_fail "flows still active after every client finished"
read -r accepted closed bin bout < <(it_stat flows.accepted flows.closed.tcp bytes.in bytes.out | tr '\n' ' ')
echo "  daemon: accepted $accepted closed.tcp $closed bytes.in $bin bytes.out $bout"
[ "$accepted" -ge 200 ] || it_fail "flows.accepted is $accepted, expected >= 200"
[ "$closed" -ge 200 ] || it_fail "flows.closed.tcp is $closed, expected >= 200"
[ "$bin" -eq "$up" ] || it_fail "bytes.in is $bin, the clients sent $up"
[ "$bout" -eq "$down" ] || it_fail "bytes.out is $bout, the clients received $down"

# The relay buffers a bounded amount per direction (back-pressure, not
# memory): 200 flows of megabytes each must not grow the daemon's RSS.
hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$DAEMON_PID/status")
echo "  daemon peak RSS: $((hwm / 1024)) MiB"
[ "$hwm" -le $((128 * 1024)) ] || it_fail "daemon peak RSS $((hwm / 1024)) MiB for 200 flows: unbounded buffering?"

it_server_expect " 200 ok, 0 failed" "server side"
it_pass "200 flows, $((up >> 20)) MiB up, $((down >> 20)) MiB down, sha256 equal both ways"
