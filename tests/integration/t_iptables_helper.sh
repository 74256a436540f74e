#!/bin/bash
# Guards contrib/smcproxy-iptables: add/list/del for IPv4 and IPv6 in a
# fresh network namespace, idempotence (each rule exactly once in
# `iptables -t nat -S`; the raw table's conntrack zone for the daemon's
# marked connections), the chains going away when empty, usage errors, and,
# end to end with the real daemon, that redirected connections reach
# smcproxyd while its own marked connections are not redirected back to it;
# and interception limited to given uids (--uid: -m owner --uid-owner), so
# that a user whose egress an owner-match rule in filter OUTPUT rejects
# can be left out of the interception and stays rejected (REDIRECT would
# hand its connection to the daemon, which connects as itself). The
# helper's default marks are the daemon's ("mark", "client_mark" of
# --print-default-config), and they and the TPROXY bit stay clear of the
# mark bits kube-proxy and the common CNIs own (smcproxyd(8), MARKS; a
# fixed bug: the default mark had kube-proxy's masquerade bit 0x4000).
#
# Usage: tests/integration/t_iptables_helper.sh BUILD_DIR
# Exit 0 with one "PASS" line, or 1 with "FAIL: why" (details above it).
set -u

name=t_iptables_helper
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-}
helper=$top/contrib/smcproxy-iptables
ns=smcp-ipt-$$
tmp=
daemon_pid=

fail() { echo "FAIL: $name: $*"; exit 1; }

