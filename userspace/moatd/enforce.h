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

/* The steps the action history keeps, the last ones. */
#define ENFORCE_HISTORY	32

/* One step the controller took (or, in shadow mode, would have). */
struct enforce_record {
	time_t at;			/* wall clock */
	bool shadow;			/* not written: shadow mode */
	enum moat_ctl_action action;
	enum moat_resource r;
	char group[MOAT_ID_MAX];	/* the unit's id */
	char name[MOATD_GROUP_NAME_MAX];	/* and for people */
	char from[64], to[64];		/* its limit, as the log says it */
	char cause[256];		/* what the LC unit saw: the figure */
	/* a kubelet pod whose metadata came: its namespace and name */
	char ns[MOAT_POD_NS_MAX], pod[MOAT_POD_NAME_MAX];
	unsigned long long seq;		/* its number: 0 the first ever kept */
};

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
/*
 * The limit in force (enforce_limit() outside shadow mode, else none),
 * and in shadow mode the limit that would be (else none): reporters say
 * the two apart.
 */
double enforce_held(const struct moatd_group *g, enum moat_resource r);
double enforce_would(const struct moatd_group *g, enum moat_resource r);
unsigned long long enforce_throttles(const struct moatd_group *g);
/* In shadow mode, the steps down it would have taken on @g. */
unsigned long long enforce_shadow_throttles(const struct moatd_group *g);
/* "throttle", "release", "restore", "undo" ("none": a state only). */
const char *enforce_action_name(enum moat_ctl_action a);
/* The @i-th step of the action history, oldest first; NULL past the last. */
const struct enforce_record *enforce_history(const struct moatd *d, unsigned int i);
/* Steps ever kept: the next one's seq. */
unsigned long long enforce_history_total(const struct moatd *d);
/*
 * For reporters: the counters by chain, resource and action (@shadow:
 * shadow mode's, not written), and errors.
 */
unsigned long long enforce_actions(const struct moatd *d, bool shadow,
				   enum moat_resource chain, enum moat_resource r,
				   enum moat_ctl_action a);
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
