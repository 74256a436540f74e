# shellcheck shell=bash disable=SC2034
# (variables are used by the tests that source this)
# Helpers for the rdma guest tests, sourced by every tests/rdma/t_*.sh. They
# run inside the guest of tests/rdma/lab (tests/rdma/run starts them there):
#
#   . "$(dirname "$0")/lib.sh"
#   rt_init "$@"               # $1 = build dir; rxe0 check, temp dir, cleanup
#   rt_setup KEY=JSON ...      # the standard bed: rt_bed B, then rt_bed A
#   rt_bed A|B KEY=JSON ...    # one side of it: B server and daemon B,
#                              #   A the REDIRECT and daemon A (rdma)
#   rt_step A|B FUNC ARGS...   # a scenario's step, run by that daemon's side
#   rt_share VAR...            # in a step: VARs for the other side's steps
#   rt_config A|B KEY=JSON ... # one daemon's config (defaults below)
#   rt_start A|B / rt_stop A|B / rt_kill A|B
#   rt_ctl A|B ARGS...         # smcproxyctl against that daemon
#   rt_stat A|B PATH...        # values of `smcproxyctl --json stats`
#   rt_wait_stat A|B PATH OP N [SECONDS]
#   rt_links A|B               # one line per link: lgr link state transport
#                              #   flows bytes_tx bytes_rx
#   rt_run ARGS...             # flowcheck run to the server, via the redirect
#   rt_run_ok LABEL WHY ARGS...
#   rt_server_expect PAT WHY   # stop the server, judge its summary
#   rt_rule_add / rt_rule_del  # iptables rules, deleted at exit in any case
#   rt_pass / rt_fail WHY      # exactly one PASS/FAIL line, then exit
#   rt_defer WHY               # a failed check that lets the test go on
#
# What this library shares with tests/integration/lib.sh (build dir,
# config writer, stats lookup, stopping a daemon or the server) is in
# tests/common.sh; the rt_* names above wrap it.
#
# Topology. rxe receives only in the initial network namespace (on some
# kernels), so everything lives in the guest's root namespace and both
# daemons share the one rxe device, reaching each other through its
# loopback:
#
#   app: connect(10.77.0.1:9000)
#     | nat OUTPUT: tcp to 10.77.0.1:9000 without the daemons' mark
#     v   -> REDIRECT :7001
#   daemon A ("client host")  listen 127.0.0.1:7001  control 10.77.0.1:7002
#     | link group over rxe0 (transport rdma, 2 links)
#     v
#   daemon B ("server host")  listen 127.0.0.1:7011  control 10.77.0.1:7003
#     | TCP with the mark: not redirected
#     v
#   flowcheck serve 10.77.0.1:9000
#
# Both daemons are on one host, so transport "auto" would pick shm: the
# tests force "rdma". Each test cleans up what it started (the tests share
# one guest): processes, the nat rule, its directory under /run.
#
# Scenarios. A test that must also run between two hosts keeps its body
# in tests/rdma/scenario/NAME.sh, which both tests/rdma/t_rdma_NAME.sh
# (here) and tests/rdma/pair/t_pair_NAME.sh (tests/rdma/pair/lib.sh: one
# daemon per guest) source. The body is a sequence of steps, each run by
# the side whose daemon it drives or checks (side B also owns the
# server): `rt_step A|B FUNC ARGS...`. Here this guest is both sides and a
# step is a call; in a pair each guest runs its own side's steps and
# waits for the other's, in order. Inside a step rt_ctl (rt_stat,
# rt_links) refuses the other side's daemon, so that a scenario that
# passes here cannot ask a daemon that lives in the other guest.

set -u

RT_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)	# tests/rdma
# shellcheck source=SCRIPTDIR/../common.sh
. "$RT_LIB_DIR/../common.sh"
RT_NAME=$TC_NAME

