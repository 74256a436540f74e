#!/bin/bash
# Guards a fixed bug (two daemons of one host whose shm.dir differ fell back with reason internal and no hint why): the accept names the peer's rendezvous socket by its whole path, so flows use shm whatever each shm.dir is; where the client cannot reach that path (another mount namespace), flows fall back with reason no_rendezvous and the log names both paths.
. "$(dirname "$0")/lib.sh"
it_init "$@"
pdir=$IT_DIR/peer-shm
cdir=$IT_DIR/client-shm
it_hosts
it_redirect
it_server_start
it_shm_daemons shm="{\"dir\": \"$pdir\"}" -- shm="{\"dir\": \"$cdir/\"}" \
	fallback='{"connect_timeout": "2s", "negative_ttl": "30s"}'

it_run_ok differ "flows failed with different shm.dir" \
	--flows 8 --concurrency 8 --max-size 256KiB --seed 51 --timeout 30
read -r shm internal < <(it_stat flows.closed.shm fallback.internal | tr '\n' ' ')
echo "  different shm.dir: $shm flows over shm, $internal fell back (internal)"
[ "$shm" -eq 8 ] || it_fail "flows.closed.shm is $shm, expected 8 (fallback.internal $internal)"

# The client daemon again, in a mount namespace of its own where the
# peer's shm.dir is an empty tmpfs: as in a container that does not share it.
it_daemon_stop || it_fail "smcproxyd did not stop cleanly (status $?)"
it_daemon_start unshare -m --propagation private \
	sh -c 'mount -t tmpfs hide "$0" && exec "$@"' "$pdir"
it_run_ok hidden "flows failed with the peer's shm.dir out of reach" \
	--flows 4 --concurrency 4 --max-size 64KiB --seed 52 --timeout 30
read -r nrv internal shm < <(it_stat fallback.no_rendezvous fallback.internal flows.closed.shm |
	tr '\n' ' ')
echo "  unreachable: no_rendezvous $nrv, internal $internal, shm $shm"
[ "$nrv" -ge 1 ] && [ "$internal" -eq 0 ] && [ "$shm" -eq 0 ] ||
	it_fail "expected fallback.no_rendezvous, got no_rendezvous $nrv internal $internal shm $shm"
line=$(grep 'no link group to .*(no_rendezvous: ' "$IT_DIR/daemon.log" | head -1)
echo "  log: ${line#*: }"
case $line in
*"socket $pdir/smcproxyd-"*"in shm.dir $cdir"*) ;;
*) it_fail "the log does not name both paths: ${line:-nothing}" ;;
esac
it_pass "shm across different shm.dir; no_rendezvous with both paths when out of reach"
