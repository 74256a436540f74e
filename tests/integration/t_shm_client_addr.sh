#!/bin/bash
# Guards that a server on the destination host sees the client host's own address and port through a link group, as over plain TCP (smcproxyd(8), "The client's address"): an ACL that allows only the client host (peer_acl.py, and nginx's allow/deny: 200, not 403) answers through the link over IPv4, IPv6 and a dual-stack socket's v4-mapped connect once `smcproxy-iptables route add` set the host up; without the rules the daemon says so once (at start or reload), connects from its own address (nginx: 403) and counts it; the helper's route add is idempotent, its route del leaves nothing behind, and the daemon's reload and stop add or remove no rule or route.
. "$(dirname "$0")/lib.sh"
it_init "$@"

APORT=9010		# the ACL server
HPORT=9020		# nginx, with allow/deny
HELPER=$IT_LIB_DIR/../../contrib/smcproxy-iptables
STATE=$IT_DIR/fwmark.state

helper_s() { it_s env SMCPROXY_IPTABLES_STATE="$STATE" "$HELPER" "$@"; }
# Lines of the peer daemon's log that say the host's address is used.
said_host() { grep -c "servers here see this host's address" "$IT_DIR/peer.log"; }
said_client() { grep -c "servers here see the clients' own addresses" "$IT_DIR/peer.log"; }
# The server host's policy rules and table 5459, both families: what the
# helper adds and removes, and what the daemon must never touch.
routing() {
	local f
	for f in 4 6; do
		echo "IPv$f rules:"
		it_s ip -$f rule list
		# (A table once made stays, empty: "does not exist" is the same.)
		echo "IPv$f table 5459:"
		it_s ip -$f route show table 5459 2>/dev/null
	done
}
# Waits for the peer daemon's Nth "reloaded" line.
wait_reloaded() {
	local i
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -c '\breloaded ' "$IT_DIR/peer.log")" -ge "$1" ] && return 0
		sleep 0.1
	done
	it_fail "the peer daemon did not reload ($(grep -c '\breloaded ' "$IT_DIR/peer.log") reloads)"
}
# http HOST: nginx's status code for the client, and the client's port.
http() {
	local url=http://$1:$HPORT/
	[[ $1 != *:* ]] || url="http://[$1]:$HPORT/"
	it_app -- curl -gsS -o /dev/null --max-time 10 -w '%{http_code} %{local_port}\n' "$url"
}

it_hosts
it_redirect
it_s sysctl -qw net.ipv4.tcp_fwmark_accept=0
command -v nginx >/dev/null || it_fail "nginx is not installed (contrib/install-deps installs nginx-light)"
routing >"$IT_DIR/routing.0"
helper_s route add >"$IT_DIR/route1.log" 2>&1 || it_fail "route add: $(cat "$IT_DIR/route1.log")"
helper_s route add >"$IT_DIR/route2.log" 2>&1 || it_fail "route add again: $(cat "$IT_DIR/route2.log")"
[ -s "$IT_DIR/route2.log" ] && it_fail "a second route add changed something: $(cat "$IT_DIR/route2.log")"
for f in 4 6; do
	n=$(it_s ip -$f rule list pref 5459 | grep -c "fwmark 0x53 lookup 5459")
	it_eq "IPv$f rules of preference 5459" "$n" 1
	n=$(it_s ip -$f route show table 5459 | grep -c "^local .* dev lo")
	it_eq "IPv$f local routes in table 5459" "$n" 1
done
it_eq "tcp_fwmark_accept" "$(it_s cat /proc/sys/net/ipv4/tcp_fwmark_accept)" 1
routing >"$IT_DIR/routing.1"

