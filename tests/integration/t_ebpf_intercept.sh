#!/bin/bash
# Guards the eBPF intercept mode end to end, with no nat rule anywhere: an app in its own cgroup is intercepted (sha256 both ways over IPv4, IPv6 and a v4-mapped dual-stack socket) and getpeername() shows it the address it connected to; a process outside the cgroup and UDP are left alone; smcproxyctl shows the mode, the programs and their counts; a killed daemon leaves no redirect (flows in flight end, new connects go direct) and a restarted one intercepts again.
IT_INTERCEPT=ebpf
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_relay
APP=$IT_LIB_DIR/sock_app.py
UPORT=9002

rules=$(it_c iptables-save -t nat 2>/dev/null; it_c ip6tables-save -t nat 2>/dev/null)
! grep -q REDIRECT <<<"$rules" || it_fail "a nat REDIRECT rule exists: $rules"

# --- intercepted, sha256 both ways: IPv4, IPv6, v4-mapped
it_run_ok v4 "IPv4 flows through the intercept" --flows 20 --concurrency 10 --max-size 1MiB --seed 1
it_run_ok v6 "IPv6 flows through the intercept" --connect "[$S6]:$SPORT" --flows 20 \
	--concurrency 10 --max-size 1MiB --seed 2
it_run_ok mapped "v4-mapped flows through the intercept" --connect "[::ffff:$S4]:$SPORT" \
	--flows 20 --concurrency 10 --max-size 1MiB --seed 3
it_wait_stat flows.active.tcp -eq 0 5 || it_fail "flows still active"
accepted=$(it_stat flows.accepted)
it_eq "flows.accepted after 60 intercepted flows" "$accepted" 60

# --- what the app sees
out=$(it_app -- python3 "$APP" peer "$S4" "$SPORT") || it_fail "sock_app peer: $out"
echo "  v4: $(tr '\n' ' ' <<<"$out")"
grep -qx "peer $S4 $SPORT" <<<"$out" || it_fail "getpeername (IPv4) is not $S4:$SPORT: $out"
out=$(it_app -- python3 "$APP" peer "$S6" "$SPORT") || it_fail "sock_app peer v6: $out"
echo "  v6: $(tr '\n' ' ' <<<"$out")"
grep -qx "peer $S6 $SPORT" <<<"$out" || it_fail "getpeername (IPv6) is not [$S6]:$SPORT: $out"
out=$(it_app -- python3 "$APP" peer "$S4" "$SPORT" --v4mapped) || it_fail "sock_app peer mapped: $out"
echo "  v4-mapped: $(tr '\n' ' ' <<<"$out")"
grep -qx "peer ::ffff:$S4 $SPORT" <<<"$out" || it_fail "getpeername (v4-mapped) is not [::ffff:$S4]:$SPORT: $out"
it_wait_stat flows.accepted -eq $((accepted + 3)) 5 || it_fail "the three peer probes were not intercepted"
accepted=$((accepted + 3))

