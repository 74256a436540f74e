#!/bin/bash
# Guards the rule that wrong peer messages abort that flow or link, never the daemon (smcproxyd(8), LINK GROUPS: "A peer that breaks the protocol loses its link group, never the daemon"; man/smcproxy-protocol.7, HANDSHAKE Sequence and LINK MESSAGES, say how each side treats a malformed message): the fuzz corpora sent for real -- fuzz_clc raw to both daemons' control ports, fuzz_link_msg as link messages over live shm link groups, plus producer/consumer indices that lie -- get declines or a failed link group, each counted in bad_messages, and both daemons keep answering and carrying flows over shm.
. "$(dirname "$0")/lib.sh"
it_init "$@"

CORPUS=$IT_LIB_DIR/../fuzz/corpus
CLC=("$CORPUS"/fuzz_clc/*.bin)
LLM=("$CORPUS"/fuzz_link_msg/*.bin)
[ ${#CLC[@]} -gt 10 ] && [ -f "${CLC[0]}" ] || it_fail "no fuzz_clc corpus in $CORPUS"
[ ${#LLM[@]} -gt 10 ] && [ -f "${LLM[0]}" ] || it_fail "no fuzz_link_msg corpus in $CORPUS"

# Both daemons take proposals: the peer daemon from the client host, the
# client daemon (which also proposes for its redirected flows) from the
# server host.
it_setup_shm_split -- control="\"0.0.0.0:$CPORT\""

it_run_ok before "flows before the attack" --flows 8 --max-size 256KiB
read -r shm0 hs0 < <(it_stat flows.closed.shm lgr.handshakes | tr '\n' ' ')
it_eq "flows.closed.shm before the attack" "$shm0" 8
[ "$hs0" -ge 1 ] || it_fail "the client daemon brought no link group up"

# side_stat SIDE PATH...: it_peer_stat for "peer", it_stat for "client".
side_stat() {
	local side=$1
	shift
	if [ "$side" = peer ]; then it_peer_stat "$@"; else it_stat "$@"; fi
}

# smcpeer against SIDE's control port, from the other host.
side_smcpeer() {
	local side=$1 cmd=$2
	shift 2
	if [ "$side" = peer ]; then
		it_smcpeer_c "$cmd" --connect "$S4:$CPORT" "$@"
	else
		it_smcpeer_s "$cmd" --connect "$C4:$CPORT" "$@"
	fi
}

# ---------------------------------------------------------------------
# fuzz_clc: every file on a fresh connection to the control port.
check_raw() {
	local side=$1 out bad0 bad1 auth0 auth1 n_internal n_policy line name what
	read -r bad0 auth0 < <(side_stat "$side" refused.bad_messages refused.auth | tr '\n' ' ')
	# --half-close: a truncated message ends at our FIN, not at the
	# daemon's handshake deadline; so no answer is a late one.
	out=$(side_smcpeer "$side" raw --half-close --timeout 3000 "${CLC[@]}") ||
		it_fail "smcpeer raw against the $side daemon: $out"
	side_stat "$side" pid >/dev/null ||
		it_fail "the $side daemon stopped answering after the fuzz_clc corpus"
	read -r bad1 auth1 < <(side_stat "$side" refused.bad_messages refused.auth | tr '\n' ' ')
	printf '%s\n' "$out" | awk -F': ' '{ n[$2]++ } END { for (k in n) print n[k], k }' |
		sort -rn | sed "s/^/  $side raw: /"
	while IFS= read -r line; do
		name=${line%%: *}
		what=${line#*: }
		case $what in
		*accept* | *"not closed"* | *flood* | *garbage* | *reset* | *timeout* | *connect:*)
			it_fail "$side daemon, $name: '$what'" ;;
		esac
		case $name in
		e_version_*) [ "$what" = "decline version_mismatch" ] ||
			it_fail "$side daemon, $name: '$what', expected decline version_mismatch" ;;
		e_*) case $what in
		     "decline internal" | closed) ;;
		     *) it_fail "$side daemon, $name (malformed): '$what'" ;;
		     esac ;;
		esac
	done <<<"$out"
	n_internal=$(grep -c ': decline internal$' <<<"$out")
	n_policy=$(grep -c ': decline policy$' <<<"$out")
	echo "  $side raw: bad_messages +$((bad1 - bad0)), auth failures +$((auth1 - auth0))"
	# Each malformed or unexpected message is declined as internal and
	# counted once; each proposal with a proof to a daemon without a
	# secret is declined as policy and counted as an auth failure.
	it_eq "$side daemon: bad_messages counted for the fuzz_clc corpus" $((bad1 - bad0)) "$n_internal"
	it_eq "$side daemon: auth failures counted for the fuzz_clc corpus" $((auth1 - auth0)) "$n_policy"
}

# ---------------------------------------------------------------------
# fuzz_link_msg: every file as link messages on a live group (a new one
# after each failed group), each followed by a marker the daemon must
# decline; then lying indices.
check_links() {
	local side=$1 out bad0 bad1 fail0 fail1 close0 close1 n_failed n_del n_orderly line name what size
	read -r bad0 fail0 close0 < <(side_stat "$side" refused.bad_messages lgr.failures lgr.peer_closes | tr '\n' ' ')
	out=$(side_smcpeer "$side" links "${LLM[@]}") || it_fail "smcpeer links against the $side daemon: $out"
	side_stat "$side" pid >/dev/null ||
		it_fail "the $side daemon stopped answering after the fuzz_link_msg corpus"
	n_failed=$(grep -cE ': failed( |$)' <<<"$out")
	# DELETE_LINK (ALL) ends a group without a bad message: as an orderly
	# close with ORDERLY (v_delete_link), else as a failure.
	n_del=$(grep -cE '^v_delete_link[^:]*: failed( |$)' <<<"$out")
	n_orderly=$(grep -cE '^v_delete_link\.bin: failed( |$)' <<<"$out")
	# The last group ends when smcpeer exits: the daemon sees that a
	# moment later.
	if [ "$side" = peer ]; then
		SOCK=$PSOCK it_wait_stat lgr.failures -ge $((fail0 + n_failed - n_orderly + 1)) 3
	else
		it_wait_stat lgr.failures -ge $((fail0 + n_failed - n_orderly + 1)) 3
	fi
	read -r bad1 fail1 close1 < <(side_stat "$side" refused.bad_messages lgr.failures lgr.peer_closes | tr '\n' ' ')
	printf '%s\n' "$out" | awk -F': ' '{ n[$2]++ } END { for (k in n) print n[k], k }' |
		sort -rn | sed "s/^/  $side links: /"
	while IFS= read -r line; do
		name=${line%%: *}
		what=${line#*: }
		size=-1
		[ -f "$CORPUS/fuzz_link_msg/$name" ] && size=$(stat -c %s "$CORPUS/fuzz_link_msg/$name")
		case $name in
		# One slot, malformed as it is: the group must go.
		e_*) if [ "$size" -eq 64 ] || [ "$size" -eq 0 ]; then
			[ "$what" = failed ] || it_fail "$side daemon, $name (malformed slot): '$what'"
		     else
			case $what in failed* | alive*) ;; *) it_fail "$side daemon, $name: '$what'" ;; esac
		     fi ;;
		# Answers only an opener takes: a server group must not.
		# The peer gives up the whole group (smcproxy-protocol(7)).
		v_delete_link*) [ "$what" = failed ] || it_fail "$side daemon, $name: '$what'" ;;
		v_accept* | v_decline*) [ "$what" = failed ] ||
			it_fail "$side daemon, $name (an opener's message sent to the acceptor): '$what'" ;;
		# To 10.0.0.2 or 2001:db8::1: not this host.
		v_open*) [ "$what" = "alive (flow_decline policy)" ] ||
			it_fail "$side daemon, $name: '$what', expected a policy decline" ;;
		# Cursors and ring moves for tokens that name no flow, keepalive
		# answers: ignored.
		v_cdc* | v_test_link_rsp* | v_rmb_move*) [ "$what" = alive ] || it_fail "$side daemon, $name: '$what'" ;;
		# A keepalive is answered (liveness, smcproxy-protocol(7)).
		v_test_link*) [ "$what" = "alive (test_link_rsp)" ] ||
			it_fail "$side daemon, $name: '$what'" ;;
		prod-far | prod-back) [ "$what" = failed ] ||
			it_fail "$side daemon, $name (producer index out of range): '$what'" ;;
		cons-lie) [ "$what" = "stalled then answered" ] ||
			it_fail "$side daemon, $name (consumer index out of range): '$what'" ;;
		*) it_fail "$side daemon: smcpeer printed '$line'" ;;
		esac
	done <<<"$out"
	echo "  $side links: bad_messages +$((bad1 - bad0)), link group failures +$((fail1 - fail0))"
	[ "$n_failed" -ge 20 ] || it_fail "$side daemon: only $n_failed link groups failed"
	it_eq "$side daemon: bad_messages counted for the failed link groups" $((bad1 - bad0)) \
		$((n_failed - n_del))
	# Every failed group, plus the last one smcpeer closed; an orderly
	# DELETE_LINK is a close of its own.
	it_eq "$side daemon: link group failures" $((fail1 - fail0)) $((n_failed - n_orderly + 1))
	it_eq "$side daemon: orderly closes" $((close1 - close0)) "$n_orderly"
	[ "$n_orderly" -eq 1 ] || it_fail "$side daemon: v_delete_link.bin did not close its group"
}

for side in peer client; do
	check_raw $side
	check_links $side
done

# Both daemons are still there, and their own link group still carries
# flows (a fresh one if it had failed).
kill -0 "$DAEMON_PID" && kill -0 "$PEER_PID" || it_fail "a daemon died"
it_run_ok after "flows after the attack" --flows 8 --max-size 256KiB
read -r shm1 tcp1 hs1 < <(it_stat flows.closed.shm flows.closed.tcp lgr.handshakes | tr '\n' ' ')
echo "  client daemon: closed.shm $shm1 closed.tcp $tcp1 link groups proposed $hs1 (before: $hs0)"
it_eq "flows.closed.shm after the attack" "$shm1" 16
it_eq "flows.closed.tcp after the attack" "$tcp1" 0
it_server_expect " 16 ok, 0 failed" "server side"
it_pass "${#CLC[@]} handshake and ${#LLM[@]} link message samples on both daemons, each failure counted; flows still over shm"
