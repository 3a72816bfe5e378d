// SPDX-License-Identifier: GPL-2.0-only
/* Percentiles of log2 histograms, against values computed by hand and
 * against waits counted in the BPF program's slots. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <criterion/criterion.h>
#include "hist.h"

/* The BPF program's slot of a wait, as it is compiled there (glibc's
 * sys/cdefs.h defines __always_inline as the kernel's headers do). */
#include "hist_slot.bpf.h"

static struct moat_rqlat_hist h;

static void reset(void)
{
	memset(&h, 0, sizeof(h));
}

static void put(unsigned int slot, __u64 n)
{
	h.slots[slot] += n;
	h.count += n;
}

static double pctl(double q)
{
	double ns = -1;

	cr_assert_eq(moat_hist_percentile(&h, q, &ns), 0, "q=%g", q);
	return ns;
}

TestSuite(hist, .init = reset);

Test(hist, slot_bounds)
{
	double lo, hi;

	moat_hist_slot_bounds(0, &lo, &hi);
	cr_expect_float_eq(lo, 0.0, 1e-9);
	cr_expect_float_eq(hi, 2.0, 1e-9);
	moat_hist_slot_bounds(10, &lo, &hi);
	cr_expect_float_eq(lo, 1024.0, 1e-9);
	cr_expect_float_eq(hi, 2048.0, 1e-9);
	/* The range the controller needs, 1 us .. 10 s, fits. */
	moat_hist_slot_bounds(MOAT_HIST_SLOTS - 1, &lo, &hi);
	cr_expect_gt(lo, 10e9);
}

Test(hist, one_slot_interpolates_linearly)
{
	/* 100 waits in [1024, 2048): rank q*100 sits q of the way in. */
	put(10, 100);
	cr_expect_float_eq(pctl(0.5), 1536.0, 1e-6);
	cr_expect_float_eq(pctl(0.99), 1024 + 1024 * 0.99, 1e-6);
	cr_expect_float_eq(pctl(1.0), 2048.0, 1e-6);
}

Test(hist, two_slots)
{
	/* 90 waits in [1024, 2048), 10 in [2^20, 2^21). */
	put(10, 90);
	put(20, 10);
	cr_expect_float_eq(pctl(0.5), 1024 + 1024 * 50.0 / 90, 1e-6);
	cr_expect_float_eq(pctl(0.9), 2048.0, 1e-6);
	cr_expect_float_eq(pctl(0.99), 1048576 + 1048576 * 0.9, 1e-3);
	cr_expect_float_eq(pctl(0.999), 1048576 + 1048576 * 0.99, 1e-3);
}

Test(hist, skips_empty_slots_and_uses_slot_zero)
{
	put(0, 1);	/* a 0 or 1 ns wait */
	put(5, 1);
	put(33, 2);	/* ~10 s */
	cr_expect_float_eq(pctl(0.25), 2.0, 1e-9);	/* all of slot 0 */
	cr_expect_float_eq(pctl(0.5), 64.0, 1e-9);	/* all of slot 5 */
	cr_expect_float_eq(pctl(0.75), ldexp(1, 33) * 1.5, 1e-3);
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * Waits spread over five decades, 1 us to 100 ms (log-uniform, a fixed
 * seed), each counted in the slot the BPF program puts it in
 * (hist_slot(), bpf/hist_slot.bpf.h, compiled here as it is there): every
 * estimated quantile lies in the slot of the true one, so within a factor
 * of two of it, as hist.h promises.  With a wrong slot function (log2 of
 * a value halved, or off by one) the estimates land a slot away.
 */
Test(hist, within_factor_two_of_truth)
{
	static const double qs[] = { 0.1, 0.5, 0.9, 0.99, 0.999 };
	enum { N = 20000 };
	static __u64 w[N];
	unsigned int seed = 42, i;

	for (i = 0; i < N; i++) {
		double u = rand_r(&seed) / (RAND_MAX + 1.0);

		w[i] = llround(1e3 * pow(10, 5 * u));
		put(hist_slot(w[i]), 1);
	}
	qsort(w, N, sizeof(w[0]), cmp_u64);
	for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		double truth = w[(size_t)ceil(qs[i] * N) - 1], est = pctl(qs[i]);
		double lo, hi;

		moat_hist_slot_bounds(hist_slot(truth), &lo, &hi);
		cr_expect(est >= lo && est <= hi,
			  "q %g: estimate %.0f ns outside the true %.0f ns's slot [%.0f, %.0f)",
			  qs[i], est, truth, lo, hi);
		cr_expect(est > truth / 2 && est < truth * 2, "q %g: %.0f ns for %.0f",
			  qs[i], est, truth);
	}
	/* the clamp: a wait past the last slot's bound is in the last slot */
	cr_expect_eq(hist_slot(~0ull), MOAT_HIST_SLOTS - 1);
	cr_expect_eq(hist_slot(0), 0);
	cr_expect_eq(hist_slot(1), 0);
	cr_expect_eq(hist_slot(1023), 9);
	cr_expect_eq(hist_slot(1024), 10);
	cr_expect_eq(hist_slot(1ull << 32), 32);
}

Test(hist, empty_and_bad_quantile)
{
	double ns;

	cr_expect_eq(moat_hist_percentile(&h, 0.5, &ns), -ENODATA);
	put(3, 1);
	cr_expect_eq(moat_hist_percentile(&h, 0, &ns), -EINVAL);
	cr_expect_eq(moat_hist_percentile(&h, 1.5, &ns), -EINVAL);
	cr_expect_eq(moat_hist_percentile(&h, NAN, &ns), -EINVAL);
}

