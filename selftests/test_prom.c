// SPDX-License-Identifier: GPL-2.0-only
/*
 * Prometheus's text format as moatd writes it (userspace/moatd/prom.c):
 * a histogram's buckets never go down, whatever the lock-free read of its
 * per-CPU copies gave as the count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include "prom.h"

/* The value of the sample whose line starts with @series, or -1. */
static double sample(const char *text, const char *series)
{
	const char *p = text;
	size_t n = strlen(series);

	for (; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, series, n) && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return -1;
}

static char *histogram(const struct moat_rqlat_hist *h)
{
	static char le[MOAT_HIST_SLOTS][40];
	static bool export[MOAT_HIST_SLOTS];
	char *buf = NULL;
	size_t len, s;
	FILE *f = open_memstream(&buf, &len);

	for (s = 0; s < MOAT_HIST_SLOTS; s++) {
		snprintf(le[s], sizeof(le[s]), "le=\"%zu\"", s);
		export[s] = s >= 2;
	}
	cr_assert_not_null(f);
	prom_histogram(f, "h", "g=\"x\"", h, le, export);
	fclose(f);
	return buf;
}

/*
 * A read of the per-CPU copies that caught a wait's slot but not yet its
 * count (count 7, slots summing to 8): +Inf and _count are the slots'
 * total, and no bucket is over +Inf.  With the count it was 7, under the
 * last bucket's 8: a histogram going down, which Prometheus's
 * histogram_quantile() reads as garbage.
 */
Test(prom, histogram_buckets_never_exceed_inf_or_count)
{
	struct moat_rqlat_hist h = { 0 };
	char *text;
	double last = 0, v;
	char series[64];
	size_t s;

	h.slots[3] = 5;
	h.slots[10] = 2;
	h.slots[MOAT_HIST_SLOTS - 1] = 1;	/* open-ended: only in +Inf */
	h.count = 7;
	h.sum_ns = 2e9;
	text = histogram(&h);
	for (s = 2; s + 1 < MOAT_HIST_SLOTS; s++) {
		snprintf(series, sizeof(series), "h_bucket{g=\"x\",le=\"%zu\"}", s);
		v = sample(text, series);
		cr_expect_geq(v, last, "bucket %zu went down:\n%s", s, text);
		last = v;
	}
	cr_expect_eq(last, 7);
	cr_expect_eq(sample(text, "h_bucket{g=\"x\",le=\"+Inf\"}"), 8, "%s", text);
	cr_expect_eq(sample(text, "h_count{g=\"x\"}"), 8, "%s", text);
	cr_expect_eq(sample(text, "h_sum{g=\"x\"}"), 2, "%s", text);
	cr_expect_eq(sample(text, "h_bucket{g=\"x\",le=\"0\"}"), -1,
		     "a slot not exported has a bucket:\n%s", text);
	free(text);

	/* and the other way: the count ahead of the slots */
	h.count = 12;
	text = histogram(&h);
	cr_expect_eq(sample(text, "h_count{g=\"x\"}"), 8, "%s", text);
	free(text);
}
