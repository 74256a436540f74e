#!/usr/bin/env python3
"""The server and clients of the loop-check tests that pin 4-tuples
(t_loop_tw_reuse, t_loop_ct_reset).

  tuple_peer.py server ADDR PORT --first fin-after:FILE | reset
      Prints "listening", then "peer N" for each connection. The first
      connection: fin-after reads to EOF, prints "eof", waits for FILE,
      sends "done" and closes ("replied"); reset reads the 4-byte request
      and resets it ("reset"). Later connections get "pong" for "ping".
  tuple_peer.py client ADDR PORT [--bind ADDR:PORT] [--wait FILE]
      Connects (from --bind), prints "port N", waits for FILE, sends
      "ping" and prints "got REPLY" (or "got eof"), or "error WHY".
  tuple_peer.py hold ADDR PORT --bind ADDR:PORT
      Connects, sends "request", half-closes, prints "ready" and holds
      the socket for a minute.
"""
import argparse
import os
import socket
import struct
import time


def wait_file(path):
    while path and not os.path.exists(path):
        time.sleep(0.05)


def recv_some(c, n):
    """Up to n bytes, less at EOF."""
    data = b""
    while len(data) < n:
        b = c.recv(4096)
        if not b:
            break
        data += b
    return data


def server(a):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((a.addr, a.port))
    s.listen(8)
    print("listening", flush=True)
    first = True
    while True:
        c, peer = s.accept()
        print("peer", peer[1], flush=True)
        if not first:
            if recv_some(c, 4) == b"ping":
                c.sendall(b"pong")
            c.close()
            print("replied", flush=True)
        elif a.first == "reset":
            recv_some(c, 4)
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.close()
            print("reset", flush=True)
        else:
            recv_some(c, 1 << 20)
            print("eof", flush=True)
            wait_file(a.first.split(":", 1)[1])
            c.sendall(b"done")
            c.close()
            print("replied", flush=True)
        first = False


def connect(a):
    c = socket.socket()
    c.settimeout(10)
    if a.bind:
        host, port = a.bind.rsplit(":", 1)
        c.bind((host, int(port)))
    c.connect((a.addr, a.port))
    return c


def client(a):
    try:
        c = connect(a)
        print("port", c.getsockname()[1], flush=True)
        wait_file(a.wait)
        c.sendall(b"ping")
        print("got", recv_some(c, 4).decode() or "eof", flush=True)
    except OSError as e:
        print("error", e.strerror, flush=True)


def hold(a):
    c = connect(a)
    c.sendall(b"request")
    c.shutdown(socket.SHUT_WR)
    print("ready", flush=True)
    time.sleep(60)


p = argparse.ArgumentParser()
p.add_argument("role", choices=["server", "client", "hold"])
p.add_argument("addr")
p.add_argument("port", type=int)
p.add_argument("--first", default="reset")
p.add_argument("--bind")
p.add_argument("--wait")
args = p.parse_args()
{"server": server, "client": client, "hold": hold}[args.role](args)
