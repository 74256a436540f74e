/* SPDX-License-Identifier: MIT */
/*
 * Golden outputs of smcproxyctl's renderers (daemon/ctl/ctl_render.h): one
 * reply per command, as a current daemon sends it, rendered in each format
 * the command supports and compared byte for byte. test_ctl_proto.c checks
 * the rules piece by piece (alignment, escapes, hostile values); this test
 * pins the whole text, so that moving renderer code around cannot change a
 * byte of what smcproxyctl prints. A deliberate change of the output
 * updates the expected text here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl/ctl_proto.h"
#include "ctl/ctl_render.h"

/* Renders reply (one line, without its newline) as cmd in fmt and checks
 * the text is expect, whole. */
static void check_golden(const char *reply, enum ctl_format fmt, enum ctl_cmd cmd,
			 const char *expect)
{
	char err[CTL_ERRMSG_MAX];
	json_t *r;
	char *text = NULL;
	size_t size;
	FILE *f;

	assert_int_equal(ctl_reply_parse(reply, strlen(reply), &r, err, sizeof(err)), 0);
	f = open_memstream(&text, &size);
	assert_non_null(f);
	assert_int_equal(ctl_render(f, fmt, cmd, r, err, sizeof(err)), 0);
	fclose(f);
	json_decref(r);
	assert_string_equal(text, expect);
	free(text);
}

static const char stats_reply[] =
	"{\"v\":1,\"ok\":true,\"stats\":{\"version\":\"0.3-g1\",\"pid\":4242,"
	"\"uptime_ms\":90061000,\"workers\":2,\"reloads\":1,"
	"\"flows\":{\"accepted\":1234567,\"active\":{\"tcp\":2,\"shm\":1,"
	"\"rdma\":40},\"closed\":{\"tcp\":8,\"shm\":1000,\"rdma\":5,"
	"\"future\":3}},\"fallback\":{\"no_peer\":10,\"policy\":0,"
	"\"timeout\":2},\"bytes\":{\"in\":5368709120,\"out\":678},"
	"\"connect_failures\":1,\"connect_timeouts\":0,\"connect_no_port\":5,\"resets\":12,"
	"\"accept_pauses\":0,\"loops_refused\":3,\"idle_timeouts\":0,"
	"\"bad_messages\":4,\"per_worker\":[{\"worker\":0,\"flows_active\":42,"
	"\"flows_accepted\":1234000,\"bytes_in\":5368700000,\"bytes_out\":600,"
	"\"heartbeat_gap_max_ms\":251},"
	"{\"worker\":1,\"flows_active\":1,\"flows_accepted\":567,"
	"\"bytes_in\":9120,\"bytes_out\":78}],\"cq\":[{\"worker\":0,\"cq\":0,"
	"\"polls\":1500,\"completions\":12000,\"empty_polls\":300,"
	"\"rearms\":280,\"rearms_solicited\":250,\"events\":290,\"rearm_failures\":0,\"links\":2},"
	"{\"worker\":1,\"cq\":1,\"polls\":7,\"completions\":0,"
	"\"empty_polls\":7,\"rearms\":7,\"rearms_solicited\":0,\"events\":7,\"rearm_failures\":1,"
	"\"links\":0}],\"workers_not_answering\":[2],\"refused\":{\"auth\":2,"
	"\"prefix\":1},\"ratio\":0.5}}";

static void test_stats_table(void **state)
{
	(void)state;
	check_golden(stats_reply, CTL_FORMAT_TABLE, CTL_CMD_STATS,
		"smcproxyd 0.3-g1, pid 4242, up 1d 01h 01m, 2 workers, 1 reload\n"
		"\n"
		"flows     tcp    shm  rdma  future      total\n"
		"active      2      1    40       -         43\n"
		"closed      8  1,000     5       3      1,016\n"
		"accepted                            1,234,567\n"
		"\n"
		"worker  active   accepted       bytes in  bytes out\n"
		"0           42  1,234,000  5,368,700,000        600\n"
		"1            1        567          9,120         78\n"
		"\n"
		"worker  cq  links  polls  completions  empty polls  rearms  solicited  events  rearm failures\n"
		"0        0      2  1,500       12,000          300     280        250     290               0\n"
		"1        1      0      7            0            7       7          0       7               1\n"
		"(not listed: the CQ counters of worker 2, which did not answer in time)\n"
		"\n"
		"fallback reason  flows\n"
		"no_peer             10\n"
		"policy               0\n"
		"timeout              2\n"
		"\n"
		"counter                   value\n"
		"bytes in          5,368,709,120  (5.0 GiB)\n"
		"bytes out                   678\n"
		"connect failures              1\n"
		"connect timeouts              0\n"
		"connect no port               5\n"
		"resets                       12\n"
		"accept pauses                 0\n"
		"loops refused                 3\n"
		"idle timeouts                 0\n"
		"bad messages                  4\n"
		"refused auth                  2\n"
		"refused prefix                1\n"
		"ratio                       0.5\n");
}

