#!/bin/bash
# Guards that a free shm ring dropped for the budget gives its pages back to the host (smcproxyd.json(5), buffers.pool: a free ring of any group "gives its memory back at once"): A's bulk flows leave the server daemon's region for A full of written 64KiB rings, free; B's idle flows then need 16KiB rings that the share has room for only once some of A's are dropped, and the server daemon's resident shared memory goes down by what was dropped. On the old code the hole was punched in the memfd, closed by then, and no page came back.
. "$(dirname "$0")/lib.sh"
it_init "$@"

# Three hosts, as in t_shm_fair_share: A (the usual client host), B on
# its own veth to the server host, and the server daemon with one worker
# and a 4MiB share that both link groups draw on.
it_setup_two_clients
rss_shmem() { awk '/^RssShmem:/ { print $2 }' "/proc/$PEER_PID/status"; }

# A's bulk flows grow the server's receive rings to 64KiB and write them;
# as the flows end the rings stay carved, free and resident. 16 of them:
# grown rings share a quarter of the 4MiB share, 16 rings of 64KiB.
it_run_ok bulk "A's bulk flows" --flows 16 --concurrency 16 --size 4MiB --timeout 120
it_wait_stat flows.active.shm -eq 0 30 || it_fail "A's bulk flows are still active"
read -r free0 carved0 < <(it_peer_stat rings.by_size.64KiB.free rings.carved_bytes | tr '\n' ' ')
rss0=$(rss_shmem)
echo "  after A's bulk flows: server 64KiB rings free $free0, carved $carved0 bytes, RssShmem ${rss0} KiB"
[ "$free0" -ge 16 ] || it_fail "A's bulk flows left $free0 free 64KiB rings, wanted 16"

# B holds 220 idle flows: 3520KiB of 16KiB rings, never written. With
# A's 1280KiB of free rings (16 of 64KiB, 16 of 16KiB) the 4MiB share
# must drop at least 704KiB, 11 of A's 64KiB rings (the largest go first).
it_hold_idle b "$NS_B" "$SB4:$SPORT" 220 b_stat
hold_b=$HOLD_PID shm=$HOLD_SHM tcp=$HOLD_TCP
echo "  peer B: 220 idle flows, $shm on shm, $tcp on tcp"
it_eq "B's idle flows on shm" "$shm" 220
read -r free1 < <(it_peer_stat rings.by_size.64KiB.free)
rss1=$(rss_shmem)
dropped=$(( (free0 - free1) * 64 ))
echo "  holding: server 64KiB rings free $free1 (${dropped} KiB dropped), RssShmem ${rss1} KiB"
[ "$dropped" -ge 704 ] || it_fail "only ${dropped} KiB of A's free rings were dropped, wanted 704"

# The dropped rings' pages are gone from the host; B's idle rings and
# its group's header and queues take far less than half of them.
[ $((rss0 - rss1)) -ge $((dropped / 2)) ] ||
	it_fail "the server's RssShmem went from ${rss0} to ${rss1} KiB while ${dropped} KiB of written rings were dropped"
kill "$hold_b" 2>/dev/null
wait "$hold_b" 2>/dev/null
it_pass "free shm rings dropped for another group's flows give their pages back"
