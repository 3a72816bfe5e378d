/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_EVICTPOL_H
#define MOAT_EVICTPOL_H

/*
 * Eviction, the last resort (Documentation/enforce.rst, "Eviction"): the
 * pure parts of the decision, unit-tested without a kernel or an API
 * server.  Which BE pod goes first, and when the node's memory says one
 * must.
 */
#include <stdbool.h>
#include <stddef.h>

struct moat_evict_cand {
	long long priority;	/* spec.priority */
	double memory;		/* bytes in use; NAN: not known */
};

/*
 * The order of eviction, as qsort() takes it: the lowest priority first,
 * then the largest memory user (one not known last).
 */
int moat_evict_cmp(const struct moat_evict_cand *a, const struct moat_evict_cand *b);

/* The node's memory, period by period. */
struct moat_evict_mem {
	unsigned int below;	/* periods in a row under the threshold */
	bool active;		/* evicting until over the release */
};

/**
 * moat_evict_memory() - one period of the memory trigger: @avail_pct of
 * the node's memory available (NAN: not known: nothing happens), under
 * @threshold_pct for @periods periods in a row while @exhausted (BE pods'
 * memory.high can go no lower) starts eviction, which goes on, a pod at a
 * time, until @avail_pct is back at @release_pct or over.
 *
 * Return: whether a pod should go now.
 */
bool moat_evict_memory(struct moat_evict_mem *st, double avail_pct,
		       unsigned int threshold_pct, unsigned int release_pct,
		       unsigned int periods, bool exhausted);

/*
 * The most evictions evict/max_per_10min allows, and so the times the
 * rate limit must remember: a shorter memory would let any more through.
 */
#define MOAT_EVICT_RATE_MAX	100

/**
 * moat_evict_allowed() - whether one more eviction at @now (s) keeps to
 * @max in any 600 s, given the times of the last ones in @at (@n of them,
 * any order; 0: a free slot).
 */
bool moat_evict_allowed(const double *at, size_t n, unsigned int max, double now);

#endif /* MOAT_EVICTPOL_H */
