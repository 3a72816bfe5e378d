// SPDX-License-Identifier: GPL-2.0-only
/*
 * The controller's decision step, without a kernel: violations throttle
 * the culprits in blame order, floors hold, slack releases stepwise back
 * to the original, cooldowns and hysteresis, memory.high steps, CPU
 * priority before quota, and steps that did not help undone.
 */
#include <math.h>
#include <string.h>
#include <criterion/criterion.h>
#include "control.h"

static struct moat_ctl_params params(void)
{
	return (struct moat_ctl_params){
		.step = {
			[MOAT_RES_CPU_PRIO] = { .decrease_pct = 90, .increase_pct = 10,
						.min_pct = 0, .cooldown = 0 },
			[MOAT_RES_CPU] = { .decrease_pct = 50, .increase_pct = 25,
					   .min_pct = 20, .cooldown = 0 },
			[MOAT_RES_MEMORY] = { .decrease_pct = 10, .increase_pct = 10,
					      .min_pct = 70, .cooldown = 0 },
		},
		.floor_min = { [MOAT_RES_CPU] = 0.01, [MOAT_RES_MEMORY] = 1 << 20 },
		.snap_below = { [MOAT_RES_CPU_PRIO] = 1 },
		.slack_pct = 50,
		.release_periods = 3,
		.culprits = 1,
	};
}

static struct moat_ctl_lc lc_with(double p99, double target)
{
	struct moat_ctl_lc lc = {
		.value = { [MOAT_SIG_RQLAT_P99] = p99,
			   [MOAT_SIG_MEMORY_PRESSURE] = NAN },
		.target = { [MOAT_SIG_RQLAT_P99] = target,
			    [MOAT_SIG_MEMORY_PRESSURE] = 10 },
	};

	return lc;
}

/* A BE group using @cpus, without limits, its priority not moat's. */
static struct moat_ctl_be be_using(double cpus)
{
	struct moat_ctl_be b = {
		.usage = { [MOAT_RES_CPU_PRIO] = NAN, [MOAT_RES_CPU] = cpus,
			   [MOAT_RES_MEMORY] = NAN, [MOAT_RES_L3] = NAN,
			   [MOAT_RES_MB] = NAN },
		.orig = { [MOAT_RES_CPU_PRIO] = INFINITY, [MOAT_RES_CPU] = INFINITY,
			  [MOAT_RES_MEMORY] = INFINITY, [MOAT_RES_L3] = INFINITY,
			  [MOAT_RES_MB] = INFINITY },
		.lim = { [MOAT_RES_CPU_PRIO] = { .limit = INFINITY },
			 [MOAT_RES_CPU] = { .limit = INFINITY },
			 [MOAT_RES_MEMORY] = { .limit = INFINITY },
			 [MOAT_RES_L3] = { .limit = INFINITY },
			 [MOAT_RES_MB] = { .limit = INFINITY } },
	};

	return b;
}

Test(control, violation_throttles_the_most_blamed_be_group_first)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = lc_with(5000, 1000);
	struct moat_ctl_be be[3] = { be_using(1), be_using(1), be_using(1) };
	double blame[3] = { 10, 900, 0 };

	moat_control_step(&p, &st, &lc, 1, blame, NULL, be, 3);
	cr_assert(st.violated[MOAT_RES_CPU_PRIO]);
	cr_assert_eq(be[1].action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
	cr_assert_eq(be[1].cause[MOAT_RES_CPU], 0);
	cr_assert_float_eq(be[1].lim[MOAT_RES_CPU].limit, 0.5, 1e-9);
	cr_assert_float_eq(be[1].lim[MOAT_RES_CPU].ref, 1, 1e-9);
	cr_assert_eq(be[0].action[MOAT_RES_CPU], MOAT_CTL_NONE);
	cr_assert(isinf(be[0].lim[MOAT_RES_CPU].limit));

	/* Still violated: culprits = 1 per LC group, the next in blame order
	 * only once the first can take no step; with 2, both at once. */
	p.culprits = 2;
	moat_control_step(&p, &st, &lc, 1, blame, NULL, be, 3);
	cr_assert_float_eq(be[1].lim[MOAT_RES_CPU].limit, 0.25, 1e-9);
	cr_assert_eq(be[0].action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
	cr_assert_eq(be[2].action[MOAT_RES_CPU], MOAT_CTL_NONE,
		     "a BE group that took none of the waits is left alone");
}

Test(control, floor_bounds_the_throttling)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = lc_with(5000, 1000);
	struct moat_ctl_be be = be_using(2);
	double blame = 100;
	int i;

	for (i = 0; i < 10; i++)
		moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	/* 20% of the 2 CPUs it used when first throttled. */
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 0.4, 1e-9);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE,
		     "at the floor: no further step");
	cr_assert_float_eq(moat_ctl_floor(&p, &be, MOAT_RES_CPU, &be.lim[MOAT_RES_CPU]),
			   0.4, 1e-9);

	/* An absolute floor under a tiny reference. */
	be = be_using(0.001);
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 0.01, 1e-9);
}

