# shellcheck shell=bash disable=SC2034,SC2119,SC2120
# (variables are used by the tests that source this; functions take
# optional arguments)
# Helpers for the netns integration tests. Sourced by every t_*.sh:
#
#   . "$(dirname "$0")/lib.sh"
#   it_init "$@"              # $1 = build dir; root check, temp dir, cleanup trap
#   it_hosts                  # client host + server host joined by veth
#   it_redirect               # REDIRECT server subnet -> daemon (client host)
#   it_server_start           # flowcheck serve on the server host
#   it_config key=JSON ...    # daemon config (defaults below, keys replaced)
#   it_daemon_start [launcher args...]
#   it_setup_relay key=JSON ...  # all five above: the standard relay test bed
#   it_setup_shm key=JSON ...    # the same with a peer daemon on the server host
#   it_peer_stat / it_peer_ctl   # the peer daemon's stats and smcproxyctl
#   it_run ...                # flowcheck run in the client host
#   it_run_ok LABEL WHY ...   # it_run, output shown, it_fail WHY if it fails
#   it_server_expect PAT WHY  # stop the server, it_fail unless summary ~ PAT
#   it_stat flows.accepted    # one value of `smcproxyctl --json stats`
#   it_pass / it_fail "why"   # exactly one PASS/FAIL line, then exit
#   it_eq WHAT GOT WANT       # it_fail unless the two numbers are equal
#   auth=$(it_psk NAME)       # a fresh auth.psk_file secret, mode 0600
#
# IT_INTERCEPT=ebpf runs a test in the daemon's eBPF intercept mode: no nat
# rule anywhere; it_redirect makes a cgroup v2 of the test's own ($IT_CG,
# removed at exit: cgroups are per host, not per network namespace),
# it_config points the client host's daemon's "intercept" at it, and
# it_run, it_probe and it_app run the client in it. IT_INTERCEPT=iptables
# (the default) is REDIRECT as described below. IT_BYPASS=1 (ebpf mode
# only) turns intercept.bypass on as well, the sk_msg bypass of the local
# hop: the test fails unless its self-test passed and the daemon runs it.
# It also sets debug.bypass_skip_blocking_read: this host's kernel fails
# that check (a blocking read may return EAGAIN), and the tests' own
# readers do not block, so the rest of the bypass is what they test.
#
# What this library shares with tests/rdma/lib.sh is in tests/common.sh;
# the it_* names above wrap it.
#
# Topology (addresses are the same for every run: each run has its own
# namespaces, and the names carry $$ so parallel runs do not collide):
#
#   netns smcp-c-PID (client host)          netns smcp-s-PID (server host)
#     lo 127.0.0.1 ::1  <- smcproxyd :7001    lo
#     veth0 10.66.1.1/24 fd66::1/64 ------- veth1 10.66.1.2/24 fd66::2/64
#     nat OUTPUT: tcp to 10.66.1.0/24, fd66::/64 without the daemon's mark
#                 -> REDIRECT :7001                flowcheck serve :9000
#
# Everything a test starts is killed and both namespaces are deleted on
# exit, whatever the way out (pass, fail, error, signal from the runner).

set -u

IT_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)	# tests/integration
# shellcheck source=SCRIPTDIR/../common.sh
. "$IT_LIB_DIR/../common.sh"
IT_NAME=$TC_NAME

C4=10.66.1.1		# client host
S4=10.66.1.2		# server host
NX4=10.66.1.99		# on the server subnet, nobody has it
NET4=10.66.1.0/24
C6=fd66::1
S6=fd66::2
NET6=fd66::/64
SPORT=9000		# flowcheck serve
CLOSED_PORT=9001	# nothing listens here on the server host
LPORT=7001		# the daemon's redirect listener
CPORT=7002		# the peer daemon's control port
MARK=67			# the default "mark" (0x43)
# What the peer daemon lets the client host open flows to (peers[].allow,
# deny by default): the unprivileged ports, where every test service
# listens. t_shm_policy narrows it to prove the default.
ALLOW='["1024-65535"]'

