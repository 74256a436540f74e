#!/bin/bash
# Guards `smcproxyctl debug fail-link` end to end: refused (exit 1, with the daemon's reason) unless the configuration has debug.fail_link, which a reload turns on; then the group is found on the worker that holds it and a shm link is refused as "not an rdma link", as are an unknown group and a link index out of range, with the group left intact; bad arguments are usage errors (exit 2) sent nowhere; `links` and `stats` keep their shape (a "cq" list, empty without rdma).
. "$(dirname "$0")/lib.sh"
it_init "$@"
it_setup_shm workers=2

# A held flow brings the shm link group up.
"${IT_APP[@]}" "$FLOWCHECK" hold --connect "$S4:$SPORT" --count 1 --seconds 30 \
	>/dev/null 2>&1 &
hold=$!
IT_PIDS+=("$hold")
it_wait_stat flows.active.shm -eq 1 5 || it_fail "the held flow is not on shm"
links=$(it_ctl --json links) || it_fail "links: $links"
read -r lgr worker < <("$JGET" links.0.lgr links.0.worker <<<"$links" | tr '\n' ' ')
[[ $lgr =~ ^[0-9a-f]{16}$ ]] || it_fail "links shows no link-group id: $links"
grep -q '"qp_num"' <<<"$links" && it_fail "a shm link shows rdma fields: $links"

# Off by default: refused, nothing done.
out=$(it_ctl debug fail-link "$lgr" 0 2>&1)
rc=$?
[ $rc -eq 1 ] || it_fail "fail-link without debug.fail_link: exit $rc: $out"
grep -q 'not allowed: the configuration must set "debug": {"fail_link": true}' <<<"$out" ||
	it_fail "fail-link without debug.fail_link: $out"

# Usage errors are caught before anything is sent.
for args in "fail-link zz 0" "fail-link $lgr x" "fail-link $lgr" "crash $lgr 0" \
	"fail-link 0123456789abcdef0 0"; do
	# shellcheck disable=SC2086
	out=$(it_ctl debug $args 2>&1)
	rc=$?
	[ $rc -eq 2 ] || it_fail "debug $args: exit $rc, expected a usage error: $out"
done
out=$(it_ctl --prometheus debug fail-link "$lgr" 0 2>&1)
[ $? -eq 2 ] || it_fail "--prometheus debug: not a usage error: $out"

# debug.fail_link is live: a reload allows the command.
it_config transport='"auto"' \
	peers="[{\"prefix\": \"$S4/32\", \"control_port\": $CPORT}, {\"prefix\": \"$S6/128\", \"control_port\": $CPORT}]" \
	workers=2 debug='{"fail_link": true}'
out=$(it_ctl reload 2>&1) || it_fail "reload: $out"
grep -q 'applied: *debug.fail_link' <<<"$out" || it_fail "reload did not apply debug.fail_link: $out"

out=$(it_ctl debug fail-link "$lgr" 0 2>&1)
rc=$?
[ $rc -eq 1 ] || it_fail "fail-link of a shm link: exit $rc: $out"
grep -q "link 0 of link group $lgr: link is not an rdma link (transport shm)" <<<"$out" ||
	it_fail "fail-link of a shm link: $out"
out=$(it_ctl debug fail-link "${lgr:0:6}" 7 2>&1)
grep -q "link group $lgr has no link 7 (its links are 0..1)" <<<"$out" ||
	it_fail "fail-link of link 7 (a prefix of the id): $out"
other=$(printf '%x' $(((16#${lgr:0:1} + 1) % 16)))
out=$(it_ctl debug fail-link "$other" 0 2>&1)
grep -q "no active link group with an id starting with $other" <<<"$out" ||
	it_fail "fail-link of an unknown group: $out"

# Nothing happened to the group or the flow.
links2=$(it_ctl --json links) || it_fail "links: $links2"
[ "$(grep -c '"state": *"active"' <<<"$links2")" -eq 2 ] ||
	it_fail "the shm links are not both active any more: $links2"
[ "$(it_stat flows.active.shm)" -eq 1 ] || it_fail "the held flow is gone"
[ "$(it_stat lgr.failures)" -eq 0 ] || it_fail "a link group failed"
cq=$(it_stat cq) || it_fail "stats has no cq list"
[ "$cq" = "[]" ] || it_fail "stats lists CQs without rdma: $cq"
it_ctl stats >/dev/null || it_fail "the stats table"
it_ctl links | sed 's/^/  /'

kill "$hold" 2>/dev/null
wait "$hold" 2>/dev/null
it_pass "refused until debug.fail_link (live), shm link refused on worker $worker, unknown group and link refused, usage errors caught"