# nginx on the server host lets only the client host in: 200 to it, 403
# to anyone else (this host's own address among them). A file, not a
# "return 200": return runs before the access phase, allow/deny after.
mkdir -p "$IT_DIR/nginx" "$IT_DIR/www"
echo hello >"$IT_DIR/www/index.html"
cat >"$IT_DIR/nginx.conf" <<EOF
worker_processes 1;
pid $IT_DIR/nginx.pid;
error_log $IT_DIR/nginx-error.log warn;
events { worker_connections 64; }
http {
    log_format peer '\$remote_addr \$remote_port \$status';
    access_log $IT_DIR/nginx-access.log peer;
    client_body_temp_path $IT_DIR/nginx;
    server {
        listen 0.0.0.0:$HPORT;
        listen [::]:$HPORT ipv6only=on;
        root $IT_DIR/www;
        location / {
            allow $C4;
            allow $C6;
            deny all;
        }
    }
}
EOF
it_s nginx -c "$IT_DIR/nginx.conf" -g 'daemon off;' >"$IT_DIR/nginx.log" 2>&1 &
IT_PIDS+=($!)
for ((i = 0; i < 50; i++)); do
	it_s ss -Htln "sport = :$HPORT" | grep -q . && break
	sleep 0.1
done
[ $i -lt 50 ] || it_fail "nginx did not start: $(cat "$IT_DIR/nginx.log" "$IT_DIR/nginx-error.log" 2>/dev/null | tail -3)"

ip netns exec "$NS_S" python3 "$IT_LIB_DIR/peer_acl.py" serve $APORT "$C4" "$C6" \
	>"$IT_DIR/acl.log" 2>&1 &
IT_PIDS+=($!)
it_wait_file "$IT_DIR/acl.log" '^serve: listening' 5 || it_fail "the ACL server did not start"
# A dual-stack control port: IPv6 flows go over the link too (t_shm_ipv6).
it_shm_daemons control="\"[::]:$CPORT\"" --
grep -q "IPv4: servers here see the clients' own addresses" "$IT_DIR/peer.log" ||
	it_fail "the peer daemon did not say it uses the clients' addresses: $(grep -i client "$IT_DIR/peer.log")"

# The client's address, and its port, at the server; also from a
# dual-stack socket's connect to a v4-mapped address (IPv4 on the wire).
for dst in "$S4" "[$S6]" "[::ffff:$S4]"; do
	host=${dst#[}
	host=${host%]}
	out=$(it_app -- python3 "$IT_LIB_DIR/peer_acl.py" ask "$host" $APORT) || it_fail "ask $host: $out"
	echo "  $host: $out; server: $(tail -1 "$IT_DIR/acl.log")"
	[ "${out##* }" = allowed ] || it_fail "the ACL denied the client through the link ($out)"
	lport=$(awk '{ print $2 }' <<<"$out")
	grep -q "^peer \(${C4//./\\.}\|$C6\) $lport\$" "$IT_DIR/acl.log" ||
		it_fail "the server did not see the client's address and port $lport: $(tail -2 "$IT_DIR/acl.log")"
done
# nginx's allow/deny lets the client in through the link, and logs the
# client's address and port.
for dst in "$S4" "$S6"; do
	read -r code lport < <(http "$dst") || it_fail "curl $dst"
	echo "  nginx $dst: $code; access log: $(tail -1 "$IT_DIR/nginx-access.log")"
	it_eq "nginx's status for the client at $dst through the link" "$code" 200
	grep -q "^\(${C4//./\\.}\|$C6\) $lport 200\$" "$IT_DIR/nginx-access.log" ||
		it_fail "nginx did not see the client's address and port $lport: $(tail -1 "$IT_DIR/nginx-access.log")"
done
# The flows' ends are counted once both legs closed: wait for them.
it_wait_stat flows.closed.shm -ge 5 5 || it_fail "the five flows did not go over shm"
read -r shm ctcp < <(it_stat flows.closed.shm flows.closed.tcp | tr '\n' ' ')
read -r caddr haddr < <(it_peer_stat connect_client_addr connect_host_addr | tr '\n' ' ')
echo "  client daemon: closed.shm $shm closed.tcp $ctcp; peer: connect_client_addr $caddr connect_host_addr $haddr"
it_eq "client flows.closed.tcp" "$ctcp" 0
it_eq "peer connect_client_addr" "$caddr" 5
it_eq "client flows.closed.shm" "$shm" 5
it_eq "peer connect_host_addr" "$haddr" 0

