/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_ENFORCE_H
#define MOATD_ENFORCE_H

/*
 * The enforce module: the controller (lib/control.c), a policy that
 * returns a plan from the period alone, and the actuators of cgroup
 * files (lib/actuator.c), which carry the plan out through the journal.
 */
#include "moatd.h"

extern const struct moatd_module enforce_module;

/*
 * A source: each BE unit's limit files where moat holds no limit, the
 * originals a first step starts from.  Nothing in enforce mode only.
 */
void enforce_sample(struct moatd *d, struct period *p);
/* The policy: in enforce mode, one period's steps into @plan. */
void enforce_decide(struct moatd *d, const struct period *p, struct plan *plan);
/*
 * The actuators: @plan's steps on cgroup files, each journaled first, and
 * committed (the unit's limit, the counters, the log) once written.
 */
void enforce_act(struct moatd *d, const struct plan *plan);
/*
 * @plan's steps on resctrl's BE class (L3 ways, memory bandwidth), which
 * rdt_act() wrote as the least of them: committed where it did (@err 0),
 * else counted as write errors and said, as any refused write.
 */
void enforce_commit_rdt(struct moatd *d, const struct plan *plan, int err);

/*
 * For reporters: a group's limit of @r (INFINITY: none), its steps down.
 * A pod's CPU priority is the weight it has (v2's scale) at the factor in
 * force, 0 where it has only the per-task lever.
 */
double enforce_limit(const struct moatd_group *g, enum moat_resource r);
/*
 * Whether moat can hold @g's @r back no further: held at its floor, or
 * no lever for it on this group (a v1 cpu hierarchy has no memory.high).
 */
bool enforce_exhausted(const struct moatd *d, const struct moatd_group *g,
		       enum moat_resource r);
unsigned long long enforce_throttles(const struct moatd_group *g);
/* For reporters: the counters by chain, resource and action, and errors. */
unsigned long long enforce_actions(const struct moatd *d, enum moat_resource chain,
				   enum moat_resource r, enum moat_ctl_action a);
unsigned long long enforce_write_errors(const struct moatd *d);
/*
 * For reporters: the outside writes to the files moat holds, by file: the
 * @i-th file's name, its count in *@writes; NULL past the last.
 */
const char *enforce_outside_file(const struct moatd *d, unsigned int i,
				 unsigned long long *writes);
/*
 * For /healthz: a line for each group's file moat leaves alone now,
 * someone else rewriting it too often, to @f (NULL: only count them).
 */
int enforce_left_alone(const struct moatd *d, FILE *f);

/* Whether the journal's file lags what moatd holds; then why, in @why. */
bool enforce_journal_stale(const struct moatd *d, char *why, size_t len);
/* At stop: if the journal is stale, say what its file still lists: -EIO. */
int enforce_report_stale(struct moatd *d);
/* Journal entries of cgroup files: what moatctl restore is about. */
size_t enforce_journal_entries(const struct moatd *d);

#endif /* MOATD_ENFORCE_H */
