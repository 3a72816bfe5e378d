// SPDX-License-Identifier: GPL-2.0-only
/*
 * The controller's decision step (the rules are in control.h).  Nothing
 * here reads a clock, a file or a map.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include "control.h"

const enum moat_resource moat_signal_resource[MOAT_SIG_NR] = {
	[MOAT_SIG_RQLAT_P99] = MOAT_RES_CPU_PRIO,
	[MOAT_SIG_MEMORY_PRESSURE] = MOAT_RES_MEMORY,
	[MOAT_SIG_CPI] = MOAT_RES_L3,
};

const enum moat_resource moat_resource_next[MOAT_RES_NR] = {
	[MOAT_RES_CPU_PRIO] = MOAT_RES_CPU,
	[MOAT_RES_CPU] = MOAT_RES_NR,
	[MOAT_RES_MEMORY] = MOAT_RES_NR,
	[MOAT_RES_L3] = MOAT_RES_MB,
	[MOAT_RES_MB] = MOAT_RES_CPU,
};

const char *const moat_signal_names[MOAT_SIG_NR] = {
	[MOAT_SIG_RQLAT_P99] = "rqlat_p99_us",	/* units.c: which one */
	[MOAT_SIG_MEMORY_PRESSURE] = "memory_pressure_pct",
	[MOAT_SIG_CPI] = "cpi",
};

const char *const moat_resource_names[MOAT_RES_NR] = {
	[MOAT_RES_CPU_PRIO] = "cpu_prio",
	[MOAT_RES_CPU] = "cpu",
	[MOAT_RES_MEMORY] = "memory",
	[MOAT_RES_L3] = "l3",
	[MOAT_RES_MB] = "mb",
};

const char *const moat_chain_names[MOAT_RES_NR] = {
	[MOAT_RES_CPU_PRIO] = "rqlat",
	[MOAT_RES_MEMORY] = "memory",
	[MOAT_RES_L3] = "cpi",
};

#define for_chain(r, head) \
	for ((r) = (head); (r) < MOAT_RES_NR; (r) = moat_resource_next[r])

bool moat_chain_has(enum moat_resource head, enum moat_resource r)
{
	enum moat_resource c;

	for_chain(c, head)
		if (c == r)
			return true;
	return false;
}

/* Whether some signal's chain starts at @r. */
static bool is_head(enum moat_resource r)
{
	unsigned int s;

	for (s = 0; s < MOAT_SIG_NR; s++)
		if (moat_signal_resource[s] == r)
			return true;
	return false;
}

double moat_ctl_floor(const struct moat_ctl_params *p, const struct moat_ctl_be *b,
		      enum moat_resource r, const struct moat_ctl_limit *l)
{
	return fmax(b->own[r] ? b->least[r] : p->floor_min[r],
		    l->ref * p->step[r].min_pct / 100);
}

/* Under this a step goes to the floor: the least the actuator sets above it. */
static double snap_below(const struct moat_ctl_params *p, const struct moat_ctl_be *b,
			 enum moat_resource r)
{
	return b->own[r] ? b->snap[r] : p->snap_below[r];
}

/*
 * How far @lc is over its targets for the chain @head: the worst value /
 * target, 0 when within them.  *@slack: every measured signal of the
 * chain is below target * slack_pct%.
 */
static double over(const struct moat_ctl_params *p, const struct moat_ctl_lc *lc,
		   enum moat_resource head, bool *slack)
{
	double worst = 0;
	unsigned int s;

