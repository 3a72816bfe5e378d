// SPDX-License-Identifier: GPL-2.0-only
/*
 * CPI² detection on synthetic series: steady CPI, a real antagonist,
 * noise only, a victim whose own work changed, and windows with too
 * little CPU time to count.  The noise comes from a fixed-seed generator,
 * so every run sees the same series.
 */
#include <math.h>
#include <stdint.h>
#include <criterion/criterion.h>
#include "cpi2.h"

static uint64_t seed;

static double uniform(void)	/* [0, 1) */
{
	seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
	return (seed >> 11) * (1.0 / 9007199254740992.0);
}

static double gaussian(void)
{
	double u = uniform(), v = uniform();

	return sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v);
}

static const struct moat_cpi2_params params = {
	.k = 2, .alpha = 0.05, .min_cpus = 0.1, .min_windows = 20,
	.outliers = 3, .horizon = 20, .corr_windows = 60, .min_corr = 0.5,
};

static struct moat_cpi2_lc lc;
static struct moat_cpi2_be be0, be1;
static const struct moat_cpi2_be *const bes[2] = { &be0, &be1 };

static void reset(void)
{
	seed = 42;
	memset(&lc, 0, sizeof(lc));
	memset(&be0, 0, sizeof(be0));
	memset(&be1, 0, sizeof(be1));
}

TestSuite(cpi2, .init = reset);

/* One window: the LC group's CPI, BE usage; how many suspects. */
static size_t window(double cpi, double u0, double u1,
		     struct moat_cpi2_suspect *s)
{
	moat_cpi2_be_window(&be0, u0);
	moat_cpi2_be_window(&be1, u1);
	return moat_cpi2_lc_window(&params, &lc, cpi, 0.5, bes, 2, s, 2);
}

Test(cpi2, steady_cpi_is_never_a_victim)
{
	struct moat_cpi2_suspect s[2];
	int i, outliers = 0;

	for (i = 0; i < 400; i++) {
		cr_assert_eq(window(1.0 + 0.1 * (uniform() - 0.5), uniform(),
				    uniform(), s), 0);
		outliers += lc.outlier[(lc.n - 1) % MOAT_CPI2_HISTORY];
		cr_assert(!lc.victim, "window %d: a victim of nothing", i);
	}
	cr_expect_eq(outliers, 0);
	cr_expect_float_eq(lc.mean, 1.0, 0.01);
}

Test(cpi2, a_real_antagonist_is_the_first_suspect)
{
	struct moat_cpi2_suspect s[2];
	int i, first = -1;
	size_t n = 0;

	for (i = 0; i < 240; i++) {
		/* BE 0 runs 10 windows of 20 from window 60; it slows LC. */
		bool on = i >= 60 && (i / 10) % 2 == 0;
		double cpi = 1.0 + 0.1 * (uniform() - 0.5) + (on ? 0.5 : 0);

		n = window(cpi, on ? 0.9 : 0.05, uniform(), s);
		if (lc.victim && first < 0)
			first = i;
	}
	cr_assert_geq(first, 60, "a victim before the antagonist ran: %d", first);
	cr_expect_leq(first, 62, "outliers = 3: the third window of BE 0 at the latest");
	/* at window 239 BE 0 ran in 220..229: still a victim in the horizon */
	cr_assert(lc.victim);
	cr_assert_geq(n, 1);
	cr_expect_eq(s[0].be, 0, "the antagonist is not the first suspect");
	cr_expect_gt(s[0].corr, 0.8, "r = %.2f", s[0].corr);
	cr_expect(n == 1 || s[1].corr < s[0].corr);
	cr_expect(n == 1, "BE 1, whose usage is noise, a suspect too (r = %.2f)",
		  n > 1 ? s[1].corr : 0);
}

/* Gaussian noise and a spike now and then: never anyone to throttle. */
Test(cpi2, noise_alone_names_no_suspect)
{
	struct moat_cpi2_suspect s[2];
	int i, victim = 0;

	for (i = 0; i < 2000; i++) {
		double cpi = 1.0 + 0.03 * gaussian() + (i % 97 == 0 ? 0.8 : 0);

		cr_assert_eq(window(cpi, uniform(), 0.2 + 0.6 * uniform(), s), 0,
			     "window %d: suspect %zu, r = %.2f", i, s[0].be, s[0].corr);
		victim += lc.victim;
	}
	cr_log_info("victim in %d of 2000 windows of noise", victim);
	cr_expect_lt(victim, 100, "%d windows a victim", victim);
}

/* The group's own work got heavier for good: no suspect, then learned. */
Test(cpi2, a_victim_whose_own_load_changed_blames_nobody_and_adapts)
{
	struct moat_cpi2_suspect s[2];
	int i, first = -1, last = -1;

	for (i = 0; i < 600; i++) {
		double cpi = (i < 100 ? 1.0 : 1.5) + 0.1 * (uniform() - 0.5);

		cr_assert_eq(window(cpi, uniform(), uniform(), s), 0,
			     "window %d: BE %zu blamed, r = %.2f", i, s[0].be,
			     s[0].corr);
		if (lc.victim && first < 0)
			first = i;
		if (lc.victim)
			last = i;
	}
	cr_expect(first >= 100 && first <= 103, "first a victim at %d", first);
	cr_log_info("a victim from window %d to %d; mean now %.2f", first, last,
		    lc.mean);
	cr_expect_lt(last, 100 + 4 / params.alpha + params.horizon,
		     "still a victim at window %d: never learned its new CPI", last);
	cr_expect_float_eq(lc.mean, 1.5, 0.05);
}

/* One LC window, no BE group: whether it was an outlier. */
static bool feed(double cpi, double cpus)
{
	moat_cpi2_lc_window(&params, &lc, cpi, cpus, NULL, 0, NULL, 0);
	return lc.outlier[(lc.n - 1) % MOAT_CPI2_HISTORY];
}

Test(cpi2, windows_with_too_little_cpu_do_not_count)
{
	int i;

	for (i = 0; i < 50; i++)
		feed(1.0 + 0.01 * (i % 3), 0.5);
	for (i = 0; i < 10; i++) {
		cr_assert(!feed(9.0, 0.01), "an idle window's CPI judged");
		cr_assert(!feed(NAN, 0.5));
	}
	cr_expect(!lc.victim);
	cr_expect_eq(lc.learned, 50);
	cr_expect_float_eq(lc.mean, 1.01, 0.01);
	/* the same CPI with CPU time is an outlier */
	cr_expect(feed(9.0, 0.5));
}
