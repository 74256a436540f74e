# shellcheck shell=bash disable=SC2034
# (variables are used by the libraries that source this)
# What the two test libraries share: tests/integration/lib.sh (network
# namespaces on this machine) and tests/rdma/lib.sh (the Soft-RoCE guest)
# both source this file and keep their own names (it_*, rt_*) on top, so
# that a test reads the same either way. Nothing here fails a test: each
# helper returns a status and the library decides.
#
#   tc_build_vars DIR          # B, SMCPROXYD, SMCPROXYCTL, FLOWCHECK, JGET
#   tc_check_tools             # each of those executable, or FAIL and exit 1
#   tc_log MSG                 # "TEST: MSG" on stderr
#   tc_wait_file FILE RE [S]   # until a line of FILE matches RE
#   tc_write_config FILE DEFAULTS ORDER KEY=JSON...
#   tc_stats_values JSON PATH...   # values of a `smcproxyctl --json stats`
#   tc_daemon_stop PID LOG S WHO   # SIGTERM, wait, check the log
#   tc_server_stop PID LOG S [RUNNER...]   # flowcheck serve's summary

TC_NAME=$(basename "$0" .sh)

tc_log() { printf '%s: %s\n' "$TC_NAME" "$*" >&2; }

# The build's programs, from the build directory DIR.
tc_build_vars() {
	B=$(cd "$1" && pwd)
	SMCPROXYD=$B/smcproxyd
	SMCPROXYCTL=$B/smcproxyctl
	FLOWCHECK=$B/tools/flowcheck
	JGET=$B/tools/jget
}

tc_check_tools() {
	local f
	for f in "$SMCPROXYD" "$SMCPROXYCTL" "$FLOWCHECK" "$JGET"; do
		if [ ! -x "$f" ]; then
			echo "FAIL $TC_NAME: $f is missing (make all tools)"
			exit 1
		fi
	done
}

# Waits until FILE contains a line matching REGEX; $3 = timeout in seconds.
tc_wait_file() {
	local file=$1 re=$2 t=${3:-10} i
	for ((i = 0; i < t * 20; i++)); do
		grep -qE "$re" "$file" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# tc_write_config FILE DEFAULTS ORDER KEY=JSON...: writes a daemon config,
# a JSON object of top-level keys. DEFAULTS names an associative array of
# key -> JSON text, ORDER an array of its keys in the order to write them;
# each KEY=JSON replaces or adds a key (added keys come last), KEY= (empty)
# removes one. Both arrays are the caller's and are changed.
tc_write_config() {
	local file=$1 kv k first=1
	local -n tc_cfg_=$2 tc_order_=$3
	shift 3
	for kv in "$@"; do
		k=${kv%%=*}
		[ -v "tc_cfg_[$k]" ] || tc_order_+=("$k")
		# shellcheck disable=SC2004 # a key of an associative array
		tc_cfg_[$k]=${kv#*=}
	done
	{
		echo "{"
		for k in "${tc_order_[@]}"; do
			[ -n "${tc_cfg_[$k]}" ] || continue
			[ $first = 1 ] || echo ","
			first=0
			printf '  "%s": %s' "$k" "${tc_cfg_[$k]}"
		done
		printf '\n}\n'
	} >"$file"
}

# tc_stats_values JSON PATH...: the values at the given paths (relative to
# "stats") of a `smcproxyctl --json stats` reply, one per line.
tc_stats_values() {
	local out=$1 p paths=()
	shift
	for p in "$@"; do
		paths+=("stats.$p|$p")
	done
	printf '%s\n' "$out" | "$JGET" "${paths[@]}"
}

# tc_daemon_stop PID LOG SECONDS WHO: SIGTERM to the smcproxyd PID, then
# waits up to SECONDS. Returns its exit status, 124 if it did not exit, or
# 70 if it exited 0 but its LOG says it left loop handles open (a leak;
# under ASan it exits 1 anyway). WHO names it in that message.
tc_daemon_stop() {
	local pid=$1 log=$2 t=$3 who=$4 i rc
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < t * 20; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			rc=0
			wait "$pid" || rc=$?
			if grep -q 'event loop still had handles at exit' "$log"; then
				tc_log "$who stopped with handles left in an event loop"
				[ $rc -ne 0 ] || rc=70
			fi
			return $rc
		fi
		sleep 0.05
	done
	return 124
}

# tc_server_stop PID LOG SECONDS [RUNNER...]: stops flowcheck serve and
# prints its summary line ("serve: N connections, N ok, N failed, N
# aborted, N open; bytes: up N down N"). The daemon is done with a flow
# once it passed the FIN on, and the last bytes may still be on their way:
# the server is stopped only once it has no connection left (ss, run under
# RUNNER, e.g. in its namespace) or after SECONDS, so that its summary
# judges what arrived, not what was still in flight. "No connection left"
# counts every state in which the server may still read or owe a close:
# a server that sent its FIN first waits in FIN_WAIT for the client's
# stream, and one that got the client's FIN but has not read it yet is in
# CLOSE_WAIT; only established ones counted, a loaded machine stopped the
# server under the last bytes of such a flow. Works inside $(...).
tc_server_stop() {
	local pid=$1 log=$2 t=$3 i
	shift 3
	for ((i = 0; i < t * 20; i++)); do
		[ -z "$("$@" ss -Htn state established state syn-recv state fin-wait-1 \
			state fin-wait-2 state close-wait state closing \
			"( sport = :$SPORT )" 2>/dev/null)" ] && break
		sleep 0.05
	done
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < t * 20; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		grep -qE '^serve: [0-9]+ connections' "$log" && break
		sleep 0.05
	done
	grep -E '^serve: [0-9]+ connections' "$log" | tail -1
}