static void test_stats_prometheus(void **state)
{
	(void)state;
	check_golden(stats_reply, CTL_FORMAT_PROMETHEUS, CTL_CMD_STATS,
		"# HELP smcproxy_info Version of the running smcproxyd; the value is always 1.\n"
		"# TYPE smcproxy_info gauge\n"
		"smcproxy_info{version=\"0.3-g1\"} 1\n"
		"# HELP smcproxy_uptime_seconds Seconds since smcproxyd started.\n"
		"# TYPE smcproxy_uptime_seconds gauge\n"
		"smcproxy_uptime_seconds 90061.000\n"
		"# HELP smcproxy_flows_accepted_total Redirected connections accepted.\n"
		"# TYPE smcproxy_flows_accepted_total counter\n"
		"smcproxy_flows_accepted_total 1234567\n"
		"# HELP smcproxy_flows_active Flows open now, by how they are carried (tcp, shm, rdma).\n"
		"# TYPE smcproxy_flows_active gauge\n"
		"smcproxy_flows_active{mode=\"tcp\"} 2\n"
		"smcproxy_flows_active{mode=\"shm\"} 1\n"
		"smcproxy_flows_active{mode=\"rdma\"} 40\n"
		"# HELP smcproxy_flows_closed_total Flows closed, by how they were carried (tcp, shm, rdma).\n"
		"# TYPE smcproxy_flows_closed_total counter\n"
		"smcproxy_flows_closed_total{mode=\"tcp\"} 8\n"
		"smcproxy_flows_closed_total{mode=\"shm\"} 1000\n"
		"smcproxy_flows_closed_total{mode=\"rdma\"} 5\n"
		"smcproxy_flows_closed_total{mode=\"future\"} 3\n"
		"# HELP smcproxy_fallbacks_total Flows that fell back to the TCP relay, by reason.\n"
		"# TYPE smcproxy_fallbacks_total counter\n"
		"smcproxy_fallbacks_total{reason=\"no_peer\"} 10\n"
		"smcproxy_fallbacks_total{reason=\"policy\"} 0\n"
		"smcproxy_fallbacks_total{reason=\"timeout\"} 2\n"
		"# HELP smcproxy_bytes_total Bytes relayed: in = from clients toward servers, out = from servers back to clients.\n"
		"# TYPE smcproxy_bytes_total counter\n"
		"smcproxy_bytes_total{direction=\"in\"} 5368709120\n"
		"smcproxy_bytes_total{direction=\"out\"} 678\n"
		"# HELP smcproxy_worker_flows_active Flows open now, by worker thread.\n"
		"# TYPE smcproxy_worker_flows_active gauge\n"
		"smcproxy_worker_flows_active{worker=\"0\"} 42\n"
		"smcproxy_worker_flows_active{worker=\"1\"} 1\n"
		"# HELP smcproxy_worker_flows_accepted_total Redirected connections accepted, by worker thread.\n"
		"# TYPE smcproxy_worker_flows_accepted_total counter\n"
		"smcproxy_worker_flows_accepted_total{worker=\"0\"} 1234000\n"
		"smcproxy_worker_flows_accepted_total{worker=\"1\"} 567\n"
		"# HELP smcproxy_worker_bytes_total Bytes relayed by worker thread: in = from clients toward servers, out = from servers back to clients.\n"
		"# TYPE smcproxy_worker_bytes_total counter\n"
		"smcproxy_worker_bytes_total{worker=\"0\",direction=\"in\"} 5368700000\n"
		"smcproxy_worker_bytes_total{worker=\"1\",direction=\"in\"} 9120\n"
		"smcproxy_worker_bytes_total{worker=\"0\",direction=\"out\"} 600\n"
		"smcproxy_worker_bytes_total{worker=\"1\",direction=\"out\"} 78\n"
		"# HELP smcproxy_worker_heartbeat_gap_max_milliseconds The longest time between two heartbeats of the worker's event loop since start (a stall).\n"
		"# TYPE smcproxy_worker_heartbeat_gap_max_milliseconds gauge\n"
		"smcproxy_worker_heartbeat_gap_max_milliseconds{worker=\"0\"} 251\n"
		"# HELP smcproxy_cq_polls_total Polls of each completion queue (ibv_poll_cq calls), by worker and CQ.\n"
		"# TYPE smcproxy_cq_polls_total counter\n"
		"smcproxy_cq_polls_total{worker=\"0\",cq=\"0\"} 1500\n"
		"smcproxy_cq_polls_total{worker=\"1\",cq=\"1\"} 7\n"
		"# HELP smcproxy_cq_completions_total Work completions taken from each completion queue.\n"
		"# TYPE smcproxy_cq_completions_total counter\n"
		"smcproxy_cq_completions_total{worker=\"0\",cq=\"0\"} 12000\n"
		"smcproxy_cq_completions_total{worker=\"1\",cq=\"1\"} 0\n"
		"# HELP smcproxy_cq_empty_polls_total Polls of each completion queue that found nothing.\n"
		"# TYPE smcproxy_cq_empty_polls_total counter\n"
		"smcproxy_cq_empty_polls_total{worker=\"0\",cq=\"0\"} 300\n"
		"smcproxy_cq_empty_polls_total{worker=\"1\",cq=\"1\"} 7\n"
		"# HELP smcproxy_cq_rearms_total Times each completion queue was re-armed for an event.\n"
		"# TYPE smcproxy_cq_rearms_total counter\n"
		"smcproxy_cq_rearms_total{worker=\"0\",cq=\"0\"} 280\n"
		"smcproxy_cq_rearms_total{worker=\"1\",cq=\"1\"} 7\n"
		"# HELP smcproxy_cq_rearms_solicited_total Of those re-arms, the ones for the peers' (solicited) messages only.\n"
		"# TYPE smcproxy_cq_rearms_solicited_total counter\n"
		"smcproxy_cq_rearms_solicited_total{worker=\"0\",cq=\"0\"} 250\n"
		"smcproxy_cq_rearms_solicited_total{worker=\"1\",cq=\"1\"} 0\n"
		"# HELP smcproxy_cq_events_total Completion-channel events that woke the worker, by CQ.\n"
		"# TYPE smcproxy_cq_events_total counter\n"
		"smcproxy_cq_events_total{worker=\"0\",cq=\"0\"} 290\n"
		"smcproxy_cq_events_total{worker=\"1\",cq=\"1\"} 7\n"
		"# HELP smcproxy_cq_rearm_failures_total Re-arms of each completion queue that failed (polled at each wake-up since).\n"
		"# TYPE smcproxy_cq_rearm_failures_total counter\n"
		"smcproxy_cq_rearm_failures_total{worker=\"0\",cq=\"0\"} 0\n"
		"smcproxy_cq_rearm_failures_total{worker=\"1\",cq=\"1\"} 1\n"
		"# HELP smcproxy_cq_links Links whose completions go to each completion queue.\n"
		"# TYPE smcproxy_cq_links gauge\n"
		"smcproxy_cq_links{worker=\"0\",cq=\"0\"} 2\n"
		"smcproxy_cq_links{worker=\"1\",cq=\"1\"} 0\n"
		"# HELP smcproxy_workers Worker threads (event loops) of smcproxyd.\n"
		"# TYPE smcproxy_workers gauge\n"
		"smcproxy_workers 2\n"
		"# HELP smcproxy_reloads_total Configuration reloads applied since start.\n"
		"# TYPE smcproxy_reloads_total counter\n"
		"smcproxy_reloads_total 1\n"
		"# HELP smcproxy_connect_failures_total Outbound connects that were refused or found no route.\n"
		"# TYPE smcproxy_connect_failures_total counter\n"
		"smcproxy_connect_failures_total 1\n"
		"# HELP smcproxy_connect_timeouts_total Outbound connects abandoned after fallback.connect_timeout.\n"
		"# TYPE smcproxy_connect_timeouts_total counter\n"
		"smcproxy_connect_timeouts_total 0\n"
		"# HELP smcproxy_connect_no_port_total Outbound connects that found no free source port (ip_local_port_range, TIME_WAIT).\n"
		"# TYPE smcproxy_connect_no_port_total counter\n"
		"smcproxy_connect_no_port_total 5\n"
		"# HELP smcproxy_resets_total Flows ended by a reset on either leg.\n"
		"# TYPE smcproxy_resets_total counter\n"
		"smcproxy_resets_total 12\n"
		"# HELP smcproxy_accept_pauses_total Times accepting paused for lack of file descriptors or buffers.\n"
		"# TYPE smcproxy_accept_pauses_total counter\n"
		"smcproxy_accept_pauses_total 0\n"
		"# HELP smcproxy_loops_refused_total Connections closed because they were not redirected or aimed at the daemon itself.\n"
		"# TYPE smcproxy_loops_refused_total counter\n"
		"smcproxy_loops_refused_total 3\n"
		"# HELP smcproxy_idle_timeouts_total Flows closed by relay.idle_timeout.\n"
		"# TYPE smcproxy_idle_timeouts_total counter\n"
		"smcproxy_idle_timeouts_total 0\n"
		"# HELP smcproxy_bad_messages smcproxyd stats field bad_messages.\n"
		"# TYPE smcproxy_bad_messages untyped\n"
		"smcproxy_bad_messages 4\n"
		"# TYPE smcproxy_refused_auth untyped\n"
		"smcproxy_refused_auth 2\n"
		"# TYPE smcproxy_refused_prefix untyped\n"
		"smcproxy_refused_prefix 1\n"
		"# HELP smcproxy_ratio smcproxyd stats field ratio.\n"
		"# TYPE smcproxy_ratio untyped\n"
		"smcproxy_ratio 0.5\n");
}

