#!/bin/bash
# Guards the flow counts on the default buffers: 10,000 concurrent flows between two daemons all go over shm (rings start at 16 KiB, a full link group makes another, one budget per daemon), each answering twice, at the open and again after all of them idled together, with the daemons' memory per flow reported and bounded; then 20,000 short connections, 200 at a time, all over shm too.
# it-timeout: 480
. "$(dirname "$0")/lib.sh"
it_init "$@"
# A burst of 10,000 flows opens about twenty link groups at once: on a
# loaded machine a handshake can take longer than the default 2 s, and
# the flows waiting for it would go over tcp. This test is about memory.
it_setup_shm fallback='{"connect_timeout": "10s"}'

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# The held flows answer twice: each exchanges 256 bytes each way at the
# open, then all of them idle at once, then each sends again and gets the
# trailer whose digests cover both rounds (flowcheck hold --exchange).
N=10000
# A first flow brings up a group, so the baseline has the daemons' own
# memory (loops, workers, the first region's queues) in it.
it_run --flows 1 --size 1KiB --timeout 20 >/dev/null || it_fail "first flow failed"
base_c=$(rss_kib "$DAEMON_PID")
base_p=$(rss_kib "$PEER_PID")
"${IT_APP[@]}" "$FLOWCHECK" hold --connect "$S4:$SPORT" --count $N --seconds 120 \
	--exchange 256 >"$IT_DIR/hold.out" 2>&1 &
hold=$!
IT_PIDS+=("$hold")
it_wait_file "$IT_DIR/hold.out" '^hold: ([0-9]+ answered once|closed)' 90 ||
	it_fail "the held flows did not answer: $(cat "$IT_DIR/hold.out")"
grep -q "^hold: $N answered once, 0 failed, 0 late" "$IT_DIR/hold.out" ||
	it_fail "first answers: $(grep answered "$IT_DIR/hold.out")"
it_wait_stat flows.active.shm -eq $N 60 ||
	it_fail "$(it_stat flows.active.shm) of $N held flows on shm; fallback: $(it_ctl --json stats | tr -d '\n' | grep -o '"fallback": *{[^}]*}')"
sleep 1
rss_c=$(rss_kib "$DAEMON_PID")
rss_p=$(rss_kib "$PEER_PID")
per_c=$(( (rss_c - base_c) * 1024 / N ))
per_p=$(( (rss_p - base_p) * 1024 / N ))
read -r tcp hs < <(it_stat flows.active.tcp lgr.handshakes | tr '\n' ' ')
echo "  $N flows on shm, answered once and idle, $hs link groups; RSS per flow: client daemon $per_c B, peer daemon $per_p B"
[ "$tcp" -eq 0 ] || it_fail "$tcp held flows on tcp"
read -r budget inuse < <(it_stat rings.budget_bytes rings.in_use_bytes | tr '\n' ' ')
echo "  client daemon rings: budget $((budget >> 20)) MiB, in use $((inuse >> 20)) MiB"
[ "$inuse" -ge $((N * 16384)) ] || it_fail "rings.in_use_bytes is $inuse for $N flows"
# The budget by ring size and by peer: every held flow on a 16 KiB ring,
# nothing pinned over shm, the peer's groups and bytes in `peers`.
json=$(it_ctl --json stats | tr -d ' \n')
used16=$(grep -o '"16KiB":{"used":[0-9]*' <<<"$json" | grep -o '[0-9]*$')
pinned=$(grep -o '"pinned_bytes":[0-9]*' <<<"$json" | grep -o '[0-9]*$')
echo "  client daemon rings of 16 KiB in use: $used16, pinned bytes: $pinned"
[ "${used16:-0}" -ge $N ] || it_fail "rings.by_size.16KiB.used is ${used16:-missing}"
[ "$pinned" = 0 ] || it_fail "rings.pinned_bytes is ${pinned:-missing} over shm"
peers=$(it_ctl --json peers | tr -d ' \n')
groups=$(grep -o '"peer_groups":[0-9]*' <<<"$peers" | grep -o '[0-9]*$' | sort -n | tail -1)
pbytes=$(grep -o '"peer_ring_bytes":[0-9]*' <<<"$peers" | grep -o '[0-9]*$' | sort -n | tail -1)
echo "  client daemon peers: $groups groups per worker at most, ${pbytes} ring bytes per worker at most"
[ "${groups:-0}" -ge 2 ] || it_fail "peers shows ${groups:-no} peer_groups for $hs link groups"
[ "${pbytes:-0}" -ge $((N / 2 * 16384)) ] || it_fail "peers shows ${pbytes:-no} peer_ring_bytes"
[ "$per_c" -le 16384 ] || it_fail "client daemon RSS per idle flow is $per_c bytes (> 16 KiB)"
[ "$per_p" -le 16384 ] || it_fail "peer daemon RSS per idle flow is $per_p bytes (> 16 KiB)"

