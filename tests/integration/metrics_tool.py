#!/usr/bin/env python3
# Helpers of t_metrics.sh (not a test by itself):
#
#   metrics_tool.py parse FILE       parse Prometheus text with the official
#                                    client's parser (python3-prometheus-client);
#                                    print "name{k="v",...} value" per sample,
#                                    sorted; exit 1 with the parser's error
#   metrics_tool.py hostile HOST PORT MAX_CLIENTS TIMEOUT_S
#                                    hostile HTTP against the endpoint; prints
#                                    one line per check, exits 1 if one fails
#   metrics_tool.py slowloris HOST PORT N SRC PROBE_SRC TIMEOUT_S
#                                    N slowloris clients from SRC, /ready
#                                    probed from PROBE_SRC (1 s each) until
#                                    TIMEOUT_S + 3 s; exits 1 unless every
#                                    probe answered and every slow client
#                                    was closed
#   metrics_tool.py freeze TID SECONDS
#                                    stop one thread (not its process) with
#                                    PTRACE_SEIZE + PTRACE_INTERRUPT, print
#                                    "stopped", hold it, detach, print "resumed"
import ctypes
import os
import socket
import sys
import time


def parse(path):
    from prometheus_client.parser import text_string_to_metric_families

    with open(path, encoding="utf-8") as f:
        text = f.read()
    out = []
    try:
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                labels = ",".join('%s="%s"' % kv for kv in sorted(s.labels.items()))
                out.append("%s{%s} %s" % (s.name, labels, repr(float(s.value))))
    except Exception as e:  # the parser raises ValueError and friends
        print("parse error: %s" % e)
        return 1
    if not out:
        print("parse error: no samples")
        return 1
    print("\n".join(sorted(out)))
    return 0


def status_of(data):
    """HTTP status code of a response, or None."""
    line = data.split(b"\r\n", 1)[0]
    parts = line.split(b" ")
    if len(parts) >= 2 and parts[0].startswith(b"HTTP/") and parts[1].isdigit():
        return int(parts[1])
    return None


def exchange(host, port, payload, wait=3.0):
    """Sends payload, returns what came back before EOF or wait seconds."""
    s = socket.create_connection((host, port), timeout=wait)
    try:
        try:
            s.sendall(payload)
        except OSError:
            pass  # the server may close while we still send: fine
        data = b""
        end = time.monotonic() + wait
        while time.monotonic() < end:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        return data
    finally:
        s.close()


def closed_within(s, seconds):
    """Whether the server closes s within seconds (EOF or reset)."""
    s.settimeout(seconds)
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return True
    except socket.timeout:
        return False
    except OSError:
        return True


def connect_from(src, host, port, timeout):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect((host, port))
    return s