Test(control, step_down_starts_from_usage_and_a_finite_original)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = lc_with(5000, 1000);
	struct moat_ctl_be be = be_using(3);
	double blame = 100;

	be.orig[MOAT_RES_CPU] = 2;	/* its own cpu.max is 2 CPUs */
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].ref, 2, 1e-9);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 1, 1e-9);

	/* It now uses less than its limit: the next step is from usage. */
	be.usage[MOAT_RES_CPU] = 0.6;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 0.4, 1e-9);
}

Test(control, release_after_sustained_slack_back_to_the_original)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc bad = lc_with(5000, 1000), calm = lc_with(100, 1000);
	struct moat_ctl_be be = be_using(1);
	double blame = 100, limit;
	int i;

	moat_control_step(&p, &st, &bad, 1, &blame, NULL, &be, 1);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 0.5, 1e-9);

	/* Slack for release_periods - 1 periods: nothing moves yet. */
	for (i = 0; i < 2; i++) {
		moat_control_step(&p, &st, &calm, 1, &blame, NULL, &be, 1);
		cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE);
	}
	/* Then one additive step per period: 0.5 -> 0.75 -> restored. */
	moat_control_step(&p, &st, &calm, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_RELEASE);
	limit = be.lim[MOAT_RES_CPU].limit;
	cr_assert_float_eq(limit, 0.75, 1e-9);
	moat_control_step(&p, &st, &calm, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_RESTORE);
	cr_assert(isinf(be.lim[MOAT_RES_CPU].limit));
	moat_control_step(&p, &st, &calm, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE);
}

Test(control, between_slack_and_target_holds)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc bad = lc_with(5000, 1000), near = lc_with(700, 1000),
			   calm = lc_with(100, 1000);
	struct moat_ctl_be be = be_using(1);
	double blame = 100;
	int i;

	moat_control_step(&p, &st, &bad, 1, &blame, NULL, &be, 1);
	for (i = 0; i < 10; i++) {
		moat_control_step(&p, &st, &near, 1, &blame, NULL, &be, 1);
		cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE);
	}
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 0.5, 1e-9);
	/* A period in the band restarts the count of slack periods. */
	moat_control_step(&p, &st, &calm, 1, &blame, NULL, &be, 1);
	moat_control_step(&p, &st, &calm, 1, &blame, NULL, &be, 1);
	moat_control_step(&p, &st, &near, 1, &blame, NULL, &be, 1);
	moat_control_step(&p, &st, &calm, 1, &blame, NULL, &be, 1);
	moat_control_step(&p, &st, &calm, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE);
	moat_control_step(&p, &st, &calm, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_RELEASE);
}

Test(control, unmeasured_signals_neither_violate_nor_block_release)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc bad = lc_with(5000, 1000), idle = lc_with(NAN, 1000),
			   untargeted = lc_with(9000, 0);
	struct moat_ctl_be be = be_using(1);
	double blame = 100;
	int i;

	moat_control_step(&p, &st, &untargeted, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE, "no target: no violation");
	moat_control_step(&p, &st, &bad, 1, &blame, NULL, &be, 1);
	for (i = 0; i < 3; i++)
		moat_control_step(&p, &st, &idle, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_RELEASE);
}

Test(control, cooldown_spaces_the_steps_down)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = lc_with(5000, 1000);
	struct moat_ctl_be be = be_using(4);
	double blame = 100;

	p.step[MOAT_RES_CPU].cooldown = 2;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE);
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE);
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 1, 1e-9);
}

Test(control, worst_lc_group_picks_its_culprit_first)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc[2] = { lc_with(2000, 1000), lc_with(9000, 1000) };
	struct moat_ctl_be be[2] = { be_using(1), be_using(1) };
	/* Both LC groups blame BE 0 most; LC 1 is worse and claims it. */
	double blame[4] = { 50, 10, 80, 20 };

	moat_control_step(&p, &st, lc, 2, blame, NULL, be, 2);
	cr_assert_eq(be[0].cause[MOAT_RES_CPU], 1);
	cr_assert_eq(be[1].cause[MOAT_RES_CPU], 0,
		     "each BE group takes one step a period; LC 0 gets the next");
}

