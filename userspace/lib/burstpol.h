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
	double claimed;		/* idle CPUs other units' lifts took this period */
	/*
	 * The most its members' own quotas let it use together (a
	 * container's, the runtime's): INFINITY where a member has none.
	 * Where that is no more than its quota, its quota is not what
	 * throttles it, and lifting it frees nothing.
	 */
	double members_cap;
	/* the knobs */
	bool lift;
	unsigned int max_pct, busy_pct;
};

/* Without its usage, a lifted unit not throttled this long fits its limit. */
#define MOAT_LIFT_QUIET_S	3
/* A lifted unit comes down when it uses less than this share of its own quota... */
#define MOAT_LIFT_FITS		0.8
/* ...or the node is this many points over burst/lift_node_busy_pct. */
#define MOAT_LIFT_BUSY_HYST	10

/**
 * moat_lift_step() - the quota lift's step for one unit this period.
 *
 * Up by a fifth while it is throttled with its burst spent (or none is
 * possible), its own quota is what throttles it (not its members'), and
 * the node's CPU use is under @busy_pct of its CPUs: to at most @max_pct
 * of its own quota, and by no more than the node's idle CPUs that other
 * lifts did not take this period.  Down by a fifth while the node is
 * MOAT_LIFT_BUSY_HYST points past @busy_pct (or not known), or the unit
 * uses under MOAT_LIFT_FITS of its own quota: a deadband either side, so
 * that a unit near its limit or a node near the threshold is held, not
 * moved up and down each period.  Its own back once there, and at once
 * when it is no longer LC, the lift is turned off, or its members'
 * quotas bind.
 *
 * Return: the quota to write, in CPUs; NAN: its own quota back; 0:
 * nothing.
 */
double moat_lift_step(const struct moat_lift_in *in);

#endif /* MOAT_BURSTPOL_H */
