#!/bin/bash
# Guards two rules on the rdma transport: wrong peer messages abort that flow or link, never the daemon (smcproxyd(8), LINK GROUPS), and a peer's rkeys cover only the memory of its own link group (man/smcproxy-protocol.7, RDMA TRANSPORT, Regions: an rkey "covers that ring only"): tests/tools/rdmapeer, a hostile peer speaking the handshake and rdma_cm, sends each daemon connection requests with wrong private data (garbage, truncated, wrong magic or version, the old untagged layout, unknown link group, link index out of range, a region too small, a duplicate link, a second region), and, for the fixed bug (a link admitted on the group id alone, which crosses in clear), requests with the right group id but no tag, a wrong tag, the reply's tag, or the right tag from another address than the handshake's; it checks that the daemon's reply proves the group secret, the fuzz_link_msg corpus as SENDs on live links, a bad message the moment a group is up, zero-length, short and oversize SENDs and an RDMA WRITE with a key never given, opens flows the moment a group is up, and tries an rkey of one group's ring over another group's link; each bad request is rejected and counted, each bad message fails its group and is counted, early flows are accepted, the daemons keep answering, free what the failed links held, and carry flows over rdma afterwards.
. "$(dirname "$0")/lib.sh"
rt_init "$@"

CORPUS=$RT_LIB_DIR/../fuzz/corpus/fuzz_link_msg
LLM=("$CORPUS"/*.bin)
[ ${#LLM[@]} -gt 10 ] && [ -f "${LLM[0]}" ] || rt_fail "no fuzz_link_msg corpus in $CORPUS"
RDMAPEER=$B/tools/rdmapeer
[ -x "$RDMAPEER" ] || rt_fail "$RDMAPEER is missing (make tools)"
OPEN_PORT=9001		# a plain destination for rdmapeer's own flow
OTHER_SRC=10.77.0.9	# a second address of lab0: not the handshake's

ip addr add "$OTHER_SRC/24" dev lab0 || rt_fail "cannot add $OTHER_SRC to lab0"
RT_UNDO+=("ip addr del $OTHER_SRC/24 dev lab0")

# The rendezvous waits fallback.connect_timeout for the links; under TCG
# the bad connection requests before them take seconds.
rt_setup fallback='{"connect_timeout": "10s"}'
"$FLOWCHECK" serve --listen "$ADDR:$OPEN_PORT" >"$RT_DIR/open.log" 2>&1 &
RT_PIDS+=($!)
rt_run_ok before "flows before the attack" --flows 8 --max-size 256KiB --seed 81 --timeout 60
rt_eq "daemon A: flows.closed.rdma before the attack" "$(rt_stat A flows.closed.rdma)" 8

# attack D [FILE...]: rdmapeer against daemon D's control port, with the
# link message samples given; judges every line.
attack() {
	local d=$1 out bad0 bad1 ref0 ref1 rv0 rv1 au0 au1 line name what size n_bad n_failed n_del i
	shift
	read -r bad0 ref0 rv0 au0 < <(rt_stat "$d" refused.bad_messages refused.proposals \
		refused.rendezvous refused.auth | tr '\n' ' ')
	out=$("$RDMAPEER" --verbose --connect "$ADDR:${RT_CPORT[$d]}" --open "$ADDR:$OPEN_PORT" \
		--other-source "$OTHER_SRC" "$@" 2>"$RT_DIR/rdmapeer-$d.log")
	rc=$?
	# rdmapeer's own timeline, for a failure below.
	cp "$RT_DIR/rdmapeer-$d.log" "${RT_LOGDIR:-$RT_DIR}/rdmapeer-$d.log" 2>/dev/null
	printf '%s\n' "$out" | awk -F': ' 'NF > 1 { n[$2]++ } END { for (k in n) print n[k], k }' |
		sort -rn | sed "s/^/  daemon $d: /"
	[ $rc -eq 0 ] || rt_fail "rdmapeer against daemon $d: exit $rc: $(tail -3 <<<"$out")"
	kill -0 "${RT_PID[$d]}" 2>/dev/null || rt_fail "daemon $d died under rdmapeer"
	rt_stat "$d" pid >/dev/null || rt_fail "daemon $d stopped answering after rdmapeer"
	grep -qx established <<<"$out" || rt_fail "daemon $d: rdmapeer brought no link group up: $out"
	n_bad=0
	n_failed=0
	n_del=0
	while IFS= read -r line; do
		name=${line%%: *}
		what=${line#*: }
		[ "$name" != "$line" ] || continue
		size=-1
		[ -f "$CORPUS/$name" ] && size=$(stat -c %s "$CORPUS/$name")
		case $name in
		pd-unknown-lgr) [ "$what" = rejected ] ||
			rt_defer "daemon $d, $name (a link group that does not exist): '$what'" ;;
		# The group id alone (it crossed in clear), or with a tag made
		# for the other direction: not enough.
		pd-no-tag | pd-bad-tag | pd-reflected-tag) [ "$what" = rejected ] ||
			rt_defer "daemon $d, $name (the group id without the group secret's tag): '$what'" ;;
		pd-other-address) [ "$what" = rejected ] ||
			rt_defer "daemon $d, $name (the right tag from another address than the handshake's): '$what'" ;;
		reply-tag) [ "$what" = ok ] ||
			rt_defer "daemon $d: its rdma_cm reply does not prove the group secret ('$what')" ;;
		pd-*) [ "$what" = rejected ] || rt_defer "daemon $d, $name (wrong private data): '$what'"
		      n_bad=$((n_bad + 1)) ;;
		# One slot, malformed as it is: the group must go.
		e_*) if [ "$size" -eq 64 ] || [ "$size" -eq 0 ]; then
			[ "$what" = failed ] || rt_defer "daemon $d, $name (malformed slot): '$what'"
		     else
			case $what in failed* | alive*) ;; *) rt_defer "daemon $d, $name: '$what'" ;; esac
		     fi ;;
		# The peer gives up the whole group (smcproxy-protocol(7),
		# DELETE_LINK): it goes, without a bad message.
		v_delete_link*) if [ "$what" = failed ]; then n_del=$((n_del + 1))
			else rt_defer "daemon $d, $name: '$what'"; fi ;;
		# Answers only an opener takes: a server group must not.
		v_accept* | v_decline*) [ "$what" = failed ] ||
			rt_defer "daemon $d, $name (an opener's message sent to the acceptor): '$what'" ;;
		# To 10.0.0.2 or 2001:db8::1: not this host.
		v_open*) [ "$what" = "alive (flow_decline policy)" ] ||
			rt_defer "daemon $d, $name: '$what', expected a policy decline" ;;
		# Cursors and ring moves for tokens that name no flow, keepalive
		# answers: ignored.
		v_cdc* | v_test_link_rsp* | v_rmb_move*) [ "$what" = alive ] || rt_defer "daemon $d, $name: '$what'" ;;
		# A keepalive is answered (liveness, smcproxy-protocol(7)).
		v_test_link*) [ "$what" = "alive (test_link_rsp)" ] ||
			rt_defer "daemon $d, $name: '$what'" ;;
		# Zero and one byte: messages that cannot be, counted. The
		# early one also when the daemon had not seen every link up.
		early-bad | send-zero | send-short) [ "$what" = failed ] ||
			rt_defer "daemon $d, $name (a message shorter than a slot): '$what'"
			n_bad=$((n_bad + 1)) ;;
		# The daemon's receive or its memory refuses these: the link
		# (or the group) goes, the daemon stays.
		send-oversize | write-badkey)
			case $what in "link failed, group alive" | failed) ;;
			*) rt_defer "daemon $d, $name: '$what'" ;; esac ;;
		# A flow opened the moment the group is up (as daemon A does
		# on a fresh group) must be accepted, whatever order the
		# daemon sees its ESTABLISHED event and the message in.
		early-open) [ "$what" = accepted ] ||
			rt_defer "daemon $d, $name: a legitimate flow on a fresh group got '$what', not an accept" ;;
		cross-group-write)
			case $what in
			refused*) ;;
			WRITTEN*) rt_defer "daemon $d, $name: an rkey of one link group's ring works over another group's link ($what)" ;;
			*) rt_defer "daemon $d, $name could not be tried: $what" ;;
			esac ;;
		*) rt_defer "daemon $d: rdmapeer printed '$line'" ;;
		esac
		# "failed (MSGS)": the group failed after answering the sample
		# (a decline first, as the daemon may when a malformed slot
		# also reads as an open): failed all the same, and counted.
		case $name in e_* | v_*) case $what in failed | "failed ("*) n_failed=$((n_failed + 1)) ;; esac ;; esac
	done <<<"$out"
	grep -q '^cross-group-write: ' <<<"$out" || rt_defer "daemon $d: rdmapeer did not get to cross-group-write"
	read -r bad1 ref1 rv1 au1 < <(rt_stat "$d" refused.bad_messages refused.proposals \
		refused.rendezvous refused.auth | tr '\n' ' ')
	echo "  daemon $d: bad_messages +$((bad1 - bad0)), proposals refused +$((ref1 - ref0)), rendezvous refused +$((rv1 - rv0)), auth +$((au1 - au0))"
	[ $# -eq 0 ] || [ "$n_failed" -ge 20 ] ||
		rt_defer "daemon $d: only $n_failed link groups failed on the corpus"
	# Each rejected request and each group failed by a message, once.
	rt_defer_eq "daemon $d: bad_messages counted" $((bad1 - bad0)) $((n_bad + n_failed - n_del))
	rt_defer_eq "daemon $d: proposals refused" $((ref1 - ref0)) 0
	rt_defer_eq "daemon $d: rendezvous refused (the unknown link group, the other address)" \
		$((rv1 - rv0)) 2
	rt_defer_eq "daemon $d: auth failures (no tag, a wrong one, the reply's)" $((au1 - au0)) 3
	# The failed links' memory and queue pairs go once their QPs flushed.
	rt_wait_stat "$d" rdma.links_draining -eq 0 5 ||
		rt_defer "daemon $d: rdma.links_draining is $(rt_stat "$d" rdma.links_draining) 5 s after the attack, expected 0 (failed links never freed)"
}

# The corpus on daemon B; daemon A (which also has its own group to B as
# the proposer) gets the rest: the same code, and time is short in TCG.
attack B "${LLM[@]}"
attack A
# Refusals at the rendezvous are logged (at a bounded rate).
for d in A B; do
	grep -q "refused peer $OTHER_SRC:[0-9]* on a link's rendezvous: its link group's handshake came from another address" \
		"$RT_DIR/$d.log" || rt_defer "daemon $d did not log the request from $OTHER_SRC"
	grep -q "on a link's rendezvous: it did not prove its link group's secret" "$RT_DIR/$d.log" ||
		rt_defer "daemon $d did not log a request without the group secret's tag"
done

# Both daemons are still there, and their own link group (a fresh one if
# it failed) still carries flows.
# (Daemon A's counters include the flow rdmapeer opened to it.)
rdma0=$(rt_stat A flows.closed.rdma)
rt_run_ok after "flows after the attack" --flows 8 --max-size 256KiB --seed 82 --timeout 60
rt_wait_stat A flows.active.rdma -eq 0 10 || rt_fail "daemon A: flows still active"
read -r ardma atcp < <(rt_stat A flows.closed.rdma flows.closed.tcp | tr '\n' ' ')
echo "  daemon A: closed.rdma $ardma closed.tcp $atcp"
rt_eq "daemon A: flows.closed.tcp" "$atcp" 0
rt_eq "daemon A: flows.closed.rdma (8 more)" "$ardma" $((rdma0 + 8))
rt_server_expect " 16 ok, 0 failed" "server side"
rt_pass "14 bad connection requests (4 without the group secret or from another address) and 5 rdma attacks on both daemons, ${#LLM[@]} link message samples on daemon B, each counted; flows still over rdma"
