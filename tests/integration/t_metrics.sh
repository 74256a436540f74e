#!/bin/bash
# Guards the HTTP endpoint (metrics.listen): /metrics scraped during traffic parses with the Prometheus client's own parser and agrees with `smcproxyctl --json stats` and --prometheus; /ready before start, once up, with a worker thread frozen, with a required transport missing, and while draining; hostile HTTP (oversized, garbage, slow, too many) is refused and the data plane carries flows meanwhile; the listener is not reachable from another host.
. "$(dirname "$0")/lib.sh"
it_init "$@"
# Debian's python, where python3-prometheus-client is installed.
PY=/usr/bin/python3
MTOOL=$(cd "$(dirname "$0")" && pwd)/metrics_tool.py
tool() { "$PY" "$MTOOL" "$@"; }
MPORT=9464
URL=http://127.0.0.1:$MPORT

"$PY" -c 'import prometheus_client' 2>/dev/null ||
	it_fail "python3-prometheus-client is missing (contrib/install-deps)"
command -v curl >/dev/null || it_fail "curl is missing (contrib/install-deps)"

# HTTP status of a GET on the client host ("000": no connection).
http_code() { it_c curl -s -o "${2:-/dev/null}" -w '%{http_code}' --max-time 5 "$URL$1"; }
# Waits up to $3 s for path $1 to answer status $2.
wait_code() {
	local i c
	for ((i = 0; i < ${3:-5} * 10; i++)); do
		c=$(http_code "$1" "$IT_DIR/body")
		[ "$c" = "$2" ] && return 0
		sleep 0.1
	done
	it_log "$1 answered $c, wanted $2: $(cat "$IT_DIR/body" 2>/dev/null)"
	return 1
}

it_hosts
it_redirect
it_server_start
metrics="{\"listen\": \"127.0.0.1:$MPORT\", \"max_clients\": 4, \"timeout\": \"2s\"}"
it_config metrics="$metrics" shutdown='{"drain_timeout": "20s"}'

# --- before start-up: nothing answers
c=$(http_code /ready)
[ "$c" = 000 ] || it_fail "/ready answered $c before the daemon was started"
it_daemon_start
wait_code /ready 200 5 || it_fail "/ready did not become 200 after start"
echo "  /ready before start: no connection; after start: 200 ($(cat "$IT_DIR/body"))"

# --- not reachable from the other host: bound to the client host's loopback
if it_s curl -s -o /dev/null --max-time 3 "http://$C4:$MPORT/metrics"; then
	it_fail "the endpoint answered the server host on $C4:$MPORT"
fi

# --- scrapes during traffic parse with the real exposition-format parser
seed=${IT_SEED:-$$}
it_run --flows 300 --concurrency 40 --max-size 2MiB --seed "$seed" --timeout 100 \
	>"$IT_DIR/run.log" 2>&1 &
run_pid=$!
scrapes=0
while kill -0 "$run_pid" 2>/dev/null; do
	c=$(http_code /metrics "$IT_DIR/during.prom")
	[ "$c" = 200 ] || it_fail "/metrics answered $c during traffic"
	tool parse "$IT_DIR/during.prom" >"$IT_DIR/during.samples" ||
		it_fail "scrape $scrapes does not parse: $(head -3 "$IT_DIR/during.samples")"
	scrapes=$((scrapes + 1))
	sleep 0.2
done
wait "$run_pid" || it_fail "flowcheck (seed $seed) failed: $(grep -E '^(flows|failures):' "$IT_DIR/run.log" | tr '\n' ' ')"
[ "$scrapes" -ge 2 ] || it_fail "only $scrapes scrapes while traffic ran"
grep -q '^smcproxy_flows_active{mode="tcp"}' "$IT_DIR/during.samples" ||
	it_fail "scrapes during traffic lack smcproxy_flows_active"
echo "  $scrapes scrapes during 300 flows parsed by prometheus_client"

