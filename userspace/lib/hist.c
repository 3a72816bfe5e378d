// SPDX-License-Identifier: GPL-2.0-only
/* Log2 wait histograms: windows and percentiles. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include "hist.h"

void moat_hist_slot_bounds(unsigned int slot, double *lo, double *hi)
{
	*lo = slot ? ldexp(1.0, slot) : 0.0;
	*hi = ldexp(1.0, slot + 1);
}

void moat_hist_add(struct moat_rqlat_hist *dst,
		   const struct moat_rqlat_hist *src)
{
	unsigned int i;

	for (i = 0; i < MOAT_HIST_SLOTS; i++)
		dst->slots[i] += src->slots[i];
	dst->count += src->count;
	dst->sum_ns += src->sum_ns;
}

void moat_hist_delta(struct moat_rqlat_hist *out,
		     const struct moat_rqlat_hist *now,
		     const struct moat_rqlat_hist *before)
{
	unsigned int i;

	if (now->count < before->count) {
		*out = *now;
		return;
	}
	for (i = 0; i < MOAT_HIST_SLOTS; i++)
		out->slots[i] = now->slots[i] >= before->slots[i] ?
				now->slots[i] - before->slots[i] : 0;
	out->count = now->count - before->count;
	out->sum_ns = now->sum_ns >= before->sum_ns ?
		      now->sum_ns - before->sum_ns : 0;
}

/* Slot @i's weight: its waits, or with @by_time the time they took. */
static double weight(const struct moat_rqlat_hist *h, unsigned int i,
		     bool by_time)
{
	double lo, hi;

	if (!by_time)
		return h->slots[i];
	moat_hist_slot_bounds(i, &lo, &hi);
	return h->slots[i] * (lo + hi) / 2;
}

static int quantile(const struct moat_rqlat_hist *h, double q, bool by_time,
		    double *ns)
{
	double rank, cum = 0, total = 0, w = 0, lo, hi;
	unsigned int i;

	if (!(q > 0 && q <= 1))
		return -EINVAL;
	/*
	 * Slots are read from per-CPU copies without a lock, so count and
	 * the slots can disagree by an event in flight: rank by the slots.
	 */
	for (i = 0; i < MOAT_HIST_SLOTS; i++)
		total += weight(h, i, by_time);
	if (!(total > 0))
		return -ENODATA;

	rank = q * total;
	for (i = 0; i < MOAT_HIST_SLOTS; i++) {
		w = weight(h, i, by_time);
		if (w > 0 && cum + w >= rank)
			break;
		cum += w;
	}
	if (i == MOAT_HIST_SLOTS) {	/* rounding: the last non-empty slot */
		while (!h->slots[--i])
			;
		w = weight(h, i, by_time);
		cum = rank - w;
	}
	moat_hist_slot_bounds(i, &lo, &hi);
	*ns = lo + (hi - lo) * (rank - cum) / w;
	return 0;
}

int moat_hist_percentile(const struct moat_rqlat_hist *h, double q,
			 double *ns)
{
	return quantile(h, q, false, ns);
}

int moat_hist_time_percentile(const struct moat_rqlat_hist *h, double q,
			      double *ns)
{
	return quantile(h, q, true, ns);
}

/* Sum over slot @i's waits, spread over the slot, of max(0, w - x). */
static double excess(const struct moat_rqlat_hist *h, unsigned int i, double x)
{
	double lo, hi;

	moat_hist_slot_bounds(i, &lo, &hi);
	if (x <= lo)
		return h->slots[i] * ((lo + hi) / 2 - x);
	if (x >= hi)
		return 0;
	return h->slots[i] * (hi - x) * (hi - x) / (2 * (hi - lo));
}

/* P(a request arriving at random waits more than @x ns). */
static double p_wait_over(const struct moat_rqlat_hist *h, double x,
			  double scale, double window_ns)
{
	double sum = 0;
	unsigned int i;

	for (i = 0; i < MOAT_HIST_SLOTS; i++)
		if (h->slots[i])
			sum += excess(h, i, x);
	return sum * scale / window_ns;
}

int moat_hist_arrival_percentile(const struct moat_rqlat_hist *h, double q,
				 double window_ns, double *ns)
{
	double total = 0, scale, lo = 0, hi = 0, p = 1 - q, a, b;
	unsigned int i, k;

	if (!(q > 0 && q < 1) || !(window_ns > 0))
		return -EINVAL;
	for (i = 0; i < MOAT_HIST_SLOTS; i++) {
		if (!h->slots[i])
			continue;
		total += excess(h, i, 0);
		moat_hist_slot_bounds(i, &a, &b);
		hi = b;
	}
	if (!(total > 0))
		return -ENODATA;
	/* the slots' midpoints, scaled to the waits' real total */
	scale = h->sum_ns > 0 ? h->sum_ns / total : 1;
	if (p_wait_over(h, 0, scale, window_ns) <= p) {
		*ns = 0;	/* the quantile request meets no wait */
		return 0;
	}
	for (k = 0; k < 64; k++) {	/* P falls as x grows: bisect */
		double mid = (lo + hi) / 2;

		if (p_wait_over(h, mid, scale, window_ns) > p)
			lo = mid;
		else
			hi = mid;
	}
	*ns = (lo + hi) / 2;
	return 0;
}
