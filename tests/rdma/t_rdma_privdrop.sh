#!/bin/bash
# Guards the privilege drop on the rdma transport: two daemons started as root with "user": "nobody" run, in every thread, as nobody with exactly CAP_NET_ADMIN, CAP_NET_BIND_SERVICE and CAP_IPC_LOCK, and still carry flows over rdma: the devices are opened after the drop (the kernel refuses rdma_cm and uverbs calls on a file opened under other credentials, so a daemon that opened them as root failed every link group with "internal"), rings are registered (pinned) under CAP_IPC_LOCK; a reload as nobody still applies.
. "$(dirname "$0")/lib.sh"
rt_init "$@"

NB_UID=$(id -u nobody 2>/dev/null) || rt_fail "no user nobody on this host"
CAPS=0000000000005400	# CAP_NET_BIND_SERVICE, CAP_NET_ADMIN, CAP_IPC_LOCK

# The daemons make their sockets as nobody, in the test's directory.
chmod 1777 "$RT_DIR"
rt_setup user='"nobody"'
for d in A B; do
	for st in /proc/"${RT_PID[$d]}"/task/*/status; do
		uid=$(awk '$1 == "Uid:" { print $2, $3, $4, $5 }' "$st")
		[ "$uid" = "$NB_UID $NB_UID $NB_UID $NB_UID" ] || rt_fail "daemon $d ${st%/status}: Uid '$uid'"
		for f in CapEff CapPrm CapBnd; do
			v=$(awk -v f="$f:" '$1 == f { print $2 }' "$st")
			[ "$v" = "$CAPS" ] || rt_fail "daemon $d ${st%/status}: $f $v, expected $CAPS"
		done
	done
	grep -q "running as user nobody" "$RT_DIR/$d.log" || rt_fail "daemon $d did not log the drop"
done

# The group and every ring come after the drop.
rt_run_ok flows "flows over rdma as nobody" --flows 40 --concurrency 20 --max-size 512KiB \
	--seed 91 --timeout 120
kill -HUP "${RT_PID[A]}"
rt_wait_stat A reloads -eq 1 20 || rt_fail "daemon A did not reload as nobody"
rt_run_ok again "flows over rdma after the reload" --flows 20 --concurrency 20 --max-size 512KiB \
	--seed 92 --timeout 120
read -r ardma atcp < <(rt_stat A flows.closed.rdma flows.closed.tcp | tr '\n' ' ')
echo "  daemon A: closed.rdma $ardma closed.tcp $atcp"
rt_eq "daemon A: flows.closed.tcp" "$atcp" 0
rt_eq "daemon A: flows.closed.rdma" "$ardma" 60
rt_server_expect " 60 ok, 0 failed" "server side"
rt_pass "both daemons as nobody with the unit's 3 capabilities; 60 flows over rdma, a reload"
