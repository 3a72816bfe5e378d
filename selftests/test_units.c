// SPDX-License-Identifier: GPL-2.0-only
/*
 * Units (userspace/moatd/units.c) on a moatd without its loop
 * (daemon.h): which group is in which unit, and what a unit is when the
 * groups change under it.
 */
#include <criterion/criterion.h>
#include "daemon.h"
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
