/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_UNITS_H
#define MOATD_UNITS_H

/*
 * The signals module: units (a pod with its containers, or a rule's
 * cgroup) and each LC unit's signals and targets, derived once a period
 * from the sources, for the controller, the hints, the metrics and the
 * Node publisher alike.  Its knobs are the targets (lc/rqlat_p99_target_us,
 * lc/memory_pressure_target_pct and, per group,
 * groups/<id>/rqlat_p99_target_us) and enforce/min_waits, under which a
 * period's waits are too few for a p99.
 */
#include "moatd.h"

extern const struct moatd_module signals_module;

/* Each group's unit, and each unit's signals, into p->units. */
int units_build(struct moatd *d, struct period *p);

/* The unit whose outermost group is @g, or NULL (not a unit, not yet). */
const struct unit *unit_of(const struct period *p, const struct moatd_group *g);

/*
 * @u's worst signal of the resource @memory (else run-queue latency)
 * over its target; NAN: not measured.
 */
double unit_ratio(const struct unit *u, bool memory);

/* The node's memory pressure over the LC target; NAN: no PSI, no target. */
double node_memory_ratio(const struct moatd *d, const struct period *p);
/* The memory pressure target, %, that the node's row is judged by. */
double signals_memory_target(const struct moatd *d);
/* lc/rqlat_signal: "ap99" or "wp99", the p99 an LC unit's signal is. */
const char *units_rqlat_signal(const struct moatd *d);
/* The name of signal @s as the controller takes it (lc/rqlat_signal). */
const char *signals_name(const struct moatd *d, enum moat_signal s);

#endif /* MOATD_UNITS_H */
