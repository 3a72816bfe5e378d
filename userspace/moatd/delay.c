// SPDX-License-Identifier: GPL-2.0-only
/*
 * Where run-queue delay comes from: the BPF programs (lib/rqlat_bpf.c),
 * or, where they cannot load (no BTF, no privilege, an old kernel), the
 * scheduler's per-task counters in /proc/<tid>/schedstat
 * (lib/schedstat.c).  The knob rqlat/source, read at start: auto (BPF,
 * else schedstat), bpf, schedstat ("taskstats", its name while it was
 * read over netlink, is taken for it).  Either way each group gets a
 * cumulative histogram, and everything after it (windows, percentiles,
 * the controller) is the same; schedstat gives no blame, so the
 * controller then picks culprits by CPU usage.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "delay.h"
#include "idsnap.h"
#include "log.h"
#include "rqlat_bpf.h"
#include "schedstat.h"

enum { SRC_AUTO, SRC_BPF, SRC_SCHEDSTAT, SRC_TASKSTATS };
static const char *const sources[] = { "auto", "bpf", "schedstat", "taskstats", NULL };

struct delay {
	struct moatd *d;
	unsigned int source;		/* rqlat/source */
	struct moat_rqlat *rqlat;	/* NULL: BPF did not load, and */
	struct moat_schedstat *ss;	/* sched_info stands in */
	struct moat_idsnap snap;	/* every cgroup's histogram, a batch */
	/* the last period's blame, for this period's growth */
	struct blame_entry *last;
	size_t nr_last;
	bool last_valid;
};

/* Its state of a group. */
struct delay_group {
	struct moat_rqlat_hist last;	/* cumulative, at the last read */
	bool valid;			/* last holds a read */
	bool watched;			/* in rqlat's watched map, as */
	__u64 watched_cgid;		/* this cgroup */
	struct moat_ts_group ts;	/* schedstat: its threads' delays */
};

static struct delay *D(const struct moatd *d)
{
	return moatd_mod(d, MOD_DELAY);
}

static int show_active(const struct moat_knob *k, char *buf, size_t len)
{
	const struct delay *dl = k->owner;

	return snprintf(buf, len, "%s", dl->rqlat ? "bpf" : dl->ss ? "schedstat" :
			"none") >= (int)len ? -EOVERFLOW : 0;
}

static void store_source(const struct moat_knob *k, unsigned int u,
			 const char *val)
{
	struct delay *dl = k->owner;

	dl->source = u;
	if (dl->d->started)
		pr_info("%s = '%s': used from moatd's next start", k->path, val);
}

static int delay_init(struct moatd *d)
{
	struct delay *dl = D(d);
	const struct moat_knob knobs[] = {
		{ .path = "rqlat/source", .type = MOAT_KNOB_CHOICE, .writable = true,
		  .choices = sources, .data = &dl->source,
		  .store = store_source },
		{ .path = "rqlat/active_source", .type = MOAT_KNOB_SHOW,
		  .show = show_active },
	};

	dl->d = d;
	moat_idsnap_init(&dl->snap, sizeof(struct moat_rqlat_hist));
	return moat_knob_add_all(d->tree, "", knobs,
				 sizeof(knobs) / sizeof(knobs[0]), dl);
}

static int delay_open(struct moatd *d)
{
	struct moat_rqlat_opts ro = {};
	struct delay *dl = D(d);
	int err = -ENOENT;

	if (dl->source != SRC_SCHEDSTAT && dl->source != SRC_TASKSTATS) {
		err = moat_rqlat_open(&ro, &dl->rqlat);
		if (!err)
			return 0;
		if (moat_log_enabled(MOAT_LOG_DEBUG))
			moat_log_libbpf_tail();
		if (dl->source == SRC_BPF)
			return err;
		pr_warn("rqlat: BPF did not load (%s): falling back to the scheduler's per-task counters (/proc/<tid>/schedstat): coarser, and no blame",
			strerror(-err));
	}
	err = moat_schedstat_open(&dl->ss);
	if (err)
		return err;
	pr_info("rqlat: run-queue delay from /proc/<tid>/schedstat (sched_info's run_delay and pcount)");
	return 0;
}

static void delay_close(struct moatd *d)
{
	struct delay *dl = D(d);

	moat_rqlat_close(dl->rqlat);
	moat_schedstat_close(dl->ss);
	dl->rqlat = NULL;
	dl->ss = NULL;
	moat_idsnap_free(&dl->snap);
	free(dl->last);
}

