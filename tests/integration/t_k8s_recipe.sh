#!/bin/bash
# Guards contrib/kubernetes/ as far as a machine without a cluster can: the manifests parse as YAML and hold what the recipe promises (host network, NET_ADMIN and IPC_LOCK only, the RDMA device-plugin resource, readiness on /ready and the scrape annotations on the metrics port the ConfigMap's config listens on), that config passes smcproxyd --check-config, the pods' set-up (a service account that may only read nodes, the init container that renders peers[].via and serve from the nodes and adds the TPROXY rules, preStop removing both kinds of rules), the init containers' and preStop's commands run in a namespace: every rule they add (REDIRECT, TPROXY and its bridged twin, the policy rules of route and tproxy, IPv4 and IPv6) is there after the init and gone after preStop, and smcproxy-k8s-nodes' output for a canned NodeList, and every metric the Grafana dashboard queries is one the daemon exports. Not tested: building the image, and any cluster (see contrib/kubernetes/README.md).
. "$(dirname "$0")/lib.sh"
it_init "$@"
PY=/usr/bin/python3
command -v jq >/dev/null || it_fail "jq is missing (contrib/install-deps)"
K8S=$(cd "$(dirname "$0")/../.." && pwd)/contrib/kubernetes
"$PY" -c 'import yaml' 2>/dev/null || it_fail "python3-yaml is missing (contrib/install-deps)"

# --- the manifests
"$PY" - "$K8S/daemonset.yaml" "$IT_DIR/cm.json" >"$IT_DIR/k8s.log" 2>&1 <<'EOF' ||
import json, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
bad = []
def need(ok, what):
    if not ok:
        bad.append(what)
kinds = {d["kind"]: d for d in docs}
for d in docs:
    need(d.get("apiVersion") and d.get("metadata", {}).get("name"), "%s lacks apiVersion or name" % d.get("kind"))
need(set(kinds) == {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap",
                    "DaemonSet"}, "kinds are %s" % sorted(kinds))
# The service account may read the nodes, nothing more.
need(kinds["ClusterRole"]["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}],
     "ClusterRole rules %s" % kinds["ClusterRole"]["rules"])
crb = kinds["ClusterRoleBinding"]
need(crb["roleRef"]["name"] == kinds["ClusterRole"]["metadata"]["name"] and
     crb["subjects"][0]["name"] == kinds["ServiceAccount"]["metadata"]["name"], "ClusterRoleBinding")
cfg = kinds["ConfigMap"]["data"]["smcproxyd.json"]
open(sys.argv[2], "w").write(cfg.replace("@NODE_IP@", "127.0.0.1"))
port = int(json.loads(cfg.replace("@NODE_IP@", "127.0.0.1"))["metrics"]["listen"].rsplit(":", 1)[1])
ds = kinds["DaemonSet"]
need(ds["apiVersion"] == "apps/v1", "DaemonSet apiVersion")
tpl = ds["spec"]["template"]
need(ds["spec"]["selector"]["matchLabels"].items() <= tpl["metadata"]["labels"].items(), "selector does not match the pod labels")
spec = tpl["spec"]
need(spec.get("hostNetwork") is True, "no hostNetwork")
ann = tpl["metadata"].get("annotations", {})
need(ann.get("prometheus.io/scrape") == "true", "no scrape annotation")
need(ann.get("prometheus.io/port") == str(port), "scrape port %s, config listens on %d" % (ann.get("prometheus.io/port"), port))
need(ann.get("prometheus.io/path") == "/metrics", "scrape path")
c = spec["containers"][0]
ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
need(ports.get("metrics") == port, "container port metrics is %s" % ports.get("metrics"))
rp = c.get("readinessProbe", {}).get("httpGet", {})
need(rp.get("path") == "/ready" and rp.get("port") in ("metrics", port), "readiness probe %s" % rp)
# Liveness must not depend on the metrics port being free: anyone who
# reaches the node's address can hold HTTP connections.
lp = c.get("livenessProbe", {})
need("httpGet" not in lp and "tcpSocket" not in lp, "liveness probe on the network: %s" % lp)
lcmd = lp.get("exec", {}).get("command", [])
need(lcmd[:1] == ["/usr/bin/smcproxyctl"] and "stats" in lcmd and
     "/run/smcproxy/smcproxyd.sock" in lcmd, "liveness probe %s" % lp)
caps = c["securityContext"]["capabilities"]
need(caps.get("drop") == ["ALL"], "capabilities not dropped")
need({"NET_ADMIN", "IPC_LOCK"} <= set(caps.get("add", [])) <= {"NET_ADMIN", "IPC_LOCK", "NET_RAW"},
     "capabilities %s" % caps.get("add"))
need(c["securityContext"].get("allowPrivilegeEscalation") is False, "privilege escalation allowed")
need(any(k.startswith("rdma/") for k in c["resources"]["limits"]), "no rdma device-plugin resource")
need(spec.get("serviceAccountName") == kinds["ServiceAccount"]["metadata"]["name"], "serviceAccountName")
# Set up by the init container "pods" (config from the nodes, TPROXY rules),
# torn down by preStop (REDIRECT and TPROXY rules alike).
inits = {i["name"]: i for i in spec.get("initContainers", [])}
pods = " ".join(inits.get("pods", {}).get("args", []))
need("smcproxy-k8s-nodes config" in pods and "smcproxy-iptables tproxy add" in pods and
     "--check-config" in pods, "init container pods: %s" % pods)
need({e["name"] for e in inits.get("pods", {}).get("env", [])} >= {"NODE_NAME", "NODE_IP"}, "pods env")
stop = " ".join(c["lifecycle"]["preStop"]["exec"]["command"])
need("smcproxy-iptables del --all" in stop and "smcproxy-iptables tproxy del --all" in stop,
     "preStop %s" % stop)
need("/run/smcproxy/smcproxyd.json" in " ".join(c["args"]), "the daemon does not read the rendered config")
mounts = {m["mountPath"] for m in c["volumeMounts"]}
need("/run/smcproxy" in mounts, "no /run/smcproxy volume")
need(any(v["name"] == "config" and v.get("configMap", {}).get("name") == kinds["ConfigMap"]["metadata"]["name"]
         for v in spec["volumes"]), "config volume is not the ConfigMap")
for b in bad:
    print("manifest: " + b)
sys.exit(1 if bad else 0)
EOF
	it_fail "$(head -3 "$IT_DIR/k8s.log" | tr '\n' ' ')"
out=$("$SMCPROXYD" -c "$IT_DIR/cm.json" --check-config 2>&1) ||
	it_fail "the ConfigMap's smcproxyd.json: $out"
echo "  manifests: as promised; config: $out"

# --- peers and serve from the nodes (a canned NodeList: no API server here)
cat >"$IT_DIR/nodes.json" <<'EOF'
{"kind": "NodeList", "items": [
 {"metadata": {"name": "n1"}, "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24", "fd00:244:1::/64"]},
  "status": {"addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "192.168.1.1"},
                           {"type": "InternalIP", "address": "fd00::1"}]}},
 {"metadata": {"name": "n2"}, "spec": {"podCIDR": "10.244.2.0/24"},
  "status": {"addresses": [{"type": "InternalIP", "address": "192.168.1.2"}]}},
 {"metadata": {"name": "n3"}, "spec": {"podCIDRs": ["10.244.3.0/24", "fd00:244:3::/64"]},
  "status": {"addresses": [{"type": "InternalIP", "address": "192.168.1.3"}, {"type": "InternalIP", "address": "fd00::3"}]}},
 {"metadata": {"name": "n4"}, "spec": {"podCIDR": "10.244.4.0/24"}, "status": {"addresses": []}}
]}
EOF
NODES=$K8S/smcproxy-k8s-nodes
NODE_NAME=n1 NODES_JSON=$IT_DIR/nodes.json "$NODES" config "$IT_DIR/cm.json" >"$IT_DIR/n1.json" ||
	it_fail "smcproxy-k8s-nodes config failed"
