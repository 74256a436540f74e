#!/bin/bash
# Guards the sk_msg bypass of the local hop (intercept.bypass): its self-test passes on this kernel and the daemon says so (log line, stats); with the key off nothing of it is attached.
IT_INTERCEPT=ebpf
IT_BYPASS=1
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_relay

grep -q 'bypass of the local hop on (self-test passed' "$IT_DIR/daemon.log" ||
	it_fail "no self-test line in the log: $(grep bypass "$IT_DIR/daemon.log")"
on=$(it_stat intercept.bypass.on)
[ "$on" = true ] || it_fail "stats intercept.bypass.on is $on: $(it_stat intercept.bypass.why_off)"
# Our end joins from the daemon's own cgroup.
self_cg=$(sed -n 's/^0:://p' "/proc/$DAEMON_PID/cgroup")
byp_attached() { bpftool cgroup show "$(it_cgroup2_mount)$self_cg" 2>/dev/null | grep -c byp_sockops; }
[ "$(byp_attached)" = 1 ] || it_fail "byp_sockops is not attached to the daemon's cgroup $self_cg"

# --- off: no sk_msg program, no byp_sockops, stats say off with no reason
it_daemon_stop
IT_BYPASS=0 it_config
it_daemon_start
on=$(it_stat intercept.bypass.on)
[ "$on" = false ] || it_fail "stats intercept.bypass.on is $on with the key off"
[ "$(byp_attached)" = 0 ] || it_fail "byp_sockops attached with the bypass off"
it_pass "the bypass's self-test passes and the daemon reports it"