Test(control, memory_pressure_steps_memory_high_of_the_largest_user)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = lc_with(100, 1000);
	struct moat_ctl_be be[2] = { be_using(1), be_using(1) };
	double blame[2] = { 0, 0 };
	int i;

	be[0].usage[MOAT_RES_MEMORY] = 100 << 20;
	be[1].usage[MOAT_RES_MEMORY] = 400 << 20;
	lc.value[MOAT_SIG_MEMORY_PRESSURE] = 30;	/* target 10 */
	moat_control_step(&p, &st, &lc, 1, blame, NULL, be, 2);
	cr_assert(st.violated[MOAT_RES_MEMORY]);
	cr_assert(!st.violated[MOAT_RES_CPU_PRIO]);
	cr_assert_eq(be[1].action[MOAT_RES_MEMORY], MOAT_CTL_THROTTLE);
	cr_assert_float_eq(be[1].lim[MOAT_RES_MEMORY].limit, 360.0 * (1 << 20), 1);
	cr_assert_eq(be[0].action[MOAT_RES_MEMORY], MOAT_CTL_NONE);
	cr_assert_eq(be[1].action[MOAT_RES_CPU], MOAT_CTL_NONE);

	/* Never below 70% of the usage it had when first stepped. */
	for (i = 0; i < 20; i++) {
		be[1].usage[MOAT_RES_MEMORY] = be[1].lim[MOAT_RES_MEMORY].limit;
		moat_control_step(&p, &st, &lc, 1, blame, NULL, be, 2);
	}
	cr_assert_float_eq(be[1].lim[MOAT_RES_MEMORY].limit, 280.0 * (1 << 20), 1);

	/* Memory unknown (cgroup v1): nothing to step. */
	be[0] = be_using(1);
	be[1] = be_using(1);
	moat_control_step(&p, &st, &lc, 1, blame, NULL, be, 2);
	cr_assert_eq(be[0].action[MOAT_RES_MEMORY], MOAT_CTL_NONE);
	cr_assert_eq(be[1].action[MOAT_RES_MEMORY], MOAT_CTL_NONE);
}

/*
 * A BE pod just started uses next to nothing: memory.high at the floor
 * would reclaim nothing from it now and hold it there as it grows.  The
 * largest user that a step would reclaim from goes instead, and none
 * where none would.
 */
Test(control, memory_high_is_not_stepped_over_what_a_group_uses)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = lc_with(100, 1000);
	struct moat_ctl_be be[2] = { be_using(1), be_using(1) };
	double blame[2] = { 0, 0 };

	be[0].usage[MOAT_RES_MEMORY] = 64 << 10;	/* under the 1 MiB floor */
	be[1].usage[MOAT_RES_MEMORY] = 512 << 10;
	lc.value[MOAT_SIG_MEMORY_PRESSURE] = 30;	/* target 10 */
	moat_control_step(&p, &st, &lc, 1, blame, NULL, be, 2);
	cr_assert_eq(be[0].action[MOAT_RES_MEMORY], MOAT_CTL_NONE);
	cr_assert_eq(be[1].action[MOAT_RES_MEMORY], MOAT_CTL_NONE);
	cr_assert(isinf(be[0].lim[MOAT_RES_MEMORY].limit));
	cr_assert(isinf(be[1].lim[MOAT_RES_MEMORY].limit));

	/* grown past the floor: now a step reclaims from it */
	be[1].usage[MOAT_RES_MEMORY] = 2 << 20;
	moat_control_step(&p, &st, &lc, 1, blame, NULL, be, 2);
	cr_assert_eq(be[1].action[MOAT_RES_MEMORY], MOAT_CTL_THROTTLE);
	cr_assert_float_eq(be[1].lim[MOAT_RES_MEMORY].limit, 0.9 * (2 << 20), 1);
	cr_assert_eq(be[0].action[MOAT_RES_MEMORY], MOAT_CTL_NONE);
}

/* Weight 100 -> 10 -> 1 -> idle (0), and only then the quota. */
Test(control, cpu_priority_comes_before_the_quota)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = lc_with(5000, 1000);
	struct moat_ctl_be be = be_using(1);
	const double want[] = { 10, 1, 0 };
	double blame = 100;
	unsigned int i;

	be.orig[MOAT_RES_CPU_PRIO] = 100;
	for (i = 0; i < 3; i++) {
		moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
		cr_assert_eq(be.action[MOAT_RES_CPU_PRIO], MOAT_CTL_THROTTLE, "step %u", i);
		cr_assert_float_eq(be.lim[MOAT_RES_CPU_PRIO].limit, want[i], 1e-9);
		cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE);
		cr_assert(isinf(be.lim[MOAT_RES_CPU].limit));
	}
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU_PRIO], MOAT_CTL_NONE, "idle is the floor");
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 0.5, 1e-9);
}

Test(control, a_priority_step_in_cooldown_holds_the_quota_back)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = lc_with(5000, 1000);
	struct moat_ctl_be be = be_using(1);
	double blame = 100;

	be.orig[MOAT_RES_CPU_PRIO] = 100;
	p.step[MOAT_RES_CPU_PRIO].cooldown = 1;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU_PRIO], MOAT_CTL_THROTTLE);
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU_PRIO], MOAT_CTL_NONE);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE,
		     "the quota moved before the weight's effect was seen");
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU_PRIO], MOAT_CTL_THROTTLE);
}

