// SPDX-License-Identifier: GPL-2.0-only
/*
 * The enforce module's actuators (userspace/moatd/enforce.c) on a moatd
 * without its loop (daemon.h), given plans built by hand: what is
 * committed, counted and said, and when.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include "daemon.h"
#include "enforce.h"

static const struct moat_cg_hierarchy nowhere = { .mnt = "/nonexistent" };

static unsigned long long knob_ull(struct moatd *d, const char *path)
{
	char buf[64];

	cr_assert_eq(moat_knob_get(d->tree, path, buf, sizeof(buf)), 0, "%s", path);
	return strtoull(buf, NULL, 10);
}

/*
 * A step on resctrl's BE class (L3 ways) is the BE unit's limit, counted
 * and logged only once rdt.c's schemata write did it: a refused write
 * showed a throttle that never happened, in the group's throttle, the
 * counters and the log.
 */
Test(enforce, an_l3_step_is_committed_only_after_its_write)
{
	struct moatd *d = daemon_new(&nowhere);
	struct moatd_group *be = daemon_add(d, "batch.etl", MOAT_GROUP_RULE,
					    MOAT_CLASS_BE, "/nonexistent/etl", 7);
	struct plan_step step = {
		.unit = be, .r = MOAT_RES_L3, .action = MOAT_CTL_THROTTLE,
		.lim = { .limit = 6, .ref = 11, .head = MOAT_RES_L3 },
		.chain = MOAT_RES_L3, .cause = "lc group web: cpi 2.1 > 1.5",
	};
	struct plan plan = { .steps = &step, .nr = 1, .cap = 1, .be_ways = 6,
			     .be_mb_pct = INFINITY };

	d->mode = MOATD_ENFORCE;
	enforce_act(d, &plan);
	cr_expect(isinf(enforce_limit(be, MOAT_RES_L3)),
		  "the L3 step is committed before resctrl's write: %g",
		  enforce_limit(be, MOAT_RES_L3));
	cr_expect_eq(enforce_throttles(be), 0);

	/* the schemata write refused: nothing happened */
	enforce_commit_rdt(d, &plan, -EINVAL);
	cr_expect(isinf(enforce_limit(be, MOAT_RES_L3)), "a refused step is shown: %g",
		  enforce_limit(be, MOAT_RES_L3));
	cr_expect_eq(enforce_throttles(be), 0);
	cr_expect_eq(knob_ull(d, "enforce/throttles"), 0);
	cr_expect_eq(enforce_write_errors(d), 1);
	cr_expect_eq(enforce_actions(d, MOAT_RES_L3, MOAT_RES_L3, MOAT_CTL_THROTTLE), 0);

	/* written: the step is the unit's */
	enforce_act(d, &plan);
	enforce_commit_rdt(d, &plan, 0);
	cr_expect_eq(enforce_limit(be, MOAT_RES_L3), 6);
	cr_expect_eq(enforce_throttles(be), 1);
	cr_expect_eq(knob_ull(d, "enforce/throttles"), 1);
	cr_expect_eq(enforce_actions(d, MOAT_RES_L3, MOAT_RES_L3, MOAT_CTL_THROTTLE), 1);
	daemon_free(d);
}
