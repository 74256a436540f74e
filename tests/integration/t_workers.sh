#!/bin/bash
# Guards the worker threads ("workers": 2): 200 flows with sha256 both ways
# cross the daemon and the kernel spreads them over both workers (flows
# --json "worker", stats per_worker); the summed counters are exact; a
# reload reaches every worker; SIGTERM drains the flows of every worker,
# refuses new connections, and exits 0.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_relay workers=2 shutdown='{"drain_timeout": "20s"}'

[ "$(it_stat workers)" = 2 ] || it_fail "stats says $(it_stat workers) workers, configured 2"

# --- many flows, every byte checked both ways, counters summed exactly
seed=${IT_SEED:-$$}
out=$(it_run --flows 200 --concurrency 200 --max-size 4MiB --seed "$seed" --timeout 100)
rc=$?
printf '%s\n' "$out" | grep -vE '^FAIL flow' | sed 's/^/  /'
printf '%s\n' "$out" | grep -E '^FAIL flow' | head -20
[ $rc -eq 0 ] || it_fail "flowcheck (seed $seed): $(printf '%s\n' "$out" | grep -E '^(flows|failures):' | tr '\n' ' ')"
read -r up down < <(printf '%s\n' "$out" | awk '/^bytes:/ { print $3, $5 }')
it_wait_stat flows.active.tcp -eq 0 5 || it_fail "flows still active after every client finished"
read -r accepted closed bin bout a0 a1 b0 b1 < <(it_stat flows.accepted flows.closed.tcp \
	bytes.in bytes.out per_worker.0.flows_accepted per_worker.1.flows_accepted \
	per_worker.0.bytes_in per_worker.1.bytes_in | tr '\n' ' ')
echo "  daemon: accepted $accepted ($a0 + $a1 by worker), bytes.in $bin ($b0 + $b1), bytes.out $bout"
[ "$accepted" -eq 200 ] || it_fail "flows.accepted is $accepted, expected 200"
[ "$closed" -eq 200 ] || it_fail "flows.closed.tcp is $closed, expected 200"
[ "$bin" -eq "$up" ] || it_fail "bytes.in is $bin, the clients sent $up"
[ "$bout" -eq "$down" ] || it_fail "bytes.out is $bout, the clients received $down"
[ $((a0 + a1)) -eq "$accepted" ] || it_fail "per-worker accepts $a0 + $a1 do not add up to $accepted"
[ $((b0 + b1)) -eq "$bin" ] || it_fail "per-worker bytes.in $b0 + $b1 do not add up to $bin"
# The kernel hashes connections over the two listeners: one worker taking
# fewer than 40 of 200 would be a 1-in-10^18 event.
[ "$a0" -ge 40 ] && [ "$a1" -ge 40 ] || it_fail "connections not spread: $a0 / $a1"
it_server_expect " 200 ok, 0 failed" "server side"

# --- live flows, listed by the worker that carries them
it_server_start
"${IT_APP[@]}" "$FLOWCHECK" hold --connect "$S4:$SPORT" --count 64 --seconds 30 \
	>"$IT_DIR/hold.log" 2>&1 &
hold=$!
IT_PIDS+=("$hold")
it_wait_stat flows.active.tcp -eq 64 20 ||
	it_fail "the 64 held flows did not start (accepted $(it_stat flows.accepted) of 264;" \
		"hold: $(tr '\n' ' ' <"$IT_DIR/hold.log"))"
json=$(it_ctl --json flows) || it_fail "flows --json: $json"
w0=$(grep -cE '"worker": 0,' <<<"$json")
w1=$(grep -cE '"worker": 1,' <<<"$json")
read -r s0 s1 < <(it_stat per_worker.0.flows_active per_worker.1.flows_active | tr '\n' ' ')
echo "  held flows by worker: listed $w0 + $w1, stats $s0 + $s1"
[ $((w0 + w1)) -eq 64 ] || it_fail "flows lists $((w0 + w1)) flows, 64 are open"
[ "$w0" -eq "$s0" ] && [ "$w1" -eq "$s1" ] ||
	it_fail "flows --json ($w0/$w1) and stats per_worker ($s0/$s1) disagree"
