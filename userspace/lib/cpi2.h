/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_CPI2_H
#define MOAT_CPI2_H

#include <stdbool.h>
#include <stddef.h>

/*
 * CPI² antagonist detection (Zhang et al., "CPI²: CPU performance
 * isolation for shared compute clusters", EuroSys 2013), per LC group and
 * over time: a pure function of the windows it is fed, so that every rule
 * is tested with synthetic series.
 *
 * Learning.  Each LC group's cycles per instruction is learned online, as
 * an exponentially weighted mean and variance (weight `alpha` per window),
 * from the windows with at least `min_cpus` of CPU time: a window with
 * little work has a CPI that means nothing.  Until `min_windows` such
 * windows, nothing is judged.
 *
 * Outliers and victims.  A window whose CPI is above mean + k·σ is an
 * outlier.  A group is a victim while at least `outliers` of its last
 * `horizon` windows were outliers (CPI² used several outliers within a
 * few minutes).  An outlier that a suspect explains is not learned, so an
 * antagonist's windows do not become the norm; one that no BE group's
 * usage explains teaches the mean a quarter as much as a normal window,
 * so a group whose own work changed for good (a new release, another
 * request mix) is learned anew within some 4 / alpha windows.
 *
 * Suspects.  For a victim, each BE group's CPU usage is correlated with
 * the victim's CPI over the last `corr_windows` windows where both are
 * known (Pearson); those at `min_corr` or more are suspects, most
 * correlated first.  A victim whose CPI rose with no BE group's usage
 * has no suspect, and nothing is throttled for it.
 */

#define MOAT_CPI2_HISTORY	256	/* windows kept per group */

struct moat_cpi2_params {
	double k;			/* outlier: CPI > mean + k·σ */
	double alpha;			/* learning weight per window */
	double min_cpus;		/* CPUs a window needs to count */
	unsigned int min_windows;	/* learned before judging */
	unsigned int outliers;		/* ... within ... */
	unsigned int horizon;		/* windows: a victim */
	unsigned int corr_windows;	/* windows a correlation is over */
	double min_corr;		/* a suspect's least correlation */
};

/* An LC group's state.  Zeroed: nothing learned. */
struct moat_cpi2_lc {
	double mean, var, m2;		/* m2: Welford's, while learning */
	unsigned int learned;		/* windows learned from */
	unsigned long long n;		/* windows fed */
	double cpi[MOAT_CPI2_HISTORY];	/* NAN: not a window that counts */
	bool outlier[MOAT_CPI2_HISTORY];
	bool victim;
};

/* A BE group's CPU usage, window by window, fed in step with the LC's. */
struct moat_cpi2_be {
	unsigned long long n;
	double cpus[MOAT_CPI2_HISTORY];	/* NAN: unknown */
};

struct moat_cpi2_suspect {
	size_t be;			/* index into the BE groups given */
	double corr;
};

/** moat_cpi2_be_window() - feed one window of BE group @s's CPU usage. */
void moat_cpi2_be_window(struct moat_cpi2_be *s, double cpus);

/**
 * moat_cpi2_lc_window() - feed one window of LC group @s, its CPI and the
 * CPUs it used, after the same window of the @nbe BE groups @be.
 * @s->victim says whether it is a victim now; its suspects, most
 * correlated first, at most @max, go to @out.
 * Return: how many suspects.
 */
size_t moat_cpi2_lc_window(const struct moat_cpi2_params *p,
			   struct moat_cpi2_lc *s, double cpi, double cpus,
			   const struct moat_cpi2_be *const *be, size_t nbe,
			   struct moat_cpi2_suspect *out, size_t max);

/** moat_cpi2_threshold() - the CPI over which a window is an outlier now. */
double moat_cpi2_threshold(const struct moat_cpi2_params *p,
			   const struct moat_cpi2_lc *s);

#endif /* MOAT_CPI2_H */
