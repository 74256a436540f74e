#!/bin/bash
# Guards the transparent fallback: a peer whose control port accepts but never answers makes the first flow wait fallback.connect_timeout and then go over TCP with reason timeout (its bytes intact), later flows go over TCP at once from the negative cache, and after negative_ttl the peer is asked again.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
it_redirect
it_server_start
# A control port that takes the connection and says nothing.
ip netns exec "$NS_S" python3 -c '
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", '"$CPORT"')); s.listen(16)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)
' &
IT_PIDS+=($!)
# Python can take a second to start (a pyenv shim, a loaded machine): wait
# for the port, or a refused connect is counted as peer_unreachable.
for _ in $(seq 100); do
	ip netns exec "$NS_S" ss -Hltn "sport = :$CPORT" | grep -q . && break
	sleep 0.1
done
it_config transport='"auto"' workers=1 \
	peers="[{\"prefix\": \"$S4/32\", \"control_port\": $CPORT}]" \
	fallback='{"connect_timeout": "300ms", "negative_ttl": "2s"}'
it_daemon_start

t0=$(date +%s%N)
it_run_ok first "the flow parked on a silent peer failed" \
	--flows 1 --concurrency 1 --size 1MiB --seed 41 --timeout 10
ms=$((($(date +%s%N) - t0) / 1000000))
read -r timeout hits < <(it_stat fallback.timeout lgr.negative_cache_hits | tr '\n' ' ')
echo "  first flow took $ms ms; fallback.timeout $timeout"
[ "$timeout" -eq 1 ] || it_fail "fallback.timeout is $timeout, expected 1"
[ "$ms" -ge 300 ] || it_fail "the first flow did not wait for the handshake ($ms ms)"

it_run_ok cached "flows failed while the peer was in the negative cache" \
	--flows 10 --concurrency 10 --size 64KiB --seed 42 --timeout 10
read -r timeout hits < <(it_stat fallback.timeout lgr.negative_cache_hits | tr '\n' ' ')
[ "$hits" -eq 10 ] || it_fail "negative_cache_hits is $hits, expected 10"
[ "$timeout" -eq 11 ] || it_fail "fallback.timeout is $timeout, expected 11 (the cached reason)"
peers=$(it_ctl --json peers)
grep -Eq '"state": *"negative"' <<<"$peers" && grep -Eq '"reason": *"timeout"' <<<"$peers" ||
	it_fail "peers does not show the negative entry: $peers"

sleep 2.1
it_run_ok retry "the flow after negative_ttl failed" \
	--flows 1 --concurrency 1 --size 64KiB --seed 43 --timeout 10
read -r timeout hits < <(it_stat fallback.timeout lgr.negative_cache_hits | tr '\n' ' ')
[ "$hits" -eq 10 ] || it_fail "the peer was not asked again after negative_ttl (hits $hits)"
[ "$timeout" -eq 12 ] || it_fail "fallback.timeout is $timeout, expected 12"
it_server_expect " 12 ok, 0 failed" "server side"
it_pass "timeout after $ms ms, 10 flows from the negative cache, asked again after the ttl"