/* cgroup v1's least weight is 2 shares, 0.2: a step under it is idle. */
Test(control, a_step_under_the_least_weight_goes_to_idle)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = lc_with(5000, 1000);
	struct moat_ctl_be be = be_using(1);
	double blame = 100;

	p.snap_below[MOAT_RES_CPU_PRIO] = 200.0 / 1024;
	be.orig[MOAT_RES_CPU_PRIO] = 200.0 / 1024;	/* kubelet's 2 shares */
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU_PRIO], MOAT_CTL_THROTTLE);
	cr_assert_eq(be.lim[MOAT_RES_CPU_PRIO].limit, 0);

	/* Already idle: no priority step left, the quota is next. */
	be = be_using(1);
	be.orig[MOAT_RES_CPU_PRIO] = 0;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU_PRIO], MOAT_CTL_NONE);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
}

Test(control, slack_releases_the_quota_before_the_priority)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc bad = lc_with(5000, 1000), calm = lc_with(100, 1000);
	struct moat_ctl_be be = be_using(1);
	double blame = 100;
	int i;

	be.orig[MOAT_RES_CPU_PRIO] = 100;
	for (i = 0; i < 4; i++)
		moat_control_step(&p, &st, &bad, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.lim[MOAT_RES_CPU_PRIO].limit, 0);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 0.5, 1e-9);
	for (i = 0; i < 3; i++)
		moat_control_step(&p, &st, &calm, 1, &blame, NULL, &be, 1);
	/* 0.5 -> 0.75 -> restored, the priority still idle meanwhile */
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_RELEASE);
	cr_assert_eq(be.action[MOAT_RES_CPU_PRIO], MOAT_CTL_NONE);
	moat_control_step(&p, &st, &calm, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_RESTORE);
	cr_assert_eq(be.lim[MOAT_RES_CPU_PRIO].limit, 0);
	/* then the priority: idle -> the least weight -> 11 ... -> 100 */
	moat_control_step(&p, &st, &calm, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU_PRIO], MOAT_CTL_RELEASE);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU_PRIO].limit, 1, 1e-9);
	for (i = 0; i < 20 && be.action[MOAT_RES_CPU_PRIO] == MOAT_CTL_RELEASE; i++)
		moat_control_step(&p, &st, &calm, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU_PRIO], MOAT_CTL_RESTORE);
	cr_assert_eq(i, 10, "10%% of the reference a period: 1 -> 91, then 100");
	cr_assert(isinf(be.lim[MOAT_RES_CPU_PRIO].limit));
}

/*
 * A quota after which the LC group is no better off is undone and left
 * alone for `backoff` periods, doubled each time it fails again; a step
 * that helped stays.  Less wait behind the BE group alone is not enough.
 */
Test(control, a_step_that_did_not_help_is_undone_and_backed_off)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = lc_with(5000, 1000);
	struct moat_ctl_be be = be_using(1);
	double blame = 100;
	int i, quiet;

	lc.id = 42;
	p.min_effect_pct = 10;
	p.step[MOAT_RES_CPU].backoff = 4;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 0.5, 1e-9);

	/* It helped (5x -> 3x over target): kept, the next one taken. */
	lc.value[MOAT_SIG_RQLAT_P99] = 3000;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 0.25, 1e-9);

	/* It did not (3x -> 2.8x, under 10% less, whatever the wait behind
	 * the BE group): back to 0.5, then left alone. */
	lc.value[MOAT_SIG_RQLAT_P99] = 2800;
	blame = 10;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_UNDO);
	cr_assert_eq(be.cause[MOAT_RES_CPU], 0);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 0.5, 1e-9);
	for (quiet = 0; quiet < 20; quiet++) {
		moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
		if (be.action[MOAT_RES_CPU] != MOAT_CTL_NONE)
			break;
	}
	cr_assert_eq(quiet, 3, "left alone for %d periods, not backoff - 1", quiet);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);

	/* Useless again: undone, and the backoff doubles. */
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_UNDO);
	for (i = 0; i < 20; i++) {
		moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
		if (be.action[MOAT_RES_CPU] != MOAT_CTL_NONE)
			break;
	}
	cr_assert_eq(i, 7);

	/* The first step undone: the original comes back. */
	be = be_using(1);
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_UNDO);
	cr_assert(isinf(be.lim[MOAT_RES_CPU].limit));
	cr_assert_eq(be.lim[MOAT_RES_CPU].backoff, 4);
}

/*
 * The priority may ask for more periods of slack than the quota: the
 * quota goes back after release_periods (3), the priority only once the
 * slack has lasted its own 8; a violation in between starts the count
 * over.
 */
