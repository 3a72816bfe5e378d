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
 * to a chain of resources that BE groups contend for when it goes bad:
 * run-queue latency to CPU priority, then CPU time; memory pressure to
 * memory; CPI (a CPI² victim's, lib/cpi2.h) to L3 ways, then memory
 * bandwidth, then CPU time.  A chain is
 * tried in order: CPU priority (cpu.weight, then cpu.idle) costs BE
 * nothing while the LC groups sleep, a CPU quota costs it throughput
 * whatever they do.  A CPI victim's chain skips the priority: a cache or
 * memory-bandwidth antagonist hurts from another CPU, whatever its
 * weight.  Fewer cache ways and less bandwidth (resctrl) take away what
 * it thrashes and cost it less than CPU time; where there is no resctrl
 * only less CPU time means fewer of its misses (CPI² caps the
 * antagonist's CPU).  More signals (LLC occupancy) are rows in the
 * signal table, and more resources are more limits per BE group and
 * more chains.
 *
 * Chains may share a resource (CPU time: run-queue latency's and CPI's).
 * A limit remembers which chain stepped it last, and is judged by that
 * chain's signals; it is released only when every chain it belongs to
 * has had its slack.
 *
 * Per chain, every period:
 *  - violation: some LC group has a signal of the chain above its target.
 *    For each violating LC group, worst first, up to `culprits` BE groups
 *    get one multiplicative step down, limit = min(limit, usage) *
 *    (1 - decrease), of the first resource of the chain that can take
 *    one: not at its floor, not backed off.  A BE group with a step of
 *    the chain still in cooldown waits for that step's effect instead.
 *    For run-queue latency the culprits are the BE groups the LC group's
 *    waits were charged to this period, most blamed first; a BE group
 *    that took none of its waits is left alone; without blame (@blame
 *    NULL: the schedstat source), the largest CPU users.  For CPI, the victim's
 *    suspects, most correlated first; a BE group whose usage does not
 *    correlate with its CPI is left alone.  For memory, the largest
 *    users first.
 *  - judging: where a resource's `backoff` is set, each step down is
 *    judged once its cooldown is over.  It helped if the LC group it was
 *    for is now within its target, or min_effect_pct% less far over it.
 *    Less wait behind the BE group is not enough: a step costs BE work,
 *    and is worth that only if the LC group's signal shows it.  A step
 *    after which the LC group is further over its target than before is
 *    judged at once, in its cooldown: doing nothing would have been
 *    better (a quota's bursts make the waits it reacts to).  A step
 *    that did not help is undone, and the resource is left alone for that
 *    BE group for `backoff` periods, doubled after each further step that
 *    did not help: a CFS quota on a low-weight BE group can leave an LC
 *    group's waits as long as they were, or make them longer.
 *  - slack: every LC group's signals of the chain are below
 *    target * slack_pct% (or not measured).  After `release_periods` such
 *    periods in a row, each throttled BE group gets one additive step up
 *    per period, + increase% of its reference, of the last resource of
 *    the chain it is throttled on, until the limit reaches the reference
 *    and the original setting is restored; then the one before.  A
 *    resource may ask for more periods of slack (its `release`): the CPU
 *    priority costs BE little, and releasing it the moment the LC group
 *    has slack only brings the waits back (an on-off cycle).  A limit
 *    under snap_below (cpu.idle) steps up to snap_below first.  A
 *    release the chain is violated again within RELAPSE_PERIODS of is a
 *    relapse: the slack the next release waits for doubles (up to
 *    2^RELAPSE_DOUBLINGS times), and halves again after a release that
 *    held, so that a limit the LC group needs is held, not cycled
 *    between the step and its release.
 *  - in between: hold.
 * The reference of a throttled BE group is what it had when first
 * throttled: min(original limit, usage).  Its floor, min_pct% of the
 * reference, bounds the throttling: BE work is slowed, never starved (a
 * starved task may hold a lock an LC task needs).
 */

enum moat_resource {
	MOAT_RES_CPU_PRIO,	/* limit: a cgroup v2 weight, 0: SCHED_IDLE */
	MOAT_RES_CPU,		/* limit in CPUs */
	MOAT_RES_MEMORY,	/* limit in bytes */
	MOAT_RES_L3,		/* limit in L3 ways (resctrl) */
	MOAT_RES_MB,		/* limit in % of memory bandwidth (resctrl) */
	MOAT_RES_NR,
};

enum moat_signal {
	MOAT_SIG_RQLAT_P99,		/* us, the p99 lc/rqlat_signal picks:
					   ap99 or wp99 (hist.h, units.c) */
	MOAT_SIG_MEMORY_PRESSURE,	/* % of the period some task stalled */
	MOAT_SIG_CPI,			/* cycles per instruction; its target
					   is set only while a CPI² victim */
	MOAT_SIG_NR,
};

/* The first resource of each signal's chain: a chain is named by it. */
extern const enum moat_resource moat_signal_resource[MOAT_SIG_NR];
/* The resource after each in its chain; MOAT_RES_NR: the last. */
extern const enum moat_resource moat_resource_next[MOAT_RES_NR];
extern const char *const moat_signal_names[MOAT_SIG_NR];
extern const char *const moat_resource_names[MOAT_RES_NR];
/* Each chain's name, by its first resource; NULL: not a chain's first. */
extern const char *const moat_chain_names[MOAT_RES_NR];

/* One LC group's period: NAN where not measured, a target of 0: none. */
struct moat_ctl_lc {
	unsigned long long id;	/* the same in every period */
	double value[MOAT_SIG_NR];
	double target[MOAT_SIG_NR];
};

struct moat_ctl_limit {
	double limit;		/* INFINITY: not throttled by moat */
	double ref;		/* min(original, usage) at the first step */
	unsigned int cooldown;	/* periods before the next step down */
	/* The last step down, until it is judged. */
	double prev;		/* the limit before it */
	double judge;		/* how far over target its LC group was;
				   0: nothing to judge */
	unsigned long long cause_id;	/* that LC group's id */
	unsigned int backoff;	/* periods left alone after a useless step */
	unsigned int useless;	/* useless steps in a row */
	enum moat_resource head; /* the chain that stepped it last */
};

enum moat_ctl_action {
	MOAT_CTL_NONE,
	MOAT_CTL_THROTTLE,	/* limit lowered */
	MOAT_CTL_RELEASE,	/* limit raised, still throttled */
	MOAT_CTL_RESTORE,	/* back to the original setting */
	MOAT_CTL_UNDO,		/* the last step down did not help: undone */
};

/* One BE group: its numbers in, its limits in and out, what changed out. */
struct moat_ctl_be {
	double usage[MOAT_RES_NR];	/* CPUs, bytes; NAN: unknown */
	double orig[MOAT_RES_NR];	/* the original limit; INFINITY: none */
	/*
	 * Where own[r]: the group's own least limit and snap_below of @r,
	 * in place of the params' floor_min and snap_below (a pod's weight,
	 * a factor of its own, whose floor depends on the other BE pods').
	 */
	bool own[MOAT_RES_NR];
	double least[MOAT_RES_NR], snap[MOAT_RES_NR];
	struct moat_ctl_limit lim[MOAT_RES_NR];
	enum moat_ctl_action action[MOAT_RES_NR];
	int cause[MOAT_RES_NR];		/* the LC group (index) it was for */
	enum moat_resource chain[MOAT_RES_NR];	/* the chain that decided */
};

struct moat_ctl_step {
	unsigned int decrease_pct;	/* per step down, of the limit */
	unsigned int increase_pct;	/* per step up, of the reference */
	unsigned int min_pct;		/* the floor, of the reference */
	unsigned int cooldown;		/* periods after a step down */
	unsigned int backoff;		/* periods left alone after a step
					   that did not help; 0: not judged */
	unsigned int release;		/* periods of slack before its step
					   up, if more than release_periods */
};

struct moat_ctl_params {
	struct moat_ctl_step step[MOAT_RES_NR];
	double floor_min[MOAT_RES_NR];	/* absolute least limit, whatever
					   the reference */
	double snap_below[MOAT_RES_NR];	/* a step under this goes to the
					   floor: the least limit the
					   actuator can set above it */
	unsigned int slack_pct;
	unsigned int min_effect_pct;	/* a step that helped cut the harm
					   by this much */
	unsigned int release_periods;
	unsigned int culprits;		/* BE groups stepped per LC group */
};

/* A useless step's backoff doubles up to this many times. */
#define BACKOFF_DOUBLINGS	6

#define RELAPSE_PERIODS		10
#define RELAPSE_DOUBLINGS	6

/* Indexed by the first resource of each chain. */
struct moat_ctl_state {
	unsigned int slack_periods[MOAT_RES_NR];
	bool violated[MOAT_RES_NR];	/* out: in this period */
	/* periods since its last release, + 1; 0: none to judge */
	unsigned int release_age[MOAT_RES_NR];
	unsigned int relapses[MOAT_RES_NR];	/* each doubles the release's wait */
};

/**
 * moat_control_step() - decide one period.  @blame is an @nlc x @nbe
 * matrix (row per LC group) of the wait each BE group caused each LC
 * group this period, in ns, or NULL: not known; @suspect, the same shape, how well each BE
 * group's CPU usage correlates with each LC group's CPI (0: not a
 * suspect), or NULL: no suspects.  Updates @be[].lim and sets
 * @be[].action, @be[].cause and @be[].chain; updates @st.
 */
void moat_control_step(const struct moat_ctl_params *p,
		       struct moat_ctl_state *st,
		       const struct moat_ctl_lc *lc, size_t nlc,
		       const double *blame, const double *suspect,
		       struct moat_ctl_be *be, size_t nbe);

/** moat_ctl_floor() - the least limit @b's @l of @r may be stepped down to. */
double moat_ctl_floor(const struct moat_ctl_params *p, const struct moat_ctl_be *b,
		      enum moat_resource r, const struct moat_ctl_limit *l);

/** moat_chain_has() - whether the chain @head has the resource @r. */
bool moat_chain_has(enum moat_resource head, enum moat_resource r);

#endif /* MOAT_CONTROL_H */