static const char flows_reply[] =
	"{\"v\":1,\"ok\":true,\"flows\":[{\"id\":7,\"worker\":0,"
	"\"mode\":\"tcp\",\"reason\":\"no_peer\",\"state\":\"established\","
	"\"client\":\"10.9.0.1:40112\",\"dest\":\"10.9.0.2:6379\","
	"\"bytes_in\":100,\"bytes_out\":200000,\"age_ms\":1500},{\"id\":12345,"
	"\"worker\":1,\"mode\":\"rdma\",\"reason\":\"\","
	"\"state\":\"half_closed\",\"client\":\"[fd00::1]:50000\","
	"\"dest\":\"[fd00::2]:443\",\"bytes_in\":1073741824,\"bytes_out\":0,"
	"\"age_ms\":3723000},{\"id\":12346,\"worker\":1,\"mode\":\"rdma\","
	"\"state\":\"established\",\"client\":\"10.9.0.3:1\","
	"\"dest\":\"10.9.0.2:6379\",\"bytes_in\":5,\"bytes_out\":6,"
	"\"age_ms\":20}],\"truncated\":true,\"workers_not_answering\":[3]}";

static void test_flows_table(void **state)
{
	(void)state;
	check_golden(flows_reply, CTL_FORMAT_TABLE, CTL_CMD_FLOWS,
		"   ID  WORKER  MODE  REASON   STATE        CLIENT           DEST                      IN      OUT         AGE\n"
		"    7       0  tcp   no_peer  established  10.9.0.1:40112   10.9.0.2:6379            100  200,000        1.5s\n"
		"12345       1  rdma           half_closed  [fd00::1]:50000  [fd00::2]:443  1,073,741,824        0  1h 02m 03s\n"
		"12346       1  rdma  -        established  10.9.0.3:1       10.9.0.2:6379              5        6        20ms\n"
		"\n"
		"3 flows listed; more are active (the daemon lists at most 10000)\n"
		"(not listed: the flows of worker 3, which did not answer in time)\n");
}