static void unwatch(struct delay *dl, struct delay_group *dg)
{
	if (dg->watched && dl->rqlat)
		moat_rqlat_watch(dl->rqlat, dg->watched_cgid, false);
	dg->watched = false;
}

static void delay_group_reset(struct moatd *d, struct moatd_group *g)
{
	struct delay_group *dg = group_mod(g, MOD_DELAY);

	unwatch(D(d), dg);
	dg->valid = false;
	moat_ts_group_free(&dg->ts);
	memset(&dg->ts, 0, sizeof(dg->ts));
}

static void delay_group_del(struct moatd *d, struct moatd_group *g)
{
	struct delay_group *dg = group_mod(g, MOD_DELAY);

	unwatch(D(d), dg);
	moat_ts_group_free(&dg->ts);
}

static int snap_add(__u64 id, const struct moat_rqlat_hist *h, void *ctx)
{
	return moat_idsnap_add(ctx, id, h);
}

static int cmp_blame(const void *a, const void *b)
{
	const struct blame_entry *x = a, *y = b;

	if (x->victim != y->victim)
		return x->victim < y->victim ? -1 : 1;
	return x->culprit < y->culprit ? -1 : x->culprit > y->culprit;
}

static int blame_add(const struct moat_blame_key *k,
		     const struct moat_blame_val *v, void *ctx)
{
	struct moatd *d = ctx;
	struct period *p = &d->period;

	/* not groups: unbounded, and not moat's business; a group's own limit is */
	if (!moatd_group_by_cgid(d, k->victim) ||
	    (k->culprit != MOAT_CULPRIT_LIMIT && !moatd_group_by_cgid(d, k->culprit)))
		return 0;
	if (p->nr_blame == p->cap_blame) {
		size_t cap = p->cap_blame ? p->cap_blame * 2 : 256;
		void *n = realloc(p->blame, cap * sizeof(*p->blame));

		if (!n)
			return -ENOMEM;
		p->blame = n;
		p->cap_blame = cap;
	}
	p->blame[p->nr_blame++] = (struct blame_entry){
		.victim = k->victim, .culprit = k->culprit,
		.wait_ns = v->wait_ns, .count = v->count,
	};
	return 0;
}

/*
 * The blame map, summed over CPUs, of group pairs, and each entry's
 * growth since the last period (a forgotten and re-made entry restarts).
 * The first period after start has no growth to give.
 */
static void read_blame(struct moatd *d, struct delay *dl, struct period *p)
{
	size_t i;
	int err;

	p->nr_blame = 0;
	p->blame_valid = false;
	p->blame_known = dl->rqlat;
	if (!dl->rqlat)
		return;
	err = moat_rqlat_for_each_blame(dl->rqlat, blame_add, d);
	if (err) {
		pr_warn("read the blame map: %s", strerror(-err));
		dl->last_valid = false;
		return;
	}
	if (p->nr_blame)
		qsort(p->blame, p->nr_blame, sizeof(*p->blame), cmp_blame);
	for (i = 0; i < p->nr_blame; i++) {
		struct blame_entry *b = &p->blame[i];
		const struct blame_entry *was = dl->nr_last ?
			bsearch(b, dl->last, dl->nr_last, sizeof(*b), cmp_blame) : NULL;

		b->delta_ns = !was ? b->wait_ns :
			      b->wait_ns >= was->wait_ns ? b->wait_ns - was->wait_ns :
							   b->wait_ns;
		b->delta_count = !was ? b->count :
				 b->count >= was->count ? b->count - was->count : b->count;
	}
	p->blame_valid = dl->last_valid;
	free(dl->last);
	dl->last = p->nr_blame ? malloc(p->nr_blame * sizeof(*dl->last)) : NULL;
	dl->nr_last = dl->last ? p->nr_blame : 0;
	if (dl->last)
		memcpy(dl->last, p->blame, p->nr_blame * sizeof(*dl->last));
	dl->last_valid = dl->last || !p->nr_blame;
}

static double percentile_us(const struct moat_rqlat_hist *h, double q)
{
	double ns;

	return moat_hist_percentile(h, q, &ns) ? NAN : ns / 1000;
}