Test(control, the_priority_waits_for_its_own_slack)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc bad = lc_with(5000, 1000), calm = lc_with(100, 1000);
	struct moat_ctl_be be = be_using(1);
	double blame = 100;
	int i, first = -1;

	p.step[MOAT_RES_CPU_PRIO].release = 8;
	be.orig[MOAT_RES_CPU_PRIO] = 100;
	moat_control_step(&p, &st, &bad, 1, &blame, NULL, &be, 1);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU_PRIO].limit, 10, 1e-9);
	for (i = 0; i < 4; i++)		/* the quota's 3 periods, and more */
		moat_control_step(&p, &st, &calm, 1, &blame, NULL, &be, 1);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU_PRIO].limit, 10, 1e-9,
			   "released before its 8 periods of slack");
	moat_control_step(&p, &st, &bad, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU_PRIO], MOAT_CTL_THROTTLE);
	for (i = 1; i <= 12 && first < 0; i++) {
		moat_control_step(&p, &st, &calm, 1, &blame, NULL, &be, 1);
		if (be.action[MOAT_RES_CPU_PRIO] == MOAT_CTL_RELEASE)
			first = i;
	}
	cr_assert_eq(first, 8, "the first step up after %d periods of slack, not 8", first);
}

/* A useless priority step is undone, and the quota is tried instead. */
Test(control, a_useless_priority_step_moves_on_to_the_quota)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = lc_with(5000, 1000);
	struct moat_ctl_be be = be_using(1);
	double blame = 100;

	p.step[MOAT_RES_CPU_PRIO].backoff = 10;
	be.orig[MOAT_RES_CPU_PRIO] = 100;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU_PRIO].limit, 10, 1e-9);
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU_PRIO], MOAT_CTL_UNDO);
	cr_assert(isinf(be.lim[MOAT_RES_CPU_PRIO].limit));
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU_PRIO], MOAT_CTL_NONE);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
}

/* Less wait behind the BE group, yet the LC group worse off: undone. */
Test(control, a_step_after_which_the_lc_group_is_worse_is_undone)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = lc_with(2000, 1000);
	struct moat_ctl_be be = be_using(1);
	double blame = 100;

	p.min_effect_pct = 10;
	p.step[MOAT_RES_CPU].backoff = 4;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
	blame = 20;
	lc.value[MOAT_SIG_RQLAT_P99] = 8000;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_UNDO);

	/* Within target after the step: it helped, whatever the blame. */
	be = be_using(1);
	lc.value[MOAT_SIG_RQLAT_P99] = 2000;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	lc.value[MOAT_SIG_RQLAT_P99] = 900;
	blame = 500;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 0.5, 1e-9);
}

/*
 * Do no harm: a quota step in its cooldown is judged early when the LC
 * group is worse the very next period (the quota's bursts made waits),
 * and undone then; one that leaves it no worse waits out its cooldown.
 */
Test(control, a_step_that_made_it_worse_is_undone_the_next_period)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = lc_with(4000, 1000);
	struct moat_ctl_be be = be_using(1);
	double blame = 100;

	lc.id = 7;
	p.min_effect_pct = 10;
	p.step[MOAT_RES_CPU].cooldown = 3;
	p.step[MOAT_RES_CPU].backoff = 4;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 0.5, 1e-9);

	/* the next period, 8x over target instead of 4x: undone at once */
	lc.value[MOAT_SIG_RQLAT_P99] = 8000;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_UNDO,
		     "a harmful step was kept into its cooldown (action %d)",
		     be.action[MOAT_RES_CPU]);
	cr_assert(isinf(be.lim[MOAT_RES_CPU].limit));
	cr_assert_eq(be.lim[MOAT_RES_CPU].backoff, 4);

	/* no worse (4x -> 3.9x): held for its cooldown, nothing undone */
	be = be_using(1);
	lc.value[MOAT_SIG_RQLAT_P99] = 4000;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
	lc.value[MOAT_SIG_RQLAT_P99] = 3900;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 0.5, 1e-9);

	/* within target: no step at all */
	be = be_using(1);
	lc.value[MOAT_SIG_RQLAT_P99] = 900;
	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE);
	cr_assert_eq(be.action[MOAT_RES_CPU_PRIO], MOAT_CTL_NONE);
}

/* A CPI² victim: run-queue latency within target, CPI over its threshold. */
static struct moat_ctl_lc cpi_victim(double cpi, double threshold)
{
	struct moat_ctl_lc lc = lc_with(100, 1000);

	lc.value[MOAT_SIG_CPI] = cpi;
	lc.target[MOAT_SIG_CPI] = threshold;
	return lc;
}