static void test_flows_prometheus(void **state)
{
	(void)state;
	check_golden(flows_reply, CTL_FORMAT_PROMETHEUS, CTL_CMD_FLOWS,
		"# HELP smcproxy_flows_listed Flows in the daemon's flow list, by mode and state.\n"
		"# TYPE smcproxy_flows_listed gauge\n"
		"smcproxy_flows_listed{mode=\"tcp\",state=\"established\"} 1\n"
		"smcproxy_flows_listed{mode=\"rdma\",state=\"half_closed\"} 1\n"
		"smcproxy_flows_listed{mode=\"rdma\",state=\"established\"} 1\n"
		"# HELP smcproxy_flows_listed_truncated 1 when the daemon had more flows than it lists (10000).\n"
		"# TYPE smcproxy_flows_listed_truncated gauge\n"
		"smcproxy_flows_listed_truncated 1\n"
		"# HELP smcproxy_flows_listed_workers_not_answering Workers that did not answer in time: their flows are not in the list.\n"
		"# TYPE smcproxy_flows_listed_workers_not_answering gauge\n"
		"smcproxy_flows_listed_workers_not_answering 1\n");
}

static const char reload_reply[] =
	"{\"v\":1,\"ok\":true,"
	"\"reload\":{\"source\":\"/etc/smcproxy/smcproxyd.json\","
	"\"applied\":\"log.level,fallback.connect_timeout\","
	"\"restart_needed\":\"listen\",\"warnings\":2}}";