out=$("$SMCPROXYD" -c "$IT_DIR/n1.json" --check-config 2>&1) || it_fail "the rendered config: $out"
got=$(jq -c '[.peers, .serve]' "$IT_DIR/n1.json")
want='[[{"prefix":"10.244.2.0/24","via":"192.168.1.2","control_port":7002},'
want+='{"prefix":"10.244.3.0/24","via":"192.168.1.3","control_port":7002},'
want+='{"prefix":"fd00:244:3::/64","via":"fd00::3","control_port":7002},'
want+='{"prefix":"192.168.1.2/32","allow":["6379"]},{"prefix":"192.168.1.3/32","allow":["6379"]},'
want+='{"prefix":"fd00::3/128","allow":["6379"]}],["10.244.1.0/24","fd00:244:1::/64"]]'
[ "$got" = "$want" ] || it_fail "peers and serve for n1: $got"
dests=$(NODE_NAME=n1 NODES_JSON=$IT_DIR/nodes.json "$NODES" dests | tr '\n' ' ')
[ "$dests" = "--dest 10.244.2.0/24 --dest 10.244.3.0/24 --dest fd00:244:3::/64 " ] ||
	it_fail "dests for n1: $dests"
NODE_NAME=nx NODES_JSON=$IT_DIR/nodes.json "$NODES" dests >/dev/null 2>&1 &&
	it_fail "smcproxy-k8s-nodes accepted a node that is not in the list"
echo "  smcproxy-k8s-nodes: peers (via), serve and tproxy dests from a NodeList; config valid"

# --- the set-up and the tear-down, run: the init containers' commands and
# preStop's, as the manifest has them (the image's paths mapped to this
# tree's), in a network namespace of their own
it_hosts
"$PY" - "$K8S/daemonset.yaml" "$IT_DIR" <<'EOF' || it_fail "cannot read the commands from the manifest"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
spec = [d for d in docs if d["kind"] == "DaemonSet"][0]["spec"]["template"]["spec"]
def script(cmd):
    if cmd[:2] in (["/bin/sh", "-c"], ["/bin/sh", "-ec"]):
        return ("set -e\n" if cmd[1] == "-ec" else "") + " ".join(cmd[2:])
    return " ".join("'%s'" % w for w in cmd)
