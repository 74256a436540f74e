#!/bin/bash
# Guards the Type=notify protocol: READY=1 once listening, WATCHDOG=1 fed
# from the event loop, STATUS=, RELOADING=1/READY=1 around a SIGHUP reload,
# STOPPING=1 on SIGTERM. systemd is not PID 1 here, so a datagram socket
# plays its part (NOTIFY_SOCKET, WATCHDOG_USEC, WATCHDOG_PID).
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
it_config

NOTIFY=$IT_DIR/notify.sock
LOG=$IT_DIR/notify.log
python3 - "$NOTIFY" "$LOG" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as log:
    while True:
        log.write(s.recv(4096).decode().replace("\n", " ") + "\n")
PY
IT_PIDS+=($!)
disown $!
for _ in $(seq 50); do [ -S "$NOTIFY" ] && break; sleep 0.1; done

# WATCHDOG_PID must be the daemon's own pid: exec keeps bash's.
it_daemon_start env NOTIFY_SOCKET="$NOTIFY" WATCHDOG_USEC=400000 \
	bash -c 'export WATCHDOG_PID=$$; exec "$0" "$@"'

it_wait_file "$LOG" '^READY=1' 5 || it_fail "no READY=1"
sleep 1.2
n=$(grep -c '^WATCHDOG=1' "$LOG")
# Half of 400 ms: about 6 in 1.2 s; at least 3 proves the timer runs.
[ "$n" -ge 3 ] || it_fail "only $n WATCHDOG=1 in 1.2 s with WATCHDOG_USEC=400000"
grep -q '^STATUS=.*flows active' "$LOG" || it_fail "no STATUS= line"

kill -HUP "$DAEMON_PID"
it_wait_file "$LOG" '^RELOADING=1' 5 || it_fail "no RELOADING=1 on SIGHUP"
[ "$(grep -c '^READY=1' "$LOG")" -ge 2 ] || sleep 0.5
[ "$(grep -c '^READY=1' "$LOG")" -ge 2 ] || it_fail "no READY=1 after the reload"

it_daemon_stop 10 || it_fail "daemon exited with status $? on SIGTERM"
grep -q '^STOPPING=1' "$LOG" || it_fail "no STOPPING=1 on SIGTERM"
it_pass "READY, $n WATCHDOG, STATUS, RELOADING/READY, STOPPING"
