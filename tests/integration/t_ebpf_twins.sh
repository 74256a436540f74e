#!/bin/bash
# Guards the eBPF intercept mode on the end-to-end tests that run through REDIRECT: each listed test runs again with IT_INTERCEPT=ebpf (its app in a cgroup of its own, no nat rule anywhere) and must pass as it does through iptables: sha256 both ways over IPv4, IPv6 and link groups, half-close, RST, urgent data, refused destinations, 1000 parallel flows, a kill mid-transfer, workers and draining, what smcproxyctl shows, a daemon that dropped root to nobody (keeping CAP_BPF in this mode), a server on the destination host that sees the client host's address and port over IPv4 and IPv6 (the app's socket is loopback to loopback: the daemon names its control connection's address), and small writes read once per completion.
# it-timeout: 600
. "$(dirname "$0")/lib.sh"
it_init "$@"
TWINS="t_relay_sha256 t_ipv6 t_half_close t_reset t_urgent t_refused t_kill_mid_transfer
t_workers t_ctl_views t_privdrop t_shm_flows t_shm_ipv6 t_shm_close t_shm_burst_1000
t_shm_client_addr t_shm_small_writes"
it_twins ebpf "IT_INTERCEPT=ebpf" "REDIRECT tests pass in ebpf mode too" $TWINS
