/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_SELFTESTS_DAEMON_H
#define MOAT_SELFTESTS_DAEMON_H

/*
 * A moatd without its loop, for the tests of its parts (test_units.c,
 * test_enforce.c, test_sim.c): the modules that are linked into the
 * selftests (Kbuild: units, enforce, levers, burst, evict, core) set up
 * as main() sets them up (not started: no thread of theirs runs),
 * groups added and removed as groups.c adds and removes them, and a
 * period the test builds by hand.  The journal is in memory.  The other
 * modules are empty: nothing of theirs runs.
 */
#include "moatd.h"

/* A moatd with the linked modules inited, on cgroup hierarchy @cpu. */
struct moatd *daemon_new(const struct moat_cg_hierarchy *cpu);
void daemon_free(struct moatd *d);

/*
 * Add a group as groups.c would: @id, @kind, @class, its cgroup
 * directory @dir (a test's own cgroup, or a path that is none), @cgid.
 */
struct moatd_group *daemon_add(struct moatd *d, const char *id,
			       enum moat_group_kind kind, enum moat_class class,
			       const char *dir, __u64 cgid);
/* Remove @g as groups.c would: each module's group_del, then free. */
void daemon_del(struct moatd *d, struct moatd_group *g);

#endif /* MOAT_SELFTESTS_DAEMON_H */