Test(control, a_cpi_victim_caps_its_most_correlated_suspect_not_its_priority)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = cpi_victim(2.4, 1.6);
	struct moat_ctl_be be[3] = { be_using(1), be_using(2), be_using(1) };
	double blame[3] = { 0, 0, 0 }, suspect[3] = { 0.7, 0.9, 0 };

	moat_control_step(&p, &st, &lc, 1, blame, suspect, be, 3);
	cr_assert(st.violated[MOAT_RES_L3]);
	cr_assert_not(st.violated[MOAT_RES_CPU_PRIO]);
	cr_assert_eq(be[1].action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
	cr_assert_eq(be[1].chain[MOAT_RES_CPU], MOAT_RES_L3);
	cr_assert_eq(be[1].cause[MOAT_RES_CPU], 0);
	cr_assert_float_eq(be[1].lim[MOAT_RES_CPU].limit, 1, 1e-9);
	cr_assert_eq(be[1].action[MOAT_RES_CPU_PRIO], MOAT_CTL_NONE,
		     "a cache antagonist's weight does not matter");
	cr_assert_eq(be[0].action[MOAT_RES_CPU], MOAT_CTL_NONE, "culprits = 1");
	cr_assert_eq(be[2].action[MOAT_RES_CPU], MOAT_CTL_NONE);

	/* the next suspect once the first is at its floor; never a BE group
	   whose usage does not correlate */
	p.culprits = 3;
	moat_control_step(&p, &st, &lc, 1, blame, suspect, be, 3);
	cr_assert_eq(be[0].action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
	cr_assert_eq(be[2].action[MOAT_RES_CPU], MOAT_CTL_NONE);
}

Test(control, a_cpi_victim_without_suspects_throttles_nothing)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = cpi_victim(2.4, 1.6);
	struct moat_ctl_be be = be_using(2);
	double blame = 0, suspect = 0;

	moat_control_step(&p, &st, &lc, 1, &blame, NULL, &be, 1);
	cr_assert(st.violated[MOAT_RES_L3]);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE);
	moat_control_step(&p, &st, &lc, 1, &blame, &suspect, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE);
	cr_assert(isinf(be.lim[MOAT_RES_CPU].limit));
}

/*
 * The quota is shared by two chains: slack in run-queue latency does not
 * release a quota a CPI victim still needs; once it is no victim (no
 * target), the quota comes back.
 */
Test(control, a_quota_for_a_cpi_victim_waits_for_its_slack_too)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc victim = cpi_victim(2.4, 1.6);
	struct moat_ctl_lc held = cpi_victim(1.5, 1.6);	/* under, no slack */
	struct moat_ctl_lc over = cpi_victim(NAN, 0);	/* no victim now */
	struct moat_ctl_be be = be_using(2);
	double blame = 0, suspect = 0.9;
	int i;

	moat_control_step(&p, &st, &victim, 1, &blame, &suspect, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
	for (i = 0; i < 10; i++) {
		moat_control_step(&p, &st, &held, 1, &blame, &suspect, &be, 1);
		cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE,
			     "released in period %d while the victim lasts", i);
	}
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 1, 1e-9);
	for (i = 0; i < 3 && be.action[MOAT_RES_CPU] == MOAT_CTL_NONE; i++)
		moat_control_step(&p, &st, &over, 1, &blame, NULL, &be, 1);
	cr_assert_eq(i, 3, "released after %d periods of slack, not 3", i);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_RELEASE);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU].limit, 1.5, 1e-9);
}

/* A CPI step is judged by CPI, not by the run-queue latency it left alone. */
Test(control, a_cpu_step_for_cpi_that_did_not_lower_it_is_undone)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc victim = cpi_victim(2.4, 1.6);
	struct moat_ctl_be be = be_using(2);
	double blame = 0, suspect = 0.9;

	p.min_effect_pct = 10;
	p.step[MOAT_RES_CPU].cooldown = 1;
	p.step[MOAT_RES_CPU].backoff = 5;
	moat_control_step(&p, &st, &victim, 1, &blame, &suspect, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
	moat_control_step(&p, &st, &victim, 1, &blame, &suspect, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE, "in cooldown");
	moat_control_step(&p, &st, &victim, 1, &blame, &suspect, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_UNDO);
	cr_assert_eq(be.chain[MOAT_RES_CPU], MOAT_RES_L3);
	cr_assert(isinf(be.lim[MOAT_RES_CPU].limit));

	/* where CPI fell enough, the step stays */
	be = be_using(2);
	st = (struct moat_ctl_state){};
	moat_control_step(&p, &st, &victim, 1, &blame, &suspect, &be, 1);
	moat_control_step(&p, &st, &victim, 1, &blame, &suspect, &be, 1);
	victim.value[MOAT_SIG_CPI] = 2.0;
	moat_control_step(&p, &st, &victim, 1, &blame, &suspect, &be, 1);
	cr_assert_neq(be.action[MOAT_RES_CPU], MOAT_CTL_UNDO);
	cr_assert_lt(be.lim[MOAT_RES_CPU].limit, 1.5);
}

