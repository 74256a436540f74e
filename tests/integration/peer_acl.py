#!/usr/bin/env python3
"""A server that checks who connects (the address-based ACL of an nginx
allow/deny, a pg_hba.conf or a Redis ACL, in a few lines), and the client
that asks it.

  peer_acl.py serve PORT ALLOW...   listen on 0.0.0.0 and [::]; for each
      connection, log "peer ADDR PORT" and answer "allowed" when ADDR is one
      of ALLOW, "denied" otherwise, then wait for the client to close first
  peer_acl.py ask HOST PORT [COUNT]   COUNT connections (default 1), one at a
      time: print "local PORT answer ANSWER" for each, closing first
"""
import errno
import socket
import sys
import threading
import time


def serve(port, allow):
    socks = []
    for fam, host in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((host, port))
        s.listen(512)
        socks.append(s)
    print("serve: listening", flush=True)

    def one(c):
        addr, cport = c.getpeername()[:2]
        print(f"peer {addr} {cport}", flush=True)
        try:
            c.sendall(b"allowed\n" if addr in allow else b"denied\n")
            while c.recv(4096):
                pass
        except OSError:
            pass
        c.close()

    def loop(s):
        while True:
            c, _ = s.accept()
            threading.Thread(target=one, args=(c,), daemon=True).start()

    for s in socks[1:]:
        threading.Thread(target=loop, args=(s,), daemon=True).start()
    loop(socks[0])


def connect(host, port):
    """A connection, waiting while the client host's own ports are all in
    TIME_WAIT younger than a second (tcp_tw_reuse): the client host's
    limit, not what is under test."""
    for _ in range(1000):
        try:
            return socket.create_connection((host, port), timeout=5)
        except OSError as e:
            if e.errno != errno.EADDRNOTAVAIL:
                raise
            time.sleep(0.01)
    return socket.create_connection((host, port), timeout=5)


def ask(host, port, count):
    fails = 0
    for _ in range(count):
        try:
            c = connect(host, port)
            local = c.getsockname()[1]
            answer = c.makefile().readline().strip()
            c.close()
        except OSError as e:
            fails += 1
            print(f"error {e}", flush=True)
            continue
        if count == 1:
            print(f"local {local} answer {answer}", flush=True)
        elif answer != "allowed":
            fails += 1
            print(f"local {local} answer {answer}", flush=True)
    if count > 1:
        print(f"asked {count} failed {fails}", flush=True)
    return 1 if fails else 0


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]), set(sys.argv[3:]))
    else:
        sys.exit(ask(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 1))
