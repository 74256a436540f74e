#!/bin/bash
# Guards the shm region adoption against a hugetlbfs memfd (a same-host peer that the rendezvous admits passed one, which passes the seal and size checks; a hole punched in it once the huge pages ran out made the daemon's next access to the region a SIGBUS, and the whole daemon died): the peer's region must be a tmpfs memfd, a hugetlbfs one fails that peer's group only, counted in refused.bad_messages, and the daemon goes on serving (smcproxy-protocol(7), SHM TRANSPORT). The test lends itself huge pages (vm.nr_hugepages) and gives the setting back.
. "$(dirname "$0")/lib.sh"
it_init "$@"

HP=/proc/sys/vm/nr_hugepages
hp_old=$(cat "$HP") || it_fail "cannot read $HP"
hp_restore() { echo "$hp_old" >"$HP" 2>/dev/null; }
trap 'rc=$?; hp_restore; (exit $rc); it_cleanup' EXIT
echo $((hp_old + 4)) >"$HP" 2>/dev/null
hp_now=$(cat "$HP")
[ "$hp_now" -ge $((hp_old + 1)) ] ||
	it_fail "cannot lend this test huge pages ($HP stays $hp_now): a hugetlbfs memfd cannot be made here"
echo "  vm.nr_hugepages $hp_old -> $hp_now for the test"

it_setup_shm_split
read -r bad0 < <(it_peer_stat refused.bad_messages)
out=$(it_smcpeer_c propose --connect "$S4:$CPORT" --hugetlb --timeout 3000 --open "$S4:$SPORT" \
	2>"$IT_DIR/smcpeer.err")
rc=$?
echo "  hugetlbfs region: $out (status $rc) $(head -1 "$IT_DIR/smcpeer.err")"
[ $rc -eq 0 ] || it_fail "smcpeer could not offer a hugetlbfs region: $(cat "$IT_DIR/smcpeer.err")"
case $out in
"accept "* | established) it_fail "the peer daemon adopted a hugetlbfs region: '$out'" ;;
esac
kill -0 "$PEER_PID" || it_fail "the peer daemon died"
read -r bad1 < <(it_peer_stat refused.bad_messages)
echo "  peer daemon: refused.bad_messages $bad0 -> $bad1"
[ "$bad1" -gt "$bad0" ] || it_fail "the refused region was not counted in refused.bad_messages"

# The same peer with a tmpfs region, and the client daemon's flows: served.
out=$(it_smcpeer_c propose --connect "$S4:$CPORT" --timeout 3000 --open "$S4:$SPORT")
echo "  then a tmpfs region: $out"
[[ $out == "accept "* ]] || it_fail "the peer daemon no longer serves an honest region: '$out'"
it_run_ok after "flows after the hugetlbfs region" --flows 4 --max-size 64KiB
read -r shm < <(it_stat flows.closed.shm)
it_eq "client flows.closed.shm" "$shm" 4
it_pass "a hugetlbfs region refused and counted, the daemon alive, tmpfs regions and flows served"
