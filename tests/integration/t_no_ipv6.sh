#!/bin/bash
# Guards start-up on a host without IPv6: the "[::1]" listener (the
# embedded default has one) is skipped with a warning and IPv4 is served;
# with only IPv6 listeners the daemon refuses to start, saying why.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
it_redirect
it_server_start
it_c sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.lo.disable_ipv6=1 ||
	it_fail "cannot disable IPv6 in the client host"
it_config
it_daemon_start
grep -q "not listening on \[::1\]:$LPORT: IPv6 is not available" "$IT_DIR/daemon.log" ||
	it_fail "no warning about the skipped IPv6 listener"
it_run --flows 10 --concurrency 10 --max-size 256KiB --seed 51 --quiet ||
	it_fail "IPv4 flows failed"
it_daemon_stop || it_fail "daemon stop"

it_config listen="[\"[::1]:$LPORT\"]"
rc=0
it_c "$SMCPROXYD" -c "$IT_CFG" --foreground 2>"$IT_DIR/v6only.err" || rc=$?
[ $rc = 1 ] || it_fail "an IPv6-only daemon on an IPv4-only host exited $rc, wanted 1"
grep -q "no listen address can be used" "$IT_DIR/v6only.err" ||
	it_fail "no reason given: $(cat "$IT_DIR/v6only.err")"
it_pass "IPv6 listener skipped with a warning, IPv4 served; IPv6-only refused"
