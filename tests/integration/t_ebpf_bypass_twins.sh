#!/bin/bash
# Guards the bypass of the local hop on the end-to-end tests: each listed test runs again in ebpf mode with intercept.bypass on (IT_BYPASS=1: the self-test must pass, with its blocking-read check skipped as this kernel fails it) and must pass as it does through REDIRECT: sha256 both ways over IPv4, IPv6 and link groups, half-close both ways, RST, 1000 parallel flows.
# it-timeout: 600
. "$(dirname "$0")/lib.sh"
it_init "$@"
TWINS="t_relay_sha256 t_ipv6 t_half_close t_reset t_shm_flows t_shm_ipv6 t_shm_close t_shm_burst_1000"
it_twins ebpf+bypass "IT_INTERCEPT=ebpf IT_BYPASS=1" "REDIRECT tests pass in ebpf mode with the bypass too" $TWINS
