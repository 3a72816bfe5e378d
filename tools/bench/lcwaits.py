#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Where an LC task's run-queue time went, wait by wait.

    perf record -e sched:sched_switch -e sched:sched_wakeup -a -o F -- sleep 3
    perf script -i F -F time,cpu,event,trace | tools/bench/lcwaits.py COMM [CPU]

A wait starts when a task whose name starts with COMM is woken
(sched_wakeup) or switched out still runnable (preempted), and ends when
it is switched in; CPU (all by default) keeps only that CPU's switches.
For each wait, what held the CPU meanwhile: the tasks switched out during
it, each with the part of the wait it ran.  Printed: the waits' count,
sum and histogram; the time each task held the CPU during the waits over
100 us, and what was running when those began; the longest twelve, each
with its tasks; and the signals moatd would compute from these waits
(rqlat.rst, enforce.rst "Which run-queue signal"): the arrival p99, p99.5
and p99.9 (ap99: the x where sum(max(0, w - x)) / T is 1%) and the
time-weighted p99 (wp99) over the trace's span T.
"""
import collections
import re
import sys

EVENT = re.compile(r'\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s+(.*)')
FIELD = re.compile(r'(\w+)=(\S+)')
EDGES = (10, 50, 100, 200, 500, 1000, 2000, 4000, 8000, float('inf'))


def fields(text):
    return dict(FIELD.findall(text))


def main():
    if len(sys.argv) < 2 or len(sys.argv) > 3:
        sys.exit("usage: lcwaits.py COMM [CPU] < perf-script-output")
    comm = sys.argv[1]
    cpu_only = None if len(sys.argv) < 3 else int(sys.argv[2])
    pending = {}            # pid -> (start, what ran at the start)
    held = {}               # pid -> [(comm, pid, from, to, state)]
    running = {}            # cpu -> (comm, pid, since)
    waits = []              # (us, held, at_start, start)
    first = last = None
    lines = 0
    lost = 0
    for line in sys.stdin:
        m = EVENT.match(line)
        if not m:
            continue
        lines += 1
        cpu, t, name, rest = int(m.group(1)), float(m.group(2)), m.group(3), m.group(4)
        first = t if first is None else first
        last = t
        if name in ('sched_wakeup', 'sched_wakeup_new'):
            f = fields(rest)
            # not one already waiting, nor one on a CPU (a task woken in
            # its own context as it was about to sleep never left it)
            if (f.get('comm', '').startswith(comm) and f.get('pid') not in pending and
                    all(r[1] != f.get('pid') for r in running.values())):
                target = int(f.get('target_cpu', cpu))
                if cpu_only is None or target == cpu_only:
                    pending[f['pid']] = (t, running.get(target, (None, None, None))[:2])
            continue
        if name != 'sched_switch' or (cpu_only is not None and cpu != cpu_only):
            continue
        prev, nxt = rest.split(' ==> ')
        p, n = fields(prev), fields(nxt)
        since = running.get(cpu, (None, None, None))[2]
        for pid, (start, _) in pending.items():
            if since is not None:
                held.setdefault(pid, []).append(
                    (p['prev_comm'], p['prev_pid'], max(since, start), t, p['prev_state']))
        if p['prev_pid'] in pending:
            # switched out while waiting: its switch in was not recorded
            # (perf lost events); where its wait ended is not known
            del pending[p['prev_pid']]
            held.pop(p['prev_pid'], None)
            lost += 1
        if p['prev_comm'].startswith(comm) and p['prev_state'].startswith('R'):
            pending[p['prev_pid']] = (t, ('preempted by ' + n['next_comm'], n['next_pid']))
        if n['next_pid'] in pending:
            start, at = pending.pop(n['next_pid'])
            waits.append(((t - start) * 1e6, held.pop(n['next_pid'], []), at, start))
        held.pop(n['next_pid'], None)
        running[cpu] = (n['next_comm'], n['next_pid'], t)
    if not waits:
        sys.exit("lcwaits.py: no wait of a task named %s* in %d events" % (comm, lines))
    span = (last - first) * 1e6
    us = sorted(w[0] for w in waits)
    total = sum(us)
    hist = collections.Counter(next(e for e in EDGES if w < e) for w in us)
    print("%s: %d waits in %.3f s, %.0f us in all (%.2f%% of the time); the longest %.0f us"
          % (comm, len(us), span / 1e6, total, 100 * total / span, us[-1]))
    if lost:
        print("%d waits left out: their ends were not recorded (perf lost events)" % lost)
    print("waits under: " + ", ".join("%s us %d" % ("inf" if e == float('inf') else "%d" % e,
                                                    hist[e]) for e in EDGES))
    by = collections.Counter()
    at = collections.Counter()
    for w, h, a, _ in waits:
        if w < 100:
            continue
        for c, _, a0, a1, _ in h:
            by[c] += (a1 - a0) * 1e6
        at[a[0] or '(idle or not seen)'] += 1
    if by:
        print("during the waits over 100 us, us each held the CPU: " +
              ", ".join("%s %.0f" % kv for kv in by.most_common(8)))
        print("running when those began: " + ", ".join("%s %d" % kv for kv in at.most_common(8)))
    for w, h, a, start in sorted(waits, key=lambda x: -x[0])[:12]:
        print("  %7.0f us from %.6f (running: %s): %s" % (
            w, start, a[0] or '-', " ".join("%s/%s %.0f%s" % (c, pid, (a1 - a0) * 1e6, st)
                                            for c, pid, a0, a1, st in h) or '-'))

    def arrival(q):
        lo, hi = 0.0, us[-1]
        for _ in range(60):
            x = (lo + hi) / 2
            if sum(max(0.0, w - x) for w in us) / span > q:
                lo = x
            else:
                hi = x
        return hi
    acc = 0.0
    wp99 = us[-1]
    for w in us:
        acc += w
        if acc >= 0.99 * total:
            wp99 = w
            break
    print("signals over the trace: ap99 %.0f us, ap99.5 %.0f, ap99.9 %.0f, wp99 %.0f"
          % (arrival(0.01), arrival(0.005), arrival(0.001), wp99))


if __name__ == '__main__':
    try:
        main()
    except BrokenPipeError:
        sys.exit(0)