# --- after traffic: the counters agree with --json stats, and the text is
#     the CLI's --prometheus, sample for sample (uptime aside)
it_wait_stat flows.active.tcp -eq 0 5 || it_fail "flows still active after the clients finished"
it_server_expect " 300 ok, 0 failed" "server side"
[ "$(http_code /metrics "$IT_DIR/after.prom")" = 200 ] || it_fail "/metrics after traffic"
tool parse "$IT_DIR/after.prom" >"$IT_DIR/after.samples" || it_fail "final scrape does not parse"
it_ctl --prometheus stats >"$IT_DIR/cli.prom" || it_fail "smcproxyctl --prometheus stats"
tool parse "$IT_DIR/cli.prom" >"$IT_DIR/cli.samples" || it_fail "the CLI's text does not parse"
read -r acc closed bin bout w0 w1 < <(it_stat flows.accepted flows.closed.tcp bytes.in bytes.out \
	per_worker.0.flows_accepted per_worker.1.flows_accepted | tr '\n' ' ')
sample() { # NAME{LABELS} -> value as an integer
	awk -v k="$1" '$1 == k { printf "%d\n", $2; f = 1 } END { if (!f) print "missing" }' \
		"$IT_DIR/after.samples"
}
for pair in "smcproxy_flows_accepted_total{} $acc" \
	    "smcproxy_flows_closed_total{mode=\"tcp\"} $closed" \
	    "smcproxy_bytes_total{direction=\"in\"} $bin" \
	    "smcproxy_bytes_total{direction=\"out\"} $bout" \
	    "smcproxy_worker_flows_accepted_total{worker=\"0\"} $w0" \
	    "smcproxy_worker_flows_accepted_total{worker=\"1\"} $w1"; do
	k=${pair% *}
	want=${pair##* }
	got=$(sample "$k")
	[ "$got" = "$want" ] || it_fail "/metrics $k is $got, --json stats says $want"
done
[ "$acc" -eq 300 ] || it_fail "flows.accepted is $acc, expected 300"
# Less what moves between two reads: the uptime, a worker's longest
# heartbeat gap, a snapshot's age.
skip='^smcproxy_(uptime_seconds|worker_heartbeat_gap_max_milliseconds|[a-z]+_snapshot_age_milliseconds)'
grep -Ev "$skip" "$IT_DIR/after.samples" >"$IT_DIR/a"
grep -Ev "$skip" "$IT_DIR/cli.samples" >"$IT_DIR/b"
diff -u "$IT_DIR/b" "$IT_DIR/a" >"$IT_DIR/diff" ||
	it_fail "/metrics and smcproxyctl --prometheus stats differ: $(head -20 "$IT_DIR/diff")"
grep -q '^Content-Type: text/plain; version=0.0.4' <(it_c curl -sI --max-time 5 "$URL/metrics") ||
	it_fail "/metrics lacks the exposition format's content type"
echo "  after traffic: accepted $acc, bytes in $bin out $bout: /metrics = --json stats = --prometheus"

# --- /ready with a worker's loop frozen (ptrace stops that thread only)
tid=$(grep -lx 'smcproxyd/w1' /proc/"$DAEMON_PID"/task/*/comm | head -1 | cut -d/ -f5)
[ -n "$tid" ] || it_fail "no thread named smcproxyd/w1 in the daemon"
"$PY" "$MTOOL" freeze "$tid" 6 >"$IT_DIR/freeze.log" 2>&1 &
freeze_pid=$!
IT_PIDS+=("$freeze_pid")
it_wait_file "$IT_DIR/freeze.log" '^stopped' 5 || it_fail "could not freeze worker 1: $(cat "$IT_DIR/freeze.log")"
wait_code /ready 503 4 || it_fail "/ready is not 503 with worker 1 frozen"
grep -q 'worker 1' "$IT_DIR/body" || it_fail "/ready does not name worker 1: $(cat "$IT_DIR/body")"
echo "  worker 1 frozen: /ready 503 ($(cat "$IT_DIR/body"))"
# The main thread still serves /metrics: it does not wait for the frozen
# worker (its CQ table, with rdma on, comes from the last snapshot).
t0=$(date +%s%N)
[ "$(http_code /metrics)" = 200 ] || it_fail "/metrics failed while worker 1 was frozen"
echo "  /metrics while frozen: 200 in $((($(date +%s%N) - t0) / 1000000)) ms"
wait "$freeze_pid" || it_fail "freeze helper: $(cat "$IT_DIR/freeze.log")"
wait_code /ready 200 4 || it_fail "/ready did not come back to 200 once worker 1 ran again"
echo "  worker 1 resumed: /ready 200"

# --- hostile HTTP never reaches the data plane: flows run meanwhile, and
#     the daemon counts no flow for any of it
it_server_start
before=$(it_stat flows.accepted)
it_run --flows 100 --concurrency 20 --max-size 256KiB --seed "$seed" --timeout 60 \
	>"$IT_DIR/run2.log" 2>&1 &
run_pid=$!
it_c "$PY" "$MTOOL" hostile 127.0.0.1 "$MPORT" 4 2 >"$IT_DIR/hostile.log" 2>&1
hrc=$?
cat "$IT_DIR/hostile.log"
[ $hrc -eq 0 ] || it_fail "hostile HTTP: $(grep FAILED "$IT_DIR/hostile.log" | head -3 | tr '\n' ' ')"
wait "$run_pid" || it_fail "flows during hostile HTTP failed: $(grep -E '^(flows|failures):' "$IT_DIR/run2.log" | tr '\n' ' ')"
it_wait_stat flows.active.tcp -eq 0 5 || it_fail "flows still active after the hostile round"
after=$(it_stat flows.accepted)
[ $((after - before)) -eq 100 ] || it_fail "flows.accepted grew by $((after - before)), the clients made 100"
it_server_expect " 100 ok, 0 failed" "server side during hostile HTTP"
kill -0 "$DAEMON_PID" || it_fail "the daemon died"
echo "  100 flows intact during hostile HTTP; flows.accepted +$((after - before))"

# --- draining: /ready says so at once
it_server_start
"${IT_APP[@]}" "$FLOWCHECK" hold --connect "$S4:$SPORT" --count 4 --seconds 4 \
	>"$IT_DIR/hold.log" 2>&1 &
hold_pid=$!
IT_PIDS+=("$hold_pid")
it_wait_stat flows.active.tcp -eq 4 5 || it_fail "held flows did not show up"
kill -TERM "$DAEMON_PID"
wait_code /ready 503 3 || it_fail "/ready is not 503 while draining"
grep -q stopping "$IT_DIR/body" || it_fail "/ready while draining: $(cat "$IT_DIR/body")"
echo "  draining: /ready 503 ($(cat "$IT_DIR/body"))"
wait "$hold_pid"
it_daemon_stop 20 || it_fail "daemon did not stop cleanly after draining"

# --- a transport the configuration requires and this host lacks
it_config metrics="$metrics" transport='"rdma"' control="\"0.0.0.0:$CPORT\"" \
	peers="[{\"prefix\": \"$S4/32\"}]"
it_daemon_start
if ls /sys/class/infiniband/* >/dev/null 2>&1; then
	wait_code /ready 200 5 || it_fail "/ready not 200 with transport rdma and an rdma device"
	echo "  transport rdma with a device here: /ready 200"
else
	sleep 1
	[ "$(http_code /ready "$IT_DIR/body")" = 503 ] ||
		it_fail "/ready is not 503 with transport rdma and no rdma device"
	grep -q 'rdma is off' "$IT_DIR/body" || it_fail "/ready does not say rdma is off: $(cat "$IT_DIR/body")"
	echo "  transport rdma, no device: /ready 503 ($(cat "$IT_DIR/body"))"
fi
[ "$(http_code /metrics)" = 200 ] || it_fail "/metrics with rdma off"
it_daemon_stop || it_fail "daemon did not stop cleanly"
it_pass "scrapes parse and agree with stats; /ready 503 when frozen, draining, rdma off; hostile HTTP refused, flows intact"
