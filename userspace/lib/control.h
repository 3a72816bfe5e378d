/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_CONTROL_H
#define MOAT_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The controller's decision step: a pure function of one period's
 * observed numbers, the knobs and its own state, so that every rule below
 * is tested without a kernel.
 *
 * Each LC group has signals, each with a target, and each signal belongs
 * to the resource that BE groups contend for when it goes bad: run-queue
 * latency to CPU, memory pressure to memory.  More signals (CPI, LLC
 * occupancy) are rows in that table, and more resources (L3 ways, memory
 * bandwidth) are more limits per BE group.
 *
 * Per resource, every period:
 *  - violation: some LC group has a signal of the resource above its
 *    target.  For each violating LC group, worst first, up to `culprits`
 *    BE groups not in cooldown and above their floor get one
 *    multiplicative step down: limit = min(limit, usage) * (1 - decrease).
 *    For CPU the culprits are the BE groups the LC group's waits were
 *    charged to this period, most blamed first; a BE group that took none
 *    of its waits is left alone.  For memory, the largest users first.
 *  - slack: every LC group's signals of the resource are below
 *    target * slack_pct% (or not measured).  After `release_periods` such
 *    periods in a row, each throttled BE group gets one additive step up
 *    per period, + increase% of its reference, until the limit reaches
 *    the reference and the original setting is restored.
 *  - in between: hold.
 * The reference of a throttled BE group is what it had when first
 * throttled: min(original limit, usage).  Its floor, min_pct% of the
 * reference, bounds the throttling: BE work is slowed, never starved (a
 * starved task may hold a lock an LC task needs).
 */

enum moat_resource {
	MOAT_RES_CPU,		/* limit in CPUs */
	MOAT_RES_MEMORY,	/* limit in bytes */
	MOAT_RES_NR,
};

enum moat_signal {
	MOAT_SIG_RQLAT_P99,		/* us, time-weighted (hist.h) */
	MOAT_SIG_MEMORY_PRESSURE,	/* % of the period some task stalled */
	MOAT_SIG_NR,
};

extern const enum moat_resource moat_signal_resource[MOAT_SIG_NR];
extern const char *const moat_signal_names[MOAT_SIG_NR];
extern const char *const moat_resource_names[MOAT_RES_NR];

/* One LC group's period: NAN where not measured, a target of 0: none. */
struct moat_ctl_lc {
	double value[MOAT_SIG_NR];
	double target[MOAT_SIG_NR];
};

struct moat_ctl_limit {
	double limit;		/* INFINITY: not throttled by moat */
	double ref;		/* min(original, usage) at the first step */
	unsigned int cooldown;	/* periods before the next step down */
};

enum moat_ctl_action {
	MOAT_CTL_NONE,
	MOAT_CTL_THROTTLE,	/* limit lowered */
	MOAT_CTL_RELEASE,	/* limit raised, still throttled */
	MOAT_CTL_RESTORE,	/* back to the original setting */
};

/* One BE group: its numbers in, its limits in and out, what changed out. */
struct moat_ctl_be {
	double usage[MOAT_RES_NR];	/* CPUs, bytes; NAN: unknown */
	double orig[MOAT_RES_NR];	/* the original limit; INFINITY: none */
	struct moat_ctl_limit lim[MOAT_RES_NR];
	enum moat_ctl_action action[MOAT_RES_NR];
	int cause[MOAT_RES_NR];		/* the LC group (index) it was for */
};

struct moat_ctl_step {
	unsigned int decrease_pct;	/* per step down, of the limit */
	unsigned int increase_pct;	/* per step up, of the reference */
	unsigned int min_pct;		/* the floor, of the reference */
	unsigned int cooldown;		/* periods after a step down */
};

struct moat_ctl_params {
	struct moat_ctl_step step[MOAT_RES_NR];
	double floor_min[MOAT_RES_NR];	/* absolute least limit, whatever
					   the reference */
	unsigned int slack_pct;
	unsigned int release_periods;
	unsigned int culprits;		/* BE groups stepped per LC group */
};

struct moat_ctl_state {
	unsigned int slack_periods[MOAT_RES_NR];
	bool violated[MOAT_RES_NR];	/* out: in this period */
};

/**
 * moat_control_step() - decide one period.  @blame is an @nlc x @nbe
 * matrix (row per LC group) of the wait each BE group caused each LC
 * group this period, in ns.  Updates @be[].lim and sets @be[].action
 * and @be[].cause; updates @st.
 */
void moat_control_step(const struct moat_ctl_params *p,
		       struct moat_ctl_state *st,
		       const struct moat_ctl_lc *lc, size_t nlc,
		       const double *blame,
		       struct moat_ctl_be *be, size_t nbe);

/** moat_ctl_floor() - the least limit @l may be stepped down to. */
double moat_ctl_floor(const struct moat_ctl_params *p, enum moat_resource r,
		      const struct moat_ctl_limit *l);

#endif /* MOAT_CONTROL_H */
