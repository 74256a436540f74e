#!/bin/bash
# Guards equal shares of bulk flows on one shm link group whose growth share is spent: 32 flows that grew alone to 512 KiB rings give back what is above their part once 32 more come, so every flow ends up on a ring within 2x of the others (the old rule, "more than twice its part", let the early ones keep rings of twice their part while the late ones stayed small), and no late flow gets less than a twentieth of the bytes of the fastest.
# it-timeout: 120
. "$(dirname "$0")/lib.sh"
it_init "$@"
# One worker each side, 1 MiB rings, a 64 MiB pool: grown rings share a
# quarter of it, 16 MiB, 256 KiB for each of 64 flows once all grew.
EPORT=9100	# smcperf serve: the sink
FLOWS=64
it_setup_shm workers=1 links='{"per_peer": 1, "max_flows_per_link": 255}' \
	buffers='{"ring": "1MiB", "pool": "64MiB"}'
ip netns exec "$NS_S" "$B/tools/smcperf" serve --listen "0.0.0.0:$EPORT" \
	>"$IT_DIR/sink.log" 2>&1 &
IT_PIDS+=("$!")
it_wait_file "$IT_DIR/sink.log" 'serving' 5 || it_fail "smcperf serve did not start"

# The rings of the flows now, as "min max n" over the flows on shm (the
# peer's ring each flow writes, tx_ring).
rings() {
	it_ctl --json flows | python3 -c 'import json, sys
r = [f["tx_ring"] for f in json.load(sys.stdin)["flows"] if f["mode"] == "shm" and f["tx_ring"]]
print(min(r) if r else 0, max(r) if r else 0, len(r))'
}

# bulk NAME FLOWS SECS: FLOWS bulk flows for SECS seconds, in the
# background (pid in BULK).
bulk() {
	it_c "$B/tools/smcperf" bw --connect "$S4:$EPORT" -s 65536 -c "$2" --threads 2 \
		--sndbuf 131072 -t "$3" >"$IT_DIR/bw.$1.log" 2>&1 &
	BULK=$!
	IT_PIDS+=("$BULK")
}
# result NAME: "min max jain" of a finished bulk run's flows' bytes.
result() {
	local line
	line=$(grep '^RESULT' "$IT_DIR/bw.$1.log") || it_fail "smcperf bw $1: $(tail -3 "$IT_DIR/bw.$1.log")"
	sed -n 's/.* flow_min_bytes=\([0-9]*\) flow_max_bytes=\([0-9]*\).* flow_jain=\([0-9.]*\).*/\1 \2 \3/p' <<<"$line"
}

# The first 32 flows grow while they are alone: a part of 512 KiB each.
bulk early 32 40
early=$BULK
for ((i = 0; i < 200; i++)); do
	read -r lo hi n < <(rings)
	[ "$n" -eq 32 ] && [ "$lo" -ge 524288 ] && break
	kill -0 "$early" 2>/dev/null || break
	sleep 0.1
done
echo "  first 32 flows alone: rings of $lo to $hi bytes"
[ "$n" -eq 32 ] && [ "$lo" -ge 524288 ] || it_fail "the first 32 flows did not grow to 512 KiB: $lo to $hi over $n"
# 32 more: the part is 256 KiB now, and the early flows must give back
# for the late ones to grow. Wait for it for as long as the transfer
# runs (this is not a bound on how fast).
bulk late 32 15
late=$BULK
even=
while kill -0 "$late" 2>/dev/null; do
	read -r lo hi n < <(rings)
	if [ "$n" -eq "$FLOWS" ] && [ "$lo" -gt 16384 ] && [ "$hi" -le $((2 * lo)) ]; then
		even=1
		break
	fi
	sleep 0.5
done
echo "  all $n flows: rings of $lo to $hi bytes"
[ -n "$even" ] || it_fail "the flows' rings never came within 2x: $lo to $hi bytes over $n flows"
wait "$late"
kill "$early" 2>/dev/null
wait "$early"
read -r min max jain < <(result late)
echo "  the late flows' bytes: $min to $max, Jain's index $jain"
[ -n "$min" ] && [ "$max" -gt 0 ] || it_fail "no per-flow bytes for the late flows"
[ $((min * 20)) -ge "$max" ] || it_fail "a late flow was starved: $min bytes against $max for the fastest"
read -r shm tcp < <(it_stat flows.closed.shm flows.closed.tcp | tr '\n' ' ')
[ "$tcp" -eq 0 ] || it_fail "$tcp flows went over tcp"
it_pass "32 early and 32 late bulk flows on rings of $lo to $hi bytes; the late ones $min to $max bytes each (Jain $jain)"
