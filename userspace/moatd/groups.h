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

/* rules/<name>: set (creating it) or, with "", remove. */
int rules_set(struct moatd *d, const char *name, const char *val);
/*
 * rules/<name> = @val as rules_set() would take it, changing nothing:
 * 0; -ENOENT for a name that is no id; -EINVAL, with what a rule's value
 * is in @why, the same words for a new rule as for one there.
 */
int rules_check(const char *name, const char *val, char *why, size_t len);
bool rules_exists(const struct moatd *d, const char *name);
/* Call @fn with each rule's name. */
void rules_for_each(const struct moatd *d,
		    void (*fn)(struct moatd *d, const char *name, void *ctx),
		    void *ctx);

#endif /* MOATD_GROUPS_H */
