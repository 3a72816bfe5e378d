/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_HIST_H
#define MOAT_HIST_H

#include <linux/types.h>
#include <stdbool.h>
#include "rqlat.h"	/* bpf/rqlat.h: struct moat_rqlat_hist */

/**
 * moat_hist_slot_bounds() - the range [*lo, *hi) of wait ns slot @slot
 * counts.  The last slot is open-ended; *hi is then its nominal upper
 * bound, twice *lo.
 */
void moat_hist_slot_bounds(unsigned int slot, double *lo, double *hi);

/**
 * moat_hist_empty() - whether @h has no wait in any slot, which is what
 * the percentiles rank by: then each of them is -ENODATA.
 */
bool moat_hist_empty(const struct moat_rqlat_hist *h);

/**
 * moat_hist_add() - add @src into @dst (summing per-CPU copies).
 */
void moat_hist_add(struct moat_rqlat_hist *dst,
		   const struct moat_rqlat_hist *src);

/**
 * moat_hist_delta() - @out = @now - @before, the waits of one window.
 * A counter that went backwards (the map entry was recreated) makes @out
 * equal to @now.
 */
void moat_hist_delta(struct moat_rqlat_hist *out,
		     const struct moat_rqlat_hist *now,
		     const struct moat_rqlat_hist *before);

/**
 * moat_hist_percentile() - estimate the @q quantile (0 < q <= 1) in ns.
 *
 * Finds the slot that holds the quantile's rank and interpolates linearly
 * inside it.  The estimate and the true value lie in the same slot
 * [2^i, 2^(i+1)), so the estimate is within a factor of two of the truth.
 *
 * Return: 0, -EINVAL for q out of range, -ENODATA for an empty histogram.
 */
int moat_hist_percentile(const struct moat_rqlat_hist *h, double q,
			 double *ns);

/**
 * moat_hist_time_percentile() - the @q quantile of the waits weighted by
 * their length: the wait that a fraction @q of all waiting time was in
 * waits no longer than.  A request that reaches a server at a random
 * moment finds it in a wait with a chance proportional to that wait's
 * length, so this, not the per-wait quantile, is the run-queue wait a
 * server's requests see: a server that wakes 2000 times a period and
 * waits 3 ms in 10 of those has a per-wait p99 of microseconds and a
 * time-weighted p99 of milliseconds, like its request latency.
 * Slot i's waits weigh its midpoint; the same factor-of-two bound holds.
 *
 * Return: as moat_hist_percentile().
 */
int moat_hist_time_percentile(const struct moat_rqlat_hist *h, double q,
			      double *ns);

/**
 * moat_hist_arrival_percentile() - the @q quantile of the run-queue wait
 * that a request arriving at a random moment of a window of @window_ns
 * meets: it arrives during a wait w with a chance of w / window, and then
 * waits what is left of it, so P(wait > x) = sum over the waits of
 * max(0, w - x) / window.  Unlike the time-weighted quantile it counts
 * how rarely the waits come: a server that waits 0.1% of the time has 0
 * for its p99, as its client's p99 request meets no wait at all, however
 * long the few waits are.  Waits are spread evenly over their slot, the
 * slots' total scaled to the histogram's sum.  Waits of threads that
 * overlap are counted as if one after the other: for a unit of many
 * threads it is an upper bound.
 *
 * Return: 0; -EINVAL for q out of range or a window not > 0; -ENODATA
 * for an empty histogram.
 */
int moat_hist_arrival_percentile(const struct moat_rqlat_hist *h, double q,
				 double window_ns, double *ns);

#endif /* MOAT_HIST_H */
