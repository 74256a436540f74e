#!/usr/bin/env python3
"""A fast writer and a reader that stalls, for the bypass's back-pressure
test (t_ebpf_bypass).

  byp_app.py stall-server PORT GO_FILE
      Accepts one connection, reads nothing until GO_FILE exists, then
      reads to EOF and prints "ok N" when the N bytes are the writer's
      pattern in order ("bad AT" at the first byte that is not).
  byp_app.py flood HOST PORT TOTAL
      Connects and writes TOTAL bytes of the pattern, 64 KiB a write; the
      first time no write is possible for 1 s it prints "blocked N" (N
      bytes written), then goes on with blocking writes and closes.
      "never blocked" when all TOTAL went without a stall; "done TOTAL" at
      the end.
"""
import os
import select
import socket
import sys
import time

CHUNK = 65536


def pattern(off, n):
    # 251 is prime: a byte out of place shows.
    base = bytes((i % 251) for i in range(251 * 2 + CHUNK))
    s = off % 251
    return base[s:s + n]


def stall_server(port, go):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    print("listening", flush=True)
    s, _ = ls.accept()
    while not os.path.exists(go):
        time.sleep(0.05)
    got = 0
    while True:
        b = s.recv(CHUNK)
        if not b:
            break
        if b != pattern(got, len(b)):
            want = pattern(got, len(b))
            at = next(i for i in range(len(b)) if b[i] != want[i])
            print("bad %d" % (got + at), flush=True)
            return
        got += len(b)
    print("ok %d" % got, flush=True)


def flood(host, port, total):
    s = socket.create_connection((host, port))
    s.setblocking(False)
    sent = 0
    blocked = False
    while sent < total:
        n = min(CHUNK, total - sent)
        try:
            sent += s.send(pattern(sent, n))
            continue
        except BlockingIOError:
            pass
        _, w, _ = select.select([], [s], [], 1.0)
        if not w and not blocked:
            print("blocked %d" % sent, flush=True)
            blocked = True
            s.setblocking(True)
    if not blocked:
        print("never blocked", flush=True)
    # The FIN back, read without blocking: a blocking read of a bypassed
    # socket may return EAGAIN on this kernel (the self-test's "blocking
    # read" check, which the test skips to test the rest).
    s.setblocking(False)
    s.shutdown(socket.SHUT_WR)
    while True:
        select.select([s], [], [], 60)
        try:
            if not s.recv(1):
                break
        except BlockingIOError:
            pass
    s.close()
    print("done %d" % sent, flush=True)


def main():
    cmd = sys.argv[1]
    if cmd == "stall-server":
        stall_server(int(sys.argv[2]), sys.argv[3])
    elif cmd == "flood":
        flood(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
