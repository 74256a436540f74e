# shellcheck shell=bash disable=SC2034
# (variables are used by the tests that source this)
# Helpers for the rdma tests between two guests, sourced by every
# tests/rdma/pair/t_*.sh. They run inside the guests of
# `tests/rdma/lab --pair` (tests/rdma/pair/run starts the same test in
# both at once); each test has a half per guest, and each half checks its
# own daemon:
#
#   . "$(dirname "$0")/lib.sh"
#   rp_init "$@"               # rt_init, and this test's meeting place
#   rp_put NAME [WORDS...]     # tell the other half NAME (and a value)
#   rp_get NAME [SECONDS]      # wait for the other half's NAME; print it
#
# and everything of tests/rdma/lib.sh (rt_setup, rt_step, rt_share,
# rt_config, rt_stat, rt_links, rt_run, rt_pass, rt_fail...), on this
# topology. Guest a is side A, guest b side B: each runs its own side's
# rt_step and waits for the other's, so that a scenario written as steps
# (tests/rdma/scenario/) runs here as in the single guest.
#
#   guest a, 10.78.0.1                        guest b, 10.78.0.2
#   app: connect(10.78.0.2:9000)
#     | nat OUTPUT REDIRECT :7001
#     v
#   daemon A  127.0.0.1:7001           daemon B  127.0.0.1:7011
#   control 10.78.0.1:7002  ==== rxe0 -- wire -- rxe0 ====  control 10.78.0.2:7002
#                                        | TCP with the mark
#                                        v
#                                      flowcheck serve 10.78.0.2:9000
#
# The halves meet through files in $LAB_SYNC (a directory of the host that
# both guests mount): rp_put writes one atomically (rename), rp_get polls
# for it. A half that ends, passed or failed, says so there (exit.ROLE),
# and the lab says so when a guest stops (gone.ROLE): rp_get then fails
# at once instead of waiting out its time.

set -u
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"

ROLE=${LAB_ROLE:-}
case $ROLE in
a) PEER_ROLE=b RP_SIDE=A ;;
b) PEER_ROLE=a RP_SIDE=B ;;
*) PEER_ROLE='' RP_SIDE='' ;;
esac
RT_WHERE="between two guests"
RT_SLOW_RATE=16KiB
ADDR=${LAB_ADDR:-}		# this guest's eth0: daemons' control ports
NET=10.78.0.0/24
SERVER=10.78.0.2		# guest b: flowcheck serve
RT_CPORT=([A]=7002 [B]=7002)

rp_init() {
	if [ -z "$PEER_ROLE" ] || [ -z "${LAB_SYNC:-}" ] || [ -z "$ADDR" ]; then
		echo "FAIL $RT_NAME: not in a guest of a pair (run through tests/rdma/lab --pair)"
		exit 1
	fi
	rt_init "$@"
	# The runner names it (a test run twice gets two).
	RP_SYNC=${RP_SYNC:-$LAB_SYNC/$RT_NAME}
	mkdir -p "$RP_SYNC"
	trap rp_exit EXIT
}

# The half's status for the other half (and the runner), then the usual
# cleanup with that status.
rp_exit() {
	local rc=$?
	echo "$rc" >"$RP_SYNC/exit.$ROLE.tmp" && mv "$RP_SYNC/exit.$ROLE.tmp" "$RP_SYNC/exit.$ROLE"
	(exit "$rc")
	rt_cleanup
}

rp_put() {
	local name=$1
	shift
	echo "$*" >"$RP_SYNC/$name.$ROLE.tmp" && mv "$RP_SYNC/$name.$ROLE.tmp" "$RP_SYNC/$name.$ROLE"
}

# rp_get NAME [SECONDS]: the other half's NAME, once it said it (default:
# wait up to 120 s, wall clock). Returns 1 and says why if the other half
# ended, or its guest stopped, before it said NAME.
rp_get() {
	local f=$RP_SYNC/$1.$PEER_ROLE t=${2:-120} end
	end=$(($(rt_now_ms) + t * 1000))
	while [ ! -e "$f" ]; do
		if [ -e "$LAB_SYNC/gone.$PEER_ROLE" ]; then
			rt_log "guest $PEER_ROLE stopped ($(cat "$LAB_SYNC/gone.$PEER_ROLE")) before it said $1"
			return 1
		fi
		if [ -e "$RP_SYNC/exit.$PEER_ROLE" ] && [ ! -e "$f" ]; then
			rt_log "guest $PEER_ROLE's half ended (status $(cat "$RP_SYNC/exit.$PEER_ROLE")) before it said $1"
			return 1
		fi
		if [ "$(rt_now_ms)" -ge $end ]; then
			rt_log "guest $PEER_ROLE did not say $1 within ${t}s"
			return 1
		fi
		sleep 0.1
	done
	cat "$f"
}

# The app on guest a goes to the server on guest b, through daemon A.
rt_redirect() {
	rt_rule_add OUTPUT -t raw -m mark --mark "$MARK" -j CT --zone-orig 5459 ||
		rt_fail "iptables -t raw CT"
	rt_rule_add OUTPUT -t nat -p tcp -d "$SERVER" --dport "$SPORT" -m mark ! --mark "$MARK" \
		-j REDIRECT --to-ports "${RT_LPORT[A]}" || rt_fail "iptables REDIRECT"
}

rt_run() { "$FLOWCHECK" run --connect "$SERVER:$SPORT" "$@"; }

# rt_step A|B FUNC ARGS...: this guest's side runs the step, then says it
# did; the other side's step is waited for (up to RP_STEP_WAIT seconds,
# default 300: a step may run flows for minutes), then what it shared is
# read. Both halves count the steps alike, as they run the same body.
RP_STEP=0
rt_step() {
	local rp_side=$1 rp_f rp_v
	shift
	RP_STEP=$((RP_STEP + 1))
	if [ "$rp_side" = "$RP_SIDE" ]; then
		RT_STEP_SIDE=$rp_side
		"$@"
		RT_STEP_SIDE=
		rp_put "step$RP_STEP"
		return 0
	fi
	rp_get "step$RP_STEP" "${RP_STEP_WAIT:-300}" >/dev/null ||
		rt_fail "guest $PEER_ROLE did not do step $RP_STEP ($*)"
	for rp_f in "$RP_SYNC"/var.*."$PEER_ROLE"; do
		[ -e "$rp_f" ] || continue
		rp_v=${rp_f##*/var.}
		printf -v "${rp_v%."$PEER_ROLE"}" '%s' "$(cat "$rp_f")"
	done
}

# rt_share VAR...: the values for the other guest's later steps.
rt_share() {
	local rp_v
	for rp_v in "$@"; do
		rp_put "var.$rp_v" "${!rp_v}"
	done
}
