#!/bin/bash
# Guards contrib/smcproxy-iptables: add/list/del for IPv4 and IPv6 in a
# fresh network namespace, idempotence (each rule exactly once in
# `iptables -t nat -S`; the raw table's conntrack zone for the daemon's
# marked connections), the chains going away when empty, usage errors, and,
# end to end with the real daemon, that redirected connections reach
# smcproxyd while its own marked connections are not redirected back to it.
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
	for line in "$jump" "-A SMCPROXY -m mark --mark 0x534d43 -j CT --zone-orig 5459"; do
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
mark='-A SMCPROXY -m mark --mark 0x534d43 -j RETURN'
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
	"  skip packets marked 5459267 (0x534d43)" \
	"  track packets marked 5459267 in conntrack zone 5459 (raw table)"; do
	grep -qxF -- "$want" <<<"$out" || { printf '%s\n' "$out"; fail "list lacks: $want"; }
done

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
	kill "$daemon_pid"
	wait "$daemon_pid" 2>/dev/null
	daemon_pid=
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

# --- config: the destination host's allow lists (issue 11, finding 1) ------
expect 0 config --port 6379,8000-8100 --dest 10.99.0.0/24 --dest fd99::/64
printf '{%s}\n' "$out" >"$tmp/allow.json"
"$build/smcproxyd" -c "$tmp/allow.json" --check-config >/dev/null 2>"$tmp/check.err" ||
	fail "config output does not load: $(cat "$tmp/check.err"): $out"
grep -qF '{"prefix": "10.99.0.0/24", "allow": ["6379", "8000-8100"]}' <<<"$out" &&
	grep -qF '{"prefix": "fd99::/64", "allow": ["6379", "8000-8100"]}' <<<"$out" ||
	fail "config printed: $out"
expect 2 config --port 6379
expect 2 config --dest 10.99.0.0/24

echo "PASS: $name: add/list/del idempotent for IPv4 and IPv6, marked traffic skipped, config prints loadable allow lists"
exit 0
