/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_RDT_H
#define MOATD_RDT_H

/*
 * The rdt module: resctrl.  Says once what there is, or that there is
 * none; in enforce mode, moat_lc and moat_be and their members.
 */
#include <time.h>
#include "moatd.h"

extern const struct moatd_module rdt_module;

/* resctrl monitoring of one group; NAN or < 0: not known. */
struct rdt_mon {
	double total, local;		/* mbm_*_bytes at the window's start */
	struct timespec at;
	bool valid;
	double llc_bytes, total_bps, local_bps;
};

/*
 * A source: the BE class's ways and bandwidth % before the controller
 * and its floors (p->rdt_be_*), and the monitoring counters.
 */
void rdt_sample(struct moatd *d, struct period *p);
/*
 * The actuator: moat's groups, their schemata (BE: the plan's cap),
 * members.  Return: 0 when the BE group's schemata holds the plan's cap,
 * else why not (-errno), for enforce_commit_rdt().
 */
int rdt_act(struct moatd *d, const struct plan *plan);
/* The tasks that entered tracked units since the last call: into place. */
void rdt_take_tasks(struct moatd *d);

/* For reporters: a class group's monitoring, or a unit's; NULL: none. */
const struct rdt_mon *rdt_class_mon(const struct moatd *d, bool lc);
const struct rdt_mon *rdt_group_mon(const struct moatd_group *g);

#endif /* MOATD_RDT_H */
