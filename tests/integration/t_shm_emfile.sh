#!/bin/bash
# Guards fd exhaustion on the control port: a peer daemon out of fds (RLIMIT_NOFILE 64, a flood of idle control connections from 20 addresses, as handshakes in progress are limited per source) backs off instead of spinning on its level-triggered control poll, the other daemon's flows go over TCP meanwhile, and link groups work again once the fds are free.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
it_redirect
it_server_start
it_peer_config workers=1 transport='"auto"' control="\"0.0.0.0:$CPORT\"" \
	peers="[{\"prefix\": \"$NET4\", \"allow\": $ALLOW}]" fallback='{"connect_timeout": "500ms"}'
it_peer_start prlimit --nofile=64:64 --
it_config workers=1 transport='"auto"' \
	peers="[{\"prefix\": \"$S4/32\", \"control_port\": $CPORT}]" \
	fallback='{"connect_timeout": "500ms", "negative_ttl": "0"}'
it_daemon_start

# 100 idle connections to the peer's control port, from 20 addresses of a
# subnet it lists (5 each: a single source is capped at 8 handshakes in
# progress, which no longer exhausts anything): each waits for a proposal
# that never comes, so fds run out. They carry the daemon's mark, so that
# the REDIRECT rule leaves them alone: they reach the peer from their own
# addresses, not through daemon A.
for i in $(seq 101 120); do
	ip -n "$NS_C" addr add "10.66.1.$i/24" dev veth0 || it_fail "cannot add 10.66.1.$i"
done
ip netns exec "$NS_C" python3 -c '
import socket, time
conns = []
for i in range(100):
    s = socket.socket(); s.settimeout(2)
    try:
        s.setsockopt(socket.SOL_SOCKET, 36, '"$MARK"')	# SO_MARK
        s.bind(("10.66.1.%d" % (101 + i % 20), 0))
        s.connect(("'"$S4"'", '"$CPORT"')); conns.append(s)
    except OSError:
        pass
print("held", len(conns), flush=True)
time.sleep(60)
' >"$IT_DIR/flood.log" 2>&1 &
flood=$!
IT_PIDS+=("$flood")
it_wait_file "$IT_DIR/flood.log" '^held' 10 || it_fail "the flood did not start"
sleep 0.5
kill -0 "$PEER_PID" 2>/dev/null || it_fail "the peer daemon died at fd exhaustion"
c0=$(it_cpu_ticks "$PEER_PID")
sleep 2
c1=$(it_cpu_ticks "$PEER_PID")
ticks=$((c1 - c0))
hz=$(getconf CLK_TCK)
echo "  peer daemon CPU over 2 s at fd exhaustion: $ticks ticks (of $((2 * hz)))"
[ "$ticks" -le $((hz / 5)) ] || it_fail "the peer daemon spins at EMFILE: $ticks ticks in 2 s"

it_run_ok during "flows failed while the peer was out of fds" \
	--flows 5 --concurrency 5 --size 64KiB --seed 51 --timeout 20

kill "$flood"
wait "$flood" 2>/dev/null
sleep 1.5	# the flood's handshakes time out and free their fds
# (Only now: out of fds, the peer cannot take a stats connection either.)
pauses=$(it_peer_stat accept_pauses)
[ "$pauses" -gt 0 ] || it_fail "the peer's accept_pauses is '$pauses' after fd exhaustion"
shm0=$(it_stat flows.closed.shm)
it_run_ok after "flows failed after the fds were freed" \
	--flows 5 --concurrency 5 --size 64KiB --seed 52 --timeout 20
it_wait_stat flows.closed.shm -eq $((shm0 + 5)) 5 || it_fail "flows did not use shm again"
it_pass "no spin ($ticks ticks in 2 s), accept_pauses $pauses, tcp meanwhile, shm again"
