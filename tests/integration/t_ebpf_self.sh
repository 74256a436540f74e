#!/bin/bash
# Guards the eBPF intercept against loops when the target cgroup is an ancestor of the daemon's: the daemon's own connects (relay and shm control port, both to intercepted destinations) are never redirected, a process in the daemon's cgroup is left alone, and a target that is the daemon's own cgroup is refused at start.
IT_INTERCEPT=ebpf
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
it_redirect
it_server_start
# The target is the test's cgroup; the daemon lives below it, and the app
# in a sibling.
daemon_cg=$IT_CG/daemon
app_cg=$IT_CG/app
mkdir "$daemon_cg" "$app_cg" || it_fail "cannot make the child cgroups"
# shellcheck disable=SC2016
launch=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$daemon_cg")

it_peer_config transport='"auto"' control="\"0.0.0.0:$CPORT\"" \
	peers="[{\"prefix\": \"$C4/32\", \"allow\": $ALLOW}]"
it_peer_start
it_config transport='"auto"' peers="[{\"prefix\": \"$S4/32\", \"control_port\": $CPORT}]"
it_daemon_start "${launch[@]}"
grep -qx "0::$IT_CG_PATH/daemon" "/proc/$DAEMON_PID/cgroup" ||
	it_fail "the daemon is not in $IT_CG_PATH/daemon: $(cat "/proc/$DAEMON_PID/cgroup")"

# shm: the daemon connects to the peer's control port on an intercepted
# destination, and the peer daemon connects to the server.
it_app "$app_cg" -- "$FLOWCHECK" run --connect "$S4:$SPORT" --flows 20 --concurrency 10 \
	--max-size 1MiB --seed 1 | sed 's/^/  shm: /'
[ "${PIPESTATUS[0]}" -eq 0 ] || it_fail "flows over shm from the app's cgroup"
it_wait_stat flows.active.shm -eq 0 5 || it_fail "shm flows still active"
read -r shm loops self < <(it_stat flows.closed.shm loops_refused intercept.self_skipped | tr '\n' ' ')
echo "  closed.shm $shm loops_refused $loops self_skipped $self"
it_eq flows.closed.shm "$shm" 20
it_eq loops_refused "$loops" 0
[ "$self" -ge 1 ] || it_fail "the daemon's control connection was not seen and skipped (self_skipped $self)"

# The relay: the daemon's own connect to the server, on an intercepted
# destination, with no peer on that address.
it_app "$app_cg" -- "$FLOWCHECK" run --connect "[$S6]:$SPORT" --flows 10 --max-size 1MiB \
	--seed 2 | sed 's/^/  relay: /'
[ "${PIPESTATUS[0]}" -eq 0 ] || it_fail "relayed flows from the app's cgroup"
it_wait_stat flows.active.tcp -eq 0 5 || it_fail "relayed flows still active"
read -r tcp loops < <(it_stat flows.closed.tcp loops_refused | tr '\n' ' ')
it_eq flows.closed.tcp "$tcp" 10
it_eq loops_refused "$loops" 0

# Anything in the daemon's cgroup is taken for the daemon: left alone,
# though unmarked.
accepted=$(it_stat flows.accepted)
it_app "$daemon_cg" -- "$FLOWCHECK" run --connect "$S4:$SPORT" --flows 3 --size 4KiB --seed 3 \
	>/dev/null || it_fail "flows from the daemon's cgroup"
it_eq "flows.accepted after connects from the daemon's cgroup" "$(it_stat flows.accepted)" "$accepted"
it_daemon_stop || it_fail "the daemon did not stop cleanly"

# The daemon's own cgroup as the target: refused, with the reason.
it_config transport='"tcp"' intercept="{\"mode\": \"ebpf\", \"cgroup\": \"$IT_CG_PATH/daemon\", \"destinations\": [\"$NET4\"]}"
rc=0
nsenter --net="/run/netns/$NS_C" -- "${launch[@]}" "$SMCPROXYD" -c "$IT_CFG" --foreground \
	>"$IT_DIR/own.log" 2>&1 || rc=$?
sed 's/^/  own cgroup: /' "$IT_DIR/own.log"
it_eq "exit status with the daemon's own cgroup as target" "$rc" 1
grep -q "error: intercept ebpf: intercept.cgroup \"$IT_CG_PATH/daemon\" is smcproxyd's own cgroup" \
	"$IT_DIR/own.log" || it_fail "no clear error for the daemon's own cgroup"
it_pass "shm control and relay connects of a daemon below the target never redirected, own cgroup refused"
