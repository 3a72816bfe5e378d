#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""moat's rules (contrib/prometheus/moat.rules.yml) as a PrometheusRule.

    tools/prometheusrule.py contrib/prometheus/moat.rules.yml \\
        > deploy/components/prometheus-operator/prometheusrule.yaml

The rules file is the one source; make check (selftests/kit.sh) fails
when the PrometheusRule's groups, rendered by kustomize, are not the
file's.  Expressions of several lines are written as literal blocks:
kustomize re-folds a folded one with an indented line wrongly (a blank
line in the query).
"""
import sys

import yaml


class Dumper(yaml.SafeDumper):
    """Lists indented under their key, as yamllint and this tree want."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def block(dumper, text):
    return dumper.represent_scalar("tag:yaml.org,2002:str", text,
                                   style="|" if "\n" in text else None)


Dumper.add_representer(str, block)
rules = yaml.safe_load(open(sys.argv[1]))
print("""# SPDX-License-Identifier: GPL-2.0-only
#
# Made by tools/prometheusrule.py from contrib/prometheus/moat.rules.yml
# (what each rule is for is said there): change that file and run it
# again.  A Prometheus whose ruleSelector selects by label needs that
# label here (a patch in your overlay).
# yamllint disable rule:line-length
---""")
sys.stdout.write(yaml.dump({
    "apiVersion": "monitoring.coreos.com/v1",
    "kind": "PrometheusRule",
    "metadata": {"name": "moat", "namespace": "moat-system"},
    "spec": {"groups": rules["groups"]},
}, Dumper=Dumper, sort_keys=False, width=1000))