# shellcheck disable=SC2317  # invoked by the trap
cleanup() {
	[ -z "$daemon_pid" ] || { kill "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null; }
	ip netns del "$ns" 2>/dev/null
	[ -z "$tmp" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

[ -n "$build" ] || fail "usage: $0 BUILD_DIR"
build=$(cd "$build" 2>/dev/null && pwd) || fail "no build directory '$1'"
[ "$(id -u)" -eq 0 ] || fail "needs root (network namespaces, iptables)"
[ -x "$helper" ] || fail "$helper is missing or not executable"
for t in ip iptables ip6tables; do
	command -v "$t" >/dev/null || fail "$t is not installed"
done

ip netns add "$ns" || fail "cannot create network namespace $ns"
tmp=$(mktemp -d /tmp/smcp-ipt.XXXXXX) || fail "mktemp"

inns() { ip netns exec "$ns" "$@"; }
helper() { inns "$helper" "$@"; }

# Runs the helper, expecting exit status $1; its output is kept in $out.
expect() {
	local want=$1 rc
	shift
	out=$(helper "$@" 2>&1)
	rc=$?
	[ "$rc" -eq "$want" ] || {
		printf '%s\n' "$out" | sed 's/^/  /'
		fail "'smcproxy-iptables $*' exited $rc, expected $want"
	}
}

# count FAMILY LINE [TABLE]: how many times LINE appears in `iptables -t
# TABLE -S` (nat by default).
count() {
	local t=iptables
	[ "$1" = 6 ] && t=ip6tables
	inns "$t" -w 5 -t "${3:-nat}" -S | grep -cxF -- "$2"
}

# once FAMILY LINE...: every LINE appears exactly once.
once() {
	local fam=$1 line n
	shift
	for line in "$@"; do
		n=$(count "$fam" "$line")
		[ "$n" -eq 1 ] || fail "IPv$fam: expected once, found $n times: $line"
	done
}

# absent FAMILY PATTERN: no line of the nat table, nor of the raw table,
# matches PATTERN.
absent() {
	local t=iptables table
	[ "$1" = 6 ] && t=ip6tables
	for table in nat raw; do
		if inns "$t" -w 5 -t $table -S | grep -q -- "$2"; then
			inns "$t" -w 5 -t $table -S | sed 's/^/  /'
			fail "IPv$1: '$2' still in the $table table"
		fi
	done
}

# zoned FAMILY: the raw table's rules that track the daemon's connections
# in a conntrack zone of their own, each exactly once.
zoned() {
	local line n
	for line in "$jump" "-A SMCPROXY -m mark --mark 0x43 -j CT --zone-orig 5459"; do
		n=$(count "$1" "$line" raw)
		[ "$n" -eq 1 ] || fail "IPv$1: expected once in the raw table, found $n times: $line"
	done
}

# The destinations are addresses of this namespace's loopback, where
# nothing listens on port 80: a connection that is not redirected is
# refused at once.
inns ip link set lo up
inns ip addr add 10.99.0.1/24 dev lo || fail "cannot add 10.99.0.1 to lo"
inns ip addr add fd00:99::1/64 dev lo nodad || fail "cannot add fd00:99::1 to lo"

jump='-A OUTPUT -p tcp -j SMCPROXY'
mark='-A SMCPROXY -m mark --mark 0x43 -j RETURN'
# The daemon's connections from a client's address (client_mark).
cmark='-A SMCPROXY -m mark --mark 0x53 -j RETURN'
r4() { echo "-A SMCPROXY -d 10.99.0.0/24 -p tcp -m tcp --dport $1 -j REDIRECT --to-ports 17001"; }
r6() { echo "-A SMCPROXY -d fd00:99::/64 -p tcp -m tcp --dport $1 -j REDIRECT --to-ports 17001"; }

# --- usage errors: status 2, nothing created -------------------------------
expect 2 add --port 80
expect 2 add --dest 10.99.0.0/24
expect 2 add --port 0 --dest 10.99.0.0/24
expect 2 add --port 80 --dest 10.99.0.0/33
expect 2 add --port 80 --dest nonsense
expect 2 del
expect 2 frobnicate
expect 2 add --port 80 --dest 10.99.0.0/24 --uid no-such-user-here
expect 2 add --port 80 --dest 10.99.0.0/24 --uid 5-3
expect 2 config --port 80 --dest 10.99.0.0/24 --uid 0
expect 2 route
expect 2 route frobnicate
expect 2 route add --port 80
expect 2 add --port 80 --dest 10.99.0.0/24 --mark 83 --client-mark 83
expect 0 --help
absent 4 SMCPROXY
absent 6 SMCPROXY

# --- add, twice: each rule exactly once -----------------------------------
args=(--port "80,8080" --dest 10.99.0.0/24 --dest fd00:99::/64 --to-port 17001)
expect 0 add "${args[@]}"
expect 0 add "${args[@]}"
[[ $out == *"4 already present"* ]] || fail "second add did not report the rules as present: $out"
once 4 "$jump" "$mark" "$cmark" "$(r4 80)" "$(r4 8080)"
once 6 "$jump" "$mark" "$cmark" "$(r6 80)" "$(r6 8080)"
zoned 4
zoned 6
# The mark rule comes first in the chain, before any redirect.
first=$(inns iptables -t nat -S SMCPROXY | grep '^-A' | head -n 1)
[ "$first" = "$mark" ] || fail "IPv4: first rule of SMCPROXY is '$first', not the mark rule"
first=$(inns ip6tables -t nat -S SMCPROXY | grep '^-A' | head -n 1)
[ "$first" = "$mark" ] || fail "IPv6: first rule of SMCPROXY is '$first', not the mark rule"

expect 0 list
for want in "IPv4: chain SMCPROXY, jumped to from OUTPUT" \
	"  redirect tcp to 10.99.0.0/24 port 80 -> local port 17001" \
	"  redirect tcp to fd00:99::/64 port 8080 -> local port 17001" \
	"  skip packets marked 67 (0x43)" \
	"  skip packets marked 83 (0x53)" \
	"  track packets marked 67 in conntrack zone 5459 (raw table)"; do
	grep -qxF -- "$want" <<<"$out" || { printf '%s\n' "$out"; fail "list lacks: $want"; }
done

# --- the helper's default marks are the daemon's, and they stay clear of
# the bits kube-proxy and the CNIs own (one definition: config/cfg-t.h).
[ -x "$build/smcproxyd" ] || fail "$build/smcproxyd is not built (run make)"
command -v jq >/dev/null || fail "jq is not installed"
defaults=$("$build/smcproxyd" --print-default-config) || fail "smcproxyd --print-default-config"
dmark=$(jq -r .mark <<<"$defaults")
dcmark=$(jq -r .client_mark <<<"$defaults")
[ "$mark" = "$(printf -- '-A SMCPROXY -m mark --mark 0x%x -j RETURN' "$dmark")" ] ||
	fail "the helper skips '$mark', the daemon's default mark is $dmark"
[ "$cmark" = "$(printf -- '-A SMCPROXY -m mark --mark 0x%x -j RETURN' "$dcmark")" ] ||
	fail "the helper skips '$cmark', the daemon's default client_mark is $dcmark"
foreign=$(sed -n 's/^#define CFG_MARK_FOREIGN[[:space:]]*\(0x[0-9a-f]*\)u$/\1/p' "$top/config/cfg-t.h")
[ -n "$foreign" ] || fail "no CFG_MARK_FOREIGN in config/cfg-t.h"
[ $((foreign & 0x4000)) -ne 0 ] && [ $((foreign & 0x8000)) -ne 0 ] ||
	fail "CFG_MARK_FOREIGN $foreign lacks kube-proxy's bits 0x4000 and 0x8000"
[ $(((dmark | dcmark) & foreign)) -eq 0 ] ||
	fail "the default marks $dmark and $dcmark have bits of $foreign (kube-proxy's, the CNIs')"

# --- end to end: a redirected connection reaches smcproxyd, and the
# daemon's own (marked) connection to the original destination is not
# redirected back to it: nothing listens on port 80, so that connection is
# refused (connect_failures), where a broken mark rule would loop it into
# the daemon (loops_refused). ---------------------------------------------
if [ -x "$build/smcproxyd" ] && [ -x "$build/smcproxyctl" ]; then
	cat >"$tmp/smcproxyd.json" <<EOF
{
  "listen": ["127.0.0.1:17001", "[::1]:17001"],
  "control": "",
  "stats": {"socket": "$tmp/smcproxyd.sock"},
  "user": ""
}
EOF
	# Not through inns: $! must be the daemon, not a subshell, or the kill
	# below misses it.
	ip netns exec "$ns" "$build/smcproxyd" --foreground -c "$tmp/smcproxyd.json" >"$tmp/daemon.log" 2>&1 &
	daemon_pid=$!
	for _ in $(seq 50); do
		[ -S "$tmp/smcproxyd.sock" ] && break
		sleep 0.1
	done
	[ -S "$tmp/smcproxyd.sock" ] || { cat "$tmp/daemon.log"; fail "smcproxyd did not start"; }

	for dst in 10.99.0.1 fd00:99::1; do
		# Bash's /dev/tcp: the connect succeeds only if it was redirected
		# to the daemon (nothing else listens on port 80 here).
		inns timeout 5 bash -c "exec 3<>/dev/tcp/$dst/80" 2>/dev/null ||
			fail "connect to $dst:80 was not redirected to smcproxyd"
	done

	stats=
	for _ in $(seq 50); do
		stats=$(inns "$build/smcproxyctl" -s "$tmp/smcproxyd.sock" --prometheus stats) ||
			fail "smcproxyctl stats failed"
		grep -qx 'smcproxy_connect_failures_total 2' <<<"$stats" && break
		sleep 0.1
	done
	# More than the two flows means the daemon's own connections came back
	# to it (the daemon's loop check only catches connections aimed at its
	# listeners, not this): the mark rule did not work.
	accepted=$(sed -n 's/^smcproxy_flows_accepted_total //p' <<<"$stats")
	[ "${accepted:-0}" -le 2 ] || fail "end to end: $accepted flows for 2 connections:" \
		"the daemon's marked connections were redirected back to it"
	for want in 'smcproxy_flows_accepted_total 2' \
		'smcproxy_connect_failures_total 2' \
		'smcproxy_loops_refused_total 0'; do
		grep -qxF "$want" <<<"$stats" || {
			printf '%s\n' "$stats" | grep -v '^#' | sed 's/^/  /'
			sed 's/^/  log: /' "$tmp/daemon.log"
			fail "end to end: expected '$want'"
		}
	done
	# --- only some users intercepted: uid 0's connections to port 81,
	# and nobody's rejected by an owner-match egress rule. REDIRECT (nat
	# OUTPUT) comes before filter OUTPUT and the daemon connects as
	# itself, so nobody's connection would get through if it were
	# intercepted: with --uid it is not, and stays rejected.
	command -v setpriv >/dev/null || fail "setpriv is not installed (util-linux)"
	ru() { echo "-A SMCPROXY -d 10.99.0.0/24 -p tcp -m tcp --dport 81 -m owner --uid-owner $1 -j REDIRECT --to-ports 17001"; }
	expect 0 add --port 81 --dest 10.99.0.0/24 --uid 0 --to-port 17001
	expect 0 add --port 81 --dest 10.99.0.0/24 --uid root --to-port 17001
	[[ $out == *"1 already present"* ]] || fail "--uid root is not uid 0's rule: $out"
	once 4 "$(ru 0)"
	expect 0 list
	grep -qxF "  redirect tcp to 10.99.0.0/24 port 81 of uid 0 -> local port 17001" <<<"$out" ||
		{ printf '%s\n' "$out"; fail "list lacks the uid rule"; }
	inns iptables -w 5 -A OUTPUT -m owner --uid-owner 65534 -p tcp --dport 81 -j REJECT ||
		fail "cannot add the owner-match egress rule"
	inns timeout 5 bash -c 'exec 3<>/dev/tcp/10.99.0.1/81' 2>/dev/null ||
		fail "uid 0's connection to port 81 was not redirected"
	if inns timeout 5 setpriv --reuid 65534 --regid 65534 --clear-groups \
		bash -c 'exec 3<>/dev/tcp/10.99.0.1/81' 2>/dev/null; then
		fail "uid 65534, left out of --uid, got through its owner-match REJECT"
	fi
	# And the same user intercepted: its REJECT no longer applies (what
	# smcproxyd(8) warns of).
	expect 0 add --port 81 --dest 10.99.0.0/24 --uid 65534 --to-port 17001
	inns timeout 5 setpriv --reuid 65534 --regid 65534 --clear-groups \
		bash -c 'exec 3<>/dev/tcp/10.99.0.1/81' 2>/dev/null ||
		fail "uid 65534 intercepted did not reach the daemon"
	expect 0 del --port 81 --dest 10.99.0.0/24 --uid 0,65534 --to-port 17001
	[ "$(count 4 "$(ru 0)")" -eq 0 ] && [ "$(count 4 "$(ru 65534)")" -eq 0 ] ||
		fail "del --uid left a rule"
	inns iptables -w 5 -D OUTPUT -m owner --uid-owner 65534 -p tcp --dport 81 -j REJECT

	kill "$daemon_pid"
	wait "$daemon_pid" 2>/dev/null
	daemon_pid=
	! grep -q "kube-proxy or a CNI" "$tmp/daemon.log" ||
		fail "the daemon spoke of its marks on the defaults: $(grep "kube-proxy" "$tmp/daemon.log")"
	# The old default mark, kept in a config: said once at start.
	sed -i 's/^  "user": ""$/  "user": "", "mark": 5459267/' "$tmp/smcproxyd.json"
	ip netns exec "$ns" "$build/smcproxyd" --foreground -c "$tmp/smcproxyd.json" >"$tmp/daemon2.log" 2>&1 &
	daemon_pid=$!
	for _ in $(seq 50); do
		[ -S "$tmp/smcproxyd.sock" ] && grep -q "ready" "$tmp/daemon2.log" && break
		sleep 0.1
	done
	kill "$daemon_pid"
	wait "$daemon_pid" 2>/dev/null
	daemon_pid=
	want='"mark" 0x534d43 has the mark bits 0x534d00, which kube-proxy or a CNI may own: on a Kubernetes node kube-proxy masquerades every connection marked 0x4000'
	[ "$(grep -cF "$want" "$tmp/daemon2.log")" -eq 1 ] ||
		{ sed 's/^/  log: /' "$tmp/daemon2.log"; fail "no single notice of the old default mark's bits"; }
else
	fail "$build/smcproxyd or smcproxyctl is not built (run make)"
fi

# --- del: one rule, then the same again (a note, still success) -----------
expect 0 del --port 8080 --dest 10.99.0.0/24 --dest fd00:99::/64 --to-port 17001
[ "$(count 4 "$(r4 8080)")" -eq 0 ] || fail "IPv4: del left the port 8080 rule"
[ "$(count 6 "$(r6 8080)")" -eq 0 ] || fail "IPv6: del left the port 8080 rule"
once 4 "$jump" "$mark" "$(r4 80)"
once 6 "$jump" "$mark" "$(r6 80)"
expect 0 del --port 8080 --dest 10.99.0.0/24 --to-port 17001
[[ $out == *"not present"* ]] || fail "deleting a missing rule said nothing: $out"

# --- del of the last redirect removes the chain and the jump --------------
expect 0 del --port 80 --dest 10.99.0.0/24 --to-port 17001
absent 4 SMCPROXY
once 6 "$jump" "$mark" "$(r6 80)"
expect 0 del --port 80 --dest fd00:99::/64 --to-port 17001
absent 6 SMCPROXY

# --- del --all, and again ----------------------------------------------------
expect 0 add "${args[@]}"
expect 0 add --port 443 --dest 10.99.0.0/24 --mark 0x10
expect 0 del --all
absent 4 SMCPROXY
absent 6 SMCPROXY
expect 0 del --all
expect 0 list
grep -qxF "IPv4: no rules" <<<"$out" || fail "list after del --all: $out"
grep -qxF "IPv6: no rules" <<<"$out" || fail "list after del --all: $out"

# --- config: the destination host's allow lists ------
expect 0 config --port 6379,8000-8100 --dest 10.99.0.0/24 --dest fd99::/64
printf '{%s}\n' "$out" >"$tmp/allow.json"
"$build/smcproxyd" -c "$tmp/allow.json" --check-config >/dev/null 2>"$tmp/check.err" ||
	fail "config output does not load: $(cat "$tmp/check.err"): $out"
grep -qF '{"prefix": "10.99.0.0/24", "allow": ["6379", "8000-8100"]}' <<<"$out" &&
	grep -qF '{"prefix": "fd99::/64", "allow": ["6379", "8000-8100"]}' <<<"$out" ||
	fail "config printed: $out"
expect 2 config --port 6379
expect 2 config --dest 10.99.0.0/24

# --- tproxy: mangle PREROUTING, the policy rule and route of table 5460 ------
expect 2 tproxy
expect 2 tproxy frob
expect 2 tproxy add --port 80
expect 2 tproxy add --port 80 --dest 10.98.0.0/24 --tproxy-mark 0x3
expect 2 tproxy add --port 80 --dest 10.98.0.0/24 --tproxy-mark 16
# A bit of the daemon's marks would deliver its own connections here.
expect 2 tproxy add --port 80 --dest 10.98.0.0/24 --tproxy-mark 0x40
expect 2 tproxy add --port 80 --dest 10.98.0.0/24 --tproxy-mark 0x1 --mark 0x1001 --client-mark 0x53
inns ip link set lo up
tp4="-A SMCPROXY_TP -d 10.98.0.0/24 -p tcp -m tcp --dport 80 -j TPROXY --on-port 7003 --on-ip 0.0.0.0 --tproxy-mark 0x1000/0x1000"
tp6="-A SMCPROXY_TP -d fd98::/64 -p tcp -m tcp --dport 80 -j TPROXY --on-port 7003 --on-ip :: --tproxy-mark 0x1000/0x1000"
for i in 1 2; do
	expect 0 tproxy add --port 80 --dest 10.98.0.0/24 --dest fd98::/64
done
[[ $out == *"2 already present"* ]] || fail "second tproxy add changed something: $out"
for fam in 4 6; do
	tp=$tp4
	[ "$fam" = 6 ] && tp=$tp6
	for line in "$tp" "-A PREROUTING -p tcp -j SMCPROXY_TP" \
		"-A SMCPROXY_TP -p tcp -m socket --transparent -j MARK --set-xmark 0x1000/0x1000" \
		"-A SMCPROXY_TP -p tcp -m mark --mark 0x1000/0x1000 -j RETURN" \
		"-A SMCPROXY_TP -p tcp -m conntrack --ctstate DNAT -j RETURN"; do
		n=$(count "$fam" "$line" mangle)
		[ "$n" -eq 1 ] || fail "IPv$fam tproxy: expected once, found $n times: $line"
	done
	# One socket lookup per packet, none for a NATed connection's: the
	# chain's head is the DNAT test, the lookup, the mark match, the bridge
	# test.
	n=$(inns "$([ "$fam" = 6 ] && echo ip6tables || echo iptables)" -t mangle -S SMCPROXY_TP | grep -c -- '-m socket')
	[ "$n" -eq 1 ] || fail "IPv$fam tproxy: $n socket lookups in the chain, expected 1"
	head=$(inns "$([ "$fam" = 6 ] && echo ip6tables || echo iptables)" -t mangle -S SMCPROXY_TP | sed -n 2,5p |
		sed 's/.* -j \([A-Z]*\).*/\1/' | tr '\n' ' ')
	[ "$head" = "RETURN MARK RETURN RETURN " ] || fail "IPv$fam tproxy: the chain starts $head"
	# Bridged packets under br_netfilter: by in mangle, REDIRECTed in nat.
	d=10.98.0.0/24
	[ "$fam" = 6 ] && d=fd98::/64
	for line in "-A SMCPROXY_TP -p tcp -m physdev --physdev-is-in -j RETURN@mangle" \
		"-A PREROUTING -p tcp -j SMCPROXY_TP@nat" \
		"-A SMCPROXY_TP -d $d -p tcp -m tcp --dport 80 -m physdev --physdev-is-in -j REDIRECT --to-ports 7003@nat"; do
		n=$(count "$fam" "${line%@*}" "${line##*@}")
		[ "$n" -eq 1 ] || fail "IPv$fam tproxy (${line##*@}): expected once, found $n times: ${line%@*}"
	done
	n=$(inns ip "-$fam" rule list pref 5460 | grep -c "fwmark 0x1000/0x1000 lookup 5460")
	[ "$n" -eq 1 ] || fail "IPv$fam: the policy rule is there $n times"
	inns ip "-$fam" route show table 5460 | grep -q "^local" || fail "IPv$fam: no local route in table 5460"
done
# A chain an older helper wrote looked the socket up twice, the second
# time to return, and had no DNAT test: tproxy add writes the head again.
inns iptables -w 5 -t mangle -D SMCPROXY_TP -p tcp -m mark --mark 0x1000/0x1000 -j RETURN
inns iptables -w 5 -t mangle -D SMCPROXY_TP -p tcp -m conntrack --ctstate DNAT -j RETURN
inns iptables -w 5 -t mangle -I SMCPROXY_TP 2 -p tcp -m socket --transparent -j RETURN
expect 0 tproxy add --port 80 --dest 10.98.0.0/24
[ "$(count 4 "-A SMCPROXY_TP -p tcp -m socket --transparent -j RETURN" mangle)" -eq 0 ] &&
	[ "$(count 4 "-A SMCPROXY_TP -p tcp -m mark --mark 0x1000/0x1000 -j RETURN" mangle)" -eq 1 ] &&
	[ "$(count 4 "-A SMCPROXY_TP -p tcp -m conntrack --ctstate DNAT -j RETURN" mangle)" -eq 1 ] ||
	fail "tproxy add did not replace the old chain's second socket lookup: $(inns iptables -t mangle -S SMCPROXY_TP)"
head=$(inns iptables -t mangle -S SMCPROXY_TP | sed -n 2,5p | sed 's/.* -j \([A-Z]*\).*/\1/' | tr '\n' ' ')
[ "$head" = "RETURN MARK RETURN RETURN " ] || fail "the upgraded chain starts $head"
# The TPROXY bit: not one of the daemon's, nor kube-proxy's or a CNI's.
[ $((0x1000 & (dmark | dcmark | foreign))) -eq 0 ] ||
	fail "the default TPROXY bit 0x1000 is in the daemon's marks or in $foreign"
expect 0 tproxy list
grep -qxF "  tproxy tcp to fd98::/64 port 80 -> local port 7003 (mark 0x1000/0x1000)" <<<"$out" ||
	fail "tproxy list: $out"
# The nat rules are another command's: tproxy del --all leaves them.
expect 0 add --port 80 --dest 10.98.0.0/24
expect 0 tproxy del --port 80 --dest 10.98.0.0/24
[ "$(count 4 "$tp4" mangle)" -eq 0 ] && [ "$(count 6 "$tp6" mangle)" -eq 1 ] ||
	fail "tproxy del removed the wrong rules"
[ "$(count 4 "-A SMCPROXY_TP -d 10.98.0.0/24 -p tcp -m tcp --dport 80 -m physdev --physdev-is-in -j REDIRECT --to-ports 7003" nat)" -eq 0 ] ||
	fail "tproxy del left the bridged REDIRECT rule"
expect 0 tproxy del --all
for fam in 4 6; do
	t=iptables
	[ "$fam" = 6 ] && t=ip6tables
	! inns "$t" -t mangle -S | grep -q SMCPROXY_TP || fail "IPv$fam: SMCPROXY_TP left after tproxy del --all"
	! inns "$t" -t nat -S | grep -q SMCPROXY_TP || fail "IPv$fam: nat SMCPROXY_TP left after tproxy del --all"
	! inns ip "-$fam" rule list | grep -q "lookup 5460" || fail "IPv$fam: policy rule left"
	[ -z "$(inns ip "-$fam" route show table 5460 2>/dev/null)" ] || fail "IPv$fam: table 5460 not empty"
done
once 4 "-A SMCPROXY -d 10.98.0.0/24 -p tcp -m tcp --dport 80 -j REDIRECT --to-ports 7001"
expect 0 del --all

echo "PASS: $name: add/list/del idempotent for IPv4 and IPv6, marked traffic skipped, --uid limits interception (an owner-match REJECT of a user left out still applies), config prints loadable allow lists, tproxy add/list/del idempotent with its policy rule and route"
exit 0
