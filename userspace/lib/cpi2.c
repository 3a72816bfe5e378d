// SPDX-License-Identifier: GPL-2.0-only
/*
 * CPI² antagonist detection (the rules are in cpi2.h).  Nothing here
 * reads a clock, a counter or a file.
 */
#include <math.h>
#include <stdlib.h>
#include "cpi2.h"

#define SLOT(n)	((n) % MOAT_CPI2_HISTORY)

double moat_cpi2_threshold(const struct moat_cpi2_params *p,
			   const struct moat_cpi2_lc *s)
{
	return s->mean + p->k * sqrt(s->var);
}

/*
 * Fold @x into the mean and variance: plain (Welford) until min_windows,
 * so that the first windows do not start from a variance of 0, then
 * weighted by @w.
 */
static void learn(const struct moat_cpi2_params *p, struct moat_cpi2_lc *s,
		  double x, double w)
{
	double d = x - s->mean;

	s->learned++;
	if (s->learned <= p->min_windows) {
		s->mean += d / s->learned;
		s->m2 += d * (x - s->mean);
		s->var = s->m2 / s->learned;
	} else {
		s->mean += w * d;
		s->var = (1 - w) * (s->var + w * d * d);
	}
}

static void count_outliers(const struct moat_cpi2_params *p,
			   struct moat_cpi2_lc *s)
{
	unsigned int i, seen, count = 0;

	seen = s->n < p->horizon ? s->n : p->horizon;
	if (seen > MOAT_CPI2_HISTORY)
		seen = MOAT_CPI2_HISTORY;
	for (i = 0; i < seen; i++)
		count += s->outlier[SLOT(s->n - 1 - i)];
	s->victim = p->outliers && count >= p->outliers;
}

void moat_cpi2_be_window(struct moat_cpi2_be *s, double cpus)
{
	s->cpus[SLOT(s->n)] = cpus;
	s->n++;
}

/* Pearson's r of the last @w windows of @v's CPI and @b's usage. */
static double correlation(const struct moat_cpi2_lc *v,
			  const struct moat_cpi2_be *b, unsigned int w)
{
	double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, n = 0, cov, vx, vy;
	unsigned long long i, last;

	if (v->n != b->n)
		return NAN;	/* not fed in step: nothing to compare */
	last = v->n;
	if (w > MOAT_CPI2_HISTORY)
		w = MOAT_CPI2_HISTORY;
	for (i = last > w ? last - w : 0; i < last; i++) {
		double x = v->cpi[SLOT(i)], y = b->cpus[SLOT(i)];

		if (isnan(x) || isnan(y))
			continue;
		sx += x;
		sy += y;
		sxx += x * x;
		syy += y * y;
		sxy += x * y;
		n++;
	}
	if (n < 3)
		return NAN;
	cov = sxy - sx * sy / n;
	vx = sxx - sx * sx / n;
	vy = syy - sy * sy / n;
	if (!(vx > 0) || !(vy > 0))
		return NAN;	/* a flat series correlates with nothing */
	return cov / sqrt(vx * vy);
}

static int cmp_suspect(const void *a, const void *b)
{
	const struct moat_cpi2_suspect *x = a, *y = b;

	return x->corr < y->corr ? 1 : x->corr > y->corr ? -1 :
	       (x->be > y->be) - (x->be < y->be);
}

static size_t suspects(const struct moat_cpi2_params *p,
		       const struct moat_cpi2_lc *v,
		       const struct moat_cpi2_be *const *be, size_t nbe,
		       struct moat_cpi2_suspect *out, size_t max)
{
	struct moat_cpi2_suspect *all;
	size_t i, n = 0;

	if (!v->victim || !nbe || !max)
		return 0;
	all = malloc(nbe * sizeof(*all));
	if (!all)
		return 0;
	for (i = 0; i < nbe; i++) {
		double r = correlation(v, be[i], p->corr_windows);

		if (r >= p->min_corr)
			all[n++] = (struct moat_cpi2_suspect){ i, r };
	}
	qsort(all, n, sizeof(*all), cmp_suspect);
	if (n > max)
		n = max;
	for (i = 0; i < n; i++)
		out[i] = all[i];
	free(all);
	return n;
}

size_t moat_cpi2_lc_window(const struct moat_cpi2_params *p,
			   struct moat_cpi2_lc *s, double cpi, double cpus,
			   const struct moat_cpi2_be *const *be, size_t nbe,
			   struct moat_cpi2_suspect *out, size_t max)
{
	bool counts = !isnan(cpi) && cpi > 0 && cpus >= p->min_cpus;
	bool judged = counts && s->learned >= p->min_windows;
	bool outlier = judged && cpi > moat_cpi2_threshold(p, s);
	unsigned int slot = SLOT(s->n);
	size_t n;

	s->cpi[slot] = counts ? cpi : NAN;
	s->outlier[slot] = outlier;
	s->n++;
	count_outliers(p, s);
	n = suspects(p, s, be, nbe, out, max);
	/*
	 * An outlier that a BE group's usage explains is not learned: the
	 * antagonist's windows must not become the norm.  One that nothing
	 * explains is the group's own change, and is learned slowly.
	 */
	if (counts && !(outlier && n))
		learn(p, s, cpi, outlier ? p->alpha / 4 : p->alpha);
	return n;
}