with open(sys.argv[2] + "/init.sh", "w") as f:
    for c in spec["initContainers"]:
        f.write("( %s ) || exit 1\n" % script(c.get("command", []) + c.get("args", [])))
stop = spec["containers"][0]["lifecycle"]["preStop"]["exec"]["command"]
open(sys.argv[2] + "/prestop.sh", "w").write(script(stop) + "\n")
EOF
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$IT_DIR/run" "$IT_DIR/etc"
cp "$IT_DIR/cm.json" "$IT_DIR/etc/smcproxyd.json"
for f in init.sh prestop.sh; do
	sed -i -e "s|/usr/sbin/smcproxy-iptables|$ROOT/contrib/smcproxy-iptables|g" \
		-e "s|/usr/local/bin/smcproxy-k8s-nodes|$NODES|g" -e "s|/usr/sbin/smcproxyd|$SMCPROXYD|g" \
		-e "s|/run/smcproxy/|$IT_DIR/run/|g" -e "s|/etc/smcproxy-config/|$IT_DIR/etc/|g" "$IT_DIR/$f"
done
# What the helper set up in the client host: REDIRECT rules, TPROXY rules,
# lines naming the tproxy chains, policy rules of route and tproxy.
# IPv4 and IPv6 together.
k8s_rules() {
	{ it_c iptables -t nat -S; it_c ip6tables -t nat -S; } | grep -c -- '^-A SMCPROXY .*-j REDIRECT'
	{ it_c iptables -t mangle -S; it_c ip6tables -t mangle -S; } | grep -c -- '-j TPROXY'
	for t in iptables ip6tables; do it_c $t -t mangle -S; it_c $t -t nat -S; done | grep -c SMCPROXY_TP
	{ it_c ip -4 rule list; it_c ip -6 rule list; } | grep -c "lookup 5459\|lookup 5460"
}
out=$(it_c env NODE_NAME=n1 NODE_IP=192.168.1.1 NODES_JSON="$IT_DIR/nodes.json" \
	SMCPROXY_IPTABLES_STATE="$IT_DIR/fwmark.state" sh "$IT_DIR/init.sh" 2>&1) ||
	it_fail "the init containers' commands failed: $out"
read -r redir tp tpchain prules < <(k8s_rules | tr '\n' ' ')
echo "  init: $redir REDIRECT, $tp TPROXY rules, $prules policy rules"
it_eq "TPROXY rules after the init containers (6379 to n2's and n3's pods)" "$tp" 3
it_eq "REDIRECT rules after the init containers (6379 to 10.0.0.0/16)" "$redir" 1
it_eq "policy rules after the init containers (route add and tproxy add, IPv4 and IPv6)" "$prules" 4
[ -s "$IT_DIR/run/smcproxyd.json" ] || it_fail "the init container did not render the config"
out=$(it_c env SMCPROXY_IPTABLES_STATE="$IT_DIR/fwmark.state" sh "$IT_DIR/prestop.sh" 2>&1) ||
	it_fail "preStop failed: $out"
read -r redir tp tpchain prules < <(k8s_rules | tr '\n' ' ')
it_eq "REDIRECT rules after preStop" "$redir" 0
it_eq "TPROXY rules and chains after preStop" "$((tp + tpchain))" 0
it_eq "policy rules after preStop" "$prules" 0
echo "  preStop: every rule gone"

# --- the dashboard queries only metrics the daemon exports
it_config
it_daemon_start
{
	it_ctl --prometheus stats | awk '/^# TYPE/ { print $3 }'
	# per-CQ families appear only with rdma links: take them from the renderer
	grep -oE '"smcproxy_cq_[a-z_]+"' "$(dirname "$0")/../../daemon/ctl/ctl_render_prom.c" | tr -d '"'
} | sort -u >"$IT_DIR/names"
"$PY" - "$K8S/grafana-dashboard.json" "$IT_DIR/names" >"$IT_DIR/dash.log" 2>&1 <<'EOF' ||
import json, re, sys
d = json.load(open(sys.argv[1]))
names = set(open(sys.argv[2]).read().split())
bad, n = [], 0
for p in d["panels"]:
    for t in p.get("targets", []):
        e = t["expr"]
        n += 1
        for m in re.findall(r"smcproxy_[a-z_]+(?:\.\+)?", e):
            if m.endswith(".+"):
                if not any(x.startswith(m[:-2]) for x in names):
                    bad.append("%s: no metric matches %s" % (p["title"], m))
            elif m not in names:
                bad.append("%s: unknown metric %s" % (p["title"], m))
print("%d queries in %d panels" % (n, len(d["panels"])))
for b in bad:
    print("dashboard: " + b)
sys.exit(1 if bad or n == 0 else 0)
EOF
	it_fail "$(grep dashboard: "$IT_DIR/dash.log" | head -3 | tr '\n' ' ')"
echo "  grafana dashboard: $(head -1 "$IT_DIR/dash.log"), every metric exported"
it_daemon_stop || it_fail "daemon did not stop cleanly"
it_pass "manifests parse and hold their promises, config valid, dashboard metrics exist"
