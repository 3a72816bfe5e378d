/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_BURSTPOL_H
#define MOAT_BURSTPOL_H

/*
 * CPU burst for LC groups throttled by their own limit (Documentation/
 * enforce.rst, "CPU burst for LC pods"): the pure part of the quota
 * lift's decision, unit-tested without a kernel.  The burst itself is a
 * share of the quota, set once a group is throttled (moatd/burst.c).
 */
#include <stdbool.h>

/* A unit, its burst and the node, as one period found them. */
struct moat_lift_in {
	double quota;		/* CPUs, its quota now (lifted or not) */
	double orig;		/* CPUs, its own quota (before a lift) */
	bool lifted;		/* moat lifted it */
	bool lc;		/* it is LC this period */
	bool throttled;		/* in this period's window */
	double usage;		/* CPUs used in the window; NAN: not known */
	double quiet_s;		/* since it was last throttled; NAN: never */
	/* its burst: whether the kernel has one and moat may set it, and
	   the burst in force against the most moat gives (s of CPU) */
	bool burst_possible;
	double burst_s, burst_want;
	double node_cpus, node_busy;	/* online, busy; NAN: not known */
	/* the knobs */
	bool lift;
	unsigned int max_pct, busy_pct;
};

/* Without its usage, a lifted unit not throttled this long fits its limit. */
#define MOAT_LIFT_QUIET_S	3

/**
 * moat_lift_step() - the quota lift's step for one unit this period.
 *
 * Up by a fifth while it is throttled with its burst spent (or none is
 * possible) and the node's CPU use is under @busy_pct of its CPUs: to at
 * most @max_pct of its own quota, and by no more than the node's idle
 * CPUs.  Down by a fifth while the node is busy (or not known) or the
 * unit fits under its own quota; its own back once there, and at once
 * when it is no longer LC or the lift is turned off.
 *
 * Return: the quota to write, in CPUs; NAN: its own quota back; 0:
 * nothing.
 */
double moat_lift_step(const struct moat_lift_in *in);

#endif /* MOAT_BURSTPOL_H */