static void test_reload_table(void **state)
{
	(void)state;
	check_golden(reload_reply, CTL_FORMAT_TABLE, CTL_CMD_RELOAD,
		"reloaded /etc/smcproxy/smcproxyd.json\n"
		"applied:        log.level,fallback.connect_timeout\n"
		"restart needed: listen\n"
		"warnings: 2\n"
		"(restart smcproxyd to apply the settings listed as needing it)\n");
}

static const char links_reply[] =
	"{\"v\":1,\"ok\":true,\"links\":[{\"worker\":0,"
	"\"peer\":\"10.0.0.2:7002\",\"role\":\"client\","
	"\"lgr\":\"0011223344556677\",\"link\":0,\"transport\":\"rdma\","
	"\"state\":\"active\",\"flows\":3,\"msgs_tx\":1200,\"msgs_rx\":1100,"
	"\"bytes_tx\":1048576,\"bytes_rx\":2048,\"device\":\"rxe0\",\"port\":1,"
	"\"gid\":\"fe80::1\",\"qp_num\":17,\"peer_qp_num\":18,"
	"\"max_inline\":220,\"wr_in_flight\":5,\"sq_depth\":256,\"cq\":1,"
	"\"relaxed_ordering\":true},{\"worker\":0,\"peer\":\"10.0.0.2:7002\","
	"\"role\":\"client\",\"lgr\":\"0011223344556677\",\"link\":1,"
	"\"transport\":\"rdma\",\"state\":\"down\",\"flows\":0,\"msgs_tx\":7,"
	"\"msgs_rx\":7,\"bytes_tx\":0,\"bytes_rx\":0,\"device\":\"rxe0\","
	"\"port\":1,\"gid\":\"fe80::1\",\"qp_num\":19,\"peer_qp_num\":20,"
	"\"max_inline\":0,\"wr_in_flight\":0,\"sq_depth\":256,\"cq\":0,"
	"\"relaxed_ordering\":false},{\"worker\":1,\"peer\":\"10.0.0.3:7002\","
	"\"role\":\"server\",\"lgr\":\"8899aabbccddeeff\",\"link\":0,"
	"\"transport\":\"shm\",\"state\":\"active\",\"flows\":1,\"msgs_tx\":2,"
	"\"msgs_rx\":2,\"bytes_tx\":10,\"bytes_rx\":20,\"newer\":\"x\"}],"
	"\"workers_not_answering\":[1]}";

static void test_links_table(void **state)
{
	(void)state;
	check_golden(links_reply, CTL_FORMAT_TABLE, CTL_CMD_LINKS,
		"WORKER  PEER           ROLE    LGR               LINK  TRANSPORT  STATE   FLOWS  MSGS TX  MSGS RX   BYTES TX  BYTES RX  NEWER\n"
		"     0  10.0.0.2:7002  client  0011223344556677     0  rdma       active      3    1,200    1,100  1,048,576     2,048  -\n"
		"     0  10.0.0.2:7002  client  0011223344556677     1  rdma       down        0        7        7          0         0  -\n"
		"     1  10.0.0.3:7002  server  8899aabbccddeeff     0  shm        active      1        2        2         10        20  x\n"
		"\n"
		"rdma links:\n"
		"WORKER  LGR               LINK  DEVICE  PORT  GID      QPN  PEER QPN  INLINE  IN FLIGHT  SQ DEPTH  CQ  RELAXED\n"
		"     0  0011223344556677     0  rxe0       1  fe80::1   17        18     220          5       256   1  yes\n"
		"     0  0011223344556677     1  rxe0       1  fe80::1   19        20       0          0       256   0  no\n"
		"(not listed: the links of worker 1, which did not answer in time)\n");
}

