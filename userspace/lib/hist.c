// SPDX-License-Identifier: GPL-2.0-only
/* Log2 wait histograms: windows and percentiles. */
#include <errno.h>
#include <math.h>
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

int moat_hist_percentile(const struct moat_rqlat_hist *h, double q,
			 double *ns)
{
	double rank, cum = 0, lo, hi;
	__u64 total = 0;
	unsigned int i;

	if (!(q > 0 && q <= 1))
		return -EINVAL;
	/*
	 * Slots are read from per-CPU copies without a lock, so count and
	 * the slots can disagree by an event in flight: rank by the slots.
	 */
	for (i = 0; i < MOAT_HIST_SLOTS; i++)
		total += h->slots[i];
	if (!total)
		return -ENODATA;

	rank = q * total;
	/* Sums stay exact in a double: the last non-empty slot always ends it. */
	for (i = 0; i < MOAT_HIST_SLOTS; i++) {
		if (h->slots[i] && cum + h->slots[i] >= rank)
			break;
		cum += h->slots[i];
	}
	moat_hist_slot_bounds(i, &lo, &hi);
	*ns = lo + (hi - lo) * (rank - cum) / h->slots[i];
	return 0;
}