/*
 * With resctrl, a CPI victim's suspect loses cache ways first, then
 * memory bandwidth, and its CPU time only when both are at their floors;
 * with slack they come back in the reverse order.
 */
Test(control, a_cpi_victim_takes_ways_then_bandwidth_then_cpu)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc victim = cpi_victim(2.4, 1.6);
	struct moat_ctl_lc gone = cpi_victim(NAN, 0);
	struct moat_ctl_be be = be_using(2);
	double blame = 0, suspect = 0.9;
	int i, steps[MOAT_RES_NR] = { 0 };

	p.step[MOAT_RES_L3] = (struct moat_ctl_step){ .decrease_pct = 50,
						      .increase_pct = 50 };
	p.step[MOAT_RES_MB] = (struct moat_ctl_step){ .decrease_pct = 50,
						      .increase_pct = 50 };
	p.floor_min[MOAT_RES_L3] = 2;
	p.floor_min[MOAT_RES_MB] = 20;
	be.orig[MOAT_RES_L3] = 11;	/* the BE group's ways */
	be.orig[MOAT_RES_MB] = 100;
	for (i = 0; i < 5; i++) {
		enum moat_resource r;

		moat_control_step(&p, &st, &victim, 1, &blame, &suspect, &be, 1);
		for (r = 0; r < MOAT_RES_NR; r++)
			if (be.action[r] == MOAT_CTL_THROTTLE)
				steps[r] = steps[r] ? steps[r] : i + 1;
	}
	cr_expect_eq(steps[MOAT_RES_L3], 1, "ways first");
	cr_expect_float_eq(be.lim[MOAT_RES_L3].limit, 2, 1e-9, "11 -> 5.5 -> 2.75 -> 2");
	cr_expect_eq(steps[MOAT_RES_MB], 4, "bandwidth once the ways are at 2");
	cr_expect_float_eq(be.lim[MOAT_RES_MB].limit, 25, 1e-9, "100 -> 50 -> 25");
	cr_expect_eq(steps[MOAT_RES_CPU], 0, "CPU time last: not yet");
	cr_expect_eq(steps[MOAT_RES_CPU_PRIO], 0);

	/* slack: bandwidth back first, then the ways */
	for (i = 0; i < 3; i++)
		moat_control_step(&p, &st, &gone, 1, &blame, NULL, &be, 1);
	cr_expect_eq(be.action[MOAT_RES_MB], MOAT_CTL_RELEASE);
	cr_expect_eq(be.action[MOAT_RES_L3], MOAT_CTL_NONE);
	for (i = 0; i < 4 && !isinf(be.lim[MOAT_RES_MB].limit); i++)
		moat_control_step(&p, &st, &gone, 1, &blame, NULL, &be, 1);
	cr_expect(isinf(be.lim[MOAT_RES_MB].limit), "bandwidth restored");
	moat_control_step(&p, &st, &gone, 1, &blame, NULL, &be, 1);
	cr_expect_eq(be.action[MOAT_RES_L3], MOAT_CTL_RELEASE);
}

/* Without blame (run-queue delay from schedstat): the largest CPU user. */
Test(control, without_blame_the_largest_cpu_user_is_the_culprit)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc lc = lc_with(5000, 1000);
	struct moat_ctl_be be[3] = { be_using(0.5), be_using(1.5), be_using(1) };

	/* be_using(): no priority to step, so the quota */
	moat_control_step(&p, &st, &lc, 1, NULL, NULL, be, 3);
	cr_assert_eq(be[1].action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);
	cr_assert_eq(be[1].chain[MOAT_RES_CPU], MOAT_RES_CPU_PRIO);
	cr_assert_eq(be[0].action[MOAT_RES_CPU], MOAT_CTL_NONE);
	cr_assert_eq(be[2].action[MOAT_RES_CPU], MOAT_CTL_NONE);
}

/*
 * A pod's weight is a factor of its own (1: kubelet's) with bounds of its
 * own: steps of 90% down to the factor where the least-weighted BE pod
 * is at the kernel's minimum (snap), then the per-task lever (0) where
 * there is one; released up through the snap.  Where there is no lever
 * the snap is the floor, and the quota comes next.
 */