# A reload with the rules in place: nothing said again, nothing changed.
kill -HUP "$PEER_PID"
wait_reloaded 1
it_eq "notices of the clients' addresses after a reload that changed nothing" "$(said_client)" 2
routing >"$IT_DIR/routing.2"
diff -u "$IT_DIR/routing.1" "$IT_DIR/routing.2" >"$IT_DIR/routing.diff" ||
	it_fail "the daemon's start or reload changed the routing: $(cat "$IT_DIR/routing.diff")"

# Without the rules: said once at the reload, the host's own address, counted.
helper_s route del >"$IT_DIR/route3.log" 2>&1 || it_fail "route del: $(cat "$IT_DIR/route3.log")"
for f in 4 6; do
	[ -z "$(it_s ip -$f rule list pref 5459)" ] || it_fail "IPv$f: route del left a rule"
	[ -z "$(it_s ip -$f route show table 5459)" ] || it_fail "IPv$f: route del left a route"
done
routing >"$IT_DIR/routing.3"
diff -u "$IT_DIR/routing.0" "$IT_DIR/routing.3" >"$IT_DIR/routing.diff" ||
	it_fail "route add and del left the routing changed: $(cat "$IT_DIR/routing.diff")"
it_eq "tcp_fwmark_accept after route del" "$(it_s cat /proc/sys/net/ipv4/tcp_fwmark_accept)" 0
[ "$(said_host)" -eq 0 ] || it_fail "the peer daemon spoke of the host's address too early"
kill -HUP "$PEER_PID"
wait_reloaded 2
it_eq "notices of the host's address after the reload" "$(said_host)" 2
for dst in "$S4" "$S6" "$S4" "$S6"; do
	out=$(it_app -- python3 "$IT_LIB_DIR/peer_acl.py" ask "$dst" $APORT) || it_fail "ask $dst: $out"
	[ "${out##* }" = denied ] || it_fail "the server saw the client without the rules ($out)"
done
grep -q "^peer $S4 " "$IT_DIR/acl.log" || it_fail "the server did not see the host's IPv4 address"
grep -q "^peer $S6 " "$IT_DIR/acl.log" || it_fail "the server did not see the host's IPv6 address"
for dst in "$S4" "$S6"; do
	read -r code lport < <(http "$dst") || it_fail "curl $dst"
	echo "  nginx $dst without the rules: $code; access log: $(tail -1 "$IT_DIR/nginx-access.log")"
	it_eq "nginx's status without the rules (the host's own address, denied)" "$code" 403
	grep -q "^$dst [0-9]* 403\$" "$IT_DIR/nginx-access.log" ||
		it_fail "nginx did not see the host's address $dst: $(tail -1 "$IT_DIR/nginx-access.log")"
done
read -r caddr haddr < <(it_peer_stat connect_client_addr connect_host_addr | tr '\n' ' ')
echo "  without the rules: connect_client_addr $caddr connect_host_addr $haddr"
it_eq "peer connect_client_addr" "$caddr" 5
it_eq "peer connect_host_addr" "$haddr" 6
it_eq "notices after six flows (IPv4, IPv6: once each)" "$(said_host)" 2
routing >"$IT_DIR/routing.4"
diff -u "$IT_DIR/routing.0" "$IT_DIR/routing.4" >"$IT_DIR/routing.diff" ||
	it_fail "the daemon's reload changed the routing: $(cat "$IT_DIR/routing.diff")"

# Stopping leaves nothing behind: the daemon itself adds no rule.
it_daemon_stop || it_fail "smcproxyd did not stop cleanly"
it_peer_stop || it_fail "the peer smcproxyd did not stop cleanly"
routing >"$IT_DIR/routing.5"
diff -u "$IT_DIR/routing.0" "$IT_DIR/routing.5" >"$IT_DIR/routing.diff" ||
	it_fail "the daemons' stop changed the routing: $(cat "$IT_DIR/routing.diff")"
it_pass "the server (and nginx allow/deny: 200) saw the client's address over IPv4 and IPv6; without the rules the host's (403), said once per family; reload and stop left the rules alone"
