// SPDX-License-Identifier: GPL-2.0-only
/*
 * The quota lift's decision (userspace/lib/burstpol.c), without a kernel:
 * when an LC unit's own quota goes up, how far, and when it comes back.
 */
#include <math.h>
#include <criterion/criterion.h>
#include "burstpol.h"

/* A pod of 0.2 CPU, throttled with its burst spent, on an idle 2-CPU node. */
static struct moat_lift_in base(void)
{
	return (struct moat_lift_in){
		.quota = 0.2, .orig = 0.2, .lc = true, .throttled = true,
		.usage = 0.2, .quiet_s = 0, .burst_possible = true,
		.burst_s = 0.02, .burst_want = 0.02,
		.node_cpus = 2, .node_busy = 0.3, .claimed = 0,
		.members_cap = INFINITY,
		.lift = true, .max_pct = 300, .busy_pct = 60,
	};
}

Test(burstpol, throttled_with_the_burst_spent_goes_up_a_fifth)
{
	struct moat_lift_in in = base();

	cr_expect_float_eq(moat_lift_step(&in), 0.24, 1e-9);
	in.lift = false;
	cr_expect_eq(moat_lift_step(&in), 0, "the lift off and a step");
	in = base();
	in.throttled = false;
	cr_expect_eq(moat_lift_step(&in), 0, "not throttled and a step");
	in = base();
	in.lc = false;
	cr_expect_eq(moat_lift_step(&in), 0, "a BE unit lifted");
}

/* The burst first: no lift while the burst in force is under its most. */
Test(burstpol, the_burst_comes_first)
{
	struct moat_lift_in in = base();

	in.burst_s = 0;
	cr_expect_eq(moat_lift_step(&in), 0, "lifted before the burst was given");
	in.burst_s = 0.01;
	cr_expect_eq(moat_lift_step(&in), 0, "lifted with the burst not all given");
}

/* A kernel without CFS burst (before 5.14): the lift alone. */
Test(burstpol, a_kernel_without_burst_gets_the_lift_only)
{
	struct moat_lift_in in = base();

	in.burst_possible = false;
	in.burst_s = 0;
	cr_expect_float_eq(moat_lift_step(&in), 0.24, 1e-9);
}

Test(burstpol, never_over_its_max_nor_the_nodes_idle_cpus)
{
	struct moat_lift_in in = base();

	in.lifted = true;
	in.quota = 0.55;
	cr_expect_float_eq(moat_lift_step(&in), 0.6, 1e-9, "past 300%% of 0.2");
	in.quota = 0.6;
	cr_expect_eq(moat_lift_step(&in), 0, "a step at its most");
	in = base();
	in.busy_pct = 100;
	in.node_busy = 1.98;	/* 0.02 CPU idle */
	cr_expect_float_eq(moat_lift_step(&in), 0.22, 1e-9, "more than the idle CPUs");
}

Test(burstpol, down_a_fifth_when_busy_and_its_own_back_there)
{
	struct moat_lift_in in = base();

	in.lifted = true;
	in.quota = 0.4;
	in.node_busy = 1.5;	/* 75% of 2 CPUs */
	cr_expect_float_eq(moat_lift_step(&in), 0.32, 1e-9);
	in.quota = 0.24;
	cr_expect(isnan(moat_lift_step(&in)), "0.192 is under its own 0.2: its own back");
	in.quota = 0.4;
	in.node_busy = NAN;
	cr_expect_float_eq(moat_lift_step(&in), 0.32, 1e-9, "the node not known and held up");
	in.node_busy = 0.3;
	in.lc = false;
	cr_expect(isnan(moat_lift_step(&in)), "no longer LC and still lifted");
	in.lc = true;
	in.lift = false;
	cr_expect(isnan(moat_lift_step(&in)), "the lift off and still lifted");
}