# --- every map entry goes with its connection: the daemon deleted the
# 4-tuple's at accept, the socket's close the cookie's
map_entries() { # MAP_NAME: entries of that map of the programs on $IT_CG
	local prog map
	prog=$(bpftool -j cgroup show "$IT_CG" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
	for map in $(bpftool -j prog show id "$prog" | python3 -c 'import json,sys; print(*json.load(sys.stdin).get("map_ids", []))'); do
		bpftool -j map show id "$map" | grep -q "\"name\":\"$1\"" || continue
		bpftool -j map dump id "$map" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'
		return
	done
	echo "no map $1"
}
for m in icpt_by_cookie icpt_by_tuple; do
	n=
	for _ in $(seq 50); do
		n=$(map_entries $m)
		[ "$n" = 0 ] && break
		sleep 0.1
	done
	echo "  $m: ${n:-?} entries left"
	[ "$n" = 0 ] || it_fail "$m holds $n entries after every intercepted connection closed"
done

# --- a process outside the cgroup goes direct
out=$(it_app "" -- "$FLOWCHECK" run --connect "$S4:$SPORT" --flows 5 --size 64KiB --seed 4) ||
	it_fail "flows from outside the cgroup: $out"
out=$(it_app "" -- python3 "$APP" peer "$S4" "$SPORT") || it_fail "sock_app outside: $out"
grep -qx "sock $C4" <<<"$out" || it_fail "outside the cgroup the connection was not direct: $out"
it_eq "flows.accepted after connects from outside the cgroup" "$(it_stat flows.accepted)" "$accepted"

# --- UDP is left alone (its connect() runs the same hook)
it_s python3 "$APP" udp-echo "$UPORT" >"$IT_DIR/udp.log" 2>&1 &
IT_PIDS+=("$!")
it_wait_file "$IT_DIR/udp.log" '^listening' 5 || it_fail "udp echo did not start"
out=$(it_app -- python3 "$APP" udp "$S4" "$UPORT")
[ "$out" = "got pong:ping" ] || it_fail "UDP from the cgroup: $out"
it_eq "flows.accepted after UDP" "$(it_stat flows.accepted)" "$accepted"

# --- what smcproxyctl shows
json=$(it_ctl --json stats) || it_fail "stats: $json"
for want in '"mode": *"ebpf"' "\"cgroup\": *\"$IT_CG\"" '"attached": *\[ *"connect4", *"connect6", *"sock_ops", *"getpeername4", *"getpeername6" *\]'; do
	grep -Eq "$want" <<<"$(tr -d '\n' <<<"$json")" || it_fail "stats --json lacks $want: $json"
done
read -r redirected established < <(it_stat intercept.redirected intercept.established | tr '\n' ' ')
echo "  intercept: redirected $redirected established $established"
it_eq intercept.redirected "$redirected" "$accepted"
it_eq intercept.established "$established" "$accepted"
it_ctl stats | grep -q "ebpf" || it_fail "smcproxyctl stats (table) does not show the mode"

attached=$(bpftool cgroup show "$IT_CG" 2>&1)
[ "$(grep -cE 'cgroup_inet[46]_connect|sock_ops|cgroup_inet[46]_getpeername' <<<"$attached")" -eq 5 ] ||
	it_fail "bpftool does not show the five programs on $IT_CG: $attached"

# --- a reload reports intercept.* as needing a restart, and the running
# programs keep their destinations
it_config intercept="{\"mode\": \"ebpf\", \"cgroup\": \"$IT_CG_PATH\", \"destinations\": [\"$NET4\"]}"
out=$(it_ctl --json reload) || it_fail "reload: $out"
grep -q '"restart_needed": *"[^"]*intercept.destinations' <<<"$out" ||
	it_fail "intercept.destinations not reported as needing a restart: $out"
it_run_ok v6-after-reload "IPv6 still intercepted after the reload" --connect "[$S6]:$SPORT" \
	--flows 2 --size 64KiB --seed 9
accepted=$((accepted + 2))
it_eq "flows.accepted after the reload" "$(it_stat flows.accepted)" "$accepted"

# --- killed under traffic: in-flight flows end, new connects go direct
it_run --flows 10 --concurrency 10 --size 64MiB --rate 4MiB --seed 5 --timeout 60 \
	>"$IT_DIR/inflight.log" 2>&1 &
client=$!
IT_PIDS+=("$client")
it_wait_stat flows.active.tcp -eq 10 10 || it_fail "the in-flight flows did not start"
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null
DAEMON_PID=
wait "$client"
rc=$?
grep -E '^(flows|failures):' "$IT_DIR/inflight.log" | sed 's/^/  in flight: /'
[ $rc -ne 0 ] || it_fail "the flows in flight completed though the daemon was killed"
grep -Eq '^flows: 0 ok' "$IT_DIR/inflight.log" || it_fail "a flow in flight completed intact: $(cat "$IT_DIR/inflight.log")"
attached=$(bpftool cgroup show "$IT_CG" 2>&1)
[ -z "$(grep -v '^ID' <<<"$attached")" ] || it_fail "programs still attached after the kill: $attached"
it_run_ok direct "a new connect after the kill did not go direct" --flows 5 --size 256KiB --seed 6

# --- restarted: intercepted again
it_daemon_start
it_run_ok again "flows after the restart" --flows 5 --size 256KiB --seed 7
it_eq "flows.accepted after the restart" "$(it_stat flows.accepted)" 5
it_daemon_stop || it_fail "the daemon did not stop cleanly"
attached=$(bpftool cgroup show "$IT_CG" 2>&1)
[ -z "$(grep -v '^ID' <<<"$attached")" ] || it_fail "programs still attached after a stop: $attached"
it_pass "60 flows v4/v6/v4-mapped, getpeername, outside and UDP untouched, kill fails open, restart"