Test(control, a_group_with_bounds_of_its_own_keeps_to_them)
{
	struct moat_ctl_params p = params();
	struct moat_ctl_state st = {};
	struct moat_ctl_lc bad = lc_with(5000, 1000), calm = lc_with(100, 1000);
	struct moat_ctl_be be = be_using(1), rule = be_using(1);
	double blame[2] = { 100, 100 };
	struct moat_ctl_be both[2];
	int i;

	be.orig[MOAT_RES_CPU_PRIO] = 1;
	be.own[MOAT_RES_CPU_PRIO] = true;
	be.least[MOAT_RES_CPU_PRIO] = 0;	/* the lever */
	be.snap[MOAT_RES_CPU_PRIO] = 0.004;	/* 2 of 512 shares */
	rule.orig[MOAT_RES_CPU_PRIO] = 100;	/* a rule's: the params' bounds */
	both[0] = be;
	both[1] = rule;
	p.culprits = 2;
	/* a pod's factor goes to its snap at once; a rule's weight steps */
	moat_control_step(&p, &st, &bad, 1, blame, NULL, both, 2);
	cr_assert_float_eq(both[0].lim[MOAT_RES_CPU_PRIO].limit, 0.004, 1e-9);
	cr_assert_float_eq(both[1].lim[MOAT_RES_CPU_PRIO].limit, 10, 1e-9);
	/* then the pod's lever, its own step */
	moat_control_step(&p, &st, &bad, 1, blame, NULL, both, 2);
	cr_assert_eq(both[0].lim[MOAT_RES_CPU_PRIO].limit, 0);
	cr_assert_float_eq(both[1].lim[MOAT_RES_CPU_PRIO].limit, 1, 1e-9);
	/* the rule's 0.1 is under its snap: idle; the pod's quota */
	moat_control_step(&p, &st, &bad, 1, blame, NULL, both, 2);
	cr_assert_eq(both[1].lim[MOAT_RES_CPU_PRIO].limit, 0);
	cr_assert_eq(both[0].action[MOAT_RES_CPU_PRIO], MOAT_CTL_NONE);
	cr_assert_eq(both[0].action[MOAT_RES_CPU], MOAT_CTL_THROTTLE, "the quota, after the lever");
	/* released: the quota first, then the factor up through the snap */
	for (i = 0; i < 30 && !isinf(both[0].lim[MOAT_RES_CPU].limit); i++)
		moat_control_step(&p, &st, &calm, 1, blame, NULL, both, 2);
	cr_assert(isinf(both[0].lim[MOAT_RES_CPU].limit));
	cr_assert_eq(both[0].lim[MOAT_RES_CPU_PRIO].limit, 0);
	moat_control_step(&p, &st, &calm, 1, blame, NULL, both, 2);
	cr_assert_float_eq(both[0].lim[MOAT_RES_CPU_PRIO].limit, 0.004, 1e-9);
	moat_control_step(&p, &st, &calm, 1, blame, NULL, both, 2);
	cr_assert_float_eq(both[0].lim[MOAT_RES_CPU_PRIO].limit, 0.104, 1e-9);
	for (i = 0; i < 30 && !isinf(both[0].lim[MOAT_RES_CPU_PRIO].limit); i++)
		moat_control_step(&p, &st, &calm, 1, blame, NULL, both, 2);
	cr_assert_eq(both[0].action[MOAT_RES_CPU_PRIO], MOAT_CTL_RESTORE, "never back to 1");

	/* no lever: the snap is its floor, and the quota is next */
	be.least[MOAT_RES_CPU_PRIO] = 0.004;
	memset(&st, 0, sizeof(st));
	moat_control_step(&p, &st, &bad, 1, blame, NULL, &be, 1);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU_PRIO].limit, 0.004, 1e-9);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_NONE);
	moat_control_step(&p, &st, &bad, 1, blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU], MOAT_CTL_THROTTLE);

	/* a floor over the snap is kept: the step goes no lower */
	be = be_using(1);
	be.orig[MOAT_RES_CPU_PRIO] = 1;
	be.own[MOAT_RES_CPU_PRIO] = true;
	be.least[MOAT_RES_CPU_PRIO] = 0;
	be.snap[MOAT_RES_CPU_PRIO] = 0.004;
	p.step[MOAT_RES_CPU_PRIO].min_pct = 50;
	memset(&st, 0, sizeof(st));
	moat_control_step(&p, &st, &bad, 1, blame, NULL, &be, 1);
	cr_assert_float_eq(be.lim[MOAT_RES_CPU_PRIO].limit, 0.5, 1e-9);
	p.step[MOAT_RES_CPU_PRIO].min_pct = 0;

	/* no weight moat may lower (snap 1): the lever at once */
	be = be_using(1);
	be.orig[MOAT_RES_CPU_PRIO] = 1;
	be.own[MOAT_RES_CPU_PRIO] = true;
	be.least[MOAT_RES_CPU_PRIO] = 0;
	be.snap[MOAT_RES_CPU_PRIO] = 1;
	memset(&st, 0, sizeof(st));
	moat_control_step(&p, &st, &bad, 1, blame, NULL, &be, 1);
	cr_assert_eq(be.action[MOAT_RES_CPU_PRIO], MOAT_CTL_THROTTLE);
	cr_assert_eq(be.lim[MOAT_RES_CPU_PRIO].limit, 0);
}