ADDR=10.77.0.1		# lab0, rxe0's netdev
NET=10.77.0.0/24
SPORT=9000		# flowcheck serve
MARK=67			# the default "mark" (0x43)
declare -A RT_LPORT=([A]=7001 [B]=7011)	# redirect listeners
declare -A RT_CPORT=([A]=7002 [B]=7003)	# control ports
declare -A RT_PID=([A]= [B]=)

RT_PIDS=()
RT_RULES=()		# iptables rules to delete at exit, as -D arguments
RT_UNDO=()		# commands to run at exit (eval'd), e.g. an address added
SERVER_PID=

rt_log() { tc_log "$@"; }

rt_init() {
	if [ $# -lt 1 ] || [ ! -d "$1" ]; then
		echo "usage: $0 BUILD_DIR (inside tests/rdma/lab)" >&2
		exit 2
	fi
	tc_build_vars "$1"
	if [ "$(id -u)" -ne 0 ]; then
		echo "FAIL $RT_NAME: needs root (run inside tests/rdma/lab)"
		exit 1
	fi
	if ! rdma link show rxe0/1 2>/dev/null | grep -q 'state ACTIVE'; then
		echo "FAIL $RT_NAME: no active rxe0 (run inside tests/rdma/lab)"
		exit 1
	fi
	tc_check_tools
	if [ "${RT_TRACE:-0}" = 1 ]; then
		PS4='+ ${EPOCHREALTIME} ${LINENO}: '
		set -x
	fi
	# /run is a tmpfs in the guest: UNIX sockets do not work over 9p.
	RT_DIR=$(mktemp -d /run/smcp-rt.XXXXXX)
	chmod 755 "$RT_DIR"
	trap rt_cleanup EXIT
	trap 'rt_log "interrupted"; exit 124' INT TERM
}

rt_cleanup() {
	local rc=$? p
	trap - EXIT INT TERM
	# bash would report each killed background job on stderr
	exec 2>/dev/null
	for p in "${RT_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	for p in "${RT_RULES[@]}"; do
		eval "iptables -D $p" 2>/dev/null
	done
	for p in "${RT_UNDO[@]}"; do
		eval "$p" 2>/dev/null
	done
	if [ -n "${RT_DIR:-}" ] && [ -d "$RT_DIR" ]; then
		if [ "${RT_KEEP:-0}" = 1 ] && [ -n "${RT_LOGDIR:-}" ]; then
			cp -r "$RT_DIR" "$RT_LOGDIR/$RT_NAME.dir" 2>/dev/null
			echo "$RT_NAME: kept $RT_LOGDIR/$RT_NAME.dir"
		fi
		rm -rf "$RT_DIR"
	fi
	exit "$rc"
}

# Waits until FILE contains a line matching REGEX; $3 = timeout in seconds.
rt_wait_file() { tc_wait_file "$@"; }

# rt_rule_add -t TABLE CHAIN RULE...: inserts an iptables rule that the
# test's exit deletes (the tests share one guest); rt_rule_del with the
# same arguments deletes it before.
rt_rule_add() {
	local spec
	spec=$(printf '%q ' "$@")
	iptables -I "$@" || return 1
	RT_RULES+=("$spec")
}

rt_rule_del() {
	local spec i
	spec=$(printf '%q ' "$@")
	iptables -D "$@" || return 1
	for i in "${!RT_RULES[@]}"; do
		[ "${RT_RULES[$i]}" = "$spec" ] && unset "RT_RULES[$i]"
	done
	return 0
}

# REDIRECT what apps send to the server into daemon A; the daemons' own
# connections carry the mark and pass, tracked in a conntrack zone of
# their own as contrib/smcproxy-iptables sets it up (t_loop_ct_reset).
rt_redirect() {
	rt_rule_add OUTPUT -t raw -m mark --mark "$MARK" -j CT --zone-orig 5459 ||
		rt_fail "iptables -t raw CT"
	rt_rule_add OUTPUT -t nat -p tcp -d "$ADDR" --dport "$SPORT" -m mark ! --mark "$MARK" \
		-j REDIRECT --to-ports "${RT_LPORT[A]}" || rt_fail "iptables REDIRECT"
}

rt_server_start() {
	"$FLOWCHECK" serve --listen "$ADDR:$SPORT" >"$RT_DIR/server.log" 2>&1 &
	SERVER_PID=$!
	RT_PIDS+=("$SERVER_PID")
	rt_wait_file "$RT_DIR/server.log" '^serve: listening' 10 ||
		rt_fail "flowcheck serve did not start: $(cat "$RT_DIR/server.log")"
}

# Stops the server (waiting up to 10 s for its connections to end); prints
# its summary line. Works inside $(...).
rt_server_stop() {
	local pid=$SERVER_PID
	[ -n "$pid" ] || return 0
	SERVER_PID=
	tc_server_stop "$pid" "$RT_DIR/server.log" 10
}

# rt_server_expect PATTERN WHY: stops the server, prints its summary line,
# and fails the test with "WHY: summary" unless it contains PATTERN.
rt_server_expect() {
	local summary
	summary=$(rt_server_stop)
	echo "  $summary"
	case $summary in
	*"$1"*) ;;
	*) rt_fail "$2: $summary" ;;
	esac
}