def probe_ready(src, host, port, wait):
    """GET /ready from src: (status or None, seconds it took, what went
    wrong or the body's first line)."""
    t0 = time.monotonic()
    try:
        s = connect_from(src, host, port, wait)
    except OSError as e:
        return None, time.monotonic() - t0, "connect: %s" % e
    data = b""
    err = ""
    try:
        s.sendall(b"GET /ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        end = t0 + wait
        while b"\r\n\r\n" not in data and time.monotonic() < end:
            s.settimeout(max(end - time.monotonic(), 0.01))
            chunk = s.recv(4096)
            if not chunk:
                err = "closed after %d bytes" % len(data)
                break
            data += chunk
        else:
            if b"\r\n\r\n" in data:
                # The body, for the reason of a 503.
                s.settimeout(max(end - time.monotonic(), 0.01))
                try:
                    data += s.recv(4096)
                except OSError:
                    pass
    except socket.timeout:
        err = "no answer within %.1f s" % wait
    except OSError as e:
        err = "%s after %d bytes" % (e, len(data))
    finally:
        s.close()
    body = data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""
    what = err or body.decode("utf-8", "replace").strip().split("\n")[0]
    return status_of(data), time.monotonic() - t0, what


def slow_clients(host, port, n, src, probe_src, timeout_s, check):
    """n slowloris clients from src (a partial request, then a header byte
    every second), /ready probed from probe_src twice a second with a 1 s
    timeout until the clients' deadline is well past; then every slow
    client must have been closed by the server."""
    held = []
    for _ in range(n):
        try:
            s = connect_from(src, host, port, 5)
            s.sendall(b"GET /ready HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        except OSError:
            continue  # refused at once: what a per-address limit may do
        held.append(s)
    end = time.monotonic() + timeout_s + 3
    probes = answered = 0
    worst = 0.0
    seen = {}
    bad = []
    next_byte = time.monotonic()
    while time.monotonic() < end:
        if time.monotonic() >= next_byte:
            for s in held:
                try:
                    s.send(b"a")
                except OSError:
                    pass
            next_byte = time.monotonic() + 1.0
        st, took, what = probe_ready(probe_src, host, port, 1.0)
        probes += 1
        worst = max(worst, took)
        # Answered: an HTTP status within the second. /ready may say 503
        # for a reason of the daemon's (a worker late on a loaded
        # machine), which is an answer all the same: the endpoint is not
        # held by the slow clients.
        if st in (200, 503) and took <= 1.0:
            answered += 1
            key = "%s" % st if st == 200 else "503 (%s)" % what
            seen[key] = seen.get(key, 0) + 1
        else:
            bad.append("%s after %.2f s: %s" % (st, took, what))
        time.sleep(0.5)
    check(answered == probes,
          "with %d slow clients from %s, %d of %d probes of /ready from %s answered within"
          " 1 s (slowest %.2f s; answers %s%s)"
          % (n, src, answered, probes, probe_src, worst,
             ", ".join("%d x %s" % (v, k) for k, v in sorted(seen.items())) or "none",
             "; not answered: " + "; ".join(bad) if bad else ""))
    still = sum(not closed_within(s, 0.5) for s in held)
    check(still == 0,
          "%d of %d slow clients still open %.0f s after their request began, though"
          " they kept sending" % (still, len(held), timeout_s + 3))
    for s in held:
        s.close()
    return answered == probes and still == 0


def slowloris(host, port, n, src, probe_src, timeout_s):
    failed = 0

    def check(ok, what):
        nonlocal failed
        print("  %s: %s" % ("ok" if ok else "FAILED", what))
        failed += 0 if ok else 1

    slow_clients(host, int(port), int(n), src, probe_src, float(timeout_s), check)
    return 1 if failed else 0


def hostile(host, port, max_clients, timeout_s):
    port, max_clients, timeout_s = int(port), int(max_clients), float(timeout_s)
    failed = 0

    def check(ok, what):
        nonlocal failed
        print("  %s: %s" % ("ok" if ok else "FAILED", what))
        failed += 0 if ok else 1

    # An oversized request: headers far beyond the 16 KiB the endpoint allows.
    big = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (256 * 1024) + b"\r\n\r\n"
    r = exchange(host, port, big)
    st = status_of(r)
    check(st != 200 and b"smcproxy_" not in r,
          "256 KiB of headers refused (status %s, %d bytes back)" % (st, len(r)))

    # A huge URL.
    r = exchange(host, port, b"GET /" + b"m" * (64 * 1024) + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    st = status_of(r)
    check(st != 200, "64 KiB URL refused (status %s)" % st)

    # Garbage, binary and text.
    r = exchange(host, port, bytes(range(256)) * 4 + b"\r\n\r\n")
    check(status_of(r) in (None, 400), "binary garbage: status %s" % status_of(r))
    r = exchange(host, port, b"HELLO WORLD\r\n\r\n")
    check(status_of(r) != 200, "not HTTP: status %s" % status_of(r))

    # Methods other than GET and HEAD, with a body.
    r = exchange(host, port, b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
    check(status_of(r) == 405, "POST: status %s (want 405)" % status_of(r))
    # Paths other than ours.
    r = exchange(host, port, b"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n")
    check(status_of(r) in (400, 404) and b"root:" not in r,
          "path traversal: status %s" % status_of(r))

    # Slow clients, all from one address: more than the endpoint serves
    # from one address are closed at once, and the rest at the request
    # deadline though they keep sending; a client from another address is
    # answered meanwhile.
    slow_clients(host, port, max_clients + 4, "127.0.0.1", "127.0.0.2", timeout_s, check)

    # And the endpoint still answers.
    r = exchange(host, port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    check(status_of(r) == 200 and b"smcproxy_flows_accepted_total" in r,
          "a normal scrape after all that: status %s" % status_of(r))
    return 1 if failed else 0


def freeze(tid, seconds):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH = 0x4206, 0x4207, 17
    tid = int(tid)
    if libc.ptrace(PTRACE_SEIZE, tid, None, None) != 0:
        print("ptrace seize %d: %s" % (tid, os.strerror(ctypes.get_errno())))
        return 1
    if libc.ptrace(PTRACE_INTERRUPT, tid, None, None) != 0:
        print("ptrace interrupt %d: %s" % (tid, os.strerror(ctypes.get_errno())))
        return 1
    os.waitpid(tid, 0x40000000)  # __WALL: the tracee is a thread
    print("stopped", flush=True)
    time.sleep(float(seconds))
    libc.ptrace(PTRACE_DETACH, tid, None, None)
    print("resumed", flush=True)
    return 0


if __name__ == "__main__":
    cmds = {"parse": parse, "hostile": hostile, "slowloris": slowloris, "freeze": freeze}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__ or "usage: metrics_tool.py parse|hostile|slowloris|freeze ...")
    sys.exit(cmds[sys.argv[1]](*sys.argv[2:]))
