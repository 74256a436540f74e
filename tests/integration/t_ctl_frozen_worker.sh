#!/bin/bash
# Guards a fixed bug (a busy daemon's `smcproxyctl flows` listed 475 of 1,000 flows as if that were all): with one worker thread frozen (tests/systemd/freeze-thread), flows lists the other worker's flows and says the list is partial, naming the frozen worker, in --json ("workers_not_answering", "partial"), in the table and in Prometheus; once the worker runs again every flow is listed and the list is whole.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_relay workers=2
FREEZE=$IT_LIB_DIR/../systemd/freeze-thread

"${IT_APP[@]}" "$FLOWCHECK" hold --connect "$S4:$SPORT" --count 64 --seconds 60 \
	>"$IT_DIR/hold.log" 2>&1 &
hold=$!
IT_PIDS+=("$hold")
it_wait_stat flows.active.tcp -eq 64 10 || it_fail "the 64 held flows did not start"
read -r s0 s1 < <(it_stat per_worker.0.flows_active per_worker.1.flows_active | tr '\n' ' ')
[ "$s0" -gt 0 ] && [ "$s1" -gt 0 ] || it_fail "all 64 flows on one worker: $s0 / $s1"

# Worker 1 frozen: its flows cannot be listed.
tid=$(ps -T -p "$DAEMON_PID" -o spid=,comm= | awk '$2 == "smcproxyd/w1" { print $1 }')
[ -n "$tid" ] || it_fail "no thread smcproxyd/w1 in $(ps -T -p "$DAEMON_PID" -o spid=,comm= | tr '\n' ' ')"
"$FREEZE" "$tid" 60 >"$IT_DIR/freeze.log" 2>&1 &
freezer=$!
IT_PIDS+=("$freezer")
for ((i = 0; i < 100; i++)); do
	grep -q '^frozen' "$IT_DIR/freeze.log" && break
	sleep 0.1
done
grep -q '^frozen' "$IT_DIR/freeze.log" || it_fail "could not freeze worker 1: $(cat "$IT_DIR/freeze.log")"

json=$(it_ctl --json flows) || it_fail "flows --json with a frozen worker: $json"
read -r partial late more < <("$JGET" partial workers_not_answering.0 'workers_not_answering.1|partial' \
	<<<"$json" | tr '\n' ' ')
n0=$(grep -cE '"worker": 0,' <<<"$json")
n1=$(grep -cE '"worker": 1,' <<<"$json")
echo "  worker 1 frozen: listed $n0 + $n1 of $s0 + $s1, partial $partial, workers_not_answering [$late]"
[ "$partial" = true ] || it_fail "the listing does not say it is partial: $json"
[ "$late" = 1 ] && [ "$more" = true ] || it_fail "workers_not_answering is not [1]: $json"
it_eq "flows listed of worker 0" "$n0" "$s0"
it_eq "flows listed of worker 1" "$n1" 0
table=$(it_ctl flows) || it_fail "flows with a frozen worker: $table"
grep -q "^$s0 flows listed; more may be active$" <<<"$table" ||
	it_fail "the table does not say the list is partial: $(tail -3 <<<"$table")"
grep -q '^(not listed: the flows of worker 1, which did not answer in time)$' <<<"$table" ||
	it_fail "the table does not name the frozen worker: $(tail -3 <<<"$table")"
prom=$(it_ctl --prometheus flows) || it_fail "flows --prometheus with a frozen worker: $prom"
grep -q '^smcproxy_flows_listed_workers_not_answering 1$' <<<"$prom" ||
	it_fail "Prometheus does not count the frozen worker: $prom"

# The worker runs again (its tracer gone): the list is whole.
kill "$freezer" 2>/dev/null
wait "$freezer" 2>/dev/null
json=
for ((i = 0; i < 50; i++)); do
	json=$(it_ctl --json flows) && [ "$("$JGET" partial <<<"$json")" = false ] && break
	sleep 0.1
done
[ "$("$JGET" partial <<<"$json")" = false ] || it_fail "the list stays partial after the worker resumed: $json"
grep -q '"workers_not_answering"' <<<"$json" && it_fail "a worker is still named after it resumed: $json"
n=$(grep -cE '"worker": [01],' <<<"$json")
it_eq "flows listed after the worker resumed" "$n" 64
table=$(it_ctl flows) || it_fail "flows: $table"
grep -q '^64 flows$' <<<"$table" || it_fail "the table of the whole list: $(tail -2 <<<"$table")"
it_pass "frozen worker 1: $n0 of 64 flows listed, partial, worker 1 named; resumed: 64 listed"
