#!/bin/bash
# Guards 1,000 parallel flows: 1000 bulk flows opened at once over one shm link group all move their bytes (sha256 both ways), none reset, none over tcp. On the old code the destination's daemon reset the flows whose connects the server had accepted at once but whose events its worker, busy with the burst, read only after fallback.connect_timeout: about half of the flows in make bench (connect_timeouts 1051 of 2000).
# it-timeout: 300
. "$(dirname "$0")/lib.sh"
it_init "$@"
N=1000
LINKS='{"max_flows_per_link": 1000}'
it_setup_shm links="$LINKS"
# Warm-up: 16 flows at once reach both of the client daemon's workers
# (SO_REUSEPORT), so each has its link group up before the burst: the
# burst measures the flows, not a handshake run under it against the
# peer's 1 ms connect timeout below.
WARM=16
it_run --flows $WARM --concurrency $WARM --size 1KiB --timeout 20 >/dev/null || it_fail "warm-up flows failed"
# The groups are up. The destination's daemon now gives its connects 1 ms
# (a live setting): however busy its worker, a connect the server
# accepted in time must not count as timed out, and the server, on this
# host, accepts at once.
it_peer_config transport='"auto"' control="\"0.0.0.0:$CPORT\"" \
	peers="[{\"prefix\": \"$C4/32\", \"allow\": $ALLOW}, {\"prefix\": \"$C6/128\", \"allow\": $ALLOW}]" \
	links="$LINKS" fallback='{"connect_timeout": "1ms"}'
it_peer_ctl reload >/dev/null || it_fail "reload of the peer daemon failed"
for ns in "$NS_C" "$NS_S"; do
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="10000 65000" ||
		it_fail "cannot widen the port range of $ns"
done
out=$(it_run --flows $N --concurrency $N --size 128KiB --timeout 240)
rc=$?
printf '%s\n' "$out" | grep -E '^(flows|time):' | sed 's/^/  /'
read -r cto resets < <(it_peer_stat connect_timeouts resets | tr '\n' ' ')
read -r cshm ctcp < <(it_stat flows.closed.shm flows.closed.tcp | tr '\n' ' ')
echo "  peer daemon: connect_timeouts $cto, resets $resets; client daemon: closed.shm $cshm closed.tcp $ctcp"
[ $rc -eq 0 ] || it_fail "$N parallel flows: $(printf '%s\n' "$out" | grep -E '^flows:'); first errors: $(printf '%s\n' "$out" | grep -viE '^(flows|time|bytes):' | sort | uniq -c | sort -rn | head -3 | tr '\n' ';')"
[ "$cto" -eq 0 ] || it_fail "the peer daemon timed out $cto connects the server had accepted"
[ "$resets" -eq 0 ] || it_fail "$resets flows reset"
[ "$ctcp" -eq 0 ] || it_fail "$ctcp flows over tcp"
[ "$cshm" -eq $((N + WARM)) ] || it_fail "flows.closed.shm is $cshm, not $((N + WARM))"
it_pass "$N parallel bulk flows all delivered over shm, none timed out or reset"
