#!/bin/bash
# Guards the stated bound on what a hostile shm peer can make the host commit through a daemon's region (man/smcproxy-protocol.7, Security model; smcproxyd.json(5), buffers.pool): the region a peer maps writable is the header page, a queue per link and a ring area of min(the worker's share of buffers.pool, 1GiB), no more; a peer that writes a byte into every page of the ring area (none of it a ring assigned to it) commits at most that region, none of it counted in buffers.pool nor in the daemon's resident memory, and the daemon goes on carrying flows.
. "$(dirname "$0")/lib.sh"
it_init "$@"

POOL=$((64 << 20))	# one worker: its share is the whole pool
QSIZE=69632		# one link's queue, smcproxy-protocol(7) Region layout

it_setup_shm_split workers=1 buffers='{"ring": "64KiB", "pool": "64MiB"}' -- workers=1

it_run_ok before "flows before the attack" --flows 4 --max-size 64KiB
read -r carved0 < <(it_peer_stat rings.carved_bytes)

out=$(it_smcpeer_c propose --connect "$S4:$CPORT" --scribble "$PEER_PID")
echo "  scribble: $(printf '%s' "$out" | tr '\n' ' ')"
read -r w0 region w1 rings w2 resident w3 rss0 rss1 < <(printf '%s\n' "$out" | grep '^region ')
[ "$w0 $w1 $w2 $w3" = "region rings resident daemon_rss_shmem" ] ||
	it_fail "smcpeer propose --scribble did not report a region: '$out'"

# The region is what the man pages say: header, queues, the share.
it_eq "ring area of the region" "$rings" "$POOL"
links=$(((region - rings - 4096) / QSIZE))
it_eq "header and queues of the region ($links links)" $((region - rings)) $((4096 + links * QSIZE))
[ "$links" -ge 1 ] && [ "$links" -le 16 ] || it_fail "the region has $links link queues"

# The peer did commit the ring area (so the bound is reached, not a
# guess), and nothing beyond the region.
[ "$resident" -ge "$rings" ] || it_fail "the peer's writes left only $resident of $rings ring bytes resident"
[ "$resident" -le "$region" ] || it_fail "$resident bytes resident in a region of $region"

# Not the daemon's: not charged to buffers.pool, not in its RSS (64 MiB
# written; the daemon's own header and queue pages are far under 1 MiB).
[ "$rss0" -ge 0 ] && [ "$rss1" -ge 0 ] || it_fail "no RssShmem for the peer daemon ($rss0, $rss1)"
[ $((rss1 - rss0)) -lt 1024 ] ||
	it_fail "the peer daemon's RssShmem grew by $((rss1 - rss0)) KiB while the peer scribbled"
read -r carved1 < <(it_peer_stat rings.carved_bytes)
it_eq "peer daemon rings.carved_bytes after the scribble" "$carved1" "$carved0"

it_run_ok after "flows after the attack" --flows 4 --max-size 64KiB
it_pass "a hostile shm peer commits at most the region the docs state, none of it charged to the daemon"