# rt_config A|B KEY=JSON...: writes that daemon's config. Arguments replace
# or add top-level keys; KEY= (empty) removes one. The defaults are the
# topology above, transport rdma, one worker, small buffers, two links.
rt_config() {
	local d=$1 other
	shift
	[ "$d" = A ] && other=B || other=A
	local -A cfg=(
		[listen]="[\"127.0.0.1:${RT_LPORT[$d]}\"]"
		[control]="\"$ADDR:${RT_CPORT[$d]}\""
		# Deny by default: the guest's test services use unprivileged ports.
		[peers]="[{\"prefix\": \"$NET\", \"control_port\": ${RT_CPORT[$other]}, \"allow\": [\"1024-65535\"]}]"
		[transport]='"rdma"'
		[mark]="$MARK"
		[workers]=1
		[user]='""'
		[links]='{"per_peer": 2}'
		[buffers]='{"ring": "256KiB", "pool": "64MiB"}'
		[stats]="{\"socket\": \"$RT_DIR/$d.sock\", \"mode\": \"0660\"}"
		[shm]="{\"dir\": \"$RT_DIR/$d-shm\"}"
		# A flow open or handshake slower than connect_timeout falls back
		# to tcp, as it should; a TCG guest on a busy machine can be
		# that slow, and the tests that count rdma flows must not count
		# the machine's load.
		[fallback]='{"connect_timeout": "10s"}'
		[log]='{"level": "info"}'
	)
	local order=(listen control peers transport mark workers user links buffers stats shm fallback log)
	mkdir -p "$RT_DIR/$d-shm"
	tc_write_config "$RT_DIR/$d.json" cfg order "$@"
}

rt_ctl() {
	local d=$1
	shift
	if [ -n "$RT_STEP_SIDE" ] && [ "$d" != "$RT_STEP_SIDE" ]; then
		rt_log "a step of side $RT_STEP_SIDE asked daemon $d (in a pair it is in the other guest)"
		return 1
	fi
	"$SMCPROXYCTL" --socket "$RT_DIR/$d.sock" "$@"
}

# rt_stat A|B PATH...: the values of `smcproxyctl --json stats` at the
# given paths (relative to "stats"), one per line.
rt_stat() {
	local d=$1 out
	shift
	out=$(rt_ctl "$d" --json stats 2>&1) || { rt_log "smcproxyctl stats ($d): $out"; return 1; }
	tc_stats_values "$out" "$@"
}

# Milliseconds of the wall clock.
rt_now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# rt_wait_stat A|B PATH OP N [SECONDS]: waits until the stat satisfies
# "test VALUE OP N". The timeout is wall-clock time: under TCG a query
# alone can take a good part of a second.
rt_wait_stat() {
	local d=$1 path=$2 op=$3 want=$4 t=${5:-10} end v=
	end=$(($(rt_now_ms) + t * 1000))
	while :; do
		v=$(rt_stat "$d" "$path" 2>/dev/null) && test "$v" "$op" "$want" && return 0
		[ "$(rt_now_ms)" -lt $end ] || break
		sleep 0.1
	done
	rt_log "daemon $d: stats $path is ${v:-?}, wanted $op $want"
	return 1
}

