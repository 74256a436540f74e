#!/usr/bin/env python3
"""What an application sees of the eBPF intercept (t_ebpf_intercept).

  sock_app.py peer HOST PORT [--v4mapped]
      Connects over TCP (an AF_INET6 dual-stack socket to ::ffff:HOST with
      --v4mapped), prints "peer ADDR PORT" from getpeername(), then
      "sock ADDR" (our own address), and closes.
  sock_app.py udp HOST PORT
      Connects a UDP socket, sends "ping" and prints "got REPLY" (or
      "timeout" after 3 s).
  sock_app.py udp-echo PORT
      Prints "listening", then answers each datagram with "pong:" and what
      it got, until killed.
"""
import socket
import sys


def peer(host, port, v4mapped):
    if v4mapped:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.connect(("::ffff:" + host, port))
    elif ":" in host:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.connect((host, port))
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.connect((host, port))
    p = s.getpeername()
    print("peer %s %d" % (p[0], p[1]))
    print("sock %s" % s.getsockname()[0])
    s.close()


def udp(host, port):
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    s.connect((host, port))
    s.send(b"ping")
    try:
        print("got %s" % s.recv(100).decode())
    except socket.timeout:
        print("timeout")


def udp_echo(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    print("listening", flush=True)
    while True:
        data, addr = s.recvfrom(100)
        s.sendto(b"pong:" + data, addr)


def main():
    cmd = sys.argv[1]
    if cmd == "peer":
        peer(sys.argv[2], int(sys.argv[3]), "--v4mapped" in sys.argv[4:])
    elif cmd == "udp":
        udp(sys.argv[2], int(sys.argv[3]))
    elif cmd == "udp-echo":
        udp_echo(int(sys.argv[2]))
    else:
        sys.exit("unknown command " + cmd)
    sys.stdout.flush()


main()