	*slack = true;
	for (s = 0; s < MOAT_SIG_NR; s++) {
		double v = lc->value[s], t = lc->target[s];

		if (moat_signal_resource[s] != head || isnan(v) || !(t > 0))
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
	double usage = b->usage[r], base, to, floor, snap;

	if (l.cooldown || l.backoff)
		return INFINITY;
	if (isinf(l.limit)) {
		l.ref = isnan(usage) ? b->orig[r] : fmin(b->orig[r], usage);
		if (isnan(l.ref) || l.ref < 0 || isinf(l.ref))
			return INFINITY;	/* nothing to step down from */
		base = l.ref;
	} else {
		base = usage > 0 ? fmin(l.limit, usage) : l.limit;
	}
	floor = moat_ctl_floor(p, b, r, &l);
	to = fmax(floor, base * (100 - s->decrease_pct) / 100);
	snap = snap_below(p, b, r);
	if (b->own[r] && r == MOAT_RES_CPU_PRIO)
		/*
		 * A pod's weight: to the least factor in one step (none where
		 * the pod has no weight moat may lower: 1), then the per-task
		 * lever under it.  A weight costs the pod nothing while the LC
		 * pods sleep, and the factors between leave waits too rare for
		 * an arrival p99 to meet that still set the client's tail
		 * (enforce.rst, "Several batch pods").
		 */
		to = l.limit > snap && snap < b->orig[r] ? fmax(snap, floor) : floor;
	else if (to < snap)
		to = floor;
	if (to >= l.limit || to >= b->orig[r])
		return INFINITY;	/* at the floor, or no lower than set */
	/*
	 * A memory.high at or over what the group uses reclaims nothing: a
	 * pod just started (a few KiB) would be held at the floor as it
	 * grows, by a pressure it had no part in.
	 */
	if (r == MOAT_RES_MEMORY && !(usage > to))
		return INFINITY;
	l.prev = l.limit;
	l.limit = to;
	l.cooldown = s->cooldown + 1;	/* the next period counts it down */
	*out = l;
	return to;
}

/*
 * The step @b takes next in the chain @head: the first resource that can
 * take one, into *@r and *@out.  False: none, or one of the chain's last
 * steps still in cooldown, whose effect it waits for.
 */
static bool chain_step(const struct moat_ctl_params *p,
		       const struct moat_ctl_be *b, enum moat_resource head,
		       enum moat_resource *r, struct moat_ctl_limit *out)
{
	for_chain(*r, head) {
		if (b->action[*r] != MOAT_CTL_NONE || b->lim[*r].cooldown)
			return false;
		if (!isinf(step_down_to(p, b, *r, out)))
			return true;
	}
	return false;
}

/*
 * The next culprit of an LC group for the chain @head: most blamed
 * (run-queue latency), most correlated (CPI) or largest (memory) among
 * the BE groups that can take a step this period.  @row: the LC group's
 * row of the blame or suspect matrix.  -1: none.
 */
static int next_culprit(const struct moat_ctl_params *p, enum moat_resource head,
			const double *row, struct moat_ctl_be *be,
			size_t nbe, enum moat_resource *rout,
			struct moat_ctl_limit *out)
{
	struct moat_ctl_limit l;
	enum moat_resource r;
	double best = 0;
	int found = -1;
	size_t j;

	for (j = 0; j < nbe; j++) {
		/* without blame, run-queue latency's culprits are the BE
		   groups that use the most CPU */
		double key = row ? row[j] :
			     be[j].usage[head == MOAT_RES_CPU_PRIO ? MOAT_RES_CPU : head];

		if (!(key > best) || !chain_step(p, &be[j], head, &r, &l))
			continue;
		best = key;
		found = j;
		*rout = r;
		*out = l;
	}
	return found;
}

static void step_up(const struct moat_ctl_params *p, struct moat_ctl_be *b,
		    enum moat_resource r)
{
	struct moat_ctl_limit *l = &b->lim[r];
	double snap = snap_below(p, b, r);

