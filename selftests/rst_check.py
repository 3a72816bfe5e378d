#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Parse each reStructuredText file given with docutils, as rst2man and
Sphinx do, and print every problem docutils reports (a title's underline
too short, a broken table, an unknown role, ...) as FILE:LINE: message.
Sphinx's ``:doc:`` role and ``toctree`` directive, which the pages use
and plain docutils lacks, are checked here for what Sphinx would check:
that the page they name exists, next to the file.  Exits 1 on any
problem, 2 when docutils is missing."""
import os
import re
import sys

try:
    import docutils.core
    import docutils.utils
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives, roles
except ImportError:
    print("rst_check.py: no docutils (tools/deps.sh installs python3-docutils)")
    sys.exit(2)

problems = []
current = {"dir": "."}


def page_exists(name):
    """A :doc: target, relative to the file's directory (or the root of
    the pages, for one that starts with '/'), without its '.rst'."""
    base = current["dir"]
    if name.startswith("/"):
        name = name[1:]
    return os.path.exists(os.path.join(base, name + ".rst"))


def doc_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    m = re.match(r"^(.*?)\s*<([^>]+)>$", text)
    target = m.group(2) if m else text
    if not page_exists(target):
        msg = inliner.reporter.error(
            f":doc: names {target!r}, which is no page ({target}.rst)",
            line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    return [nodes.reference(rawtext, m.group(1) if m else text)], []


class TocTree(Directive):
    has_content = True
    optional_arguments = 0
    option_spec = {"maxdepth": directives.nonnegative_int,
                   "caption": directives.unchanged,
                   "hidden": directives.flag, "numbered": directives.flag}

    def run(self):
        out = []
        for i, entry in enumerate(self.content):
            entry = entry.strip()
            if not entry:
                continue
            m = re.match(r"^(.*?)\s*<([^>]+)>$", entry)
            target = m.group(2) if m else entry
            if not page_exists(target):
                out.append(self.state_machine.reporter.error(
                    f"toctree names {target!r}, which is no page ({target}.rst)",
                    line=self.content_offset + i + 1))
        return out


roles.register_local_role("doc", doc_role)
directives.register_directive("toctree", TocTree)


def check(path):
    current["dir"] = os.path.dirname(path) or "."
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = []
    settings = {"report_level": 5, "halt_level": 5, "warning_stream": False}
    doc = docutils.core.publish_doctree(text, source_path=path,
                                        settings_overrides=settings)
    # every message of WARNING and above is left in the tree
    for m in doc.traverse(nodes.system_message):
        if m["level"] >= docutils.utils.Reporter.WARNING_LEVEL:
            line = m.get("line") or "?"
            found.append(f"{path}:{line}: {' '.join(m.children[0].astext().split())}")
    return found


def main(paths):
    if not paths:
        print("usage: rst_check.py FILE.rst...")
        return 2
    for p in paths:
        problems.extend(check(p))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
