#!/bin/bash
# Guards a fixed bug: a same-host peer's rendezvous messages must not leak fds (the control buffer held room for 18, 17 were closed), doorbells it passes must not be able to block a worker (a blocking eventfd at its largest count hung it), and silent rendezvous connections must neither hold every slot for ever nor reach a daemon of another user.
. "$(dirname "$0")/lib.sh"
it_init "$@"

n_fds() { find "/proc/$PEER_PID/fd" -mindepth 1 2>/dev/null | wc -l; }

# One worker on the peer daemon: one rendezvous socket, one loop to hang.
it_setup_shm_split workers=1 -- workers=1
it_run_ok before "flows before the attack" --flows 4 --max-size 64KiB

# ---------------------------------------------------------------------
# (3) Rendezvous messages without a handshake, each with more fds than a
# link group takes: every one of them must be closed.
fd0=$(n_fds)
for k in 18 40; do
	out=$(it_smcpeer_c rv --count 200 --fds $k) || it_fail "(3) smcpeer rv --fds $k: $out"
	echo "  (3) $k fds per message: $out"
done
sleep 0.3
fd1=$(n_fds)
echo "  (3) peer daemon fds: $fd0 before, $fd1 after 400 messages"
[ "$fd1" -le $((fd0 + 2)) ] || it_fail "(3) the peer daemon leaked $((fd1 - fd0)) fds"
it_peer_stat pid >/dev/null || it_fail "(3) the peer daemon stopped answering"

# ---------------------------------------------------------------------
# (2) Doorbells that are blocking eventfds at their largest count: the
# worker must refuse them, not sleep on its next ring.
out=$(it_smcpeer_c propose --connect "$S4:$CPORT" --blocking-efd --open "$S4:$SPORT")
echo "  (2) blocking doorbells: $out"
case $out in
"accept "*) it_fail "(2) the peer daemon took blocking doorbells and accepted a flow" ;;
esac
out=$(it_smcpeer_c propose --connect "$S4:$CPORT" --timeout 3000 --open "$S4:$SPORT")
echo "  (2) then an honest peer: $out"
[[ $out == "accept "* ]] || it_fail "(2) the peer daemon's worker no longer answers: '$out'"
it_run_ok after2 "flows after the blocking doorbells" --flows 4 --max-size 64KiB

# ---------------------------------------------------------------------
# (6) The rendezvous socket: our user and group only; 70 silent
# connections (more than its 64 slots) must not keep a real peer out,
# and each goes once connect_timeout (2 s) passed without a hello.
sock=$(find "$IT_DIR" -maxdepth 1 -name "smcproxyd-$PEER_PID-*.sock" | head -1)
[ -S "$sock" ] || it_fail "(6) no rendezvous socket of the peer daemon in $IT_DIR"
mode=$(stat -c %a "$sock")
echo "  (6) rendezvous socket mode $mode"
[ "$mode" = 660 ] || it_fail "(6) the rendezvous socket is mode $mode, not 660"
it_smcpeer_c rv --count 70 --hold 4500 >"$IT_DIR/silent.out" 2>&1 &
silent=$!
sleep 0.5
out=$(it_smcpeer_c propose --connect "$S4:$CPORT" --timeout 3000 --open "$S4:$SPORT")
echo "  (6) a real peer while 70 silent connections wait: $out"
[[ $out == "accept "* ]] || it_fail "(6) silent rendezvous connections kept a real peer out: '$out'"
sleep 2.5
# Anything that wakes the peer daemon's worker after the deadline.
it_run_ok after6 "flows after the silent connections" --flows 2 --max-size 16KiB
wait $silent || it_fail "(6) smcpeer rv --hold: $(cat "$IT_DIR/silent.out")"
read -r _ held _ closed _ < <(cat "$IT_DIR/silent.out")
echo "  (6) silent connections: $(cat "$IT_DIR/silent.out")"
it_eq "(6) silent connections the daemon closed" "${closed:-0}" "${held:-70}"

it_pass "rendezvous fds all closed, blocking doorbells refused, silent rendezvous connections evicted and timed out, socket mode 660"