/* Lifted, the node idle: down once it fits under its own quota. */
Test(burstpol, down_when_it_fits_its_own_quota)
{
	struct moat_lift_in in = base();

	in.lifted = true;
	in.quota = 0.4;
	in.throttled = false;
	in.usage = 0.3;
	cr_expect_eq(moat_lift_step(&in), 0, "down while it uses more than its own");
	in.usage = 0.1;
	cr_expect_float_eq(moat_lift_step(&in), 0.32, 1e-9);
	/* its usage not known (v1 without cpuacct): after 3 s unthrottled */
	in.usage = NAN;
	in.quiet_s = 1;
	cr_expect_eq(moat_lift_step(&in), 0, "down a second after a throttling");
	in.quiet_s = MOAT_LIFT_QUIET_S + 0.1;
	cr_expect_float_eq(moat_lift_step(&in), 0.32, 1e-9);
}

/* A unit without a quota (or its quota gone to max under a lift). */
Test(burstpol, no_quota_no_lift)
{
	struct moat_lift_in in = base();

	in.quota = NAN;
	cr_expect_eq(moat_lift_step(&in), 0);
	in.lifted = true;
	cr_expect(isnan(moat_lift_step(&in)), "lifted, its quota gone to max: its own not put back");
}

/*
 * Its members' quotas bind first (a pod's containers each hold a share
 * of its limit, as kubelet sets them): lifting the unit's frees nothing.
 */
Test(burstpol, no_lift_where_its_members_quotas_bind)
{
	struct moat_lift_in in = base();

	in.members_cap = 0.2;
	cr_expect_eq(moat_lift_step(&in), 0, "lifted past its members' 0.2 together");
	in.lifted = true;
	in.quota = 0.24;
	cr_expect(isnan(moat_lift_step(&in)), "lifted while its members bind, not put back");
	/* their quotas together over its own: up to theirs, no further */
	in = base();
	in.members_cap = 0.3;
	cr_expect_float_eq(moat_lift_step(&in), 0.24, 1e-9);
	in.lifted = true;
	in.quota = 0.28;
	cr_expect_float_eq(moat_lift_step(&in), 0.3, 1e-9, "past its members' 0.3");
	in.quota = 0.3;
	cr_expect_eq(moat_lift_step(&in), 0, "a step at its members' most");
}

/*
 * A deadband under its own quota: a lifted unit that uses a little less
 * than its own limit stays lifted; one that uses far less comes down.
 * Without it a service near its limit went up and down each period.
 */
Test(burstpol, a_lifted_unit_near_its_own_limit_is_held)
{
	struct moat_lift_in in = base();

	in.lifted = true;
	in.quota = 0.4;
	in.throttled = false;
	in.usage = 0.2 * MOAT_LIFT_FITS + 0.01;
	cr_expect_eq(moat_lift_step(&in), 0, "down, using %.2f of its own 0.2", in.usage);
	in.usage = 0.2 * MOAT_LIFT_FITS - 0.01;
	cr_expect_float_eq(moat_lift_step(&in), 0.32, 1e-9);
}

/* The node's threshold: up under it, down only well past it, held between. */
Test(burstpol, the_nodes_threshold_has_hysteresis)
{
	struct moat_lift_in in = base();
	double between = (in.busy_pct + MOAT_LIFT_BUSY_HYST / 2.0) / 100 * in.node_cpus;

	in.node_busy = between;
	cr_expect_eq(moat_lift_step(&in), 0, "up with the node at %.0f%%",
		     between / in.node_cpus * 100);
	in.lifted = true;
	in.quota = 0.4;
	cr_expect_eq(moat_lift_step(&in), 0, "down with the node at %.0f%%",
		     between / in.node_cpus * 100);
	in.node_busy = (in.busy_pct + MOAT_LIFT_BUSY_HYST) / 100.0 * in.node_cpus;
	cr_expect_float_eq(moat_lift_step(&in), 0.32, 1e-9);
}

/* Two units lifted in one period share the node's idle CPUs, not take them twice. */
Test(burstpol, idle_cpus_taken_by_other_lifts_are_not_given_again)
{
	struct moat_lift_in in = base();

	in.busy_pct = 100;
	in.node_busy = 1.9;	/* 0.1 CPU idle */
	cr_expect_float_eq(moat_lift_step(&in), 0.24, 1e-9);
	in.claimed = 0.08;
	cr_expect_float_eq(moat_lift_step(&in), 0.22, 1e-9, "0.08 of 0.1 taken");
	in.claimed = 0.1;
	cr_expect_eq(moat_lift_step(&in), 0, "all of them taken and a step");
}
