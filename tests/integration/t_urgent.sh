#!/bin/bash
# Regression: urgent (MSG_OOB) data behind back-pressure. The relay forgot
# the pending urgent mark when a full pipe (not the mark) made splice
# return EAGAIN; at the mark it then ended the stream early (FIN behind it:
# bytes after the mark silently lost) or stalled. Every byte, the urgent
# one included (in line), must arrive, with and without a FIN behind it.
# Run as t_shm_urgent (a link to this file), the same over a shm link
# group, where a read stops short at the urgent mark with more behind it.
. "$(dirname "$0")/lib.sh"
it_init "$@"
case $IT_NAME in
t_shm_*) it_setup_shm ;;
*) it_setup_relay ;;
esac
OOBPORT=$((SPORT + 100))
cat >"$IT_DIR/oob.py" <<'PY'
import hashlib, socket, sys, time
def blob(n, k):
    return bytes((i * k) & 0xff for i in range(n))
if sys.argv[1] == "serve":
    # A slow reader, so that the relay's output blocks and its pipe fills.
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", int(sys.argv[2])))
    ls.listen(4)
    while True:
        c, _ = ls.accept()
        c.setsockopt(socket.SOL_SOCKET, socket.SO_OOBINLINE, 1)
        c.settimeout(8)
        want = int.from_bytes(c.recv(8, socket.MSG_WAITALL), "big")
        time.sleep(0.5)
        got, h = 0, hashlib.sha256()
        try:
            while got < want:
                b = c.recv(3000)
                if not b:
                    break
                got += len(b)
                h.update(b)
            c.sendall(b"k")
            print("server:", got, h.hexdigest()[:16], flush=True)
        except socket.timeout:
            print("server: stalled after", got, flush=True)
        c.close()
else:
    dst, port, up, tail, fin = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
    s = socket.create_connection((dst, port))
    s.sendall((up + 1 + tail).to_bytes(8, "big"))
    s.sendall(blob(up, 7))
    s.send(b"!", socket.MSG_OOB)
    s.sendall(blob(tail, 13))
    if fin == "fin":
        s.shutdown(socket.SHUT_WR)
    h = hashlib.sha256(blob(up, 7) + b"!" + blob(tail, 13))
    print("server:", up + 1 + tail, h.hexdigest()[:16], flush=True)
    s.settimeout(15)
    s.recv(1)
PY
it_s python3 "$IT_DIR/oob.py" serve "$OOBPORT" >>"$IT_DIR/oobserve.log" 2>&1 &
IT_PIDS+=($!)
sleep 0.5
for args in "4000000 100000 fin" "4000000 100000 nofin" "8000000 300000 fin"; do
	: >"$IT_DIR/oobserve.log"
	# shellcheck disable=SC2086
	want=$(it_c python3 "$IT_DIR/oob.py" client "$S4" "$OOBPORT" $args) ||
		it_fail "client failed ($args)"
	it_wait_file "$IT_DIR/oobserve.log" '^server:' 12 || it_fail "the server reported nothing ($args)"
	got=$(grep '^server:' "$IT_DIR/oobserve.log")
	[ "$got" = "$want" ] || it_fail "$args: sent '$want', arrived '$got'"
done
case $IT_NAME in
t_shm_*) [ "$(it_stat flows.closed.tcp)" -eq 0 ] || it_fail "flows fell back to tcp" ;;
esac
it_pass "urgent byte and everything after it arrived, with and without FIN"