# rt_start A|B [LAUNCHER...]: starts that daemon in the foreground with its
# config (rt_config first) and waits until its stats socket answers.
rt_start() {
	local d=$1 i
	shift
	[ -f "$RT_DIR/$d.json" ] || rt_config "$d"
	rm -f "$RT_DIR/$d.sock"
	"$@" "$SMCPROXYD" -c "$RT_DIR/$d.json" --foreground >>"$RT_DIR/$d.log" 2>&1 &
	RT_PID[$d]=$!
	RT_PIDS+=("${RT_PID[$d]}")
	# Under TCG a start (device, CQ pool, a registered pool) takes a while.
	for ((i = 0; i < 300; i++)); do
		if ! kill -0 "${RT_PID[$d]}" 2>/dev/null; then
			wait "${RT_PID[$d]}"
			rt_fail "daemon $d exited at start (status $?)"
		fi
		[ -S "$RT_DIR/$d.sock" ] && rt_ctl "$d" --json stats >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	rt_fail "daemon $d did not answer on $RT_DIR/$d.sock within 30 s"
}

# rt_stop A|B [SECONDS]: SIGTERM, waits (default 20 s); returns the exit
# status (124 if it did not exit, 70 if it reported leaked loop handles).
rt_stop() {
	local d=$1 rc=0 pid=${RT_PID[$1]}
	[ -n "$pid" ] || return 0
	tc_daemon_stop "$pid" "$RT_DIR/$d.log" "${2:-20}" "daemon $d" || rc=$?
	[ $rc -eq 124 ] || RT_PID[$d]=
	return $rc
}

rt_kill() {
	local pid=${RT_PID[$1]}
	[ -n "$pid" ] || return 0
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	RT_PID[$1]=
}

# rt_bed A|B KEY=JSON...: one side of the standard test bed, with the
# defaults of rt_config plus the arguments: B the server and daemon B; A
# the redirect and daemon A (after B, so that A's first flows find B).
rt_bed() {
	local d=$1
	shift
	if [ "$d" = B ]; then
		rt_server_start
		rt_config B "$@"
		rt_start B
	else
		rt_redirect
		rt_config A "$@"
		rt_start A
	fi
}

# The standard test bed, both daemons with the same arguments.
rt_setup() {
	rt_step B rt_bed B "$@"
	rt_step A rt_bed A "$@"
}

# rt_step A|B FUNC ARGS...: a step of a scenario (see Scenarios above).
# This guest is both sides: the step is a call, with rt_ctl held to the
# step's own daemon. tests/rdma/pair/lib.sh has the version for a pair.
RT_STEP_SIDE=
rt_step() {
	RT_STEP_SIDE=$1
	shift
	"$@"
	RT_STEP_SIDE=
}

# rt_share VAR...: in a step, VARs are for the other side's later steps.
# Here both sides are one shell: nothing to do.
rt_share() { :; }

# Words for a PASS line that differ by topology.
RT_WHERE="in one guest"
# The rate of flows that must outlast a few queries of the daemons: each
# guest of a pair has one vCPU, where queries take longer.
RT_SLOW_RATE=24KiB