/* @g's cumulative waits into its sample; its window from the last read. */
static void read_group(struct moatd *d, struct delay *dl, struct moatd_group *g,
		       double secs)
{
	struct delay_group *dg = group_mod(g, MOD_DELAY);
	struct moat_rqlat_hist *cum = &g->sample.rqlat;
	struct group_window *w = &g->win;
	bool empty;
	double ns;
	int err;

	if (dl->ss) {
		err = moat_schedstat_group(dl->ss, g->dir, d->cpu->v2, &dg->ts);
		if (err && err != -ENOENT && err != -ENODEV)
			pr_debug("group %s: schedstat: %s", g->gid.id, strerror(-err));
		*cum = dg->ts.cum;
	} else {
		const struct moat_rqlat_hist *found = moat_idsnap_find(&dl->snap, g->cgid);

		if (found)
			*cum = *found;
		else
			memset(cum, 0, sizeof(*cum));
	}
	g->sample.rqlat_valid = dl->rqlat || dl->ss;
	if (!dg->valid)
		memset(&dg->last, 0, sizeof(dg->last));
	/*
	 * Most groups, most periods, waited not once: the histogram is the
	 * one of the last read, and the window all zeros.  One memcmp()
	 * says so, for less than the slot-by-slot delta and the check that
	 * it came out empty.
	 */
	if (dg->valid && !memcmp(cum, &dg->last, sizeof(*cum))) {
		memset(&g->win_hist, 0, sizeof(g->win_hist));
		empty = true;
	} else {
		moat_hist_delta(&g->win_hist, cum, &dg->last);
		dg->last = *cum;
		dg->valid = true;
		empty = moat_hist_empty(&g->win_hist);
	}
	w->rqlat_count = g->win_hist.count;
	if (empty) {
		w->rqlat_p50_us = w->rqlat_p99_us = w->rqlat_p999_us = NAN;
		w->rqlat_wp99_us = w->rqlat_ap99_us = NAN;
		return;
	}
	w->rqlat_p50_us = percentile_us(&g->win_hist, 0.5);
	w->rqlat_p99_us = percentile_us(&g->win_hist, 0.99);
	w->rqlat_p999_us = percentile_us(&g->win_hist, 0.999);
	w->rqlat_wp99_us = moat_hist_time_percentile(&g->win_hist, 0.99, &ns) ?
			   NAN : ns / 1000;
	w->rqlat_ap99_us = moat_hist_arrival_percentile(&g->win_hist, 0.99,
							secs * 1e9, &ns) ?
			   NAN : ns / 1000;
}

/* LC groups' waits are blamed: they, and only they, are watched. */
static void sync_watches(struct moatd *d, struct delay *dl)
{
	size_t i;

	for (i = 0; dl->rqlat && i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i];
		struct delay_group *dg = group_mod(g, MOD_DELAY);
		bool want = g->class == MOAT_CLASS_LC;

		if (want == dg->watched)
			continue;
		if (!want) {
			unwatch(dl, dg);
		} else if (!moat_rqlat_watch(dl->rqlat, g->cgid, true)) {
			dg->watched = true;
			dg->watched_cgid = g->cgid;
		}
	}
}

void delay_sample(struct moatd *d, struct period *p)
{
	struct delay *dl = D(d);
	size_t i;
	int err;

	/* Removed cgroups leave the maps at once, not when they fill. */
	if (p->nr_gone && dl->rqlat)
		moat_rqlat_forget(dl->rqlat, p->gone, p->nr_gone);
	sync_watches(d, dl);
	/* A few batched syscalls for all groups' histograms, not one each. */
	moat_idsnap_clear(&dl->snap);
	if (dl->rqlat) {
		err = moat_rqlat_for_each_hist(dl->rqlat, snap_add, &dl->snap);
		if (err)
			pr_warn("read rqlat histograms: %s", strerror(-err));
		moat_idsnap_sort(&dl->snap);
	}
	for (i = 0; i < d->nr_groups; i++)
		read_group(d, dl, d->groups[i], p->secs);
	read_blame(d, dl, p);
}

bool delay_drops(const struct moatd *d, __u64 drops[MOAT_DROP_NR])
{
	memset(drops, 0, MOAT_DROP_NR * sizeof(*drops));
	if (!D(d)->rqlat)
		return false;
	moat_rqlat_drops(D(d)->rqlat, drops);
	return true;
}

int delay_for_each_prog(const struct moatd *d,
			int (*fn)(const char *name, __u64 run_ns, __u64 runs,
				  void *ctx), void *ctx)
{
	return D(d)->rqlat ? moat_rqlat_for_each_prog(D(d)->rqlat, fn, ctx) : 0;
}

bool delay_blames(const struct moatd *d)
{
	return D(d)->rqlat;
}

const struct moatd_module delay_module = {
	.name = "delay",
	.size = sizeof(struct delay),
	.group_size = sizeof(struct delay_group),
	.init = delay_init,
	.open = delay_open,
	.close = delay_close,
	.group_reset = delay_group_reset,
	.group_del = delay_group_del,
};
