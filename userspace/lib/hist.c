// SPDX-License-Identifier: GPL-2.0-only
/* Log2 wait histograms: windows and percentiles. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include "hist.h"

/*
 * 2^slot, exactly: the slots are far fewer than 64, and a power of two
 * below 2^53 converts to a double without rounding.  Not ldexp(): the
 * bounds are taken for every slot of every group's percentiles each
 * period, and libm's ldexp() was 7% of moatd's CPU at 500 groups.
 */
_Static_assert(MOAT_HIST_SLOTS < 53, "slot bounds as exact doubles");

void moat_hist_slot_bounds(unsigned int slot, double *lo, double *hi)
{
	*lo = slot ? (double)(1ULL << slot) : 0.0;
	*hi = (double)(1ULL << (slot + 1));
}

bool moat_hist_empty(const struct moat_rqlat_hist *h)
{
	unsigned int i;

	for (i = 0; i < MOAT_HIST_SLOTS; i++)
		if (h->slots[i])
			return false;
	return true;
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

int moat_hist_arrival_percentile(const struct moat_rqlat_hist *h, double q,
				 double window_ns, double *ns)
{
	double total = 0, target, a = 0, n_above = 0, lo, hi;
	unsigned int i, k;

	if (!(q > 0 && q < 1) || !(window_ns > 0))
		return -EINVAL;
	for (i = 0; i < MOAT_HIST_SLOTS; i++)
		if (h->slots[i])
			total += excess(h, i, 0);
	if (!(total > 0))
		return -ENODATA;
	/*
	 * sum of excess(x) = target, in the slots' unscaled midpoints: the
	 * real total of the waits is sum_ns.
	 */
	target = (1 - q) * window_ns * (h->sum_ns > 0 ? total / h->sum_ns : 1);
	*ns = 0;
	if (total <= target)
		return 0;	/* the quantile request meets no wait */
	/*
	 * From the top slot down: above slot k the excess is a - n_above x;
	 * slot k adds n (hi - x)^2 / 2w on [lo, hi).  The first slot whose
	 * lower bound has the excess over target holds x: solve there.
	 */
	for (k = MOAT_HIST_SLOTS; k-- > 0;) {
		double n = h->slots[k], w, u;

		moat_hist_slot_bounds(k, &lo, &hi);
		w = hi - lo;
		if (a - n_above * lo + n * ((lo + hi) / 2 - lo) <= target) {
			a += n * (lo + hi) / 2;
			n_above += n;
			continue;
		}
		if (!n) {
			*ns = (a - target) / n_above;
			return 0;
		}
		/* n/2w u^2 + n_above u + (a - n_above hi - target) = 0, u = hi - x */
		u = (-n_above + sqrt(n_above * n_above -
				     2 * n * (a - n_above * hi - target) / w)) * w / n;
		*ns = hi - u;
		return 0;
	}
	return 0;
}
