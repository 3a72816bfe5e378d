#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""The DaemonSet's moatd container as a runtime would start it.

    oci_config.py RENDERED.yaml CONFIG.json WORK CGROUP_ROOT
    oci_config.py --ctr RENDERED.yaml NODE SA_DIR CONFIGMAP_DIR

The first form rewrites CONFIG.json (umoci unpack's) for runc (the
kit's test): the container's command and arguments, environment,
capabilities (and nothing else), read-only root, hostPID (no PID
namespace) and a cgroup namespace of its own, and each volume at its
mountPath: hostPath volumes bind the host's path (rbind, with
HostToContainer as rslave), except that the state and run directories
are WORK/state and WORK/run rather than the node's own; the ConfigMap is
WORK/config; emptyDir is a tmpfs.  What a node gives that this test
cannot is replaced, and said here: the pod's address is 127.0.0.1 with
a port of moatd's choosing (no network namespace: the test reaches it
over loopback), the API server is 127.0.0.1:1 with WORK/sa as the
service account (the pod source's first request is refused), and --cgroup-root keeps moatd to the test's cgroup.

The second form prints, for the node guest (selftests/node/), what
kubelet would ask of containerd for that container, as shell
assignments: image, the pod's QoS class, the mask of its effective
capabilities, the hostPath directories to create, ctr run's flags and
the command.  The node's own paths are bound (it is a node), the
ConfigMap is CONFIGMAP_DIR and the service account's token SA_DIR, at
the path kubelet projects it to.  Replaced, and said here: the pod's
network namespace and address are the node's (--net-host, 127.0.0.1:
the guest has no CNI), and the API server is whatever the test says
in KUBERNETES_SERVICE_HOST and _PORT.
"""
import json
import shlex
import sys

import yaml

# the kernel's capability numbers (include/uapi/linux/capability.h)
CAPS = ["CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL",
        "SETGID", "SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE",
        "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
        "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
        "SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME",
        "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL",
        "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM",
        "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE"]


def daemonset(rendered):
    objs = [o for o in yaml.safe_load_all(open(rendered)) if o]
    ds = next(o for o in objs if o["kind"] == "DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    return pod, next(c for c in pod["containers"] if c["name"] == "moatd")


def added_caps(sc):
    caps = sc.get("capabilities", {})
    if caps.get("drop") != ["ALL"]:
        sys.exit("oci_config.py: capabilities.drop is not [ALL]: this script gives only what add names")
    for x in caps.get("add", []):
        if x not in CAPS:
            sys.exit("oci_config.py: capability %s: not in this script's table" % x)
    return caps.get("add", [])


def quantity(q):
    """A resource quantity (Kubernetes' suffixes) as a number."""
    q = str(q)
    for suffix, mult in (("Ki", 1 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30), ("m", 1e-3),
                         ("k", 1e3), ("M", 1e6), ("G", 1e9)):
        if q.endswith(suffix):
            return float(q[:-len(suffix)]) * mult
    return float(q)


def ctr(rendered, node, sa_dir, configmap_dir):
    """What kubelet would ask of containerd, as ctr run's flags."""
    pod, c = daemonset(rendered)
    sc = c.get("securityContext", {})
    flags, mkdirs, env = [], [], {}
    for e in c.get("env", []):
        field = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
        if "value" in e:
            env[e["name"]] = e["value"]
        elif field in ("spec.nodeName", "status.podIP", "status.hostIP"):
            env[e["name"]] = node if field == "spec.nodeName" else "127.0.0.1"
        elif field == "metadata.uid":
            # the pod node-test.sh makes for moat ($MU there)
            env[e["name"]] = "99999999-8888-7777-6666-555555555555"
        else:
            sys.exit("oci_config.py: env %s: a source this script does not know" % e["name"])
    # kubelet expands $(NAME) in the command and arguments
    cmd = []
    for a in c["command"] + c.get("args", []):
        for k, v in env.items():
            a = a.replace("$(%s)" % k, v)
        cmd.append(a)
    flags += ["--env=%s=%s" % kv for kv in env.items()]
    if sc.get("privileged"):
        flags.append("--privileged")
    if sc.get("readOnlyRootFilesystem"):
        flags.append("--read-only")
    if sc.get("allowPrivilegeEscalation", True):
        flags.append("--allow-new-privs")
    if sc.get("runAsUser", 0) != 0:
        sys.exit("oci_config.py: runAsUser %s: this script runs root only" % sc["runAsUser"])
    add = added_caps(sc)
    flags += ["--cap-drop=CAP_" + x for x in CAPS if x not in add]
    flags += ["--cap-add=CAP_" + x for x in add]
    capeff = sum(1 << CAPS.index(x) for x in add)
    if pod.get("hostPID"):
        flags.append("--with-ns=pid:/proc/1/ns/pid")
    if pod.get("hostNetwork") is False:
        sys.exit("oci_config.py: hostNetwork false said outright: this script has no pod network")
    flags.append("--net-host")
    res = c.get("resources", {})
    req, lim = res.get("requests", {}), res.get("limits", {})
    if "memory" in lim:
        flags.append("--memory-limit=%d" % quantity(lim["memory"]))
    if "cpu" in lim:
        flags += ["--cpu-period=100000", "--cpu-quota=%d" % (quantity(lim["cpu"]) * 100000)]
    cpu_req = req.get("cpu", lim.get("cpu"))
    if cpu_req is not None:	# kubelet's MilliCPUToShares
        flags.append("--cpu-shares=%d" % max(2, quantity(cpu_req) * 1000 * 1024 // 1000))
    if not req and not lim:
        qos = "besteffort"
    elif all(k in lim and quantity(lim[k]) == quantity(req.get(k, lim[k]))
             for k in ("cpu", "memory")):
        qos = "guaranteed"
    else:
        qos = "burstable"
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        v = volumes[m["name"]]
        ro = "ro" if m.get("readOnly") else "rw"
        if "hostPath" in v:
            prop = {"HostToContainer": ":rslave", "Bidirectional": ":rshared"}.get(
                m.get("mountPropagation"), ":rprivate")
            if v["hostPath"].get("type") == "DirectoryOrCreate":
                mkdirs.append(v["hostPath"]["path"])
            flags.append("--mount=type=bind,src=%s,dst=%s,options=rbind:%s%s" %
                         (v["hostPath"]["path"], m["mountPath"], ro, prop))
        elif "configMap" in v:
            flags.append("--mount=type=bind,src=%s,dst=%s,options=rbind:ro" %
                         (configmap_dir, m["mountPath"]))
        elif "emptyDir" in v:
            size = v["emptyDir"].get("sizeLimit")
            opts = "nosuid:nodev" + (":size=%d" % quantity(size) if size else "")
            flags.append("--mount=type=tmpfs,src=tmpfs,dst=%s,options=%s" % (m["mountPath"], opts))
        else:
            sys.exit("oci_config.py: volume %s: a kind this script does not know" % m["name"])
    if pod.get("automountServiceAccountToken", True):
        flags.append("--mount=type=bind,src=%s,dst=/var/run/secrets/kubernetes.io/"
                     "serviceaccount,options=rbind:ro" % sa_dir)
    out = {"image": c["image"], "qos": qos, "capeff": "%016x" % capeff}
    for k, v in out.items():
        print("%s=%s" % (k, shlex.quote(v)))
    for k, v in (("mkdirs", mkdirs), ("flags", flags), ("cmd", cmd)):
        print("%s=(%s)" % (k, " ".join(shlex.quote(x) for x in v)))


if sys.argv[1:2] == ["--ctr"]:
    ctr(*sys.argv[2:6])
    sys.exit(0)

rendered, config, work, cgroup_root = sys.argv[1:5]
pod, c = daemonset(rendered)
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
bnd = int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("CapBnd:")), 16)
caps = []
for x in added_caps(sc):
    if bnd >> CAPS.index(x) & 1:
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
