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
	cr_expect_eq(enforce_actions(d, false, MOAT_RES_L3, MOAT_RES_L3, MOAT_CTL_THROTTLE), 0);

	/* written: the step is the unit's */
	enforce_act(d, &plan);
	enforce_commit_rdt(d, &plan, 0);
	cr_expect_eq(enforce_limit(be, MOAT_RES_L3), 6);
	cr_expect_eq(enforce_throttles(be), 1);
	cr_expect_eq(knob_ull(d, "enforce/throttles"), 1);
	cr_expect_eq(enforce_actions(d, false, MOAT_RES_L3, MOAT_RES_L3, MOAT_CTL_THROTTLE), 1);
	daemon_free(d);
}

/*
 * Shadow mode: a step is committed as the controller's limit, so that its
 * next steps start from it, but nothing is written (the group's directory
 * does not exist: a write would fail and be refused), nothing journaled;
 * it is counted apart from enforce's, kept in the history, and reported
 * as what would be, never as what is.  Leaving shadow forgets it.
 */
Test(enforce, a_shadow_step_is_the_controllers_and_is_not_written)
{
	struct moatd *d = daemon_new(&nowhere);
	struct moatd_group *be = daemon_add(d, "batch.etl", MOAT_GROUP_RULE,
					    MOAT_CLASS_BE, "/nonexistent/etl", 7);
	struct plan_step step[2] = { {
		.unit = be, .r = MOAT_RES_CPU, .action = MOAT_CTL_THROTTLE,
		.lim = { .limit = 1.2, .ref = 2, .head = MOAT_RES_CPU },
		.chain = MOAT_RES_CPU, .cause = "lc group web: rqlat_p99 4000.0 > 1000.0",
	}, {
		.unit = be, .r = MOAT_RES_L3, .action = MOAT_CTL_THROTTLE,
		.lim = { .limit = 6, .ref = 11, .head = MOAT_RES_L3 },
		.chain = MOAT_RES_L3, .cause = "lc group web: cpi 2.1 > 1.5",
	} };
	struct plan plan = { .steps = step, .nr = 2, .cap = 2, .be_ways = 6,
			     .be_mb_pct = INFINITY, .be_weight = INFINITY };
	const struct enforce_record *rec;
	char buf[MOAT_KNOB_VALUE_MAX];

	d->mode = MOATD_SHADOW;
	enforce_act(d, &plan);
	/* resctrl's write is not made in shadow: the step is act()'s */
	enforce_commit_rdt(d, &plan, -EOPNOTSUPP);
	cr_expect_eq(enforce_limit(be, MOAT_RES_CPU), 1.2, "the controller's limit");
	cr_expect_eq(enforce_limit(be, MOAT_RES_L3), 6);
	cr_expect_eq(enforce_would(be, MOAT_RES_CPU), 1.2);
	cr_expect(isinf(enforce_held(be, MOAT_RES_CPU)), "shown as held: %g",
		  enforce_held(be, MOAT_RES_CPU));
	cr_expect(isinf(enforce_held(be, MOAT_RES_L3)));
	cr_expect_eq(enforce_write_errors(d), 0, "a write was tried");
	cr_expect_eq(d->journal->n, 0, "journaled: %zu", d->journal->n);
	cr_expect_eq(enforce_throttles(be), 0);
	cr_expect_eq(enforce_shadow_throttles(be), 2);
	cr_expect_eq(knob_ull(d, "enforce/throttles"), 0);
	cr_expect_eq(knob_ull(d, "enforce/shadow_steps"), 2);
	cr_expect_eq(enforce_actions(d, false, MOAT_RES_CPU, MOAT_RES_CPU, MOAT_CTL_THROTTLE), 0);
	cr_expect_eq(enforce_actions(d, true, MOAT_RES_CPU, MOAT_RES_CPU, MOAT_CTL_THROTTLE), 1);
	cr_expect_eq(enforce_actions(d, true, MOAT_RES_L3, MOAT_RES_L3, MOAT_CTL_THROTTLE), 1);
	cr_assert_eq(moat_knob_get(d->tree, "groups/batch.etl/throttle", buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, "cpu_prio=max cpu=max memory=max l3=max mb=max");

	/* the history, oldest first, and its knob */
	rec = enforce_history(d, 0);
	cr_assert_not_null(rec);
	cr_expect(rec->shadow);
	cr_expect_eq(rec->action, MOAT_CTL_THROTTLE);
	cr_expect_str_eq(rec->group, "batch.etl");
	cr_expect_str_eq(rec->from, "max");
	cr_expect_str_eq(rec->to, "1.200");
	cr_expect_str_eq(rec->cause, step[0].cause);
	cr_expect_not_null(enforce_history(d, 1));
	cr_expect_null(enforce_history(d, 2));
	cr_assert_eq(moat_knob_get(d->tree, "enforce/history/00", buf, sizeof(buf)), 0);
	cr_expect(strstr(buf, " shadow throttle batch.etl cpu_max max -> 1.200: lc group web: rqlat_p99"),
		  "%s", buf);
	cr_assert_eq(moat_knob_get(d->tree, "enforce/history/02", buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, "");

	/* leaving shadow: what it would hold is forgotten, the count kept */
	cr_expect_eq(moatd_restore(d, "mode enforce"), 0);
	d->mode = MOATD_ENFORCE;
	cr_expect(isinf(enforce_limit(be, MOAT_RES_CPU)), "%g", enforce_limit(be, MOAT_RES_CPU));
	cr_expect(isinf(enforce_limit(be, MOAT_RES_L3)));
	cr_expect_eq(knob_ull(d, "enforce/shadow_steps"), 2);
	daemon_free(d);
}

/* The history keeps the last ENFORCE_HISTORY steps, oldest first. */
Test(enforce, the_history_keeps_the_last_steps)
{
	struct moatd *d = daemon_new(&nowhere);
	struct moatd_group *be = daemon_add(d, "batch.etl", MOAT_GROUP_RULE,
					    MOAT_CLASS_BE, "/nonexistent/etl", 7);
	struct plan_step step = {
		.unit = be, .r = MOAT_RES_CPU, .action = MOAT_CTL_THROTTLE,
		.chain = MOAT_RES_CPU,
	};
	struct plan plan = { .steps = &step, .nr = 1, .cap = 1, .be_ways = INFINITY,
			     .be_mb_pct = INFINITY, .be_weight = INFINITY };
	const struct enforce_record *rec;
	unsigned int i;

	d->mode = MOATD_SHADOW;
	for (i = 0; i < ENFORCE_HISTORY + 5; i++) {
		step.lim.limit = 4.0 / (i + 1);
		enforce_act(d, &plan);
	}
	for (i = 0; (rec = enforce_history(d, i)); i++)
		cr_expect_eq(strtod(rec->to, NULL), round(4000.0 / (i + 6)) / 1000,
			     "record %u: %s", i, rec->to);
	cr_expect_eq(i, ENFORCE_HISTORY);
	daemon_free(d);
}