	if (l->limit < snap)	/* the least it can set */
		l->limit = snap;
	else
		l->limit += l->ref * p->step[r].increase_pct / 100;
	l->judge = 0;
	if (l->limit >= l->ref || !(p->step[r].increase_pct > 0 && l->ref > 0)) {
		*l = (struct moat_ctl_limit){ .limit = INFINITY,
					      .backoff = l->backoff,
					      .useless = l->useless };
		b->action[r] = MOAT_CTL_RESTORE;
	} else {
		b->action[r] = MOAT_CTL_RELEASE;
	}
}

static int lc_by_id(const struct moat_ctl_lc *lc, size_t nlc,
		    unsigned long long id)
{
	size_t i;

	for (i = 0; i < nlc; i++)
		if (lc[i].id == id)
			return i;
	return -1;
}

/* Whether @now is min_effect_pct% under @then. */
static bool fell(const struct moat_ctl_params *p, double now, double then)
{
	return now < then * (100 - p->min_effect_pct) / 100;
}

/*
 * Judge the chain's steps down whose cooldown is over: a step helped if
 * its LC group is within target now, or min_effect_pct% less far over it
 * (@sev: how far over target each LC group is now); the others are
 * undone.
 */
static void judge(const struct moat_ctl_params *p, enum moat_resource head,
		  const struct moat_ctl_lc *lc, size_t nlc, const double *sev,
		  struct moat_ctl_be *be, size_t nbe)
{
	enum moat_resource r;
	size_t j;

	for (j = 0; j < nbe; j++) {
		for_chain(r, head) {
			struct moat_ctl_limit *l = &be[j].lim[r];
			unsigned int shift;
			int i;

			if (!(l->judge > 0) || l->head != head)
				continue;
			i = lc_by_id(lc, nlc, l->cause_id);
			/* worse than before the step: undone now, cooldown or not */
			if (l->cooldown && !(i >= 0 && sev[i] > l->judge))
				continue;
			if (i < 0 || !(sev[i] > 0) || !p->step[r].backoff ||
			    fell(p, sev[i], l->judge)) {
				l->judge = 0;	/* it helped, or nothing to ask */
				l->useless = 0;
				continue;
			}
			shift = l->useless < BACKOFF_DOUBLINGS ? l->useless :
								 BACKOFF_DOUBLINGS;
			l->useless++;
			l->backoff = p->step[r].backoff << shift;
			l->judge = 0;
			l->limit = l->prev;
			if (isinf(l->limit))
				*l = (struct moat_ctl_limit){ .limit = INFINITY,
							      .backoff = l->backoff,
							      .useless = l->useless };
			be[j].action[r] = MOAT_CTL_UNDO;
			be[j].cause[r] = i;
			be[j].chain[r] = head;
		}
	}
}

/*
 * With slack: release each BE group's last throttled resource of @head,
 * unless another chain that has it is not ready to release (@ready, by
 * chain head).
 */
static void release(const struct moat_ctl_params *p,
		    struct moat_ctl_state *st, enum moat_resource head,
		    const bool *ready, struct moat_ctl_be *be, size_t nbe)
{
	enum moat_resource r, last, h;
	size_t j;

	for (j = 0; j < nbe; j++) {
		last = MOAT_RES_NR;
		for_chain(r, head)
			if (!isinf(be[j].lim[r].limit))
				last = r;
		if (last == MOAT_RES_NR || be[j].action[last] != MOAT_CTL_NONE ||
		    (st->slack_periods[head] >> st->relapses[head]) < p->step[last].release)
			continue;
		for (h = 0; h < MOAT_RES_NR; h++)
			if (is_head(h) && !ready[h] && moat_chain_has(h, last))
				break;
		if (h < MOAT_RES_NR)
			continue;
		step_up(p, &be[j], last);
		be[j].chain[last] = head;
		st->release_age[head] = 1;
	}
}

/*
 * The release's hysteresis (control.h): a violation within
 * RELAPSE_PERIODS of the chain's last release doubles the slack the next
 * one waits for; a release that held that long halves it.
 */
static void relapse(struct moat_ctl_state *st, enum moat_resource head)
{
	unsigned int *age = &st->release_age[head];

	if (!*age)
		return;
	if (st->violated[head]) {
		if (st->relapses[head] < RELAPSE_DOUBLINGS)
			st->relapses[head]++;
		*age = 0;
	} else if (++*age > RELAPSE_PERIODS + 1) {
		if (st->relapses[head])
			st->relapses[head]--;
		*age = 0;
	}
}

/*
 * Judge and step down the chain @head; true when it is ready to release
 * (slack for long enough).  @key: the culprit matrix, NULL: by usage
 * when @by_usage, else there is none.
 */
static bool control_chain(const struct moat_ctl_params *p,
			  struct moat_ctl_state *st, enum moat_resource head,
			  const struct moat_ctl_lc *lc, size_t nlc,
			  const double *key, bool by_usage,
			  struct moat_ctl_be *be, size_t nbe, double *sev)
{
	bool all_slack = true, slack;
	size_t i;