IT_INTERCEPT=${IT_INTERCEPT:-iptables}
IT_CG=			# ebpf: the test's cgroup (a directory), IT_CG_PATH its name
IT_CG_PATH=
IT_APP=()		# an application's launcher on the client host (it_app_in)
# The client address the daemon sees: ebpf mode connects to the loopback
# listener directly, so the kernel picks a loopback source.
IT_CLIENT4=$C4
IT_PIDS=()
IT_NS_EXTRA=()		# more namespaces a test made: deleted as NS_C and NS_S are
DAEMON_PID=
SERVER_PID=
PEER_PID=

it_log() { tc_log "$@"; }

it_init() {
	if [ $# -lt 1 ] || [ ! -d "$1" ]; then
		echo "usage: $0 BUILD_DIR" >&2
		exit 2
	fi
	tc_build_vars "$1"
	if [ "$(id -u)" -ne 0 ]; then
		echo "FAIL $IT_NAME: needs root (network namespaces, iptables)"
		exit 1
	fi
	tc_check_tools
	NS_C=smcp-c-$$
	NS_S=smcp-s-$$
	# IT_TMPDIR: where the temp dir goes (default /tmp); the rdma lab's guest has
	# /tmp on 9p, where UNIX sockets do not work, and passes /run.
	IT_DIR=$(mktemp -d "${IT_TMPDIR:-/tmp}/smcp-it.XXXXXX")
	chmod 755 "$IT_DIR"
	it_app_in ""
	SOCK=$IT_DIR/ctl.sock
	IT_CFG=$IT_DIR/smcproxyd.json
	PSOCK=$IT_DIR/peer.sock
	PEER_CFG=$IT_DIR/peer.json
	trap it_cleanup EXIT
	trap 'it_log "interrupted"; exit 124' INT TERM
}

it_cleanup() {
	local rc=$? p ns
	trap - EXIT INT TERM
	# bash would report each killed background job on stderr
	exec 2>/dev/null
	for p in "${IT_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	for ns in "${NS_C:-}" "${NS_S:-}" "${IT_NS_EXTRA[@]}"; do
		[ -n "$ns" ] || continue
		if ip netns list 2>/dev/null | grep -qw "$ns"; then
			# Only processes this test started live in its namespaces.
			for p in $(ip netns pids "$ns" 2>/dev/null); do
				kill -KILL "$p" 2>/dev/null
			done
			ip netns del "$ns" 2>/dev/null
		fi
	done
	wait 2>/dev/null
	it_cgroup_remove "$IT_CG"
	if [ -n "${IT_DIR:-}" ] && [ -d "$IT_DIR" ]; then
		if [ "${IT_KEEP:-0}" = 1 ]; then
			echo "$IT_NAME: kept $IT_DIR"
		else
			rm -rf "$IT_DIR"
		fi
	fi
	exit "$rc"
}

# Runs a command on the client host / the server host.
it_c() { ip netns exec "$NS_C" "$@"; }
it_s() { ip netns exec "$NS_S" "$@"; }

it_hosts() {
	ip netns add "$NS_C" || it_fail "ip netns add $NS_C"
	ip netns add "$NS_S" || it_fail "ip netns add $NS_S"
	ip -n "$NS_C" link set lo up
	ip -n "$NS_S" link set lo up
	ip -n "$NS_C" link add veth0 type veth peer name veth1 netns "$NS_S" ||
		it_fail "cannot create the veth pair"
	ip -n "$NS_C" addr add "$C4/24" dev veth0
	ip -n "$NS_S" addr add "$S4/24" dev veth1
	# nodad: usable at once, no 1-2 s of duplicate address detection
	ip -n "$NS_C" addr add "$C6/64" dev veth0 nodad
	ip -n "$NS_S" addr add "$S6/64" dev veth1 nodad
	ip -n "$NS_C" link set veth0 up
	ip -n "$NS_S" link set veth1 up
	# Static neighbours: the first ARP/NDP exchange can be lost while the
	# veth carrier comes up, and a retransmit costs a second. NX4 stays
	# unresolvable on purpose.
	local mac_c mac_s
	mac_c=$(ip -n "$NS_C" -br link show veth0 | awk '{ print $3 }')
	mac_s=$(ip -n "$NS_S" -br link show veth1 | awk '{ print $3 }')
	ip -n "$NS_C" neigh replace "$S4" lladdr "$mac_s" dev veth0 nud permanent
	ip -n "$NS_C" neigh replace "$S6" lladdr "$mac_s" dev veth0 nud permanent
	ip -n "$NS_S" neigh replace "$C4" lladdr "$mac_c" dev veth1 nud permanent
	ip -n "$NS_S" neigh replace "$C6" lladdr "$mac_c" dev veth1 nud permanent
}

# The cgroup v2 hierarchy's mount point (a hybrid layout has it at
# /sys/fs/cgroup/unified), found as the daemon finds it: the file system
# type is the field after the "-" that ends a mountinfo line's optional
# fields, whose number varies.
it_cgroup2_mount() {
	awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") { print $5; exit } break } }' \
		/proc/self/mountinfo
}

# it_cgroup_make NAME: makes cgroup NAME (a path in the hierarchy); its
# directory in IT_CG. Not for $(...): a failure must end the test.
it_cgroup_make() {
	local mnt
	mnt=$(it_cgroup2_mount)
	[ -n "$mnt" ] || it_fail "no cgroup v2 hierarchy is mounted"
	mkdir -p "$mnt$1" || it_fail "cannot make cgroup $1"
	IT_CG=$mnt$1
}

# it_cgroup_remove DIR: kills what is left in cgroup DIR and its children
# (only what this test put there), then removes them, deepest first.
it_cgroup_remove() {
	local d p i
	[ -n "$1" ] && [ -d "$1" ] || return 0
	for ((i = 0; i < 20; i++)); do
		local left=0
		while read -r d; do
			for p in $(cat "$d/cgroup.procs" 2>/dev/null); do
				kill -KILL "$p" 2>/dev/null
				left=1
			done
		done < <(find "$1" -depth -type d)
		[ $left = 0 ] && break
		sleep 0.1
	done
	find "$1" -depth -type d -exec rmdir {} \; 2>/dev/null
}

# it_app_in CGROUP_DIR: sets IT_APP, the launcher of an application on
# the client host in cgroup CGROUP_DIR ("": none), an array so that
# "${IT_APP[@]}" CMD & leaves CMD itself in $!. The cgroup is joined before
# the namespace is entered: ip netns exec mounts a sysfs of its own,
# without the cgroup hierarchy.
it_app_in() {
	if [ -z "$1" ]; then
		IT_APP=(ip netns exec "$NS_C")
	else
		# shellcheck disable=SC2016
		IT_APP=(sh -c 'cg=$1; shift; echo $$ >"$cg/cgroup.procs" && exec "$@"' sh "$1"
			ip netns exec "$NS_C")
	fi
}

# it_app [CGROUP_DIR] -- CMD...: CMD on the client host, as an application
# (in ebpf mode in the test's cgroup, or in CGROUP_DIR).
it_app() {
	local IT_APP cg=$IT_CG
	if [ "${1:-}" != -- ]; then
		cg=$1
		shift
	fi
	[ "${1:-}" = -- ] && shift
	it_app_in "$cg"
	"${IT_APP[@]}" "$@"
}

# The client host's daemon's launcher (an array, so that $! is the daemon
# itself). ip netns exec mounts a sysfs of its own, where the cgroup v2
# hierarchy is not mounted; in ebpf mode the daemon must find it, so it
# enters the network namespace only, as a daemon on a real host runs in
# that host's mounts.
it_ns_daemon() {
	if [ "$IT_INTERCEPT" = ebpf ]; then
		IT_NS_DAEMON=(nsenter --net="/run/netns/$NS_C" --)
	else
		IT_NS_DAEMON=(ip netns exec "$NS_C")
	fi
}

# REDIRECT every TCP connection to the server subnet that does not carry the
# daemon's mark to the daemon's listener, IPv4 and IPv6. A redirect in nat
# OUTPUT maps the destination to 127.0.0.1 / ::1, hence those listeners.
# The rules contrib/smcproxy-iptables writes, in short: the redirect skips
# the daemon's mark, and the daemon's connections are tracked in a
# conntrack zone of their own (else, after the daemon reset a client, as
# t_workers' idle timeouts do, a new outbound connection on that client's
# tuple is redirected back to it: t_loop_ct_reset).
it_redirect() {
	local t
	if [ "$IT_INTERCEPT" = ebpf ]; then
		IT_CG_PATH=/smcp-it-$$
		it_cgroup_make "$IT_CG_PATH"
		it_app_in "$IT_CG"
		IT_CLIENT4=127.0.0.1
		return 0
	fi
	for t in iptables ip6tables; do
		it_c $t -t raw -A OUTPUT -m mark --mark "$MARK" -j CT --zone-orig 5459 ||
			it_fail "$t -t raw CT"
	done
	it_c iptables -t nat -A OUTPUT -p tcp -d "$NET4" -m mark ! --mark "$MARK" \
		-j REDIRECT --to-ports "$LPORT" || it_fail "iptables REDIRECT"
	it_c ip6tables -t nat -A OUTPUT -p tcp -d "$NET6" -m mark ! --mark "$MARK" \
		-j REDIRECT --to-ports "$LPORT" || it_fail "ip6tables REDIRECT"
}

# Waits until FILE contains a line matching REGEX; $3 = timeout in seconds.
it_wait_file() { tc_wait_file "$@"; }

it_server_start() {
	# Not through it_s: $! must be the server itself, not a subshell.
	ip netns exec "$NS_S" "$FLOWCHECK" serve --listen "0.0.0.0:$SPORT" \
		--listen "[::]:$SPORT" >"$IT_DIR/server.log" 2>&1 &
	SERVER_PID=$!
	IT_PIDS+=("$SERVER_PID")
	it_wait_file "$IT_DIR/server.log" '^serve: listening' 5 ||
		it_fail "flowcheck serve did not start: $(cat "$IT_DIR/server.log")"
}

# Stops the server (waiting up to 5 s for its connections to end); prints
# its summary line. Works inside $(...).
it_server_stop() {
	[ -n "$SERVER_PID" ] || return 0
	tc_server_stop "$SERVER_PID" "$IT_DIR/server.log" 5 it_s
}

# Writes the daemon's config. Arguments KEY=JSON replace or add top-level
# keys; KEY= (empty) removes one. The defaults keep every file of the
# daemon inside this test's temp dir and make it a pure TCP relay.
it_config() {
	local -A cfg=(
		[listen]="[\"127.0.0.1:$LPORT\", \"[::1]:$LPORT\"]"
		[control]='""'
		[transport]='"tcp"'
		[mark]="$MARK"
		[workers]=2
		# The tests run as root and stay so (t_privdrop drops to nobody).
		[user]='""'
		[stats]="{\"socket\": \"$SOCK\", \"mode\": \"0660\"}"
		[shm]="{\"dir\": \"$IT_DIR\"}"
		[fallback]='{"connect_timeout": "2s"}'
		[log]='{"level": "info"}'
	)
	local order=(listen control transport mark workers user stats shm fallback log)
	# ebpf: only the client host's daemon intercepts, the app's cgroup.
	if [ -n "$IT_CG_PATH" ] && [ "$IT_CFG" = "$IT_DIR/smcproxyd.json" ]; then
		local byp=
		[ "${IT_BYPASS:-0}" = 1 ] && byp=', "bypass": true'
		cfg[intercept]="{\"mode\": \"ebpf\", \"cgroup\": \"$IT_CG_PATH\", \"destinations\": [\"$NET4\", \"$NET6\"]$byp}"
		order+=(intercept)
		if [ -n "$byp" ]; then
			cfg[debug]='{"bypass_skip_blocking_read": true}'
			order+=(debug)
		fi
	fi
	tc_write_config "$IT_CFG" cfg order "$@"
}

# smcproxyctl against this test's daemon.
it_ctl() { "$SMCPROXYCTL" --socket "$SOCK" "$@"; }

# Prints the values of `smcproxyctl --json stats` at the given paths
# (relative to the "stats" object), one per line.
it_stat() {
	local out
	out=$(it_ctl --json stats 2>&1) || { it_log "smcproxyctl stats: $out"; return 1; }
	tc_stats_values "$out" "$@"
}

# Starts smcproxyd on the client host with $IT_CFG (it_config first), in
# the foreground, and waits until its stats socket answers. Arguments, if
# any, are a launcher put in front of it (e.g. prlimit --nofile=64:64).
# IT_BYPASS=1: a daemon asked for the bypass must run it (its self-test
# passed), or the test would pass without testing it.
it_bypass_check() {
	[ "${IT_BYPASS:-0}" = 1 ] && grep -q '"bypass": true' "$IT_CFG" || return 0
	[ "$(it_stat intercept.bypass.on)" = true ] ||
		it_fail "IT_BYPASS=1 but the bypass is off: $(it_stat intercept.bypass.why_off)"
}

it_daemon_start() {
	[ -f "$IT_CFG" ] || it_config
	# Not through it_c: $! must be the daemon itself (ip netns exec, env and
	# a launcher all exec), not a subshell, or signals miss it.
	it_ns_daemon
	"${IT_NS_DAEMON[@]}" "$@" "$SMCPROXYD" -c "$IT_CFG" --foreground >>"$IT_DIR/daemon.log" 2>&1 &
	DAEMON_PID=$!
	IT_PIDS+=("$DAEMON_PID")
	local i
	for ((i = 0; i < 100; i++)); do
		if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
			wait "$DAEMON_PID"
			it_fail "smcproxyd exited at start (status $?)"
		fi
		if [ -S "$SOCK" ] && it_ctl --json stats >/dev/null 2>&1; then
			it_bypass_check
			return 0
		fi
		sleep 0.1
	done
	it_fail "smcproxyd did not answer on $SOCK within 10 s"
}

# The standard relay test bed in one call: both hosts, the REDIRECT rules,
# flowcheck serve on the server host, the config (arguments as for
# it_config) and the daemon, answering. Tests that need other rules, a
# launcher or no daemon yet call the steps themselves.
it_setup_relay() {
	it_hosts
	it_redirect
	it_server_start
	it_config "$@"
	it_daemon_start
}

# The peer daemon: a second smcproxyd on the server host, the destination
# host's daemon of a link group. Its config is $PEER_CFG (it_peer_config,
# same arguments as it_config), its stats socket $PSOCK.
it_peer_config() { IT_CFG=$PEER_CFG SOCK=$PSOCK it_config "$@"; }
it_peer_ctl() { SOCK=$PSOCK it_ctl "$@"; }
it_peer_stat() { SOCK=$PSOCK it_stat "$@"; }

# Arguments, if any, are a launcher put in front of it (as it_daemon_start).
it_peer_start() {
	local i
	ip netns exec "$NS_S" "$@" "$SMCPROXYD" -c "$PEER_CFG" --foreground >>"$IT_DIR/peer.log" 2>&1 &
	PEER_PID=$!
	IT_PIDS+=("$PEER_PID")
	for ((i = 0; i < 100; i++)); do
		if ! kill -0 "$PEER_PID" 2>/dev/null; then
			wait "$PEER_PID"
			it_fail "peer smcproxyd exited at start (status $?)"
		fi
		[ -S "$PSOCK" ] && it_peer_ctl --json stats >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	it_fail "peer smcproxyd did not answer on $PSOCK within 10 s"
}

# The link-group test bed: both hosts, REDIRECT on the client host, the
# server, a daemon on each host that may use link groups to the other
# (transport auto: shm, both being on this host), shm.dir shared. Extra
# arguments go to both configs.
it_setup_shm() {
	it_hosts
	it_redirect
	it_server_start
	it_peer_config transport='"auto"' control="\"0.0.0.0:$CPORT\"" \
		peers="[{\"prefix\": \"$C4/32\", \"allow\": $ALLOW}, {\"prefix\": \"$C6/128\", \"allow\": $ALLOW}]" "$@"
	it_peer_start
	it_config transport='"auto"' \
		peers="[{\"prefix\": \"$S4/32\", \"control_port\": $CPORT}, {\"prefix\": \"$S6/128\", \"control_port\": $CPORT}]" \
		"$@"
	it_daemon_start
}

# Three hosts: A (the usual client host, its daemon on $SOCK), B (a second
# client host on its own veth to the server host, 10.66.2.0/24, its daemon
# on $BSOCK) and the server host, whose daemon (the peer daemon, one worker,
# 64 KiB rings, a 4 MiB pool) accepts both clients' link groups. b_stat
# reads B's stats. For tests of one budget shared by two peers.
it_setup_two_clients() {
	local i
	B4=10.66.2.1
	SB4=10.66.2.2
	NS_B=smcp-b-$$
	IT_NS_EXTRA+=("$NS_B")
	BSOCK=$IT_DIR/b.sock
	BCFG=$IT_DIR/b.json

	it_hosts
	ip netns add "$NS_B" || it_fail "ip netns add $NS_B"
	ip -n "$NS_B" link set lo up
	ip -n "$NS_B" link add veth0 type veth peer name vethb netns "$NS_S" ||
		it_fail "veth to $NS_B"
	ip -n "$NS_B" addr add "$B4/24" dev veth0
	ip -n "$NS_S" addr add "$SB4/24" dev vethb
	ip -n "$NS_B" link set veth0 up
	ip -n "$NS_S" link set vethb up
	it_redirect
	ip netns exec "$NS_B" iptables -t nat -A OUTPUT -p tcp -d 10.66.2.0/24 -m mark ! --mark "$MARK" \
		-j REDIRECT --to-ports "$LPORT" || it_fail "iptables REDIRECT on $NS_B"
	it_server_start

	it_peer_config transport='"auto"' control="\"0.0.0.0:$CPORT\"" workers=1 \
		peers="[{\"prefix\": \"$C4/32\", \"allow\": $ALLOW}, {\"prefix\": \"$B4/32\", \"allow\": $ALLOW}]" \
		buffers='{"ring": "64KiB", "pool": "4MiB"}'
	it_peer_start
	it_config transport='"auto"' workers=1 \
		peers="[{\"prefix\": \"$S4/32\", \"control_port\": $CPORT}]"
	it_daemon_start
	IT_CFG=$BCFG SOCK=$BSOCK it_config transport='"auto"' workers=1 \
		peers="[{\"prefix\": \"$SB4/32\", \"control_port\": $CPORT}]"
	ip netns exec "$NS_B" "$SMCPROXYD" -c "$BCFG" --foreground >>"$IT_DIR/b.log" 2>&1 &
	IT_PIDS+=("$!")
	for ((i = 0; i < 100; i++)); do
		[ -S "$BSOCK" ] && SOCK=$BSOCK it_ctl --json stats >/dev/null 2>&1 && break
		sleep 0.1
	done
}
b_stat() { SOCK=$BSOCK it_stat "$@"; }

# it_hold_idle NAME NS DEST COUNT STAT: COUNT idle flows from netns NS to
# DEST held open for 120 s (flowcheck hold; its pid in HOLD_PID), then
# waits until the server answered every one (a flow counts as shm from its
# open until the peer declines it). HOLD_SHM and HOLD_TCP: the client
# daemon's active flows by mode, read with STAT (it_stat, b_stat).
it_hold_idle() {
	local name=$1 ns=$2 dest=$3 count=$4 stat=$5 i
	ip netns exec "$ns" "$FLOWCHECK" hold --connect "$dest" --count "$count" --seconds 120 \
		>"$IT_DIR/hold_$name.out" 2>&1 &
	HOLD_PID=$!
	IT_PIDS+=("$HOLD_PID")
	for ((i = 0; i < 300; i++)); do
		read -r HOLD_SHM HOLD_TCP < <("$stat" flows.active.shm flows.active.tcp | tr '\n' ' ')
		[ $((${HOLD_SHM:-0} + ${HOLD_TCP:-0})) -eq "$count" ] &&
			[ "$(it_peer_stat flows.active.shm)" -eq "${HOLD_SHM:-0}" ] && return 0
		sleep 0.2
	done
}

# Sends SIGTERM and waits up to $1 seconds (default 10); returns the exit
# status of the daemon (124 if it did not exit).
# (70 if it left loop handles open: see tc_daemon_stop).
it_daemon_stop() {
	local rc=0
	[ -n "$DAEMON_PID" ] || return 0
	tc_daemon_stop "$DAEMON_PID" "$IT_DIR/daemon.log" "${1:-10}" smcproxyd || rc=$?
	[ $rc -eq 124 ] || DAEMON_PID=
	return $rc
}

# Waits until stat PATH satisfies the arithmetic test "$2 $3" (e.g.
# it_wait_stat flows.active.tcp -eq 0 5). $4 = timeout in seconds.
it_wait_stat() {
	local path=$1 op=$2 want=$3 t=${4:-5} i v
	for ((i = 0; i < t * 10; i++)); do
		v=$(it_stat "$path" 2>/dev/null) && test "$v" "$op" "$want" && return 0
		sleep 0.1
	done
	it_log "stats $path is ${v:-?}, wanted $op $want"
	return 1
}

# flowcheck run on the client host, to the server through the redirect.
# Default destination $S4:$SPORT; pass --connect to change it.
it_run() {
	local has_connect=0 a
	for a in "$@"; do
		[ "$a" = --connect ] && has_connect=1
	done
	if [ $has_connect = 1 ]; then
		it_app -- "$FLOWCHECK" run "$@"
	else
		it_app -- "$FLOWCHECK" run --connect "$S4:$SPORT" "$@"
	fi
}

it_probe() { it_app -- "$FLOWCHECK" probe "$@"; }

# it_run_ok LABEL WHY [it_run args...]: runs it_run, shows the first 20
# lines of its output prefixed with "  LABEL: ", and fails the test with
# WHY if it failed. LABEL must not contain '/' or '&' (it goes into sed).
it_run_ok() {
	local label=$1 why=$2 out rc
	shift 2
	out=$(it_run "$@")
	rc=$?
	printf '%s\n' "$out" | sed "s/^/  $label: /" | head -20
	[ $rc -eq 0 ] || it_fail "$why"
}

# it_eq WHAT GOT WANT: fails the test unless the two numbers are equal.
it_eq() { [ "$2" -eq "$3" ] 2>/dev/null || it_fail "$1 is $2, expected $3"; }

# it_psk NAME: writes a fresh secret (32 random bytes in hex) to
# $IT_DIR/NAME, mode 0600 as the daemon demands, and prints the "auth"
# value that names it. Works inside $(...): returns 1 if it cannot.
it_psk() {
	local f=$IT_DIR/$1
	head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$f" && chmod 600 "$f" || return 1
	printf '{"psk_file": "%s"}' "$f"
}

# it_server_expect PATTERN WHY: stops the server, prints its summary line,
# and fails the test with "WHY: summary" unless the summary contains
# PATTERN (e.g. " 40 ok, 0 failed, 0 aborted").
it_server_expect() {
	local summary
	summary=$(it_server_stop)
	echo "  $summary"
	case $summary in
	*"$1"*) ;;
	*) it_fail "$2: $summary" ;;
	esac
}

