#!/bin/bash
# Guards what operators read: `smcproxyctl flows` lists a live flow with its
# mode, fallback reason, state, addresses and bytes (table and JSON), the
# fallback reason follows the config and the peer (no_peer, transport_tcp,
# peer_unreachable),
# and `--prometheus stats` exposes the counters in the text format.
. "$(dirname "$0")/lib.sh"
it_init "$@"
# transport auto, and the server's subnet is a configured peer prefix, but
# no daemon listens on the server host's control port: peer_unreachable.
it_setup_relay transport='"auto"' peers="[{\"prefix\": \"$NET4\"}]"

"${IT_APP[@]}" "$FLOWCHECK" hold --connect "$S4:$SPORT" --count 1 --seconds 20 >/dev/null 2>&1 &
hold=$!
IT_PIDS+=("$hold")
it_wait_stat flows.active.tcp -eq 1 5 || it_fail "the held flow did not start"

json=$(it_ctl --json flows) || it_fail "flows --json: $json"
for want in '"mode": *"tcp"' '"reason": *"peer_unreachable"' '"state": *"established"' \
	"\"dest\": *\"$S4:$SPORT\"" "\"client\": *\"$IT_CLIENT4:[0-9]*\"" '"truncated": *false'; do
	grep -Eq "$want" <<<"$json" || it_fail "flows --json lacks $want: $json"
done
table=$(it_ctl flows) || it_fail "flows: $table"
grep -q "peer_unreachable" <<<"$table" && grep -q "$S4:$SPORT" <<<"$table" ||
	it_fail "the flows table does not show the flow: $table"

prom=$(it_ctl --prometheus stats) || it_fail "--prometheus: $prom"
grep -q '^# TYPE smcproxy_[a-z_]*_total counter' <<<"$prom" || it_fail "no counter TYPE lines: $prom"
grep -Eq '^smcproxy_[a-z_]*\{reason="peer_unreachable"\} 1$' <<<"$prom" ||
	it_fail "no fallback metric with reason peer_unreachable = 1: $prom"
grep -Eq '^smcproxy_[a-z_]*\{mode="tcp"\} 1$' <<<"$prom" ||
	it_fail "no active-flows gauge with mode tcp = 1: $prom"
kill "$hold"
it_wait_stat flows.active.tcp -eq 0 5 || it_fail "the held flow did not end"

# A destination outside every peer prefix: no_peer.
it_run --flows 1 --size 1KiB --connect "[$S6]:$SPORT" --seed 2 >/dev/null ||
	it_fail "IPv6 flow failed"
[ "$(it_stat fallback.no_peer)" -eq 1 ] || it_fail "fallback.no_peer is not 1"

# transport tcp: transport_tcp, whatever the peers say (needs a restart).
it_daemon_stop || it_fail "daemon stop"
it_config transport='"tcp"' peers="[{\"prefix\": \"$NET4\"}]"
it_daemon_start
it_run --flows 3 --size 1KiB --seed 3 >/dev/null || it_fail "flows failed"
[ "$(it_stat fallback.transport_tcp)" -eq 3 ] || it_fail "fallback.transport_tcp is not 3"
it_pass "flows (table, JSON), reasons peer_unreachable/no_peer/transport_tcp, Prometheus"
