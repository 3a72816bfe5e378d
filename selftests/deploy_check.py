#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Check deploy/ as rendered (kubectl kustomize deploy/), offline.

    deploy_check.py schema SCHEMA.json... < rendered.yaml
    deploy_check.py moatd HELP.txt KUBE.c < rendered.yaml
    deploy_check.py cleanup HELP.txt DEPLOY.yaml < rendered-cleanup.yaml
    deploy_check.py node SCHEMA.json < node.json

schema: every object is of a kind the vendored Kubernetes schemas know
(deploy/schema, tools/k8s-schema.py: Kubernetes' own, and the custom
resources' of deploy/components/) and valid against its strict schema.
moatd: the DaemonSet asks of moatd what moatd accepts and gives it what
it needs: each flag is in moatd --help; the --listen port is the
container's, the probes' and the Service's; --host-root, --state-dir,
--socket and --config are mounted from the host or the ConfigMap, and
the ConfigMap holds the config file; $NODE_NAME and $POD_IP come from
the downward API; the ServiceAccount is the one the ClusterRoleBinding
binds; and the ClusterRole grants exactly the requests kube.c, pods.c
and evict.c (beside it) make.
cleanup: deploy/cleanup/'s DaemonSet runs moatd --restore-only (the init
container) and --restore-only --stay (the main one), each flag in moatd
--help, on the paths the moatd DaemonSet (DEPLOY.yaml, rendered) keeps
its journal and finds the host at, with no ServiceAccount token.
node: a Node as moatd's patches left it (the stub API server's, in
moatd::node_hints_reach_a_stub_api_server) is a valid core/v1 Node
(the vendored schema, strict), its conditions NodeConditions as the API
server and kubectl take them: one of each type, status True, False or
Unknown, a CamelCase reason, RFC 3339 times; its taints one per key and
effect.
Prints one line per problem; exits 1 if there is any.
"""
import json
import os
import re
import sys

import jsonschema
import yaml

problems = []


def problem(what):
    problems.append(what)


def check_schema(objs, paths):
    spec = {"kinds": {}, "definitions": {}}
    for path in paths:
        one_spec = json.load(open(path))
        spec["kinds"].update(one_spec["kinds"])
        spec["definitions"].update(one_spec["definitions"])
    for o in objs:
        name = "%s %s" % (o.get("kind"), o.get("metadata", {}).get("name"))
        key = "%s/%s" % (o.get("apiVersion"), o.get("kind"))
        if key not in spec["kinds"]:
            problem("%s: %s is not a kind deploy/schema knows" % (name, key))
            continue
        schema = {"$ref": "#/definitions/" + spec["kinds"][key],
                  "definitions": spec["definitions"]}
        v = jsonschema.Draft4Validator(schema)
        for e in sorted(v.iter_errors(o), key=lambda e: list(e.absolute_path)):
            where = "/".join(str(p) for p in e.absolute_path)
            problem("%s: %s: %s" % (name, where or "(top)", e.message))


def one(objs, kind, name=None):
    found = [o for o in objs if o["kind"] == kind and
             (name is None or o["metadata"]["name"] == name)]
    if len(found) != 1:
        problem("%d %s objects%s, expected one" %
                (len(found), kind, " named " + name if name else ""))
        return None
    return found[0]


def check_moatd(objs, help_path, kube_c):
    helptext = open(help_path).read()
    accepted = set(re.findall(r"--[a-z][a-z-]*", helptext))
    ds = one(objs, "DaemonSet")
    if not ds:
        return
    pod = ds["spec"]["template"]["spec"]
    c = next((c for c in pod["containers"] if c["name"] == "moatd"), None)
    if not c:
        problem("DaemonSet: no container named moatd")
        return
    flags = {}
    for a in c.get("args", []):
        m = re.fullmatch(r"(--[a-z-]+)(?:=(.*))?", a)
        if not m:
            problem("moatd argument %r: not --flag or --flag=value" % a)
            continue
        if m.group(1) not in accepted:
            problem("moatd argument %s: moatd --help has no such option" % m.group(1))
        flags[m.group(1)] = m.group(2)
    env = {e["name"]: e for e in c.get("env", [])}
    field = {n: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
             for n, e in env.items()}
    if field.get("NODE_NAME") != "spec.nodeName":
        problem("env NODE_NAME is not the downward API's spec.nodeName: the Node publisher would patch the host name's node")
    for var in re.findall(r"\$\(([A-Z_]+)\)", " ".join(c.get("args", []))):
        if var not in env:
            problem("moatd's arguments use $(%s), which the container's env does not set" % var)
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}

    listen = flags.get("--listen")
    if not listen or not re.fullmatch(r"\$\(POD_IP\):\d+", listen):
        problem("--listen %r: expected $(POD_IP):PORT" % listen)
    else:
        if field.get("POD_IP") != "status.podIP":
            problem("env POD_IP is not the downward API's status.podIP")
        port = int(listen.rsplit(":", 1)[1])
        if ports.get("http") != port:
            problem("--listen port %d is not the container's port 'http' (%s)" % (port, ports.get("http")))
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            p = c.get(probe)
            if not p:
                problem("no %s" % probe)
                continue
            g = p.get("httpGet", {})
            pp = g.get("port")
            if g.get("path") != "/healthz" or (pp != port and ports.get(pp) != port):
                problem("%s: %s on port %s, not /healthz on %d" % (probe, g.get("path"), pp, port))
        svc = one(objs, "Service")
        if svc:
            for sp in svc["spec"]["ports"]:
                t = sp.get("targetPort", sp["port"])
                if t != port and ports.get(t) != port:
                    problem("Service port %s targets %s, not moatd's %d" % (sp.get("name"), t, port))
            sel = svc["spec"].get("selector", {})
            labels = ds["spec"]["template"]["metadata"].get("labels", {})
            if not sel or any(labels.get(k) != v for k, v in sel.items()):
                problem("the Service's selector %s does not select the DaemonSet's pods %s" % (sel, labels))

    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = c.get("volumeMounts", [])

    def source(path):
        """The volume a path in the container is on, and the path in it."""
        best = None
        for m in mounts:
            mp = m["mountPath"].rstrip("/")
            if path == mp or path.startswith(mp + "/"):
                if not best or len(mp) > len(best[0]["mountPath"].rstrip("/")):
                    best = (m, path[len(mp):])
        if not best:
            return None, None, None
        return best[0], volumes.get(best[0]["name"]), best[1]

    def host_path(path, what, want=None):
        m, v, rest = source(path)
        if not v or "hostPath" not in v:
            problem("%s %s is not on a hostPath volume" % (what, path))
            return
        if want and v["hostPath"]["path"].rstrip("/") + rest != want:
            problem("%s %s is the host's %s, not %s" % (what, path, v["hostPath"]["path"] + rest, want))
        if m.get("readOnly") and what != "config":
            problem("%s %s is mounted read-only" % (what, path))

    root = flags.get("--host-root")
    if not root:
        problem("no --host-root: in a pod's cgroup namespace moatd would see only its own cgroup")
    else:
        for p in ("/sys/fs/cgroup", "/proc"):
            host_path(root + p, "--host-root's", p)
        m, v, rest = source(root + "/sys/fs/cgroup")
        if m and m.get("mountPropagation") not in ("HostToContainer", "Bidirectional"):
            problem("%s is mounted without HostToContainer propagation: a resctrl or cgroup mount made later on the host would not show" % m["mountPath"])
        if not pod.get("hostPID"):
            problem("hostPID is not true: the run-queue fallback (/proc/<tid>/schedstat) and resctrl's task moves need the host's tids")
    for flag in ("--state-dir", "--socket"):
        p = flags.get(flag)
        if not p:
            problem("no %s: moatd would use its default inside the pod" % flag)
            continue
        host_path(p if flag == "--state-dir" else os.path.dirname(p), flag)
    conf = flags.get("--config")
    if conf:
        m, v, rest = source(os.path.dirname(conf))
        if not v or "configMap" not in v:
            problem("--config %s is not on a ConfigMap volume" % conf)
        else:
            cm = one(objs, "ConfigMap", v["configMap"]["name"])
            if cm and os.path.basename(conf) not in cm.get("data", {}):
                problem("ConfigMap %s has no %s" % (cm["metadata"]["name"], os.path.basename(conf)))
    else:
        problem("no --config")

    sa = pod.get("serviceAccountName")
    ns = ds["metadata"].get("namespace")
    one(objs, "ServiceAccount", sa)
    crb = one(objs, "ClusterRoleBinding")
    if crb and {"kind": "ServiceAccount", "name": sa, "namespace": ns} not in crb.get("subjects", []):
        problem("ClusterRoleBinding %s does not bind ServiceAccount %s/%s" % (crb["metadata"]["name"], ns, sa))
    role = one(objs, "ClusterRole")
    if crb and role and crb["roleRef"]["name"] != role["metadata"]["name"]:
        problem("ClusterRoleBinding binds %s, not the ClusterRole %s" % (crb["roleRef"]["name"], role["metadata"]["name"]))
    if role:
        # what kube.c sends: kube_api_request(&k->api, "METHOD", path, ...),
        # where path is the last snprintf(path, ..., "/api/v1/nodes/%s[/sub]")
        # above
        src = open(kube_c).read()
        verb = {"GET": "get", "PATCH": "patch", "PUT": "update",
                "POST": "create", "DELETE": "delete"}
        events = [(m.start(), "path", m.group(1) or "") for m in
                  re.finditer(r'snprintf\(path, sizeof\(path\), "/api/v1/nodes/%s(/[a-z]+)?"', src)]
        events += [(m.start(), "request", m.group(1)) for m in
                   re.finditer(r'kube_api_request\(&k->api, "([A-Z]+)", path', src)]
        need, last = set(), None
        for _, what, val in sorted(events):
            if what == "path":
                last = val
            elif last is None or val not in verb:
                problem("kube.c: a %s request before any node path: update deploy_check.py" % val)
            else:
                need.add(("nodes" + last, verb[val]))
        if not need:
            problem("kube.c: no request found: update deploy_check.py")
        # and what pods.c, beside it, sends: GET /api/v1/pods?... a list
        # of the node's pods, or with watch=1 a watch
        pods_c = os.path.join(os.path.dirname(kube_c), "pods.c")
        src = open(pods_c).read()
        paths = re.findall(r'"(/api/v1/[a-z]+)\?([^"]*)"', src)
        if not paths:
            problem("pods.c: no request found: update deploy_check.py")
        for res, query in paths:
            need.add((res[len("/api/v1/"):], "watch" if "watch=1" in query else "list"))
        # and what evict.c, beside it, POSTs: an Eviction of a pod, an
        # Event on it
        evict_c = os.path.join(os.path.dirname(kube_c), "evict.c")
        src = open(evict_c).read()
        posts = re.findall(r'"/api/v1/namespaces/%s/([a-z/%]+)"', src)
        if not posts:
            problem("evict.c: no request found: update deploy_check.py")
        for sub in posts:
            need.add(("pods/eviction" if sub == "pods/%s/eviction" else sub, "create"))
        have = set()
        for r in role.get("rules", []):
            if r.get("apiGroups") != [""]:
                problem("ClusterRole rule %s: moatd uses only the core API group" % r)
            for res in r.get("resources", []):
                for v in r.get("verbs", []):
                    have.add((res, v))
        for n in sorted(need - have):
            problem("ClusterRole lacks %s %s, which moatd sends (kube.c, pods.c, evict.c)" % n)
        for n in sorted(have - need):
            problem("ClusterRole grants %s %s, which moatd never uses" % n)


def volume_paths(pod, container):
    """mountPath -> the hostPath behind it, for @container of @pod."""
    host = {v["name"]: v.get("hostPath", {}).get("path") for v in pod.get("volumes", [])}
    return {m["mountPath"]: host.get(m["name"]) for m in container.get("volumeMounts", [])}


def check_cleanup(objs, help_path, deploy_path):
    accepted = set(re.findall(r"--[a-z][a-z-]*", open(help_path).read()))
    ds = one(objs, "DaemonSet")
    moatd = one([o for o in yaml.safe_load_all(open(deploy_path)) if o], "DaemonSet")
    if not ds or not moatd:
        problem("no DaemonSet in deploy/cleanup/ or deploy/")
        return
    pod = ds["spec"]["template"]["spec"]
    mpod = moatd["spec"]["template"]["spec"]
    mc = next((c for c in mpod["containers"] if c["name"] == "moatd"), {})
    margs = dict(re.fullmatch(r"(--[a-z-]+)(?:=(.*))?", a).groups() for a in mc.get("args", []))
    mpaths = volume_paths(mpod, mc)
    if pod.get("automountServiceAccountToken") is not False:
        problem("the cleanup mounts a ServiceAccount token: it needs no API access")
    if not pod.get("hostPID"):
        problem("the cleanup lacks hostPID: the threads' attributes are the host's")
    want = {"init": ["--restore-only"], "main": ["--restore-only", "--stay"]}
    for kind, cs in (("init", pod.get("initContainers", [])), ("main", pod.get("containers", []))):
        if len(cs) != 1:
            problem("the cleanup has %d %s containers, not 1" % (len(cs), kind))
            continue
        c = cs[0]
        cmd = c.get("command", [])
        if not cmd or cmd[0] != "/usr/sbin/moatd":
            problem("%s container %s: not /usr/sbin/moatd: %s" % (kind, c["name"], cmd))
            continue
        args, i, opts = cmd[1:], 0, {}
        while i < len(args):
            a = args[i]
            if a not in accepted:
                problem("%s container: moatd --help has no option %s" % (kind, a))
            if a in ("--host-root", "--state-dir") and i + 1 < len(args):
                opts[a] = args[i + 1]
                i += 1
            else:
                opts[a] = None
            i += 1
        for f in want[kind]:
            if f not in opts:
                problem("%s container: no %s" % (kind, f))
        if kind == "init" and "--stay" in opts:
            problem("init container: --stay would never end")
        paths = volume_paths(pod, c)
        root = opts.get("--host-root")
        if root != margs.get("--host-root"):
            problem("%s container: --host-root %s, the moatd DaemonSet's %s" %
                    (kind, root, margs.get("--host-root")))
        for sub in ("/sys/fs", "/proc"):
            if root and paths.get(root + sub) != sub:
                problem("%s container: %s%s is not the host's %s" % (kind, root, sub, sub))
        state = opts.get("--state-dir")
        mstate = margs.get("--state-dir", "/var/lib/moat")
        if not state or paths.get(state) != mpaths.get(mstate):
            problem("%s container: --state-dir %s is host %s, the moatd DaemonSet's journal is host %s" %
                    (kind, state, paths.get(state), mpaths.get(mstate)))


RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
# metav1.Condition's reason; NodeCondition's by convention
REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


def check_node(objs, path):
    check_schema(objs, [path])
    for node in objs:
        conds = node.get("status", {}).get("conditions", [])
        types = [c["type"] for c in conds]
        for t in sorted(set(t for t in types if types.count(t) > 1)):
            problem("condition %s: %d of it" % (t, types.count(t)))
        for c in conds:
            if c["status"] not in ("True", "False", "Unknown"):
                problem("condition %s: status %s" % (c["type"], c["status"]))
            if "reason" in c and not REASON.match(c["reason"]):
                problem("condition %s: reason %r is not CamelCase" % (c["type"], c["reason"]))
            for t in ("lastHeartbeatTime", "lastTransitionTime"):
                if t in c and not RFC3339.match(c[t]):
                    problem("condition %s: %s %r is not RFC 3339" % (c["type"], t, c[t]))
        taints = [(t["key"], t["effect"]) for t in node.get("spec", {}).get("taints", [])]
        if len(set(taints)) != len(taints):
            problem("taints repeated: %s" % taints)


def main():
    objs = [o for o in yaml.safe_load_all(sys.stdin) if o]
    if sys.argv[1] == "node":
        check_node(objs, sys.argv[2])
    elif sys.argv[1] == "schema":
        check_schema(objs, sys.argv[2:])
    elif sys.argv[1] == "cleanup":
        check_cleanup(objs, sys.argv[2], sys.argv[3])
    else:
        check_moatd(objs, sys.argv[2], sys.argv[3])
    for p in problems:
        print(p)
    print("%d objects, %d problems" % (len(objs), len(problems)))
    sys.exit(1 if problems else 0)


main()
