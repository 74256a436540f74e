#!/bin/bash
# Guards the proof of the ACCEPT with a shared secret (the accept's MAC did not cover features, ring_size, links or the address TLVs, so an on-path attacker could downgrade a group or point the proposer's shm hello at another socket before any proof was checked): a daemon proposing to an acceptor that proves its ACCEPT with the right secret confirms it, and declines with policy (counted in refused.auth) an ACCEPT whose features, ring_size, links or rendezvous path were changed after the proof; its flows go over TCP intact (smcproxy-protocol(7), Authentication).
. "$(dirname "$0")/lib.sh"
it_init "$@"

auth=$(it_psk psk) || it_fail "cannot write $IT_DIR/psk"
it_hosts
it_redirect
it_server_start
# No peer daemon: smcpeer serve answers on the server host's control port.
# negative_ttl 0: every flow proposes again.
it_config transport='"auto"' auth="$auth" \
	peers="[{\"prefix\": \"$S4/32\", \"control_port\": $CPORT}]" \
	fallback='{"connect_timeout": "2s", "negative_ttl": "0s"}'
it_daemon_start

# serve_once FIELD: one handshake with smcpeer serve (FIELD "none": no
# tampering); prints what the daemon answered.
serve_once() {
	local field=$1 args=() out
	[ "$field" = none ] || args=(--tamper "$field")
	ip netns exec "$NS_S" "$B/tools/smcpeer" serve --listen "$S4:$CPORT" --psk "$IT_DIR/psk" \
		--timeout 10000 "${args[@]}" >"$IT_DIR/serve.$field" 2>&1 &
	local pid=$!
	IT_PIDS+=("$pid")
	it_wait_file "$IT_DIR/serve.$field" '^listening' 5 || it_fail "smcpeer serve did not start"
	it_run --flows 1 --size 4KiB >"$IT_DIR/run.$field" 2>&1 ||
		it_fail "the flow during the $field handshake failed: $(cat "$IT_DIR/run.$field")"
	wait "$pid"
	out=$(grep -v '^listening' "$IT_DIR/serve.$field")
	echo "$out"
}

read -r auth0 < <(it_stat refused.auth)
out=$(serve_once none)
echo "  an ACCEPT as proven: $out"
[ "$out" = confirm ] || it_fail "the daemon did not confirm an honest ACCEPT: '$out'"
n=0
for field in features ring_size links addr; do
	out=$(serve_once "$field")
	echo "  $field changed after the proof: $out"
	[ "$out" = "decline policy" ] || it_fail "an ACCEPT with its $field changed got '$out', not a policy decline"
	n=$((n + 1))
done
read -r auth1 tcp < <(it_stat refused.auth flows.closed.tcp | tr '\n' ' ')
echo "  client daemon: refused.auth $auth0 -> $auth1, flows.closed.tcp $tcp"
it_eq "refused.auth (one per tampered ACCEPT)" $((auth1 - auth0)) $n
it_eq "flows over TCP" "$tcp" $((n + 1))
it_pass "an honest ACCEPT confirmed; features, ring_size, links and the rendezvous path changed after the proof each declined with policy"