[ "$w0" -gt 0 ] && [ "$w1" -gt 0 ] || it_fail "all 64 flows on one worker: $w0 / $w1"
grep -q '"workers_not_answering"' <<<"$json" && it_fail "a worker did not answer: $json"
table=$(it_ctl stats) || it_fail "stats: $table"
grep -Eq '^worker +active +accepted' <<<"$table" || it_fail "no per-worker table in stats: $table"

# --- a reload reaches every worker: the idle held flows of both are cut
it_config workers=2 shutdown='{"drain_timeout": "20s"}' relay='{"idle_timeout": "1s"}'
out=$(it_ctl --json reload) || it_fail "reload failed: $out"
grep -q '"applied": *"[^"]*relay.idle_timeout' <<<"$out" || it_fail "idle_timeout not applied: $out"
it_wait_stat flows.active.tcp -eq 0 5 || it_fail "held flows survived relay.idle_timeout 1s on some worker"
[ "$(it_stat idle_timeouts)" -eq 64 ] || it_fail "idle_timeouts is $(it_stat idle_timeouts), expected 64"
kill -TERM "$hold" 2>/dev/null
wait "$hold" 2>/dev/null
it_config workers=2 shutdown='{"drain_timeout": "20s"}'
it_ctl reload >/dev/null || it_fail "second reload failed"

# --- SIGTERM drains every worker's flows
# 16 flows of 3 MiB each way at 1 MiB/s: about 3 s, on both workers.
it_run --flows 16 --concurrency 16 --size 3MiB --rate 1MiB --seed 7 --timeout 30 \
	>"$IT_DIR/drain.log" 2>&1 &
client=$!
IT_PIDS+=("$client")
it_wait_stat flows.active.tcp -eq 16 5 || it_fail "the draining flows did not start"
read -r s0 s1 < <(it_stat per_worker.0.flows_active per_worker.1.flows_active | tr '\n' ' ')
echo "  draining flows by worker: $s0 + $s1"
[ "$s0" -gt 0 ] && [ "$s1" -gt 0 ] || it_fail "the 16 flows are all on one worker: $s0 / $s1"
kill -TERM "$DAEMON_PID"
sleep 0.3
kill -0 "$DAEMON_PID" 2>/dev/null || it_fail "the daemon exited at once instead of draining"
if [ "$IT_INTERCEPT" = ebpf ]; then
	# Fail open: the programs are detached at the stop signal, so a new
	# connect goes to the server itself, around the draining daemon.
	accepted=$(it_stat flows.accepted)
	it_run --flows 4 --size 4KiB --seed 8 --timeout 10 >/dev/null ||
		it_fail "a new connection did not go direct while draining"
	it_eq "flows.accepted while draining" "$(it_stat flows.accepted)" "$accepted"
else
	for _ in 1 2 3 4; do
		it_probe --connect "$S4:$SPORT" --expect refused,reset,eof --within 2000 ||
			it_fail "a new connection was not refused while draining"
	done
fi
wait "$client"
rc=$?
sed 's/^/  /' "$IT_DIR/drain.log"
[ $rc -eq 0 ] || it_fail "the draining flows did not complete intact"
it_daemon_stop 5
rc=$?
[ $rc -ne 124 ] || it_fail "the daemon did not exit within 5 s of its last flow"
[ $rc -eq 0 ] || it_fail "the daemon exited with status $rc after SIGTERM"
grep -q "ready: 2 workers" "$IT_DIR/daemon.log" || it_fail "no 'ready: 2 workers' in the log"
it_pass "200 flows spread $a0/$a1, bytes summed exactly, 64 held flows listed by worker, reload on both, drain of both"