# rt_links A|B: one line per link of the daemon's active link groups:
# "lgr link state transport flows bytes_tx bytes_rx".
# rt_fail_link A|B LGR LINK: `debug fail-link`, its answer on stdout.
# The control thread waits 1 s for the worker that owns the group; a TCG
# guest on a loaded host can be slower, and the late job still runs: then
# this waits (30 s at most) until the link is no longer active.
rt_fail_link() {
	local d=$1 lgr=$2 link=$3 out links i
	out=$(rt_ctl "$d" debug fail-link "$lgr" "$link" 2>&1) && { echo "$out"; return 0; }
	grep -q 'did not answer' <<<"$out" || { echo "$out"; return 1; }
	for ((i = 0; i < 300; i++)); do
		sleep 0.1
		links=$(rt_links "$d") || continue
		awk -v g="$lgr" -v l="$link" '$1 == g && $2 == l && $3 == "active" { a = 1 } END { exit a }' \
			<<<"$links" && { echo "$out (the link went down after the answer)"; return 0; }
	done
	echo "$out; the link is still active 30 s later"
	return 1
}

rt_links() {
	local out n i f paths=()
	out=$(rt_ctl "$1" --json links 2>&1) || { rt_log "smcproxyctl links ($1): $out"; return 1; }
	# One jget for all: each process start costs under TCG.
	n=$(grep -c '"lgr"' <<<"$out")
	[ "$n" -gt 0 ] || return 0
	for ((i = 0; i < n; i++)); do
		for f in lgr link state transport flows bytes_tx bytes_rx; do
			paths+=("links.$i.$f")
		done
	done
	printf '%s\n' "$out" | "$JGET" "${paths[@]}" | paste -d ' ' - - - - - - -
}

# flowcheck run to the server (through the redirect into daemon A).
rt_run() { "$FLOWCHECK" run --connect "$ADDR:$SPORT" "$@"; }

# rt_run_ok LABEL WHY ARGS...: rt_run, its output shown (first 20 lines,
# prefixed "  LABEL: "), the test failed with WHY if it failed.
rt_run_ok() {
	local label=$1 why=$2 out rc
	shift 2
	out=$(rt_run "$@")
	rc=$?
	printf '%s\n' "$out" | sed "s|^|  $label: |" | head -20
	[ $rc -eq 0 ] || rt_fail "$why"
}

# rt_eq WHAT GOT WANT: fails unless the two numbers are equal.
rt_eq() { [ "$2" -eq "$3" ] 2>/dev/null || rt_fail "$1 is $2, expected $3"; }

# rt_defer WHY: a failure that does not stop the test, so that the checks
# after it still run and report; rt_pass then fails with every WHY (and
# rt_fail adds them to its own). For tests whose checks are independent.
RT_DEFERRED=()
rt_defer() {
	rt_log "FAILED CHECK: $*"
	RT_DEFERRED+=("$*")
}

# rt_defer_eq WHAT GOT WANT: rt_eq, deferred.
rt_defer_eq() { [ "$2" -eq "$3" ] 2>/dev/null || rt_defer "$1 is $2, expected $3"; }

# The counters that say where flows went instead of rdma, on stderr: for
# a failure message that explains itself. In a step, its own daemon's.
rt_diag() {
	local d
	for d in ${RT_STEP_SIDE:-A B}; do
		case $d in
		A) rt_ctl A --json stats 2>&1 | "$JGET" stats.flows stats.fallback stats.lgr ;;
		B) rt_ctl B --json stats 2>&1 | "$JGET" stats.flows stats.declines_sent stats.lgr ;;
		esac | sed "s/^/  $d: /" >&2
	done
}

rt_dump_logs() {
	local f
	for f in "$RT_DIR"/A.log "$RT_DIR"/B.log "$RT_DIR"/server.log; do
		[ -s "$f" ] || continue
		echo "--- last lines of $(basename "$f"):"
		tail -n 25 "$f"
	done
}

rt_pass() {
	[ ${#RT_DEFERRED[@]} -eq 0 ] || rt_fail
	echo "PASS $RT_NAME${1:+: $1}"
	exit 0
}

# rt_fail [WHY]: the deferred failures first, then WHY.
rt_fail() {
	local why
	why=$(printf '%s; ' "${RT_DEFERRED[@]}" "$@")
	why=${why%; }
	why=${why%; }
	RT_DEFERRED=()
	rt_dump_logs >&2
	echo "FAIL $RT_NAME: $why"
	exit 1
}
