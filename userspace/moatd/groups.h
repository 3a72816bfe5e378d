/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_GROUPS_H
#define MOATD_GROUPS_H

/*
 * The groups module: which cgroups are groups (Kubernetes pods and
 * containers, and cgroups rules match), their classes (QoS defaults,
 * rules, per-group overrides), and the cgroup events that say when to
 * look again: removed cgroups and tasks entering tracked units.
 */
#include "moatd.h"

#define MOATD_MAX_RULES		64

extern const struct moatd_module groups_module;

/*
 * Walk the hierarchy when a cgroup event said something changed, when a
 * rule did, and at least every rescan_ms; add and drop groups (each
 * module hears of it).
 */
void groups_update(struct moatd *d);

/* Take the cgroup events waiting; false when there are none to take. */
bool groups_take_events(struct moatd *d);
/* The fd that polls readable when events wait, or -1. */
int groups_events_fd(const struct moatd *d);
/* A task that entered a tracked unit since the last call, one at a time. */
bool groups_next_task(struct moatd *d, __u64 *unit, __u32 *tid, bool *lost);
/* Hear of the tasks that enter these units (resctrl's membership). */
int groups_track_tasks(struct moatd *d, const __u64 *units, size_t n);

/*
 * Rules, three families of "<glob> <class>" knobs made and removed at
 * run time: rules/<name> on a cgroup's path, classes/priority/<name> on
 * a pod's priorityClassName, classes/namespace/<name> on its namespace.
 */
enum rule_family { RULES_PATH, RULES_PRIORITY, RULES_NAMESPACE, RULES_NR };

/* A rule's name in @path ("rules/web" -> "web"), its family; NULL: no rule. */
const char *rules_name(const char *path, enum rule_family *family);
/* Set the rule at @path (creating it) or, with "", remove it. */
int rules_set(struct moatd *d, const char *path, const char *val);
/*
 * The rule at @path = @val as rules_set() would take it, changing
 * nothing: 0; -ENOENT for a name that is no id; -EINVAL, with what a
 * rule's value is in @why, the same words for a new rule as for one there.
 */
int rules_check(const char *path, const char *val, char *why, size_t len);
bool rules_exists(const struct moatd *d, const char *path);
/* Call @fn with each rule's path. */
void rules_for_each(const struct moatd *d,
		    void (*fn)(struct moatd *d, const char *path, void *ctx),
		    void *ctx);

/*
 * Each group's class again, from its override, its pod's metadata, the
 * rules and its tier (after pods.c changed what it knows); a class that
 * changed is said.
 */
void groups_reclassify(struct moatd *d);
/* Job pods that are LC by their QoS tier's class alone (said in the log). */
size_t groups_lc_jobs(const struct moatd *d);

#endif /* MOATD_GROUPS_H */
