#!/bin/bash
# Guards the HTTP endpoint against a slowloris (40 connections from one address, each a partial request and a header byte every second, held libmicrohttpd's slots and backlog, since its timeout fires only on idle connections, and no probe of /ready got an answer): with the defaults (16 clients, timeout 10s), /ready probed from another address answers 200 within 1 s throughout, and every slow connection is closed at its request deadline though it kept sending (smcproxyd.json(5), metrics).
# it-timeout: 90
. "$(dirname "$0")/lib.sh"
it_init "$@"
PY=python3
MTOOL=$(cd "$(dirname "$0")" && pwd)/metrics_tool.py
MPORT=9464

it_setup_relay metrics="{\"listen\": \"127.0.0.1:$MPORT\"}"
it_c "$PY" "$MTOOL" slowloris 127.0.0.1 "$MPORT" 40 127.0.0.1 127.0.0.2 10 >"$IT_DIR/slow.log" 2>&1
rc=$?
cat "$IT_DIR/slow.log"
[ $rc -eq 0 ] || it_fail "slowloris: $(grep FAILED "$IT_DIR/slow.log" | tr '\n' ' ')"
code=$(it_c curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:$MPORT/metrics")
[ "$code" = 200 ] || it_fail "/metrics after the slowloris answered $code"
kill -0 "$DAEMON_PID" || it_fail "the daemon died"
it_pass "40 slowloris connections from one address: /ready answered within 1 s from another throughout, every slow connection closed at its deadline"