static void test_links_prometheus(void **state)
{
	(void)state;
	check_golden(links_reply, CTL_FORMAT_PROMETHEUS, CTL_CMD_LINKS,
		"# HELP smcproxy_links Links of all link groups.\n"
		"# TYPE smcproxy_links gauge\n"
		"smcproxy_links 3\n"
		"# HELP smcproxy_links_down Links of active link groups that are not active (failed, not replaced yet).\n"
		"# TYPE smcproxy_links_down gauge\n"
		"smcproxy_links_down 1\n"
		"# HELP smcproxy_link_wr_in_flight Send work requests posted on an rdma link and not completed yet.\n"
		"# TYPE smcproxy_link_wr_in_flight gauge\n"
		"smcproxy_link_wr_in_flight{worker=\"0\",lgr=\"0011223344556677\",link=\"0\",device=\"rxe0\"} 5\n"
		"smcproxy_link_wr_in_flight{worker=\"0\",lgr=\"0011223344556677\",link=\"1\",device=\"rxe0\"} 0\n"
		"# HELP smcproxy_link_sq_depth Send work requests an rdma link's queue pair holds (rdma.sq_depth).\n"
		"# TYPE smcproxy_link_sq_depth gauge\n"
		"smcproxy_link_sq_depth{worker=\"0\",lgr=\"0011223344556677\",link=\"0\",device=\"rxe0\"} 256\n"
		"smcproxy_link_sq_depth{worker=\"0\",lgr=\"0011223344556677\",link=\"1\",device=\"rxe0\"} 256\n");
}

static const char peers_reply[] =
	"{\"v\":1,\"ok\":true,\"peers\":[{\"worker\":0,"
	"\"peer\":\"10.0.0.2:7002\",\"state\":\"active\","
	"\"transport\":\"rdma\",\"links\":2,\"flows\":3},{\"worker\":1,"
	"\"peer\":\"10.0.0.9:7002\",\"state\":\"negative\","
	"\"reason\":\"peer_unreachable\",\"ttl_ms\":29500}]}";

static void test_peers_table(void **state)
{
	(void)state;
	check_golden(peers_reply, CTL_FORMAT_TABLE, CTL_CMD_PEERS,
		"WORKER  PEER           STATE     TRANSPORT  LINKS  FLOWS  REASON            TTL MS\n"
		"     0  10.0.0.2:7002  active    rdma           2      3  -                      -\n"
		"     1  10.0.0.9:7002  negative  -              -      -  peer_unreachable  29,500\n");
}

static void test_peers_prometheus(void **state)
{
	(void)state;
	check_golden(peers_reply, CTL_FORMAT_PROMETHEUS, CTL_CMD_PEERS,
		"# HELP smcproxy_peers Peers the daemon knows (link groups and negative cache).\n"
		"# TYPE smcproxy_peers gauge\n"
		"smcproxy_peers 2\n");
}

/* The intercept member of stats, in ebpf mode: the mode and cgroup as an
 * info gauge, the programs attached as a gauge, the programs' counts as
 * counters, and a member a newer daemon added untyped. */
static const char intercept_reply[] =
	"{\"v\":1,\"ok\":true,\"stats\":{\"intercept\":{\"mode\":\"ebpf\","
	"\"cgroup\":\"/sys/fs/cgroup/app\\\"s\",\"attached\":[\"connect4\",\"connect6\","
	"\"sock_ops\",\"getpeername4\",\"getpeername6\"],\"redirected\":1000,"
	"\"established\":998,\"self_skipped\":7,\"no_listener\":0,\"map_full\":2,"
	"\"future\":5}}}";

