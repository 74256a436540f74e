#!/bin/bash
# Guards the eBPF intercept's refusals: a start without CAP_BPF, without a cgroup v2 hierarchy in sight, or with a cgroup that does not exist stops with exit status 1 and one error line naming what is missing, leaves nothing attached, and never falls back to iptables.
IT_INTERCEPT=ebpf
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
it_redirect
it_config

# expect_refusal WHAT PATTERN LAUNCHER...: the daemon, started by LAUNCHER,
# must exit 1 with one error line matching PATTERN.
expect_refusal() {
	local what=$1 pat=$2 rc=0 errors
	shift 2
	"$@" "$SMCPROXYD" -c "$IT_CFG" --foreground >"$IT_DIR/$what.log" 2>&1 || rc=$?
	sed "s/^/  $what: /" "$IT_DIR/$what.log"
	it_eq "exit status ($what)" "$rc" 1
	errors=$(grep -c ': error: ' "$IT_DIR/$what.log")
	it_eq "error lines ($what)" "$errors" 1
	grep -Eq "error: intercept ebpf: $pat" "$IT_DIR/$what.log" ||
		it_fail "$what: the error does not say $pat"
	! grep -q "listening\|ready" "$IT_DIR/$what.log" || it_fail "$what: the daemon went on"
	local attached
	attached=$(bpftool cgroup show "$IT_CG" 2>&1)
	[ -z "$(grep -v '^ID' <<<"$attached")" ] || it_fail "$what: programs left attached: $attached"
}

# Root without CAP_BPF (nor CAP_SYS_ADMIN, which would stand in for it).
expect_refusal no_cap_bpf "loading the programs: permission denied: loading and attaching need CAP_BPF and CAP_NET_ADMIN" \
	nsenter --net="/run/netns/$NS_C" -- setpriv --bounding-set -bpf,-sys_admin --
# ip netns exec mounts a sysfs of its own: no cgroup hierarchy under it.
expect_refusal no_cgroup2 "no cgroup v2 hierarchy is mounted" ip netns exec "$NS_C"
it_config intercept="{\"mode\": \"ebpf\", \"cgroup\": \"$IT_CG_PATH/none\", \"destinations\": [\"$NET4\"]}"
expect_refusal no_such_cgroup "cgroup $IT_CG/none .*No such file or directory" \
	nsenter --net="/run/netns/$NS_C" --
it_pass "no CAP_BPF, no cgroup v2, no such cgroup: one clear line each, exit 1, nothing attached"
