#!/bin/bash
# Guards reload: live keys apply, restart-only keys are reported and keep
# their running values, a flow running across the reload is unharmed, a
# broken file is rejected with file:line:column and the daemon keeps
# serving; SIGHUP reloads too.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_relay

# A slow flow (2 MiB each way at 1 MiB/s) that must survive every reload.
it_run --flows 1 --size 2MiB --rate 1048576 --seed 11 >"$IT_DIR/slow.out" 2>&1 &
slow=$!
sleep 0.5

# log.level is live; listen needs a restart.
it_config log='{"level": "debug"}' \
	listen="[\"127.0.0.1:$((LPORT + 1))\", \"[::1]:$LPORT\"]"
out=$(it_ctl --json reload) || it_fail "reload failed: $out"
grep -q '"applied": *"[^"]*log.level' <<<"$out" || it_fail "log.level not applied: $out"
grep -q '"restart_needed": *"[^"]*listen' <<<"$out" || it_fail "listen not reported as needing a restart: $out"

# Still on the old port: new flows work through the running listener.
it_run --flows 20 --concurrency 20 --max-size 256KiB --seed 12 --quiet ||
	it_fail "flows after the reload failed"

# A broken file: rejected with a position, nothing changes.
printf '{\n  "log": {"level": "loud"}\n}\n' >"$IT_CFG"
if out=$(it_ctl reload 2>&1); then
	it_fail "a broken config was accepted: $out"
fi
grep -q "smcproxyd.json:2:[0-9]*: log.level" <<<"$out" ||
	it_fail "the reload error does not name file:line:column and key: $out"
kill -0 "$DAEMON_PID" || it_fail "the daemon died of a broken config"
it_run --flows 10 --concurrency 10 --max-size 64KiB --seed 13 --quiet ||
	it_fail "flows after a failed reload failed"

# SIGHUP reloads a good file again.
it_config
kill -HUP "$DAEMON_PID"
it_wait_stat reloads -eq 2 5 || it_fail "SIGHUP did not reload"

wait "$slow" || it_fail "the flow running across reloads failed: $(cat "$IT_DIR/slow.out")"
it_pass "live key applied, restart key reported, broken file refused, SIGHUP, running flow intact"
