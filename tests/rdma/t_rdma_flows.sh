#!/bin/bash
# Guards the SMC-R data plane over real verbs (rxe): 200 concurrent flows with random sizes cross daemon A and daemon B over one rdma link group of two links, with the sha256 of every byte equal both ways, every flow in mode rdma on both daemons (none fell back to tcp), byte counters equal to what moved (daemon totals, group totals, the sum over the links), both links carrying flows, and the flows/links/peers views showing rdma.
. "$(dirname "$0")/lib.sh"
rt_init "$@"
rt_setup

# A held flow first: it brings the group up and shows in the views.
"$FLOWCHECK" hold --connect "$ADDR:$SPORT" --count 1 --seconds 60 >/dev/null 2>&1 &
hold=$!
RT_PIDS+=("$hold")
rt_wait_stat A flows.active.rdma -eq 1 20 || rt_fail "the held flow is not on rdma"
rt_wait_stat B flows.active.rdma -eq 1 5 || rt_fail "daemon B has no rdma flow for the held one"
json=$(rt_ctl A --json flows) || rt_fail "flows --json: $json"
grep -Eq '"mode": *"rdma"' <<<"$json" && grep -Eq '"reason": *"none"' <<<"$json" ||
	rt_fail "flows does not show the held flow as rdma: $json"
for d in A B; do
	links=$(rt_links $d) || rt_fail "links of daemon $d"
	printf '%s\n' "$links" | sed "s/^/  links $d: /"
	n=$(grep -c . <<<"$links")
	[ "$n" -eq 2 ] || rt_fail "daemon $d lists $n links, expected 2"
	[ "$(awk '$3 == "active" && $4 == "rdma"' <<<"$links" | grep -c .)" -eq 2 ] ||
		rt_fail "daemon $d: the links are not both active rdma links"
done
peers=$(rt_ctl B --json peers) || rt_fail "B's peers: $peers"
grep -Eq '"role": *"server"' <<<"$peers" && grep -Eq '"state": *"active"' <<<"$peers" &&
	grep -Eq '"transport": *"rdma"' <<<"$peers" ||
	rt_fail "daemon B does not show an active rdma server group: $peers"
rt_ctl A links | sed 's/^/  /'
kill "$hold" 2>/dev/null
wait "$hold" 2>/dev/null
rt_wait_stat A flows.active.rdma -eq 0 10 || rt_fail "the held flow did not end"

seed=${RT_SEED:-$$}
out=$(rt_run --flows 200 --concurrency 200 --max-size 256KiB --seed "$seed" --timeout 150)
rc=$?
printf '%s\n' "$out" | grep -vE '^FAIL flow' | sed 's/^/  /'
printf '%s\n' "$out" | grep -E '^FAIL flow' | head -20
[ $rc -eq 0 ] || rt_fail "flowcheck (seed $seed): $(printf '%s\n' "$out" | grep -E '^(flows|failures):' | tr '\n' ' ')"
read -r up down < <(printf '%s\n' "$out" | awk '/^bytes:/ { print $3, $5 }')

rt_wait_stat A flows.active.rdma -eq 0 10 || rt_fail "daemon A: flows still active after every client finished"
rt_wait_stat B flows.active.rdma -eq 0 10 || rt_fail "daemon B: flows still active"
read -r ardma atcp ain aout hs afail < <(rt_stat A flows.closed.rdma flows.closed.tcp bytes.in \
	bytes.out lgr.handshakes lgr.failures | tr '\n' ' ')
read -r brdma btcp bin bout acc bfail < <(rt_stat B flows.closed.rdma flows.closed.tcp bytes.in \
	bytes.out lgr.accepted lgr.failures | tr '\n' ' ')
echo "  daemon A: closed.rdma $ardma closed.tcp $atcp bytes.in $ain bytes.out $aout handshakes $hs failures $afail"
echo "  daemon B: closed.rdma $brdma closed.tcp $btcp bytes.in $bin bytes.out $bout accepted $acc failures $bfail"
rt_eq "daemon A: flows.closed.tcp" "$atcp" 0
rt_eq "daemon B: flows.closed.tcp" "$btcp" 0
rt_eq "daemon A: flows.closed.rdma" "$ardma" 201
rt_eq "daemon B: flows.closed.rdma" "$brdma" 201
rt_eq "daemon A: lgr.handshakes (the flows must share one group)" "$hs" 1
rt_eq "daemon B: lgr.accepted" "$acc" 1
rt_eq "daemon A: lgr.failures" "$afail" 0
rt_eq "daemon B: lgr.failures" "$bfail" 0
rt_eq "daemon A: bytes.in (the clients sent $up)" "$ain" "$up"
rt_eq "daemon A: bytes.out (the clients received $down)" "$aout" "$down"
rt_eq "daemon B: bytes.in" "$bin" "$up"
rt_eq "daemon B: bytes.out" "$bout" "$down"

# The group and each link: A sends up and receives down, B the reverse;
# with no link failure each byte crossed exactly one link once.
for d in A B; do
	links=$(rt_links $d) || rt_fail "links of daemon $d"
	printf '%s\n' "$links" | sed "s/^/  links $d after: /"
	[ "$(grep -c . <<<"$links")" -eq 2 ] || rt_fail "daemon $d: the group does not have 2 links any more"
	read -r tx rx < <(awk '{ tx += $6; rx += $7 } END { print tx + 0, rx + 0 }' <<<"$links")
	idle=$(awk '$6 == 0 || $7 == 0' <<<"$links")
	[ -z "$idle" ] || rt_fail "daemon $d: a link carried no flow bytes in one direction: $idle"
	if [ $d = A ]; then
		rt_eq "daemon A: bytes_tx summed over the links" "$tx" "$up"
		rt_eq "daemon A: bytes_rx summed over the links" "$rx" "$down"
	else
		rt_eq "daemon B: bytes_tx summed over the links" "$tx" "$down"
		rt_eq "daemon B: bytes_rx summed over the links" "$rx" "$up"
	fi
done
peers=$(rt_ctl A --json peers) || rt_fail "A's peers: $peers"
read -r gtx grx gflows < <("$JGET" peers.0.bytes_tx peers.0.bytes_rx peers.0.flows_total <<<"$peers" | tr '\n' ' ')
rt_eq "daemon A: the group's bytes_tx" "$gtx" "$up"
rt_eq "daemon A: the group's bytes_rx" "$grx" "$down"
rt_eq "daemon A: the group's flows_total" "$gflows" 201

rt_server_expect " 200 ok, 0 failed, 1 aborted" "server side (the held flow ends aborted)"
rt_pass "200 flows over one rdma link group of 2 links, $((up >> 10)) KiB up, $((down >> 10)) KiB down, sha256 equal both ways"
