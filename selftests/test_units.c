// SPDX-License-Identifier: GPL-2.0-only
/*
 * Units (userspace/moatd/units.c) on a moatd without its loop
 * (daemon.h): which group is in which unit, and what a unit is when the
 * groups change under it.
 */
#include <math.h>
#include <criterion/criterion.h>
#include "daemon.h"
#include "helpers.h"
#include "units.h"

static const struct moat_cg_hierarchy nowhere = { .mnt = "/nonexistent" };

/*
 * A pod removed: its container's unit is never the freed pod, even where
 * the next units_build() cannot run (out of memory, it returned before
 * finding the units, and the container's unit pointed at the freed pod,
 * which cpi.c, rdt.c and enforce.c then read).
 */
Test(units, a_removed_pods_container_never_points_at_it)
{
	struct moatd *d = daemon_new(&nowhere);
	struct moatd_group *pod, *ctr, *other;

	pod = daemon_add(d, "pod-a", MOAT_GROUP_POD, MOAT_CLASS_BE, "/k/pod-a", 1);
	ctr = daemon_add(d, "ctr-a", MOAT_GROUP_CONTAINER, MOAT_CLASS_BE, "/k/pod-a/c", 2);
	other = daemon_add(d, "pod-b", MOAT_GROUP_POD, MOAT_CLASS_LC, "/k/pod-b", 3);
	cr_assert_eq(units_build(d, &d->period), 0);
	cr_assert_eq(ctr->unit, pod);
	cr_assert_eq(d->period.nr_units, 2);

	daemon_del(d, pod);
	/* before the next units_build(), as after one that failed */
	cr_expect_eq(ctr->unit, ctr, "the container's unit is the removed pod");
	cr_expect_eq(other->unit, other);
	cr_assert_eq(units_build(d, &d->period), 0);
	cr_expect_eq(ctr->unit, ctr);
	cr_expect_eq(d->period.nr_units, 2);
	cr_expect_not_null(unit_of(&d->period, ctr));
	daemon_free(d);
}

/*
 * An LC pod whose container its own CFS quota throttled in the window:
 * its unit says so, and no other unit does; NAN throttling (not read) is
 * none.  Without blame (schedstat) the controller then leaves its
 * run-queue signal out (enforce.c).
 */
Test(units, a_pod_throttled_by_its_own_limit_is_marked)
{
	struct moatd *d = daemon_new(&nowhere);
	struct moatd_group *pod, *ctr, *other;
	const struct unit *u;

	pod = daemon_add(d, "pod-a", MOAT_GROUP_POD, MOAT_CLASS_LC, "/k/pod-a", 1);
	ctr = daemon_add(d, "ctr-a", MOAT_GROUP_CONTAINER, MOAT_CLASS_LC, "/k/pod-a/c", 2);
	other = daemon_add(d, "pod-b", MOAT_GROUP_POD, MOAT_CLASS_LC, "/k/pod-b", 3);
	pod->win.throttled_periods = 0;
	ctr->win.throttled_periods = 3;
	other->win.throttled_periods = NAN;
	cr_assert_eq(units_build(d, &d->period), 0);
	u = unit_of(&d->period, pod);
	cr_assert_not_null(u);
	cr_expect(u->self_throttled, "a pod whose container was throttled is not marked");
	u = unit_of(&d->period, other);
	cr_assert_not_null(u);
	cr_expect(!u->self_throttled, "a pod not known throttled is marked");
	ctr->win.throttled_periods = 0;
	cr_assert_eq(units_build(d, &d->period), 0);
	cr_expect(!unit_of(&d->period, pod)->self_throttled, "the mark outlived its window");
	daemon_free(d);
}

/*
 * An LC pod at its own CPU limit: its container's waits at the limit,
 * which BPF charges to MOAT_CULPRIT_LIMIT, are left out of its unit's
 * p99, the longest first; its waits behind a BE pod stay in it.
 */
Test(units, a_pods_waits_at_its_own_limit_are_left_out_of_its_p99)
{
	struct moatd *d = daemon_new(&nowhere);
	struct moatd_group *pod, *ctr, *be;
	struct period *p = &d->period;
	struct blame_entry b[2];
	const struct unit *u;

	pod = daemon_add(d, "pod-a", MOAT_GROUP_POD, MOAT_CLASS_LC, "/k/pod-a", 1);
	ctr = daemon_add(d, "ctr-a", MOAT_GROUP_CONTAINER, MOAT_CLASS_LC, "/k/pod-a/c", 2);
	be = daemon_add(d, "pod-b", MOAT_GROUP_POD, MOAT_CLASS_BE, "/k/pod-b", 3);
	hist_put(&ctr->win_hist, 40, 1000);
	hist_put(&ctr->win_hist, 3000, 20);	/* behind the BE pod */
	hist_put(&ctr->win_hist, 60000, 15);	/* at its limit */
	ctr->win.throttled_periods = 5;
	p->secs = 1;
	p->blame_known = p->blame_valid = true;
	b[0] = (struct blame_entry){ .victim = 2, .culprit = 3, .delta_ns = 20 * 3e6,
				     .delta_count = 20 };
	b[1] = (struct blame_entry){ .victim = 2, .culprit = MOAT_CULPRIT_LIMIT,
				     .delta_ns = 15 * 60e6, .delta_count = 15 };
	p->blame = b;
	p->nr_blame = 2;
	cr_assert_eq(units_build(d, p), 0);
	u = unit_of(p, pod);
	cr_assert_not_null(u);
	cr_expect_eq(u->limit_waits, 15);
	cr_expect(u->rqlat_wp99_us > 2000 && u->rqlat_wp99_us < 5000,
		  "p99 %.0f us: not its waits behind BE (3 ms)", u->rqlat_wp99_us);
	cr_expect(u->lc.value[MOAT_SIG_RQLAT_P99] < 5000, "signal %.0f us",
		  u->lc.value[MOAT_SIG_RQLAT_P99]);
	/* not told which were at its limit: the 60 ms waits are its p99 */
	p->nr_blame = 1;
	cr_assert_eq(units_build(d, p), 0);
	u = unit_of(p, pod);
	cr_expect_gt(u->rqlat_wp99_us, 30000, "p99 %.0f us", u->rqlat_wp99_us);
	p->blame = NULL;
	p->nr_blame = 0;
	(void)be;
	daemon_free(d);
}
