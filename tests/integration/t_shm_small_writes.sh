#!/bin/bash
# Guards autocork's socket side over a shm link group (cork.h): a flow of 64-byte writes with TCP_NODELAY is read once per completion of its send in flight, not once per segment (cdc.reads_deferred, cdc.socket_reads fewer than the writes), every byte arriving; a flow that turns bulk moves its 64 MiB to the byte; a bulk flow and 2,000 round trips of 64 bytes pass.
# it-timeout: 180
. "$(dirname "$0")/lib.sh"
it_init "$@"
EPORT=9100	# smcperf serve: the sink and the echo
it_setup_shm workers=1
ip netns exec "$NS_S" "$B/tools/smcperf" serve --listen "0.0.0.0:$EPORT" \
	>"$IT_DIR/sink.log" 2>&1 &
IT_PIDS+=("$!")
it_wait_file "$IT_DIR/sink.log" 'serving' 5 || it_fail "smcperf serve did not start"

# The bytes a finished smcperf run says the server counted.
result_bytes() {
	sed -n 's/^RESULT .* bytes=\([0-9]*\).*/\1/p' "$1"
}

# 1. Small writes: 200,000 of 64 bytes, to the byte.
"${IT_APP[@]}" "$B/tools/smcperf" bw --connect "$S4:$EPORT" -s 64 -n 200000 -t 60 \
	>"$IT_DIR/small.log" 2>&1 || it_fail "smcperf bw -s 64: $(tail -3 "$IT_DIR/small.log")"
got=$(result_bytes "$IT_DIR/small.log")
[ "$got" = $((200000 * 64)) ] || it_fail "64-byte writes: the server counted ${got:-nothing} bytes, $((200000 * 64)) were written"
read -r reads deferred < <(it_stat cdc.socket_reads cdc.reads_deferred | tr '\n' ' ')
echo "  200,000 x 64 B: $reads socket reads, $deferred deferred to a completion"
[ "$deferred" -gt 0 ] || it_fail "no socket read was deferred to a completion"
# How many writes one read takes depends on the machine's timing (35,000
# to 104,000 reads seen): only that reads gather writes is asserted.
[ "$reads" -lt 200000 ] || it_fail "$reads socket reads for 200,000 writes: not batched"

# 2. One flow that starts small and turns bulk: 50,000 x 64 B, then
# 1024 x 64 KiB, counted by the sink.
cat >"$IT_DIR/turn.py" <<'EOF'
import socket, struct, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.sendall(b"B")
small, big = b"s" * 64, b"b" * 65536
for _ in range(50000):
    s.sendall(small)
for _ in range(1024):
    s.sendall(big)
s.shutdown(socket.SHUT_WR)
got = b""
while len(got) < 8:
    b = s.recv(8 - len(got))
    if not b:
        break
    got += b
print(struct.unpack(">Q", got)[0] if len(got) == 8 else "short")
EOF
want=$((50000 * 64 + 1024 * 65536))
got=$(timeout 60 "${IT_APP[@]}" python3 "$IT_DIR/turn.py" "$S4" "$EPORT" 2>&1) ||
	it_fail "the small-then-bulk flow: $got"
[ "$got" = "$want" ] || it_fail "small then bulk: the server counted $got bytes, $want were written"
echo "  50,000 x 64 B then 64 MiB on one flow: to the byte"

# 3. Bulk and round trips.
"${IT_APP[@]}" "$B/tools/smcperf" bw --connect "$S4:$EPORT" -s 65536 -n 512 -t 60 \
	>"$IT_DIR/bulk.log" 2>&1 || it_fail "smcperf bw -s 65536: $(tail -3 "$IT_DIR/bulk.log")"
got=$(result_bytes "$IT_DIR/bulk.log")
[ "$got" = $((512 * 65536)) ] || it_fail "bulk: the server counted ${got:-nothing} bytes, $((512 * 65536)) were written"
"${IT_APP[@]}" "$B/tools/smcperf" lat --connect "$S4:$EPORT" -s 64 -n 2000 -t 60 \
	>"$IT_DIR/lat.log" 2>&1 || it_fail "smcperf lat: $(tail -3 "$IT_DIR/lat.log")"
grep -q '^RESULT' "$IT_DIR/lat.log" || it_fail "smcperf lat printed no result: $(tail -3 "$IT_DIR/lat.log")"
it_wait_stat flows.active.shm -eq 0 10 || it_fail "flows still active at the end"
[ "$(it_stat flows.closed.tcp)" -eq 0 ] || it_fail "flows fell back to tcp"
it_pass "200,000 64-byte writes in $reads socket reads ($deferred deferred to a completion), small then bulk to the byte, bulk and round trips"
