// SPDX-License-Identifier: GPL-2.0-only
/*
 * The controller's decision step (the rules are in control.h).  Nothing
 * here reads a clock, a file or a map.
 */
#include <math.h>
#include <stdlib.h>
#include "control.h"

const enum moat_resource moat_signal_resource[MOAT_SIG_NR] = {
	[MOAT_SIG_RQLAT_P99] = MOAT_RES_CPU,
	[MOAT_SIG_MEMORY_PRESSURE] = MOAT_RES_MEMORY,
};

const char *const moat_signal_names[MOAT_SIG_NR] = {
	[MOAT_SIG_RQLAT_P99] = "rqlat_wp99_us",
	[MOAT_SIG_MEMORY_PRESSURE] = "memory_pressure_pct",
};

const char *const moat_resource_names[MOAT_RES_NR] = {
	[MOAT_RES_CPU] = "cpu",
	[MOAT_RES_MEMORY] = "memory",
};

double moat_ctl_floor(const struct moat_ctl_params *p, enum moat_resource r,
		      const struct moat_ctl_limit *l)
{
	return fmax(p->floor_min[r], l->ref * p->step[r].min_pct / 100);
}

/*
 * How far @lc is over its targets for @r: the worst value / target, 0
 * when within them.  *@slack: every measured signal of @r is below
 * target * slack_pct%.
 */
static double over(const struct moat_ctl_params *p, const struct moat_ctl_lc *lc,
		   enum moat_resource r, bool *slack)
{
	double worst = 0;
	unsigned int s;

	*slack = true;
	for (s = 0; s < MOAT_SIG_NR; s++) {
		double v = lc->value[s], t = lc->target[s];

		if (moat_signal_resource[s] != r || isnan(v) || !(t > 0))
			continue;
		if (v > t && v / t > worst)
			worst = v / t;
		if (v >= t * p->slack_pct / 100)
			*slack = false;
	}
	return worst;
}

/* Where one step down would take @b's limit of @r; INFINITY: no step. */
static double step_down_to(const struct moat_ctl_params *p,
			   const struct moat_ctl_be *b, enum moat_resource r,
			   struct moat_ctl_limit *out)
{
	const struct moat_ctl_step *s = &p->step[r];
	struct moat_ctl_limit l = b->lim[r];
	double usage = b->usage[r], base, to;

	if (l.cooldown)
		return INFINITY;
	if (isinf(l.limit)) {
		l.ref = isnan(usage) ? b->orig[r] : fmin(b->orig[r], usage);
		if (!(l.ref > 0) || isinf(l.ref))
			return INFINITY;	/* nothing to step down from */
		base = l.ref;
	} else {
		base = usage > 0 ? fmin(l.limit, usage) : l.limit;
	}
	to = fmax(moat_ctl_floor(p, r, &l), base * (100 - s->decrease_pct) / 100);
	if (to >= l.limit)
		return INFINITY;	/* at the floor */
	l.limit = to;
	l.cooldown = s->cooldown + 1;	/* the next period counts it down */
	*out = l;
	return to;
}

/*
 * The next culprit of LC group @i for @r: most blamed (CPU) or largest
 * (memory) among the BE groups not yet stepped this period that can take
 * a step.  -1: none.
 */
static int next_culprit(const struct moat_ctl_params *p, enum moat_resource r,
			const double *blame_row, struct moat_ctl_be *be,
			size_t nbe, struct moat_ctl_limit *out)
{
	struct moat_ctl_limit l;
	double best = 0;
	int found = -1;
	size_t j;

	for (j = 0; j < nbe; j++) {
		double key = r == MOAT_RES_CPU ? blame_row[j] : be[j].usage[r];

		if (be[j].action[r] != MOAT_CTL_NONE || !(key > best))
			continue;
		if (isinf(step_down_to(p, &be[j], r, &l)))
			continue;
		best = key;
		found = j;
		*out = l;
	}
	return found;
}

static void step_up(const struct moat_ctl_params *p, struct moat_ctl_be *b,
		    enum moat_resource r)
{
	struct moat_ctl_limit *l = &b->lim[r];

	l->limit += l->ref * p->step[r].increase_pct / 100;
	if (l->limit >= l->ref || !(p->step[r].increase_pct > 0 && l->ref > 0)) {
		*l = (struct moat_ctl_limit){ .limit = INFINITY };
		b->action[r] = MOAT_CTL_RESTORE;
	} else {
		b->action[r] = MOAT_CTL_RELEASE;
	}
}

static void control_resource(const struct moat_ctl_params *p,
			     struct moat_ctl_state *st, enum moat_resource r,
			     const struct moat_ctl_lc *lc, size_t nlc,
			     const double *blame, struct moat_ctl_be *be,
			     size_t nbe, double *sev)
{
	bool all_slack = true, slack;
	size_t i, j;

	st->violated[r] = false;
	for (i = 0; i < nlc; i++) {
		sev[i] = over(p, &lc[i], r, &slack);
		st->violated[r] |= sev[i] > 0;
		all_slack &= slack;
	}
	if (st->violated[r]) {
		st->slack_periods[r] = 0;
		for (;;) {
			size_t worst = 0;
			unsigned int n;

			for (i = 1; i < nlc; i++)
				if (sev[i] > sev[worst])
					worst = i;
			if (!(sev[worst] > 0))
				break;
			sev[worst] = 0;
			for (n = 0; n < p->culprits; n++) {
				struct moat_ctl_limit l;
				int c = next_culprit(p, r, blame + worst * nbe,
						     be, nbe, &l);

				if (c < 0)
					break;
				be[c].lim[r] = l;
				be[c].action[r] = MOAT_CTL_THROTTLE;
				be[c].cause[r] = worst;
			}
		}
		return;
	}
	if (!all_slack) {
		st->slack_periods[r] = 0;
		return;
	}
	if (st->slack_periods[r] < p->release_periods)
		st->slack_periods[r]++;
	if (st->slack_periods[r] < p->release_periods)
		return;
	for (j = 0; j < nbe; j++)
		if (!isinf(be[j].lim[r].limit))
			step_up(p, &be[j], r);
}

void moat_control_step(const struct moat_ctl_params *p,
		       struct moat_ctl_state *st,
		       const struct moat_ctl_lc *lc, size_t nlc,
		       const double *blame,
		       struct moat_ctl_be *be, size_t nbe)
{
	double *sev = calloc(nlc ? nlc : 1, sizeof(*sev));
	unsigned int r;
	size_t j;

	for (j = 0; j < nbe; j++)
		for (r = 0; r < MOAT_RES_NR; r++) {
			be[j].action[r] = MOAT_CTL_NONE;
			be[j].cause[r] = -1;
			if (be[j].lim[r].cooldown)
				be[j].lim[r].cooldown--;
		}
	for (r = 0; r < MOAT_RES_NR; r++) {
		if (!sev) {		/* no memory: hold everything */
			st->violated[r] = false;
			st->slack_periods[r] = 0;
			continue;
		}
		control_resource(p, st, r, lc, nlc, blame, be, nbe, sev);
	}
	free(sev);
}
