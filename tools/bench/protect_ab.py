#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Two configurations of tools/bench/protect.sh, compared run by run.

    tools/bench/protect_ab.py [--perms N] [--seed N] A.log... -- B.log...

Each log is protect.sh's output (stdout and stderr together, or stdout
alone): its "# <scenario> run <n>: ..." lines.  A run is paired with the
alone run of the same log and round (hungry-alone's for hungry*), as
protect.sh pairs them.  Several logs on a side are pooled: a set of five
reps and six one-rep invocations alternated with the other side's are
eleven runs.

For each scenario both sides ran, and each figure (p99 and p99.9 in us,
and each over its alone's, paired), it prints both sides' runs, their
medians (the lower of the middle two, as protect.sh takes them), A's
median over B's, and a two-sided permutation test of the difference of
the medians: p, the share of the ways of dealing the pooled runs into
sides of the same sizes whose medians differ at least as much (every way
where there are at most --perms, else --perms of them drawn with
--seed).  With p over 0.05 the verdict is "not distinguishable": this
machine's runs spread twofold with nothing changed (performance-record,
"The lever with the least factor, as a policy"), and a median's
difference alone is not a result.
"""
import itertools
import math
import random
import re
import signal
import sys

RUN = re.compile(r"^# (\S+) run (\d+): .*?: (.*)$")
# the run line's fields after its colon, as protect.sh prints them
FIELDS = ("p50", "p99", "p999")


def usage(msg):
    sys.stderr.write("protect_ab.py: %s\n" % msg)
    sys.stderr.write("usage: protect_ab.py [--perms N] [--seed N] A.log... -- B.log...\n")
    sys.exit(2)


def alone_of(sc):
    return "hungry-alone" if sc.startswith("hungry") else "alone"


def read_log(path):
    """{scenario: {round: {"p99": us, "p999": us}}} of one log."""
    runs = {}
    try:
        f = open(path)
    except OSError as e:
        usage("%s: %s" % (path, e.strerror))
    with f:
        for n, line in enumerate(f, 1):
            m = RUN.match(line.rstrip("\n"))
            if not m:
                continue
            sc, rnd, rest = m.group(1), int(m.group(2)), m.group(3).split()
            if len(rest) < len(FIELDS):
                usage("%s:%d: a run line with %d fields, not %d or more: %s"
                      % (path, n, len(rest), len(FIELDS), line.strip()))
            try:
                v = {k: float(rest[i]) for i, k in enumerate(FIELDS)}
            except ValueError:
                usage("%s:%d: a latency that is not a number: %s" % (path, n, line.strip()))
            if rnd in runs.setdefault(sc, {}):
                usage("%s:%d: %s run %d twice in one log" % (path, n, sc, rnd))
            runs[sc][rnd] = v
    if not runs:
        usage("%s: no protect.sh run lines (\"# <scenario> run <n>: ...\")" % path)
    return runs


def side(paths):
    """{scenario: {figure: [value, ...]}} pooled over @paths' runs."""
    out = {}
    for path in paths:
        runs = read_log(path)
        for sc, by_round in runs.items():
            alone = runs.get(alone_of(sc), {})
            for rnd in sorted(by_round):
                v = by_round[rnd]
                fig = out.setdefault(sc, {})
                for k in ("p99", "p999"):
                    fig.setdefault(k, []).append(v[k])
                    a = alone.get(rnd, {}).get(k, 0)
                    if a > 0 and sc != alone_of(sc):
                        fig.setdefault(k + "/al", []).append(v[k] / a)
    return out


def median(v):
    s = sorted(v)
    return s[(len(s) + 1) // 2 - 1]


def perm_p(a, b, perms, rng):
    """Two-sided: the share of deals of a + b whose medians differ as much."""
    obs = abs(median(a) - median(b))
    pool, na = a + b, len(a)
    total = math.comb(len(pool), na)
    hits = n = 0
    if total <= perms:
        idx = range(len(pool))
        for pick in itertools.combinations(idx, na):
            chosen = set(pick)
            x = [pool[i] for i in pick]
            y = [pool[i] for i in idx if i not in chosen]
            hits += abs(median(x) - median(y)) >= obs - 1e-12
            n += 1
    else:
        for _ in range(perms):
            s = rng.sample(pool, len(pool))
            hits += abs(median(s[:na]) - median(s[na:])) >= obs - 1e-12
            n += 1
    return hits / n


def fmt(v, k):
    return "%.2f" % v if k.endswith("/al") else "%.0f" % v


def main(argv):
    perms, seed, args = 20000, 1, list(argv)
    while args and args[0].startswith("--") and args[0] != "--":
        opt = args.pop(0)
        if opt not in ("--perms", "--seed") or not args:
            usage("%s: not an option, or no value after it" % opt)
        val = args.pop(0)
        if not val.isdigit() or int(val) < 1:
            usage("%s: '%s' is not a positive integer" % (opt, val))
        if opt == "--perms":
            perms = int(val)
        else:
            seed = int(val)
    if args.count("--") != 1:
        usage("the logs of A, then --, then those of B")
    cut = args.index("--")
    a_paths, b_paths = args[:cut], args[cut + 1:]
    if not a_paths or not b_paths:
        usage("no log on %s side" % ("A's" if not a_paths else "B's"))
    a, b = side(a_paths), side(b_paths)
    rng = random.Random(seed)
    both = [sc for sc in a if sc in b]
    if not both:
        usage("no scenario that both sides ran")
    print("# A: %s" % " ".join(a_paths))
    print("# B: %s" % " ".join(b_paths))
    print("%-14s %-8s %4s %9s %4s %9s %7s %7s  %s"
          % ("scenario", "figure", "A_n", "A_median", "B_n", "B_median", "A/B", "p", "verdict"))
    runs = []
    for sc in both:
        for k in ("p99", "p99/al", "p999", "p999/al"):
            x, y = a[sc].get(k, []), b[sc].get(k, [])
            if not x or not y:
                continue
            ma, mb = median(x), median(y)
            p = perm_p(x, y, perms, rng)
            verdict = ("not distinguishable" if p > 0.05 else
                       "A lower" if ma < mb else "B lower")
            print("%-14s %-8s %4d %9s %4d %9s %7.2f %7.3f  %s"
                  % (sc, k, len(x), fmt(ma, k), len(y), fmt(mb, k),
                     ma / mb if mb else float("nan"), p, verdict))
            runs.append("# %s %s A: %s; B: %s" % (sc, k, " ".join(fmt(v, k) for v in x),
                                                  " ".join(fmt(v, k) for v in y)))
    print("# every run, in the order read:")
    print("\n".join(runs))


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)	# | head: no traceback
    main(sys.argv[1:])
