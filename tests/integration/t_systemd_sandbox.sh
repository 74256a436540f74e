#!/bin/bash
# Guards the shipped unit as it runs: two daemons, each under the sandboxing of systemd/smcproxyd.service (unit-sandbox: its /proc options, read-only system, dynamic user, capabilities), carry flows between them over shm, with nothing falling back to tcp and no "shm is off" in their logs.
#
# Before the fix, ProcSubset=pid hid /proc/sys/kernel/random/boot_id: no
# host id, shm silently off, and every same-host flow declined no_device.
# systemd is not PID 1 on the test machines, so the unit itself cannot
# run: unit-sandbox applies what it can of the unit with the same kernel
# mechanisms (it lists what it cannot, e.g. the seccomp filters).
. "$(dirname "$0")/lib.sh"
it_init "$@"
top=$(cd "$IT_LIB_DIR/../.." && pwd)
unit=$top/systemd/smcproxyd.service
[ -f "$unit" ] || it_fail "$unit is missing"

# The dynamic user: a free uid of systemd's DynamicUser range. Both daemons
# get the same one, as two instances of the unit on one host would share
# the "smcproxy" user.
uid=
for u in $(seq 61234 61334); do
	getent passwd "$u" >/dev/null || getent group "$u" >/dev/null || { uid=$u; break; }
done
[ -n "$uid" ] || it_fail "no free uid in 61234..61334"
# RuntimeDirectory=: the sockets and the shm rendezvous, writable by the
# dynamic user, the one writable place under ProtectSystem=strict.
RUN=$IT_DIR/run
mkdir -p "$RUN"
SOCK=$RUN/ctl.sock
PSOCK=$RUN/peer.sock
sandbox=("$IT_LIB_DIR/unit-sandbox" "$unit" "$RUN" "$uid" --)

it_hosts
it_redirect
it_server_start
it_peer_config transport='"auto"' control="\"0.0.0.0:$CPORT\"" \
	peers="[{\"prefix\": \"$C4/32\", \"allow\": $ALLOW}]" shm="{\"dir\": \"$RUN\"}" \
	stats="{\"socket\": \"$PSOCK\", \"mode\": \"0660\"}" workers=1
it_peer_start "${sandbox[@]}"
it_config transport='"auto"' peers="[{\"prefix\": \"$S4/32\", \"control_port\": $CPORT}]" \
	shm="{\"dir\": \"$RUN\"}" stats="{\"socket\": \"$SOCK\", \"mode\": \"0660\"}" workers=1
it_daemon_start "${sandbox[@]}"

# The sandbox took: the daemons run as the dynamic user with the unit's
# /proc (if the unit asks for hidepid/subset, their /proc shows it).
for pid in "$DAEMON_PID" "$PEER_PID"; do
	[ "$(stat -c %u "/proc/$pid")" = "$uid" ] ||
		it_fail "daemon $pid does not run as the dynamic user $uid"
	want=$(awk -F= '/^ProtectProc=/ { v = $2 } END { print v }' "$unit")
	if [ -n "$want" ] && [ "$want" != default ]; then
		grep -q " /proc proc .*hidepid=$want" "/proc/$pid/mounts" ||
			it_fail "daemon $pid's /proc is not mounted hidepid=$want"
	fi
done
sed 's/^/  sandbox: /' "$IT_DIR/daemon.log" | grep 'not applied' | sort -u

out=$(it_run --flows 64 --concurrency 16 --max-size 256KiB --seed "${IT_SEED:-$$}" --timeout 60)
rc=$?
printf '%s\n' "$out" | grep -vE '^FAIL flow' | sed 's/^/  /'
[ $rc -eq 0 ] || it_fail "flowcheck: $(printf '%s\n' "$out" | grep -E '^(flows|failures):' | tr '\n' ' ')"
it_wait_stat flows.active.shm -eq 0 10 || it_fail "flows still active after every client finished"

grep -h 'is off' "$IT_DIR/daemon.log" "$IT_DIR/peer.log" | sed 's/^/  log: /'
read -r cshm ctcp < <(it_stat flows.closed.shm flows.closed.tcp | tr '\n' ' ')
pshm=$(it_peer_stat flows.closed.shm)
echo "  client daemon: closed.shm $cshm closed.tcp $ctcp; peer daemon: closed.shm $pshm"
[ "$ctcp" -eq 0 ] || it_fail "$ctcp of 64 flows went over tcp under the unit's sandbox, not shm"
[ "$cshm" -eq 64 ] || it_fail "client daemon: flows.closed.shm is $cshm, expected 64"
[ "$pshm" -eq 64 ] || it_fail "peer daemon: flows.closed.shm is $pshm, expected 64"
! grep -q 'shm is off' "$IT_DIR/daemon.log" "$IT_DIR/peer.log" ||
	it_fail "a daemon says shm is off under the unit's sandbox"

it_pass "64 flows over shm between two daemons under the unit's sandbox (uid $uid)"
