#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""The DaemonSet's moatd container as an OCI runtime config, for runc.

    oci_config.py RENDERED.yaml CONFIG.json WORK CGROUP_ROOT

Rewrites CONFIG.json (umoci unpack's) to run what deploy/ asks for:
the container's command and arguments, environment, capabilities (and
nothing else), read-only root, hostPID (no PID namespace) and a cgroup
namespace of its own, and each volume at its mountPath: hostPath volumes
bind the host's path (rbind, with HostToContainer as rslave), except that
the state and run directories are WORK/state and WORK/run rather than the
node's own; the ConfigMap is WORK/config; emptyDir is a tmpfs.  What a
node gives that this test cannot is replaced, and said here: the pod's
address is 127.0.0.1 with a port of moatd's choosing (no network
namespace: the test reaches it over loopback), the API server is
127.0.0.1:1 with WORK/sa as the service account (the Node publisher
loads libcurl and its first request is refused), and --cgroup-root keeps
moatd to the test's cgroup.
"""
import json
import sys

import yaml

rendered, config, work, cgroup_root = sys.argv[1:5]
objs = [o for o in yaml.safe_load_all(open(rendered)) if o]
ds = next(o for o in objs if o["kind"] == "DaemonSet")
pod = ds["spec"]["template"]["spec"]
c = next(c for c in pod["containers"] if c["name"] == "moatd")
spec = json.load(open(config))

args = [a.replace("$(POD_IP):9590", "127.0.0.1:0") for a in c.get("args", [])]
spec["process"]["args"] = c["command"] + args + ["--cgroup-root=" + cgroup_root]
env = [e for e in spec["process"].get("env", []) if not e.startswith("PATH=")]
env.append("PATH=/usr/sbin:/usr/bin")
for e in c.get("env", []):
    if e["name"] == "NODE_NAME":
        env.append("NODE_NAME=kit-node")
env += ["KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=1",
        "MOAT_KUBE_SA_DIR=/etc/moat-sa"]
spec["process"]["env"] = env
sc = c.get("securityContext", {})
# what this test machine may give: its own bounding set (here, without
# CAP_SYS_RESOURCE, which moatd needs only before Linux 5.11)
CAP_BITS = {"DAC_OVERRIDE": 1, "NET_ADMIN": 12, "SYS_ADMIN": 21, "SYS_NICE": 23,
            "SYS_RESOURCE": 24, "PERFMON": 38, "BPF": 39}
bnd = int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("CapBnd:")), 16)
caps = []
for x in sc.get("capabilities", {}).get("add", []):
    if x not in CAP_BITS:
        sys.exit("oci_config.py: capability %s: its bit is not in this script's table" % x)
    if bnd >> CAP_BITS[x] & 1:
        caps.append("CAP_" + x)
    else:
        print("oci_config.py: CAP_%s is not in this machine's bounding set: not given" % x)
spec["process"]["capabilities"] = {k: caps for k in
                                   ("bounding", "effective", "permitted", "ambient")}
spec["process"]["capabilities"]["inheritable"] = caps
spec["process"]["noNewPrivileges"] = not sc.get("allowPrivilegeEscalation", True)
spec["process"]["user"] = {"uid": sc.get("runAsUser", 0), "gid": 0}
spec["process"]["terminal"] = False
spec["root"]["readonly"] = bool(sc.get("readOnlyRootFilesystem"))
spec["linux"]["namespaces"] = [{"type": t} for t in ("mount", "cgroup", "ipc", "uts")] + \
    ([] if pod.get("hostPID") else [{"type": "pid"}])
spec["linux"].pop("resources", None)

volumes = {v["name"]: v for v in pod.get("volumes", [])}
own = {"/var/lib/moat": work + "/state", "/run/moat": work + "/run"}
for m in c.get("volumeMounts", []):
    v = volumes[m["name"]]
    ro = ["ro"] if m.get("readOnly") else ["rw"]
    if "hostPath" in v:
        src = own.get(v["hostPath"]["path"], v["hostPath"]["path"])
        prop = {"HostToContainer": ["rslave"], "Bidirectional": ["rshared"]}.get(
            m.get("mountPropagation"), ["rprivate"])
        spec["mounts"].append({"destination": m["mountPath"], "type": "bind",
                               "source": src, "options": ["rbind"] + ro + prop})
    elif "configMap" in v:
        spec["mounts"].append({"destination": m["mountPath"], "type": "bind",
                               "source": work + "/config", "options": ["rbind", "ro"]})
    elif "emptyDir" in v:
        spec["mounts"].append({"destination": m["mountPath"], "type": "tmpfs",
                               "source": "tmpfs", "options": ["nosuid", "nodev", "size=16m"]})
    else:
        sys.exit("oci_config.py: volume %s: a kind this test does not know" % m["name"])
spec["mounts"].append({"destination": "/etc/moat-sa", "type": "bind",
                       "source": work + "/sa", "options": ["rbind", "ro"]})
json.dump(spec, open(config, "w"), indent=1)