	st->violated[head] = false;
	for (i = 0; i < nlc; i++) {
		sev[i] = over(p, &lc[i], head, &slack);
		st->violated[head] |= sev[i] > 0;
		all_slack &= slack;
	}
	judge(p, head, lc, nlc, sev, be, nbe);
	relapse(st, head);
	if (st->violated[head]) {
		st->slack_periods[head] = 0;
		for (;;) {
			size_t worst = 0;
			unsigned int n;
			double s;

			for (i = 1; i < nlc; i++)
				if (sev[i] > sev[worst])
					worst = i;
			if (!(sev[worst] > 0))
				break;
			s = sev[worst];
			sev[worst] = 0;
			for (n = 0; (key || by_usage) && n < p->culprits; n++) {
				struct moat_ctl_limit l;
				enum moat_resource r;
				int c = next_culprit(p, head,
						     key ? key + worst * nbe : NULL,
						     be, nbe, &r, &l);

				if (c < 0)
					break;
				l.judge = s;
				l.cause_id = lc[worst].id;
				l.head = head;
				be[c].lim[r] = l;
				be[c].action[r] = MOAT_CTL_THROTTLE;
				be[c].cause[r] = worst;
				be[c].chain[r] = head;
			}
		}
		return false;
	}
	if (!all_slack) {
		st->slack_periods[head] = 0;
		return false;
	}
	if (st->slack_periods[head] < UINT_MAX)
		st->slack_periods[head]++;
	return (st->slack_periods[head] >> st->relapses[head]) >= p->release_periods;
}



void moat_control_step(const struct moat_ctl_params *p,
		       struct moat_ctl_state *st,
		       const struct moat_ctl_lc *lc, size_t nlc,
		       const double *blame, const double *suspect,
		       struct moat_ctl_be *be, size_t nbe)
{
	double *sev = calloc(nlc ? nlc : 1, sizeof(*sev));
	bool ready[MOAT_RES_NR] = { false };
	unsigned int r;
	size_t j;

	for (j = 0; j < nbe; j++)
		for (r = 0; r < MOAT_RES_NR; r++) {
			struct moat_ctl_limit *l = &be[j].lim[r];

			be[j].action[r] = MOAT_CTL_NONE;
			be[j].cause[r] = -1;
			be[j].chain[r] = r;
			if (l->cooldown)
				l->cooldown--;
			if (l->backoff)
				l->backoff--;
		}
	for (r = 0; r < MOAT_RES_NR; r++) {
		const double *key = r == MOAT_RES_CPU_PRIO ? blame :
				    r == MOAT_RES_L3 ? suspect : NULL;

		if (!is_head(r))
			continue;
		if (!sev) {		/* no memory: hold everything */
			st->violated[r] = false;
			st->slack_periods[r] = 0;
			continue;
		}
		ready[r] = control_chain(p, st, r, lc, nlc, key,
					 r == MOAT_RES_MEMORY ||
					 (r == MOAT_RES_CPU_PRIO && !blame),
					 be, nbe, sev);
	}
	/* after every chain's steps down: one that is violated holds back
	   the release of what it shares */
	for (r = 0; r < MOAT_RES_NR; r++)
		if (ready[r])
			release(p, st, r, ready, be, nbe);
	free(sev);
}