# With every group of the held flows full, new flows still get the link.
out=$(it_run --flows 1000 --concurrency 200 --size 1KiB --timeout 60)
rc=$?
[ $rc -eq 0 ] || it_fail "flows next to the held ones: $(printf '%s\n' "$out" | grep -E '^flows:')"
# Still all on shm after the idle time; now each answers again.
read -r ashm atcp < <(it_stat flows.active.shm flows.active.tcp | tr '\n' ' ')
[ "$ashm" -eq $N ] && [ "$atcp" -eq 0 ] || it_fail "after the idle time $ashm flows on shm, $atcp on tcp"
kill -USR1 "$hold"
wait "$hold"
rc=$?
grep answered "$IT_DIR/hold.out" | sed 's/^/  /'
[ $rc -eq 0 ] && grep -q "^hold: $N answered twice, 0 failed" "$IT_DIR/hold.out" ||
	it_fail "second answers (status $rc): $(grep answered "$IT_DIR/hold.out" | tail -1)"
it_wait_stat flows.active.shm -eq 0 30 || it_fail "the held flows did not end"

# 20,000 short connections, never more than 200 open: rings of ended
# flows come back at once. The client host's own sockets then outnumber
# its ephemeral ports (each closed one waits 60 s in TIME_WAIT, on top of
# the 11,000 above): widen the range and let TIME_WAIT ports be reused on
# the test client, or its connects fail with EADDRNOTAVAIL before they
# reach the daemon.
# The same on the server host, whose daemon connects to the server once
# per flow.
for ns in "$NS_C" "$NS_S"; do
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="10000 65000" \
		net.ipv4.tcp_tw_reuse=1 || it_fail "cannot widen the port range of $ns"
done
out=$(it_run --flows 20000 --concurrency 200 --size 1KiB --timeout 150)
rc=$?
printf '%s\n' "$out" | grep -E '^(flows|time):' | sed 's/^/  /'
[ $rc -eq 0 ] || it_fail "short connections: $(printf '%s\n' "$out" | grep -E '^flows:'); first errors: $(printf '%s\n' "$out" | grep -viE '^(flows|time|bytes):' | sort | uniq -c | sort -rn | head -3 | tr '\n' ';'); closed shm/tcp $(it_stat flows.closed.shm flows.closed.tcp | tr '\n' ' '); fallback: $(it_ctl --json stats | tr -d '\n ' | grep -o '"fallback":{[^}]*}'); loops_refused $(it_stat loops_refused)"
read -r cshm ctcp < <(it_stat flows.closed.shm flows.closed.tcp | tr '\n' ' ')
echo "  client daemon: closed.shm $cshm closed.tcp $ctcp"
[ "$ctcp" -eq 0 ] || it_fail "$ctcp flows fell back to tcp: $(it_ctl --json stats | tr -d '\n ' | grep -o '"fallback":{[^}]*}')"
[ "$cshm" -eq $((1 + N + 1000 + 20000)) ] || it_fail "flows.closed.shm is $cshm"
it_pass "$N flows answering twice around an idle time and 20000 short connections all on shm; RSS per flow $per_c / $per_p B"
