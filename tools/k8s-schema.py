#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Cut the JSON schemas of deploy/'s kinds, and of the Node moatd patches,
out of Kubernetes' OpenAPI spec.

    tools/k8s-schema.py SWAGGER.json VERSION > deploy/schema/kubernetes.json
    tools/k8s-schema.py --crd VERSION CRD.yaml... > deploy/schema/NAME.json

SWAGGER.json is Kubernetes' api/openapi-spec/swagger.json (OpenAPI v2) of
release VERSION.  The output holds the definitions the kinds below reach,
without their descriptions, made strict as kubeconform's -strict
schemas are: an object with properties takes no other property (the API
server prunes or rejects unknown fields; a typo in a manifest must not
pass), and int-or-string and quantity fields take either.  It is
vendored so that make check validates deploy/ offline
(selftests/deploy_check.py).

With --crd, the schemas of CustomResourceDefinitions instead (each
served version's openAPIV3Schema, as the API server validates the
custom resources), made strict the same way, for deploy/components/.
"""
import json
import sys

import yaml

KINDS = [
    ("v1", "Namespace"), ("v1", "ServiceAccount"), ("v1", "ConfigMap"),
    ("v1", "Service"), ("apps/v1", "DaemonSet"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"),
    # not in deploy/: the Node as moatd's patches leave it (kube.c)
    ("v1", "Node"),
]
EITHER = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": ["string", "integer"],
    "io.k8s.apimachinery.pkg.api.resource.Quantity": ["string", "number"],
}


def gvk_name(defs, api_version, kind):
    group, _, version = api_version.rpartition("/")
    for name, d in defs.items():
        for g in d.get("x-kubernetes-group-version-kind", []):
            if (g["group"], g["version"], g["kind"]) == (group, version, kind):
                return name
    sys.exit("k8s-schema: no definition for %s %s" % (api_version, kind))


def refs(node):
    if isinstance(node, dict):
        if "$ref" in node:
            yield node["$ref"].rsplit("/", 1)[1]
        for v in node.values():
            yield from refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from refs(v)


def strict(node):
    if isinstance(node, dict):
        node.pop("description", None)
        for k in [k for k in node if k.startswith("x-kubernetes-")
                  and k != "x-kubernetes-group-version-kind"]:
            del node[k]
        if node.get("type") == "object" and "properties" in node:
            node.setdefault("additionalProperties", False)
        for k, v in node.items():
            if k != "properties":
                strict(v)
        for v in node.get("properties", {}).values():
            strict(v)
    elif isinstance(node, list):
        for v in node:
            strict(v)


def crds(version, paths):
    kinds, defs = {}, {}
    for path in paths:
        for crd in yaml.safe_load_all(open(path)):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
            for v in crd["spec"]["versions"]:
                if not v.get("served"):
                    continue
                name = ".".join(reversed(group.split("."))) + ".%s.%s" % (v["name"], kind)
                kinds["%s/%s/%s" % (group, v["name"], kind)] = name
                defs[name] = v["schema"]["openAPIV3Schema"]
                strict(defs[name])
    json.dump({"version": version,
               "source": "CustomResourceDefinitions, cut by tools/k8s-schema.py --crd",
               "kinds": kinds, "definitions": defs},
              sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


def main():
    if sys.argv[1] == "--crd":
        return crds(sys.argv[2], sys.argv[3:])
    spec = json.load(open(sys.argv[1]))
    defs = spec["definitions"]
    kinds = {"%s/%s" % kv: gvk_name(defs, *kv) for kv in KINDS}
    keep, todo = {}, list(kinds.values())
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep[name] = json.loads(json.dumps(defs[name]))
        todo.extend(refs(keep[name]))
    for name, d in keep.items():
        if name in EITHER:
            keep[name] = {"type": EITHER[name]}
        else:
            strict(d)
    json.dump({"kubernetes": sys.argv[2],
               "source": "api/openapi-spec/swagger.json, cut by tools/k8s-schema.py",
               "kinds": kinds, "definitions": keep},
              sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


main()
