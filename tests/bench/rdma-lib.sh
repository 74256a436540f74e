# shellcheck shell=bash disable=SC2034
# (variables are set here for the scripts that source this)
# The shell the rdma benches share (tests/bench/rdma, one Soft-RoCE guest,
# and tests/bench/rdma-pair, two guests joined by a wire), sourced by both
# inside their guests. The sourcing script sets:
#   BENCH_TAG   the name its messages start with (bench-rdma, ...)
#   B WORK      the build dir, and a directory of its own under /run
#   DEST        the servers' address (the apps connect to DEST:PORT[case])
#   CTL_ADDR    [A]= [B]= the control addresses of the rdma pairs' daemons
#   MARK RING POOL LOG, and per case PORT[] BASE[] (rdma pairs' ports),
#   CORK[] INLINE[] CQS[] (the keys a pair changes), ALLOW[] (a pair's
#   allowed ports as JSON words, if more than PORT[]), EXTRA[] (more
#   config keys of a pair: ', "key": value...'; EXTRA[CASE-A] or
#   EXTRA[CASE-B], if set, instead for that daemon only), DAEMON[] (another
#   smcproxyd binary for a pair's daemons), CASE_ENV[] (words put
#   before the client: LD_PRELOAD=... for kernel SMC-R), CASE_DEST[] (the
#   address a case's client connects to, if not DEST)
#   SECS, CASES (array), FLOW_CASES, RUNS (the csv every run goes to)
# and gets die/note, the daemons' start and checks, and one client run.

# The optional tables, empty unless the sourcing script filled them.
for v in ALLOW CASE_ENV CASE_DEST EXTRA DAEMON; do
	declare -p "$v" >/dev/null 2>&1 || declare -A "$v=()"
done
unset v

die() { echo "$BENCH_TAG: $*" >&2; exit 2; }
note() { echo "$BENCH_TAG: $*" >&2; }

