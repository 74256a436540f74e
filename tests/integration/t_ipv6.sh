#!/bin/bash
# Guards IPv6 interception: ip6tables REDIRECT to the [::1] listener, IP6T_SO_ORIGINAL_DST, and sha256 of every byte both ways over IPv6.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_relay

seed=${IT_SEED:-$$}
out=$(it_run --connect "[$S6]:$SPORT" --flows 50 --concurrency 50 --max-size 2MiB --seed "$seed" --timeout 60)
rc=$?
printf '%s\n' "$out" | sed 's/^/  /' | head -30
[ $rc -eq 0 ] || it_fail "flowcheck over IPv6 (seed $seed) failed"

read -r up down < <(printf '%s\n' "$out" | awk '/^bytes:/ { print $3, $5 }')
it_wait_stat flows.active.tcp -eq 0 5 || it_fail "flows still active"
read -r accepted bin bout < <(it_stat flows.accepted bytes.in bytes.out | tr '\n' ' ')
[ "$accepted" -ge 50 ] || it_fail "flows.accepted is $accepted, expected >= 50"
[ "$bin" -eq "$up" ] || it_fail "bytes.in is $bin, the clients sent $up"
[ "$bout" -eq "$down" ] || it_fail "bytes.out is $bout, the clients received $down"

summary=$(it_server_stop)
case $summary in
*" 50 ok, 0 failed"*) ;;
*) it_fail "server side: $summary" ;;
esac
it_pass "50 flows over IPv6"
