#!/bin/bash
# Guards the stats/control socket against hostile and broken local clients (garbage, bad JSON, an overlong line, 100 connections at once, a stalled half request, pipelining), and three bugs: an unknown command whose echo was cut inside a UTF-8 character got no reply, a client leaving mid-reply killed the daemon with SIGPIPE, and replies a client never read were queued without bound.
#
# The clients are a Python script (Debian's /usr/bin/python3, standard
# library only) talking to the socket directly. The socket file lives in the
# test's temp dir, so it is reachable from here although the daemon runs in
# the client host's network namespace.
. "$(dirname "$0")/lib.sh"
it_init "$@"

PY=/usr/bin/python3
[ -x "$PY" ] || it_fail "$PY is missing (apt-get install python3)"

# CTL_IDLE_MS of daemon/ctl_server.c (CTL_MAX_CLIENTS is in the script).
IDLE_S=30

it_hosts
# 0640 is used by no other test; t_stats_perm.sh covers 0660 and 0666.
it_config stats="{\"socket\": \"$SOCK\", \"mode\": \"0640\"}"
it_daemon_start
pid=$DAEMON_PID

mode=$(stat -c %a "$SOCK")
[ "$mode" = 640 ] || it_fail "socket mode is $mode, configured 0640"

fd_count() { find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
# Fails the test if the daemon is gone, saying how it ended.
alive() {
	local st
	kill -0 "$pid" 2>/dev/null && return 0
	wait "$pid"
	st=$?
	[ $st -gt 128 ] && st="killed by SIG$(kill -l $((st - 128)))" || st="exit status $st"
	it_fail "smcproxyd died $1 ($st)"
}

fds0=$(fd_count)
ticks0=$(it_cpu_ticks "$pid") || it_fail "cannot read /proc/$pid/stat"
hz=$(getconf CLK_TCK)

# The clients. Each scenario prints "ok NAME: ..." or "FAIL NAME: ..."; the
# script exits non-zero if any failed. Modes:
#   staller             half a request, then silence until the daemon hangs
#                       up; prints how long that took
#   burst N_HELD PID    every other scenario; N_HELD connections (the
#                       staller) are already open and count against the
#                       limit; PID is the daemon's, for its memory use
cat >"$IT_DIR/hostile.py" <<'EOF'
import json, os, select, socket, subprocess, sys, time

sock_path, ctl, mode = sys.argv[1], sys.argv[2], sys.argv[3]
MAX_CLIENTS = 64     # CTL_MAX_CLIENTS of daemon/ctl_server.c
TOO_LONG = "malformed request: line longer than 65536 bytes"
failed = []

def report(ok, name, msg):
    print("%s %s: %s" % ("ok" if ok else "FAIL", name, msg), flush=True)
    if not ok:
        failed.append(name)

def connect():
    # A blocking connect: with a timeout set, Python connects non-blocking
    # and a full listen backlog (16) fails with EAGAIN instead of waiting.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    s.settimeout(10)
    return s

class Lines:
    """Reads newline-delimited replies from one socket."""
    def __init__(self, s):
        self.s, self.buf = s, b""
    def line(self, timeout=10):
        """One reply line (decoded JSON), or None at EOF/reset/timeout."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.s.settimeout(left)
            try:
                d = self.s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                return None
            if not d:
                return None
            self.buf += d
        l, self.buf = self.buf.split(b"\n", 1)
        return json.loads(l)
    def closed(self, timeout=10):
        """True once the daemon has hung up (EOF or reset)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                d = self.s.recv(65536)
            except socket.timeout:
                return False
            except ConnectionResetError:
                return True
            if not d:
                return True
            self.buf += d
        return False

def req(cmd, v=1):
    return (json.dumps({"v": v, "cmd": cmd}) + "\n").encode()

def is_error(r, contains):
    return (isinstance(r, dict) and r.get("v") == 1 and r.get("ok") is False
            and contains in r.get("error", ""))

def is_ok(r, key):
    return isinstance(r, dict) and r.get("ok") is True and key in r

def ctl_stats():
    p = subprocess.run([ctl, "--socket", sock_path, "--json", "stats"],
                       capture_output=True, text=True, timeout=10)
    return p.returncode, p.stdout + p.stderr

if mode == "staller":
    s = connect()
    s.sendall(b'{"v":1,"cm')
    t0 = time.monotonic()
    print("staller: sent half a request", flush=True)
    gone = Lines(s).closed(timeout=60)
    print("staller: %s after %.1f s" % ("dropped" if gone else "still open",
                                        time.monotonic() - t0), flush=True)
    sys.exit(0)

n_held = int(sys.argv[4])
daemon_pid = sys.argv[5]

def rss_kib():
    with open("/proc/%s/status" % daemon_pid) as f:
        for l in f:
            if l.startswith("VmRSS:"):
                return int(l.split()[1])
    return 0

def junk():
    """Garbage and invalid JSON: one error reply per line, in order, and
    the connection stays usable."""
    s = connect(); r = Lines(s)
    cases = [
        (b"\x00\xff\xfe\x01 GET / HTTP/1.0\r\n", "malformed request"),
        (b"{\"v\":1,\"cmd\":\n", "malformed request"),
        (b"[1,2,3]\n", "malformed request: not a JSON object"),
        (b"{\"cmd\":\"stats\"}\n", "malformed request: missing \"v\""),
        (b"{\"v\":\"1\",\"cmd\":\"stats\"}\n", "\"v\" must be an integer"),
        (b"{\"v\":2,\"cmd\":\"stats\"}\n", "unsupported protocol version 2"),
        (b"{\"v\":1}\n", "missing \"cmd\""),
        (b"{\"v\":1,\"cmd\":\"shutdown\"}\n", "unknown command 'shutdown'"),
        (b"{\"v\":1,\"cmd\":\"stats\",\"cmd\":\"reload\"}\n", "malformed request"),
        (b"{\"v\":1,\"cmd\":\"st\x00ats\"}\n", "malformed request"),
        (b"\n", "malformed request: empty line"),
        # A long non-ASCII command name is cut for the echo; a cut through
        # a character left the daemon unable to build any reply.
        (("{\"v\":1,\"cmd\":\"" + "x" * 63 + "\u00e9" * 40 + "\"}\n").encode(),
         "unknown command 'x"),
        # jansson's message quotes the byte it choked on: half a character.
        (b"\"\\\xf0\x98\x80\x98\n", "malformed request: invalid escape"),
    ]
    bad = []
    for data, want in cases:
        s.sendall(data)
        got = r.line()
        if not is_error(got, want):
            bad.append("%r -> %r (wanted %r)" % (data[:40], got, want))
    s.sendall(req("stats"))
    got = r.line()
    if not is_ok(got, "stats"):
        bad.append("stats after the junk -> %r" % (got,))
    s.close()
    return not bad, "; ".join(bad) or "%d bad lines answered, then stats" % len(cases)

def overlong():
    """A line past 64 KiB without a newline: the error reply, then the
    daemon hangs up (it stops reading; the rest is never looked at)."""
    s = connect(); r = Lines(s)
    try:
        s.sendall(b"{\"v\":1,\"cmd\":\"stats\",\"pad\":\"" + b"p" * 70000)
    except (BrokenPipeError, ConnectionResetError):
        pass
    got = r.line()
    ok = is_error(got, TOO_LONG) and r.closed()
    s.close()
    return ok, "reply %r" % (got,)

def half_request():
    """A client stalls half-way through a request: others are served
    meanwhile, and the rest of its line, when it comes, is answered."""
    a = connect(); ra = Lines(a)
    a.sendall(b'{"v":1,"cmd":"st')
    t0 = time.monotonic()
    rc, out = ctl_stats()
    took = time.monotonic() - t0
    a.sendall(b'ats"}\n')
    got = ra.line()
    a.close()
    return (rc == 0 and took < 2 and is_ok(got, "stats"),
            "smcproxyctl exit %d in %.2f s while one client stalled; completed "
            "line -> %s" % (rc, took, "stats" if is_ok(got, "stats") else repr(got)))

def pipelined():
    """1000 requests in one write, good and bad mixed: 1000 replies, in
    order."""
    cmds = ["stats", "flows", "links", "peers", "bogus"]
    seq = [cmds[i % len(cmds)] for i in range(1000)]
    s = connect(); r = Lines(s)
    s.sendall(b"".join(req(c) for c in seq))
    bad = 0
    for i, c in enumerate(seq):
        got = r.line()
        if got is None:
            bad += len(seq) - i
            break
        if c == "bogus":
            bad += not is_error(got, "unknown command 'bogus'")
        else:
            bad += not is_ok(got, c)
    s.close()
    return bad == 0, "%d of %d replies wrong or missing" % (bad, len(seq))

def unread_replies():
    """A client that keeps sending requests and never reads the replies.
    The daemon must stop reading from it (or drop it) rather than queue
    replies without bound (3 s of this once queued 76 MiB)."""
    s = connect()
    s.setblocking(False)
    chunk = req("stats") * 1000
    base = rss_kib()
    sent = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < 3:
        try:
            sent += s.send(chunk)
        except BlockingIOError:
            time.sleep(0.01)
        except (BrokenPipeError, ConnectionResetError):
            break
    grown = (rss_kib() - base) // 1024
    s.close()
    return grown < 32, "%d requests sent unread; daemon RSS grew by %d MiB" % (
        sent // len(req("stats")), grown)

def left_mid_reply():
    """Clients that leave mid-reply: 5000 pipelined requests (megabytes of
    replies, more than a socket buffer holds) then a close without reading;
    requests followed by an immediate close. The daemon's writes then fail
    with EPIPE, which must end only that connection."""
    for k in range(3):
        s = connect()
        s.sendall(req("stats") * 5000)
        time.sleep(0.2)
        s.close()
    for k in range(20):
        s = connect()
        s.sendall(req("flows"))
        s.close()
    time.sleep(0.5)
    rc, out = ctl_stats()
    return rc == 0, "smcproxyctl afterwards: exit %d%s" % (
        rc, "" if rc == 0 else " " + out.strip()[:80])

def many_clients():
    """100 connections at once: the first MAX_CLIENTS - n_held are served,
    the rest are told "too many clients" and closed; once they have gone,
    smcproxyctl is answered normally again."""
    conns = []
    for i in range(100):
        conns.append(connect())
    time.sleep(0.5)
    room = MAX_CLIENTS - n_held
    served = refused = wrong = 0
    for i, c in enumerate(conns):
        if i < room:
            # A served idle client hears nothing.
            rd, _, _ = select.select([c], [], [], 0)
            if rd:
                wrong += 1
            else:
                served += 1
        else:
            lr = Lines(c)
            got = lr.line(timeout=5)
            if is_error(got, "too many clients") and lr.closed(timeout=5):
                refused += 1
            else:
                wrong += 1
    # While full, smcproxyctl gets the same clear answer ...
    rc_full, out_full = ctl_stats()
    full_ok = rc_full != 0 and "too many clients" in out_full
    # ... and the clients let in are still served.
    conns[0].sendall(req("stats"))
    got = Lines(conns[0]).line()
    for c in conns:
        c.close()
    t0 = time.monotonic()
    while True:
        rc, out = ctl_stats()
        if rc == 0 or time.monotonic() - t0 > 5:
            break
        time.sleep(0.1)
    return (wrong == 0 and served == room and refused == len(conns) - room and
            full_ok and is_ok(got, "stats") and rc == 0,
            "%d served, %d refused, %d wrong; smcproxyctl while full: exit %d "
            "(%s); afterwards: exit %d after %.1f s"
            % (served, refused, wrong, rc_full,
               "too many clients" if full_ok else repr(out_full[:80]), rc,
               time.monotonic() - t0))

for f in (junk, overlong, half_request, pipelined, unread_replies,
          left_mid_reply, many_clients):
    try:
        ok, msg = f()
    except Exception as e:
        ok, msg = False, "%s: %s" % (type(e).__name__, e)
    report(ok, f.__name__.replace("_", "-"), msg)

sys.exit(1 if failed else 0)
EOF

# The staller first: it holds one of the 64 slots through everything else,
# and at the end shows that an idle client is dropped after IDLE_S.
"$PY" "$IT_DIR/hostile.py" "$SOCK" "$SMCPROXYCTL" staller >"$IT_DIR/staller.log" 2>&1 &
staller=$!
IT_PIDS+=("$staller")
it_wait_file "$IT_DIR/staller.log" 'sent half' 5 || it_fail "staller did not start: $(cat "$IT_DIR/staller.log")"
t_stall=$(date +%s)

"$PY" "$IT_DIR/hostile.py" "$SOCK" "$SMCPROXYCTL" burst 1 "$pid" >"$IT_DIR/burst.log" 2>&1
burst_rc=$?
cat "$IT_DIR/burst.log"
alive "after the burst"
[ $burst_rc -eq 0 ] || it_fail "$(grep -c '^FAIL' "$IT_DIR/burst.log") scenario(s) failed: $(grep '^FAIL' "$IT_DIR/burst.log" | head -3 | tr '\n' ' ')"

# While the staller waits out its idle timeout, the daemon has nothing to do:
# it must not spend CPU (a client stuck in a busy loop would show here).
ticks1=$(it_cpu_ticks "$pid")
wait "$staller"
cat "$IT_DIR/staller.log"
ticks2=$(it_cpu_ticks "$pid") || it_fail "smcproxyd died while the staller waited"
waited=$(($(date +%s) - t_stall))
grep -q 'staller: dropped' "$IT_DIR/staller.log" ||
	it_fail "a client silent after half a request was not dropped: $(tail -1 "$IT_DIR/staller.log")"
# Dropped at IDLE_S, give or take the other traffic's timer restarts.
after=$(sed -n 's/.*dropped after \([0-9]*\)\..*/\1/p' "$IT_DIR/staller.log")
[ "$after" -ge $((IDLE_S - 1)) ] && [ "$after" -le $((IDLE_S + 5)) ] ||
	it_fail "the stalled client was dropped after ${after}s, expected about ${IDLE_S}s"

idle_cpu=$((ticks2 - ticks1))
total_cpu=$((ticks2 - ticks0))
echo "cpu: ${total_cpu} ticks in all, ${idle_cpu} while idle (${hz} ticks/s); staller gone after ${waited}s"
# Idle: at most half a second over the ~25 s wait. All of it: the thousands
# of replies above take about 0.1 s; 5 s means something spun.
[ "$idle_cpu" -le $((hz / 2)) ] || it_fail "smcproxyd used $idle_cpu ticks while idle"
[ "$total_cpu" -le $((hz * 5)) ] || it_fail "smcproxyd used $total_cpu ticks for the whole test"

out=$(it_ctl stats 2>&1) || it_fail "smcproxyctl stats failed at the end: $out"
printf '%s\n' "$out" | grep -q 'smcproxyd' || it_fail "stats table looks wrong: $out"

# Descriptors: every client's socket closed again (a moment for the last
# closes to be processed).
for ((i = 0; i < 20; i++)); do
	fds=$(fd_count)
	[ "$fds" -le "$fds0" ] && break
	sleep 0.1
done
[ "$fds" -eq "$fds0" ] || it_fail "smcproxyd holds $fds descriptors, $fds0 before the test"
alive "at the end"
it_pass "junk, overlong, stall, 1000 pipelined, unread replies, mid-reply hang-ups, 100 clients; fds $fds0 -> $fds, ${total_cpu} ticks CPU"