# bench_vcpus N: takes every vCPU from N on offline (see tests/bench/rdma).
bench_vcpus() {
	local f n
	for f in /sys/devices/system/cpu/cpu[0-9]*/online; do
		n=${f#/sys/devices/system/cpu/cpu}
		n=${n%/online}
		[ "$n" -ge "$1" ] && { echo 0 >"$f" || die "cannot take cpu$n offline"; }
	done
}

# bench_workdir NAME: WORK, with the binaries copied to the guest's tmpfs
# (a process started from the 9p mount costs more under TCG, and a rebuild
# of BUILD_DIR on the host while the bench runs must not swap them midway);
# SMCPROXYD CTL PERF JGET FLOWCHECK then point there. Sets the cleanup of
# PIDS, RULES and WORK at exit.
bench_workdir() {
	local f
	WORK=$(mktemp -d "/run/smcp-$1.XXXXXX") || die "mktemp failed"
	chmod 755 "$WORK"
	mkdir -p "$WORK/bin"
	cp "$B/smcproxyd" "$B/smcproxyctl" "$B/tools/smcperf" "$B/tools/jget" "$WORK/bin/" ||
		die "cannot copy the binaries to $WORK/bin"
	for f in "$B/tools/flowcheck" "$B/bench/smc_preload.so"; do
		[ -e "$f" ] && cp "$f" "$WORK/bin/"
	done
	FLOWCHECK=$WORK/bin/flowcheck
	SMCPROXYD=$WORK/bin/smcproxyd
	CTL=$WORK/bin/smcproxyctl
	PERF=$WORK/bin/smcperf
	JGET=$WORK/bin/jget
	PIDS=()
	RULES=()
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

bench_cleanup() {
	local p r
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	for r in "${RULES[@]}"; do
		# shellcheck disable=SC2086
		iptables -t nat -D OUTPUT $r 2>/dev/null
	done
	[ -n "${RAW_RULE:-}" ] && iptables -t raw -D OUTPUT $RAW_RULE 2>/dev/null
	rm -rf "$WORK"
}

# Whether a process runs (a dead child stays a zombie until waited for).
alive() {
	local st
	read -r st 2>/dev/null <"/proc/$1/stat" || return 1
	st=${st##*) }
	[ -n "$st" ] && [ "${st%% *}" != Z ]
}

redirect() { # SERVER_PORT LISTEN_PORT [SKIP: the relay's own traffic; its mark by default]
	local r="-p tcp -d $DEST --dport $1 ${3:-"-m mark ! --mark $MARK"} -j REDIRECT --to-ports $2"
	# The daemons' connections in a conntrack zone of their own, as
	# contrib/smcproxy-iptables sets it up (t_loop_ct_reset).
	if [ -z "${RAW_RULE:-}" ]; then
		RAW_RULE="-m mark --mark $MARK -j CT --zone-orig 5459"
		# shellcheck disable=SC2086
		iptables -t raw -A OUTPUT $RAW_RULE || die "iptables -t raw CT failed"
	fi
	# shellcheck disable=SC2086
	iptables -t nat -A OUTPUT $r || die "iptables REDIRECT failed"
	RULES+=("$r")
}

# top_calls STRACE_C_FILE [N]: its N (6) most frequent system calls,
# "name:calls:failed" each, most first.
top_calls() {
	awk '$1 ~ /^[0-9.]+$/ && $NF != "total" && NF >= 5 { print $4, $NF, (NF == 6 ? $5 : 0) }' "$1" 2>/dev/null |
		sort -rn | head -"${2:-6}" | awk '{ printf "%s%s:%s:%s", (NR > 1 ? " " : ""), $2, $1, $3 }'
}

# per_rt "TOP_CALLS" N: those counts per one of N round trips.
per_rt() {
	echo "$1" | tr ' ' '\n' | awk -F: -v n="$2" 'NF == 3 && n > 0 {
		printf "%s%s %.2f", (NR > 1 ? ", " : ""), $1, $2 / n
		if ($3 > 0) printf " (%.2f failed)", $3 / n
	} END { print "" }'
}

# start_daemon NAME: smcproxyd on $WORK/NAME.json; waits until its stats
# socket answers (under TCG a start with a device and a CQ pool takes a
# few seconds). Its pid is left in LASTPID.
start_daemon() {
	local n=$1 pid i
	"${DAEMON[${n%-[AB]}]:-$SMCPROXYD}" -c "$WORK/$n.json" --foreground >/dev/null 2>"$WORK/$n.log" &
	pid=$!
	PIDS+=("$pid")
	LASTPID=$pid
	for ((i = 0; i < 300; i++)); do
		alive "$pid" || { note "smcproxyd $n exited at start:"; sed 's/^/  | /' "$WORK/$n.log" >&2; return 1; }
		"$CTL" -s "$WORK/$n.sock" --json stats >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	note "smcproxyd $n did not answer on $WORK/$n.sock within 30 s"
	return 1
}

# rdma_config CASE A|B
rdma_config() {
	local c=$1 d=$2 b=${BASE[$1]} listen ctl peer allow="\"${PORT[$1]}\""
	[ -n "${ALLOW[$c]:-}" ] && allow=${ALLOW[$c]}
	if [ "$d" = A ]; then
		listen=$((b + 1)) ctl=$((b + 2)) peer=$((b + 3))
	else
		listen=$((b + 11)) ctl=$((b + 3)) peer=$((b + 2))
	fi
	mkdir -p "$WORK/$c-$d-shm"
	cat >"$WORK/$c-$d.json" <<-EOF
	{"listen": ["127.0.0.1:$listen"], "control": "${CTL_ADDR[$d]}:$ctl",
	 "peers": [{"prefix": "$NET", "control_port": $peer, "allow": [$allow]}],
	 "transport": "rdma", "workers": 1, "mark": $MARK,
	 "links": {"per_peer": 2},
	 "buffers": {"ring": "$RING", "pool": "$POOL"},
	 "autocork": {"enabled": ${CORK[$c]:-true}, "max_bytes": "64KiB"},
	 "cq": {"pool": ${CQS[$c]:-1}, "poll_budget": 16},
	 "rdma": {"inline": ${INLINE[$c]:-true}},
	 "fallback": {"connect_timeout": "10s"},
	 "stats": {"socket": "$WORK/$c-$d.sock"}, "shm": {"dir": "$WORK/$c-$d-shm"},
	 "log": {"level": "$LOG"}, "user": ""${EXTRA[$c-$d]:-${EXTRA[$c]:-}}}
	EOF
}

# rstat CASE: daemon A's "flows_rdma flows_tcp fallbacks cork_events" (rdma
# and tcp: active + closed), or nothing if it does not answer.
rstat() {
	local out v=()
	out=$("$CTL" -s "$WORK/$1-A.sock" --json stats 2>/dev/null) || return 1
	mapfile -t v < <(printf '%s\n' "$out" | "$JGET" stats.flows.closed.rdma stats.flows.active.rdma \
		stats.flows.closed.tcp stats.flows.active.tcp stats.fallback stats.cdc.cork_events 2>/dev/null)
	[ ${#v[@]} -eq 6 ] || return 1
	echo "$((v[0] + v[1])) $((v[2] + v[3])) $(echo "${v[4]}" | grep -o ':[0-9]*' | tr -d : |
		awk '{ s += $1 } END { print s + 0 }') ${v[5]}"
}

declare -A RDMA_LAST=() TCP_LAST=() FB_LAST=() FAILED=() NFLOWS=() WARM_NOTE=()
# rcheck CASE WHEN N: since the last check, N more flows were carried over
# rdma by daemon A, and not one more over TCP, and no more fallbacks.
# Marks the case failed otherwise.
rcheck() {
	local c=$1 when=$2 n=$3 i s= rd= tc= fb= ck=
	for ((i = 0; i < 50; i++)); do
		read -r rd tc fb ck <<<"$(rstat "$c")"
		if [ -n "${rd:-}" ] && [ "$rd" -ge $((${RDMA_LAST[$c]:-0} + n)) ]; then
			break
		fi
		sleep 0.1
	done
	if [ -z "${rd:-}" ]; then
		FAILED[$c]="daemon A gave no stats after $when"
	elif [ "$tc" != "${TCP_LAST[$c]:-0}" ] || [ "$fb" != "${FB_LAST[$c]:-0}" ] ||
	     [ "$rd" -lt $((${RDMA_LAST[$c]:-0} + n)) ]; then
		FAILED[$c]="in $when: $((rd - ${RDMA_LAST[$c]:-0})) of $n flows over rdma, $((tc - ${TCP_LAST[$c]:-0})) over tcp, $((fb - ${FB_LAST[$c]:-0})) fallbacks"
	fi
	RDMA_LAST[$c]=${rd:-0} TCP_LAST[$c]=${tc:-0} FB_LAST[$c]=${fb:-0}
	if [ -n "${FAILED[$c]:-}" ]; then
		echo >&2
		note "FAIL: $c: ${FAILED[$c]}; its remaining points are skipped"
		fail_detail "$c"
		return 1
	fi
	return 0
}

# fail_detail CASE: daemon A's fallback reasons and both daemons' last log
# lines, on stderr.
fail_detail() {
	local s
	s=$("$CTL" -s "$WORK/$1-A.sock" --json stats 2>/dev/null | "$JGET" stats.fallback 2>/dev/null)
	[ -n "$s" ] && note "  daemon A fallbacks: $s"
	tail -n 15 "$WORK/$1-A.log" "$WORK/$1-B.log" 2>/dev/null | sed 's/^/  | /' >&2
}

# warm CASE: the first flows set the link group up (rdma_cm, two QPs,
# memory registration: slow under TCG), so that the runs measure flows
# over an existing group. At least one of them must go over rdma; one that
# falls back while the group comes up is reported (a WARNING in the
# checks) but does not fail the bench: the measured flows are checked
# against the counters as they stand after the warm-up.
warm() {
	local c=$1 rd= tc= fb= ck= i
	env ${CASE_ENV[$c]:-} "$PERF" crr --connect "$DEST:${PORT[$c]}" -t 30 -c 1 -n 2 >/dev/null 2>>"$WORK/client.log"
	for ((i = 0; i < 50; i++)); do
		read -r rd tc fb ck <<<"$(rstat "$c")"
		[ -n "${rd:-}" ] && [ $((rd + tc)) -ge 2 ] && break
		sleep 0.1
	done
	if [ -z "${rd:-}" ] || [ "$rd" -lt 1 ]; then
		note "FAIL: $c does not carry flows over rdma (warm-up: ${rd:-?} flows over rdma, ${tc:-?} over tcp, ${fb:-?} fallbacks): nothing was measured"
		fail_detail "$c"
		return 1
	fi
	if [ "$tc" != 0 ] || [ "$fb" != 0 ]; then
		WARM_NOTE[$c]="WARNING: warm-up: $tc of $((rd + tc)) flows fell back to tcp while the link group came up ($("$CTL" -s "$WORK/$c-A.sock" --json stats 2>/dev/null | "$JGET" stats.fallback 2>/dev/null | tr -d '{}"' | tr ',' '\n' | grep -v ':0$' | tr '\n' ' '))"
		note "$c: ${WARM_NOTE[$c]}"
	fi
	RDMA_LAST[$c]=$rd TCP_LAST[$c]=$tc FB_LAST[$c]=$fb
	return 0
}

kv() { # LINE KEY
	local w
	for w in $1; do
		[ "${w%%=*}" = "$2" ] && { echo "${w#*=}"; return; }
	done
	echo NaN
}

# run ROUND CASE MODE SIZE CONNS: one smcperf client run; MODE flows is bw
# over CONNS connections on two epoll threads.
run() {
	local r=$1 c=$2 m=$3 s=$4 n=$5 line args pid t0 wall
	[ -n "${FAILED[$c]:-}" ] && return
	args=("$m" -s "$s" -c "$n")
	[ "$m" = flows ] && args=(bw -s "$s" -c "$n" --threads 2 --sndbuf "$FLOWS_SNDBUF")
	t0=${EPOCHREALTIME/./}
	# shellcheck disable=SC2086
	line=$(env ${CASE_ENV[$c]:-} "$PERF" "${args[@]}" --connect "${CASE_DEST[$c]:-$DEST}:${PORT[$c]}" -t "$SECS" 2>>"$WORK/client.log")
	LASTLINE=$line
	wall=$(((${EPOCHREALTIME/./} - t0) / 1000))
	wall=$((wall / 1000)).$(printf '%03d' $((wall % 1000)))
	for pid in ${DPID[$c]:-}; do
		alive "$pid" || FAILED[$c]="a daemon died during $m size $s x$n"
	done
	# Gbit/s is left to the report (bytes * 8 / secs): smcperf's four
	# decimals are too coarse for 1-byte writes in this guest.
	if [[ $line != RESULT* ]]; then
		note "$c $m size $s x$n: run failed ($(tail -1 "$WORK/client.log" 2>/dev/null))"
		echo "$r,$c,$m,$s,$n,NaN,$wall,NaN,NaN,NaN,NaN,1" >>"$RUNS"
	else
		echo "$r,$c,$m,$s,$n,$(kv "$line" secs),$wall,$(kv "$line" bytes),$(kv "$line" p50_us),$(kv "$line" mean_us),$(kv "$line" p99_us),$(kv "$line" errors)" >>"$RUNS"
	fi
	NFLOWS[$c]=$((${NFLOWS[$c]:-0} + n))
	printf '.' >&2
}

# The cases of a point in round R: forward in odd rounds, reversed in even.
order() { # ROUND MODE
	local i l=()
	for i in "${CASES[@]}"; do
		[ "$2" = flows ] && [[ " $FLOW_CASES " != *" $i "* ]] && continue
		l+=("$i")
	done
	if [ $(($1 % 2)) -eq 1 ]; then
		echo "${l[@]}"
	else
		for ((i = ${#l[@]} - 1; i >= 0; i--)); do printf '%s ' "${l[$i]}"; done
	fi
}
