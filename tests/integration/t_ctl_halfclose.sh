#!/bin/bash
# Regression: a stats client that sends its requests and then half-closes
# (socat, nc -N, a script with shutdown(SHUT_WR)) must get every reply; the
# daemon used to close on EOF and cancel the replies still queued.
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_hosts
it_config
it_daemon_start
out=$(python3 - "$SOCK" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
n = 2000
s.sendall(b'{"v":1,"cmd":"stats"}\n' * n + b'{"v":1,"cmd":"flo')  # last line cut
s.shutdown(socket.SHUT_WR)
time.sleep(0.5)
s.settimeout(10)
buf = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    buf += b
print(n, buf.count(b'"ok":true'), buf.count(b"\n"))
PY
) || it_fail "the client failed: $out"
read -r sent ok lines <<<"$out"
[ "$ok" = "$sent" ] && [ "$lines" = "$sent" ] ||
	it_fail "$sent requests then EOF: $ok ok replies in $lines lines"
it_ctl stats >/dev/null || it_fail "the daemon does not answer afterwards"
it_pass "$sent requests then EOF: $ok replies, then a clean close"