Test(hist, delta_of_windows)
{
	struct moat_rqlat_hist before, now, d;

	put(4, 3);
	h.sum_ns = 60;
	before = h;
	put(4, 2);
	put(9, 5);
	h.sum_ns = 3000;
	now = h;

	moat_hist_delta(&d, &now, &before);
	cr_expect_eq(d.slots[4], 2);
	cr_expect_eq(d.slots[9], 5);
	cr_expect_eq(d.count, 7);
	cr_expect_eq(d.sum_ns, 2940);

	/* An entry recreated since (counts went backwards): take it whole. */
	moat_hist_delta(&d, &before, &now);
	cr_expect_eq(d.count, before.count);
	cr_expect_eq(d.slots[4], 3);
}

Test(hist, add_sums_cpus)
{
	struct moat_rqlat_hist a = {}, b = {};

	a.slots[1] = 2; a.count = 2; a.sum_ns = 5;
	b.slots[1] = 1; b.slots[7] = 4; b.count = 5; b.sum_ns = 700;
	moat_hist_add(&a, &b);
	cr_expect_eq(a.slots[1], 3);
	cr_expect_eq(a.slots[7], 4);
	cr_expect_eq(a.count, 7);
	cr_expect_eq(a.sum_ns, 705);
}

/*
 * 2000 waits of ~5 us and 10 of ~3 ms: per wait, p99 is microseconds;
 * by time, 3 ms waits hold 75% of the waiting, and p99 lies among them.
 */
Test(hist, time_weighted_percentile_sees_the_rare_long_waits)
{
	double ns;

	h.slots[12] = 2000;	/* [4096, 8192) ns */
	h.slots[21] = 10;	/* [2.1, 4.2) ms */
	h.count = 2010;
	cr_assert_eq(moat_hist_percentile(&h, 0.99, &ns), 0);
	cr_assert_lt(ns, 8192);
	cr_assert_eq(moat_hist_time_percentile(&h, 0.99, &ns), 0);
	cr_assert_geq(ns, 2097152);
	cr_assert_lt(ns, 4194304);
	/* With equal waits it is the per-wait quantile. */
	h.slots[21] = 0;
	cr_assert_eq(moat_hist_time_percentile(&h, 0.5, &ns), 0);
	cr_assert_float_eq(ns, 4096 + 4096 * 0.5, 1e-6);
	memset(&h, 0, sizeof(h));
	cr_assert_eq(moat_hist_time_percentile(&h, 0.99, &ns), -ENODATA);
	cr_assert_eq(moat_hist_time_percentile(&h, 0, &ns), -EINVAL);
}

/*
 * What a request arriving at random waits: rare waits are no wait for
 * the p99 request, however long; common ones are, in full.  Values by
 * hand: one slot [2^21, 2^22) ns spread evenly, scaled to sum_ns.
 */
Test(hist, arrival_percentile_counts_how_rarely_the_waits_come)
{
	double ns, lo = 2097152, hi = 4194304, x;

	/* 10 waits of ~3 ms in 1 s: 3% of the time waiting */
	h.slots[21] = 10;
	h.count = 10;
	h.sum_ns = 10 * (lo + hi) / 2;
	cr_assert_eq(moat_hist_arrival_percentile(&h, 0.99, 1e9, &ns), 0);
	/* P(> x) = 10 (hi - x)^2 / (2 (hi - lo)) / 1e9 = 0.01 */
	x = hi - sqrt(0.01 * 1e9 * 2 * (hi - lo) / 10);
	cr_assert_float_eq(ns, x, 1, "%.0f ns, by hand %.0f", ns, x);
	cr_assert(ns > lo && ns < hi);

	/* the same 10 waits in 100 s: 0.03% of the time: p99 waits nothing */
	cr_assert_eq(moat_hist_arrival_percentile(&h, 0.99, 100e9, &ns), 0);
	cr_assert_float_eq(ns, 0, 1e-9);
	/* but the p99.99 request meets one */
	cr_assert_eq(moat_hist_arrival_percentile(&h, 0.9999, 100e9, &ns), 0);
	cr_assert_gt(ns, 0);
	/* the time-weighted p99 cannot tell the two windows apart */
	cr_assert_eq(moat_hist_time_percentile(&h, 0.99, &ns), 0);
	cr_assert_geq(ns, lo);

	/* many short waits and one long one, 2% of 1 s each */
	memset(&h, 0, sizeof(h));
	h.slots[14] = 800;	/* [16, 32) us: ~19.7 ms */
	h.slots[24] = 1;	/* [16.8, 33.6) ms: ~25 ms */
	h.count = 801;
	h.sum_ns = 800 * 24576 + 25165824;
	cr_assert_eq(moat_hist_arrival_percentile(&h, 0.99, 1e9, &ns), 0);
	cr_assert(ns > 32768, "%.0f ns: the long wait decides the tail", ns);
	cr_assert_eq(moat_hist_arrival_percentile(&h, 0.5, 1e9, &ns), 0);
	cr_assert_float_eq(ns, 0, 1e-9, "the median request waits not at all");

	memset(&h, 0, sizeof(h));
	cr_assert_eq(moat_hist_arrival_percentile(&h, 0.99, 1e9, &ns), -ENODATA);
	h.slots[3] = 1;
	cr_assert_eq(moat_hist_arrival_percentile(&h, 1, 1e9, &ns), -EINVAL);
	cr_assert_eq(moat_hist_arrival_percentile(&h, 0.99, 0, &ns), -EINVAL);
}
