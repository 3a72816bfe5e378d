// SPDX-License-Identifier: GPL-2.0-only
/* The pure parts of eviction's decision (evictpol.h). */
#include <math.h>
#include "evictpol.h"

int moat_evict_cmp(const struct moat_evict_cand *a, const struct moat_evict_cand *b)
{
	double ma = isnan(a->memory) ? -1 : a->memory;
	double mb = isnan(b->memory) ? -1 : b->memory;

	if (a->priority != b->priority)
		return a->priority < b->priority ? -1 : 1;
	return ma > mb ? -1 : ma < mb;
}

bool moat_evict_memory(struct moat_evict_mem *st, double avail_pct,
		       unsigned int threshold_pct, unsigned int release_pct,
		       unsigned int periods, bool exhausted)
{
	if (isnan(avail_pct)) {
		st->below = 0;
		return false;
	}
	if (release_pct < threshold_pct)
		release_pct = threshold_pct;
	if (st->active) {
		if (avail_pct < release_pct)
			return true;
		st->active = false;
		st->below = 0;
		return false;
	}
	if (avail_pct < threshold_pct && exhausted)
		st->below++;
	else
		st->below = 0;
	if (st->below < (periods ? periods : 1))
		return false;
	st->active = true;
	return true;
}

bool moat_evict_allowed(const double *at, size_t n, unsigned int max, double now)
{
	unsigned int recent = 0;
	size_t i;

	for (i = 0; i < n; i++)
		recent += at[i] > 0 && now - at[i] < 600;
	return recent < max;
}
