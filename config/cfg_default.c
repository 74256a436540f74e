/* SPDX-License-Identifier: MIT */
/*
 * The embedded default configuration: what the daemon runs without -c and
 * what --print-default-config prints. Every key is spelled out so that the
 * printout documents the whole schema. The values must equal the per-key
 * defaults of cfg_schema.c (test_cfg checks that "{}" loads to the same
 * struct cfg as this text).
 */
#include "cfg.h"

static const char default_json[] =
	"{\n"
	"  \"listen\": [\"127.0.0.1:7001\", \"[::1]:7001\"],\n"
	"  \"tproxy\": [],\n"
	"  \"control\": \"0.0.0.0:7002\",\n"
	"  \"peers\": [],\n"
	"  \"serve\": [],\n"
	"  \"transport\": \"auto\",\n"
	"  \"mark\": 67,\n"
	"  \"client_address\": true,\n"
	"  \"client_mark\": 83,\n"
	"  \"workers\": 0,\n"
	"  \"user\": \"smcproxy\",\n"
	"  \"links\": {\"per_peer\": 2, \"max_flows_per_link\": 255, \"dead_after\": \"15s\"},\n"
	"  \"buffers\": {\"ring\": \"1MiB\", \"ring_initial\": \"16KiB\", \"pool\": 0},\n"
	"  \"autocork\": {\"enabled\": true, \"max_bytes\": \"64KiB\"},\n"
	"  \"cq\": {\"pool\": 0, \"poll_budget\": 16},\n"
	"  \"busy_poll\": {\"usecs\": 300, \"budget\": 50, \"adaptive\": true},\n"
	"  \"shm\": {\"dir\": \"/run/smcproxy\"},\n"
	"  \"stats\": {\"socket\": \"/run/smcproxy/smcproxyd.sock\", \"mode\": \"0660\"},\n"
	"  \"fallback\": {\"connect_timeout\": \"2s\", \"negative_ttl\": \"30s\"},\n"
	"  \"auth\": {\"psk_file\": \"\"},\n"
	"  \"log\": {\"level\": \"info\"},\n"
	"  \"relay\": {\"buffer\": \"1MiB\", \"keepalive\": \"60s\", \"idle_timeout\": \"0\"},\n"
	"  \"shutdown\": {\"drain_timeout\": \"10s\"},\n"
	"  \"rdma\": {\"inline\": true, \"sq_depth\": 256, \"rq_depth\": 256},\n"
	"  \"debug\": {\"fail_link\": false, \"bypass_skip_blocking_read\": false},\n"
	"  \"metrics\": {\"listen\": \"\", \"max_clients\": 16, \"timeout\": \"10s\"},\n"
	"  \"intercept\": {\"mode\": \"iptables\", \"cgroup\": \"/\", \"destinations\": [],\n"
	"                \"ports\": [\"1-65535\"], \"bypass\": false, \"bypass_credit\": \"1MiB\"}\n"
	"}\n";

const char *cfg_default_json(void)
{
	return default_json;
}