# CPU time (utime + stime, in clock ticks) of a process.
it_cpu_ticks() {
	local stat
	stat=$(cat "/proc/$1/stat") || return 1
	# Fields after the ")" that ends the command name: utime is field 14.
	stat=${stat##*) }
	# shellcheck disable=SC2086
	set -- $stat
	echo $((${12} + ${13}))
}

it_dump_logs() {
	local f
	for f in "$IT_DIR"/daemon.log "$IT_DIR"/peer.log "$IT_DIR"/server.log; do
		[ -s "$f" ] || continue
		echo "--- last lines of $(basename "$f"):"
		tail -n 20 "$f"
	done
}

# Runs each TEST again with the environment VARS set (e.g. IT_INTERCEPT=ebpf),
# a line each with the test's own verdict, and fails naming those that failed
# (with their last lines); otherwise passes with WHAT.
it_twins() { # LABEL "VAR=V ..." WHAT TEST...
	local label=$1 vars=$2 what=$3 t out rc line n=0
	local -a failed=()
	shift 3
	for t in "$@"; do
		# shellcheck disable=SC2086 # VARS is a list of assignments
		out=$(env $vars timeout 300 bash "$IT_LIB_DIR/$t.sh" "$B" 2>&1)
		rc=$?
		line=$(grep -E '^(PASS|FAIL) ' <<<"$out" | tail -1)
		echo "  $label $t: ${line:-exit $rc}"
		if [ $rc -ne 0 ]; then
			failed+=("$t")
			printf '%s\n' "$out" | tail -15 | sed 's/^/    | /'
		fi
		n=$((n + 1))
	done
	[ ${#failed[@]} -eq 0 ] || it_fail "in $label mode: ${failed[*]}"
	it_pass "$n $what"
}

it_pass() {
	echo "PASS $IT_NAME${1:+: $1}"
	exit 0
}

it_fail() {
	it_dump_logs >&2
	echo "FAIL $IT_NAME: $*"
	exit 1
}

# ======================================================================
# Hostile-peer helpers (t_shm_policy, t_shm_hostile). Appended: nothing
# above is changed by them.
#
#   it_smcpeer_c CMD ARGS...     tests/tools/smcpeer on the client host,
#   it_smcpeer_s CMD ARGS...     ... on the server host (--mark, --shm-dir set)
#   it_shm_daemons PEER_ARGS... -- CLIENT_ARGS...
#                                the two daemons of it_setup_shm, each with
#                                its own extra config arguments
#   it_setup_shm_split PEER_ARGS... -- CLIENT_ARGS...
#                                it_setup_shm with it_shm_daemons
#   it_shm_daemons_restart PEER_ARGS... -- CLIENT_ARGS...
#                                both stopped, reconfigured, started (stats
#                                start from zero)
#   it_peer_stop [SECONDS]       it_daemon_stop for the peer daemon
#   it_known_bug WHAT CMD...     a check that a known daemon bug makes fail:
#                                logged as KNOWN BUG and skipped, a failure
#                                with IT_STRICT=1
# ======================================================================

it_smcpeer_c() {
	local cmd=$1
	shift
	[ -x "$B/tools/smcpeer" ] || it_fail "$B/tools/smcpeer is missing (make tools)"
	it_c "$B/tools/smcpeer" "$cmd" --mark "$MARK" --shm-dir "$IT_DIR" "$@"
}

it_smcpeer_s() {
	local cmd=$1
	shift
	[ -x "$B/tools/smcpeer" ] || it_fail "$B/tools/smcpeer is missing (make tools)"
	it_s "$B/tools/smcpeer" "$cmd" --mark "$MARK" --shm-dir "$IT_DIR" "$@"
}

it_shm_daemons() {
	local peer_args=() a
	while [ $# -gt 0 ]; do
		a=$1
		shift
		[ "$a" = -- ] && break
		peer_args+=("$a")
	done
	it_peer_config transport='"auto"' control="\"0.0.0.0:$CPORT\"" \
		peers="[{\"prefix\": \"$C4/32\", \"allow\": $ALLOW}, {\"prefix\": \"$C6/128\", \"allow\": $ALLOW}]" "${peer_args[@]}"
	it_peer_start
	it_config transport='"auto"' \
		peers="[{\"prefix\": \"$S4/32\", \"control_port\": $CPORT}, {\"prefix\": \"$S6/128\", \"control_port\": $CPORT}]" \
		"$@"
	it_daemon_start
}

it_setup_shm_split() {
	it_hosts
	it_redirect
	it_server_start
	it_shm_daemons "$@"
}

it_peer_stop() {
	local rc=0
	[ -n "$PEER_PID" ] || return 0
	tc_daemon_stop "$PEER_PID" "$IT_DIR/peer.log" "${1:-10}" "the peer smcproxyd" || rc=$?
	[ $rc -eq 124 ] || PEER_PID=
	return $rc
}

it_shm_daemons_restart() {
	it_daemon_stop || it_fail "smcproxyd did not stop cleanly (status $?)"
	it_peer_stop || it_fail "the peer smcproxyd did not stop cleanly (status $?)"
	it_shm_daemons "$@"
}
# ======================================================================
