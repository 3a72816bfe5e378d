// SPDX-License-Identifier: GPL-2.0-only
/* Eviction's pure decision: the order, the memory trigger, the rate. */
#include <math.h>
#include <stdlib.h>
#include <criterion/criterion.h>
#include "evictpol.h"

static int cmp(const void *a, const void *b)
{
	return moat_evict_cmp(a, b);
}

Test(evict, lowest_priority_first_then_the_largest_memory_user)
{
	struct moat_evict_cand c[] = {
		{ 0, 1e9 }, { -10, 5e8 }, { 0, 2e9 }, { -10, NAN }, { 1000, 8e9 },
	};

	qsort(c, 5, sizeof(c[0]), cmp);
	cr_expect_eq(c[0].priority, -10);
	cr_expect_eq(c[0].memory, 5e8, "known usage before unknown");
	cr_expect(isnan(c[1].memory));
	cr_expect_eq(c[2].memory, 2e9, "the larger of two at priority 0 first");
	cr_expect_eq(c[3].memory, 1e9);
	cr_expect_eq(c[4].priority, 1000, "the highest priority last, however large");
}

Test(evict, memory_waits_its_periods_with_memory_high_exhausted)
{
	struct moat_evict_mem st = { 0 };

	cr_expect_not(moat_evict_memory(&st, 5, 10, 15, 3, true));
	cr_expect_not(moat_evict_memory(&st, 5, 10, 15, 3, true));
	cr_expect_not(moat_evict_memory(&st, 5, 10, 15, 3, false),
		      "memory.high can still go lower: not yet");
	cr_expect_eq(st.below, 0);
	cr_expect_not(moat_evict_memory(&st, 5, 10, 15, 3, true));
	cr_expect_not(moat_evict_memory(&st, 5, 10, 15, 3, true));
	cr_expect(moat_evict_memory(&st, 5, 10, 15, 3, true), "three periods under");
	/* until the release: 12% is over the threshold, under the release */
	cr_expect(moat_evict_memory(&st, 12, 10, 15, 3, true));
	cr_expect_not(moat_evict_memory(&st, 16, 10, 15, 3, true), "released");
	cr_expect_not(st.active);
	cr_expect_not(moat_evict_memory(&st, 5, 10, 15, 3, true), "counting again");
}

Test(evict, memory_not_known_or_over_the_threshold_does_nothing)
{
	struct moat_evict_mem st = { 0 };
	int i;

	for (i = 0; i < 10; i++) {
		cr_expect_not(moat_evict_memory(&st, NAN, 10, 15, 1, true));
		cr_expect_not(moat_evict_memory(&st, 50, 10, 15, 1, true));
	}
	/* a release under the threshold is the threshold */
	cr_expect(moat_evict_memory(&st, 5, 10, 2, 1, true));
	cr_expect_not(moat_evict_memory(&st, 10, 10, 2, 1, true));
}

Test(evict, at_most_max_in_ten_minutes)
{
	double at[4] = { 0 };

	cr_expect(moat_evict_allowed(at, 4, 2, 1000));
	at[0] = 1000;
	cr_expect(moat_evict_allowed(at, 4, 2, 1010));
	at[1] = 1010;
	cr_expect_not(moat_evict_allowed(at, 4, 2, 1020));
	cr_expect_not(moat_evict_allowed(at, 4, 2, 1599));
	cr_expect(moat_evict_allowed(at, 4, 2, 1600), "the first is ten minutes old");
	cr_expect_not(moat_evict_allowed(at, 4, 0, 5000), "max 0: none");
}

/*
 * At evict/max_per_10min's highest value the memory of evictions holds
 * them all: one more, as moatd records them in a ring, is refused.
 */
Test(evict, the_rate_holds_at_the_knobs_highest_value)
{
	double at[MOAT_EVICT_RATE_MAX] = { 0 };
	unsigned int i, next = 0;

	for (i = 0; i < MOAT_EVICT_RATE_MAX; i++) {
		cr_assert(moat_evict_allowed(at, MOAT_EVICT_RATE_MAX, MOAT_EVICT_RATE_MAX,
					     1000 + i), "eviction %u refused", i + 1);
		at[next++ % MOAT_EVICT_RATE_MAX] = 1000 + i;
	}
	cr_expect_not(moat_evict_allowed(at, MOAT_EVICT_RATE_MAX, MOAT_EVICT_RATE_MAX, 1200),
		      "one more than %d in ten minutes", MOAT_EVICT_RATE_MAX);
}