static void test_intercept_prometheus(void **state)
{
	(void)state;
	check_golden(intercept_reply, CTL_FORMAT_PROMETHEUS, CTL_CMD_STATS,
		"# HELP smcproxy_intercept_info How connections reach the daemon (intercept.mode) and, in ebpf mode, the cgroup the programs are attached to; the value is always 1.\n"
		"# TYPE smcproxy_intercept_info gauge\n"
		"smcproxy_intercept_info{mode=\"ebpf\",cgroup=\"/sys/fs/cgroup/app\\\"s\"} 1\n"
		"# HELP smcproxy_intercept_programs_attached eBPF programs attached to the intercept cgroup (0 once detached).\n"
		"# TYPE smcproxy_intercept_programs_attached gauge\n"
		"smcproxy_intercept_programs_attached 5\n"
		"# HELP smcproxy_intercept_redirected_total TCP connects the eBPF connect hooks sent to the daemon's listener.\n"
		"# TYPE smcproxy_intercept_redirected_total counter\n"
		"smcproxy_intercept_redirected_total 1000\n"
		"# HELP smcproxy_intercept_established_total Redirected connects that reached the listener (their original destination recorded).\n"
		"# TYPE smcproxy_intercept_established_total counter\n"
		"smcproxy_intercept_established_total 998\n"
		"# HELP smcproxy_intercept_self_skipped_total Connects to intercepted destinations left alone: the daemon's own.\n"
		"# TYPE smcproxy_intercept_self_skipped_total counter\n"
		"smcproxy_intercept_self_skipped_total 7\n"
		"# HELP smcproxy_intercept_no_listener_total Connects left alone: the daemon has no listener of their address family.\n"
		"# TYPE smcproxy_intercept_no_listener_total counter\n"
		"smcproxy_intercept_no_listener_total 0\n"
		"# HELP smcproxy_intercept_map_full_total Connects left alone: their original destination could not be recorded.\n"
		"# TYPE smcproxy_intercept_map_full_total counter\n"
		"smcproxy_intercept_map_full_total 2\n"
		"# HELP smcproxy_intercept_future smcproxyd stats field intercept.future.\n"
		"# TYPE smcproxy_intercept_future untyped\n"
		"smcproxy_intercept_future 5\n");
}

/* In iptables mode the member holds the mode alone: the info gauge. */
static void test_intercept_iptables_prometheus(void **state)
{
	(void)state;
	check_golden("{\"v\":1,\"ok\":true,\"stats\":{\"intercept\":{\"mode\":\"iptables\"}}}",
		     CTL_FORMAT_PROMETHEUS, CTL_CMD_STATS,
		"# HELP smcproxy_intercept_info How connections reach the daemon (intercept.mode) and, in ebpf mode, the cgroup the programs are attached to; the value is always 1.\n"
		"# TYPE smcproxy_intercept_info gauge\n"
		"smcproxy_intercept_info{mode=\"iptables\"} 1\n");
}

static const char debug_reply[] =
	"{\"v\":1,\"ok\":true,\"debug\":{\"op\":\"fail-link\",\"worker\":1,"
	"\"lgr\":\"0011223344556677\",\"link\":0,\"flows_moved\":3}}";

static void test_debug_table(void **state)
{
	(void)state;
	check_golden(debug_reply, CTL_FORMAT_TABLE, CTL_CMD_DEBUG,
		"fail-link: link 0 of link group 0011223344556677 on worker 1 was failed; its flows move to a surviving link of the group, or are reset when there is none\n"
		"flows_moved: 3\n");
}

static void test_debug_json(void **state)
{
	(void)state;
	check_golden(debug_reply, CTL_FORMAT_JSON, CTL_CMD_DEBUG,
		"{\n"
		"  \"v\": 1,\n"
		"  \"ok\": true,\n"
		"  \"debug\": {\n"
		"    \"op\": \"fail-link\",\n"
		"    \"worker\": 1,\n"
		"    \"lgr\": \"0011223344556677\",\n"
		"    \"link\": 0,\n"
		"    \"flows_moved\": 3\n"
		"  }\n"
		"}\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stats_table),
		cmocka_unit_test(test_stats_prometheus),
		cmocka_unit_test(test_flows_table),
		cmocka_unit_test(test_flows_prometheus),
		cmocka_unit_test(test_reload_table),
		cmocka_unit_test(test_links_table),
		cmocka_unit_test(test_links_prometheus),
		cmocka_unit_test(test_peers_table),
		cmocka_unit_test(test_peers_prometheus),
		cmocka_unit_test(test_intercept_prometheus),
		cmocka_unit_test(test_intercept_iptables_prometheus),
		cmocka_unit_test(test_debug_table),
		cmocka_unit_test(test_debug_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
