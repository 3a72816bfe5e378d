// SPDX-License-Identifier: GPL-2.0-only
/*
 * Units and their signals, once a period, for everyone after: the
 * controller, the hints, the metrics and the Node publisher read the
 * same value.
 *
 * A unit is the outermost group of a subtree: a pod (with its
 * containers) or a rule's cgroup.  The kernel keys a run-queue wait by
 * the cgroup of the task's cpu controller, and on a node a pod's tasks
 * are in its containers, so a pod's own histogram is empty: a unit's
 * waits are its members' merged, and its run-queue signal is taken from
 * them, not measured under enforce/min_waits waits: lc/rqlat_signal picks
 * the p99 of what a request arriving at random waits (ap99,
 * moat_hist_arrival_percentile()) or the time-weighted p99 (wp99,
 * moat_hist_time_percentile()); Documentation/performance.rst has how
 * each agrees with a client's latency.  Pressure, CPU time and memory are
 * hierarchical in the kernel: the unit's own files count its members.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "units.h"

/* lc/rqlat_signal: which p99 of the waits the controller takes */
enum { SIGNAL_AP99, SIGNAL_WP99 };
static const char *const rqlat_signals[] = { "ap99", "wp99", NULL };

struct signals {
	unsigned int rqlat_signal;
	unsigned int rqlat_p99_target_us;
	unsigned int memory_pressure_target_pct;
	unsigned int min_waits;		/* for a p99 that means anything */
	/* where a pod's annotation may set its target (podmeta.h) */
	char annotation_ns[256];
	unsigned long units_gen;	/* d->groups_gen the units were found at */
	bool units_found;
};

/* Its state of a group. */
struct signals_group {
	unsigned int rqlat_p99_target_us;	/* 0: the class's */
	int unit;			/* its index in p->units; -1: none */
	const struct moatd *d;		/* for its knobs */
};

static struct signals *S(const struct moatd *d)
{
	return moatd_mod(d, MOD_SIGNALS);
}

/* '/' sorts before any other byte: a group's subtree comes right after it. */
static int dir_key(unsigned char c)
{
	return c == '/' ? 1 : c ? c + 1 : 0;
}

static int cmp_dir(const void *a, const void *b)
{
	const unsigned char *x = (const unsigned char *)(*(struct moatd_group *const *)a)->dir;
	const unsigned char *y = (const unsigned char *)(*(struct moatd_group *const *)b)->dir;

	for (; *x && *x == *y; x++, y++)
		;
	return dir_key(*x) - dir_key(*y);
}

/* Sorted by directory, a group is in the last unit it is below. */
static void find_units(struct moatd_group **by_dir, size_t n)
{
	struct moatd_group *top = NULL;
	size_t i;

	qsort(by_dir, n, sizeof(*by_dir), cmp_dir);
	for (i = 0; i < n; i++) {
		struct moatd_group *g = by_dir[i];
		size_t len = top ? strlen(top->dir) : 0;

		if (top && !strncmp(g->dir, top->dir, len) && g->dir[len] == '/')
			g->unit = top;
		else
			g->unit = top = g;
	}
}

/*
 * @h less @n waits of @ns in all, taken from its longest: the waits at a
 * unit's own limit last until its next CFS period, longer than the
 * waits behind other tasks it has beside them, which keep their slots.
 */
static void without_longest(struct moat_rqlat_hist *h, double n, double ns)
{
	__u64 left = n < h->count ? (__u64)n : h->count, k;
	int i;

	for (i = MOAT_HIST_SLOTS - 1; i >= 0 && left; i--) {
		k = h->slots[i] < left ? h->slots[i] : left;
		h->slots[i] -= k;
		h->count -= k;
		left -= k;
	}
	h->sum_ns = ns < h->sum_ns ? h->sum_ns - (__u64)ns : 0;
}

static void lc_signals(const struct signals *s, struct unit *u, double secs)
{
	const struct signals_group *sg = group_mod(u->g, MOD_SIGNALS);
	struct moat_rqlat_hist h = u->waits;
	double ns;
	int i;

	for (i = 0; i < MOAT_SIG_NR; i++) {
		u->lc.value[i] = NAN;
		u->lc.target[i] = 0;
	}
	u->lc.id = u->g->cgid;
	u->rqlat_wp99_us = u->rqlat_ap99_us = NAN;
	if (u->limit_waits > 0)
		without_longest(&h, u->limit_waits, u->limit_ns);
	if (h.count >= s->min_waits) {
		if (!moat_hist_time_percentile(&h, 0.99, &ns))
			u->rqlat_wp99_us = ns / 1000;
		if (!moat_hist_arrival_percentile(&h, 0.99, secs * 1e9, &ns))
			u->rqlat_ap99_us = ns / 1000;
	}
	if (u->class != MOAT_CLASS_LC)
		return;
	u->lc.value[MOAT_SIG_RQLAT_P99] = s->rqlat_signal == SIGNAL_AP99 ?
					  u->rqlat_ap99_us : u->rqlat_wp99_us;
	/*
	 * The admin's knob, then the pod's annotation where its namespace
	 * may set one (lc/target_annotation_namespaces), then the class's.
	 */
	u->lc.target[MOAT_SIG_RQLAT_P99] = sg->rqlat_p99_target_us ?
					   sg->rqlat_p99_target_us :
					   u->g->meta.known && u->g->meta.rqlat_target_us > 0 &&
					   moat_names_has(s->annotation_ns, u->g->meta.ns) ?
					   u->g->meta.rqlat_target_us :
					   s->rqlat_p99_target_us;
	u->lc.value[MOAT_SIG_MEMORY_PRESSURE] = u->g->win.memory_pressure_pct;
	u->lc.target[MOAT_SIG_MEMORY_PRESSURE] = s->memory_pressure_target_pct;
	/* CPI has a target only while CPI² finds the unit a victim: cpi.c */
}

int units_build(struct moatd *d, struct period *p)
{
	struct signals *s = S(d);
	struct moatd_group **by_dir;
	size_t i, n = d->nr_groups;

	p->nr_units = 0;
	if (!n)
		return 0;
	if (n > p->cap_units) {
		void *v = realloc(p->units, n * sizeof(*p->units));

		if (!v)
			return -ENOMEM;	/* the units are as they were: none */
		p->units = v;
		p->cap_units = n;
	}
	/* which group is in which unit changes only with the groups */
	if (!s->units_found || s->units_gen != d->groups_gen) {
		by_dir = malloc(n * sizeof(*by_dir));
		if (!by_dir)
			return -ENOMEM;
		memcpy(by_dir, d->groups, n * sizeof(*by_dir));
		find_units(by_dir, n);
		free(by_dir);
		s->units_gen = d->groups_gen;
		s->units_found = true;
	}
	for (i = 0; i < n; i++) {
		struct moatd_group *g = d->groups[i];
		struct signals_group *sg = group_mod(g, MOD_SIGNALS);

		sg->unit = -1;
		if (g->unit != g)
			continue;
		sg->unit = p->nr_units;
		p->units[p->nr_units++] = (struct unit){
			.g = g, .class = g->class, .cpu_usage = g->win.cpu_usage,
		};
	}
	for (i = 0; i < n; i++) {
		struct moatd_group *g = d->groups[i];
		struct signals_group *usg = group_mod(g->unit, MOD_SIGNALS);

		moat_hist_add(&p->units[usg->unit].waits, &g->win_hist);
		if (g->win.throttled_periods > 0)
			p->units[usg->unit].self_throttled = true;
	}
	/* the window's waits at the members' own limits (delay.c) */
	for (i = 0; p->blame_valid && i < p->nr_blame; i++) {
		const struct blame_entry *b = &p->blame[i];
		const struct moatd_group *v = b->culprit == MOAT_CULPRIT_LIMIT ?
					      moatd_group_by_cgid(d, b->victim) : NULL;
		struct unit *u = v ? (struct unit *)unit_of(p, v->unit) : NULL;

		if (u) {
			u->limit_waits += b->delta_count;
			u->limit_ns += b->delta_ns;
		}
	}
	for (i = 0; i < p->nr_units; i++)
		lc_signals(s, &p->units[i], p->secs);
	return 0;
}

const struct unit *unit_of(const struct period *p, const struct moatd_group *g)
{
	const struct signals_group *sg = group_mod(g, MOD_SIGNALS);

	return sg->unit >= 0 && (size_t)sg->unit < p->nr_units &&
	       p->units[sg->unit].g == g ? &p->units[sg->unit] : NULL;
}

double unit_ratio(const struct unit *u, bool memory)
{
	enum moat_signal s = memory ? MOAT_SIG_MEMORY_PRESSURE : MOAT_SIG_RQLAT_P99;

	return u->lc.target[s] > 0 ? u->lc.value[s] / u->lc.target[s] : NAN;
}

double node_memory_ratio(const struct moatd *d, const struct period *p)
{
	unsigned int t = S(d)->memory_pressure_target_pct;

	return t ? p->node.psi_some_avg10[1] / t : NAN;
}

const char *signals_name(const struct moatd *d, enum moat_signal s)
{
	if (s == MOAT_SIG_RQLAT_P99)
		return S(d)->rqlat_signal == SIGNAL_AP99 ? "rqlat_ap99_us" : "rqlat_wp99_us";
	return moat_signal_names[s];
}

const char *units_rqlat_signal(const struct moatd *d)
{
	return rqlat_signals[S(d)->rqlat_signal];
}

double signals_memory_target(const struct moatd *d)
{
	return S(d)->memory_pressure_target_pct;
}

static int signals_init(struct moatd *d)
{
	struct signals *s = S(d);
	const struct moat_knob knobs[] = {
		{ .path = "lc/rqlat_signal", .type = MOAT_KNOB_CHOICE,
		  .writable = true, .choices = rqlat_signals,
		  .data = &s->rqlat_signal },
		{ .path = "lc/rqlat_p99_target_us", .type = MOAT_KNOB_U32,
		  .writable = true, .min = 1, .max = 10000000,
		  .data = &s->rqlat_p99_target_us },
		{ .path = "lc/memory_pressure_target_pct", .type = MOAT_KNOB_U32,
		  .writable = true, .min = 0, .max = 100,
		  .data = &s->memory_pressure_target_pct },
		{ .path = "enforce/min_waits", .type = MOAT_KNOB_U32,
		  .writable = true, .min = 1, .max = 1000000, .data = &s->min_waits },
		{ .path = "lc/target_annotation_namespaces", .type = MOAT_KNOB_STRING,
		  .writable = true, .data = s->annotation_ns, .str_max = sizeof(s->annotation_ns),
		  .check = moat_knob_check_names,
		  .expects = "namespaces whose pods' annotation moat.io/rqlat-p99-target-us is taken, one space between, or *; '' none" },
	};

	s->rqlat_signal = SIGNAL_AP99;
	s->rqlat_p99_target_us = 2000;
	s->memory_pressure_target_pct = 10;
	s->min_waits = 20;
	snprintf(s->annotation_ns, sizeof(s->annotation_ns), "*");
	return moat_knob_add_all(d->tree, "", knobs, sizeof(knobs) / sizeof(knobs[0]),
				 s);
}

/*
 * A unit's waits, its members' merged, as moatctl status shows a pod:
 * unit_rqlat_count, unit_rqlat_p50_us, unit_rqlat_p99_us (per wait) of
 * the last period; no value on a group that is not a unit.
 */
static int show_unit_waits(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd_group *g = k->owner;
	const struct signals_group *sg = group_mod(g, MOD_SIGNALS);
	const struct unit *u = unit_of(&sg->d->period, g);
	const char *what = strrchr(k->path, '/') + 1;
	double ns;

	if (!u)
		return -ENODATA;
	if (!strcmp(what, "unit_rqlat_count"))
		return snprintf(buf, len, "%llu", (unsigned long long)u->waits.count) >=
		       (int)len ? -EOVERFLOW : 0;
	if (moat_hist_percentile(&u->waits, strcmp(what, "unit_rqlat_p50_us") ? 0.99 : 0.5,
				 &ns))
		return -ENODATA;
	return snprintf(buf, len, "%.1f", ns / 1000) >= (int)len ? -EOVERFLOW : 0;
}

static int signals_group_add(struct moatd *d, struct moatd_group *g)
{
	struct signals_group *sg = group_mod(g, MOD_SIGNALS);
	const struct moat_knob k[] = {
		{ .path = "rqlat_p99_target_us", .type = MOAT_KNOB_U32,
		  .writable = true, .transient = true, .min = 0, .max = 10000000,
		  .data = &sg->rqlat_p99_target_us },
		{ .path = "unit_rqlat_count", .type = MOAT_KNOB_SHOW,
		  .show = show_unit_waits },
		{ .path = "unit_rqlat_p50_us", .type = MOAT_KNOB_SHOW,
		  .show = show_unit_waits },
		{ .path = "unit_rqlat_p99_us", .type = MOAT_KNOB_SHOW,
		  .show = show_unit_waits },
	};
	char dir[MOAT_KNOB_PATH_MAX];

	sg->unit = -1;
	sg->d = d;
	snprintf(dir, sizeof(dir), "groups/%s", g->gid.id);
	return moat_knob_add_all(d->tree, dir, k, sizeof(k) / sizeof(k[0]), g);
}

/*
 * @g goes: no group's unit may be it once it is freed, whether or not the
 * next units_build() finds the units (out of memory, it does not).  Its
 * members are units of their own until then.
 */
static void signals_group_del(struct moatd *d, struct moatd_group *g)
{
	size_t i;

	for (i = 0; i < d->nr_groups; i++)
		if (d->groups[i]->unit == g)
			d->groups[i]->unit = d->groups[i];
	S(d)->units_found = false;
}

const struct moatd_module signals_module = {
	.name = "signals",
	.size = sizeof(struct signals),
	.group_size = sizeof(struct signals_group),
	.init = signals_init,
	.group_add = signals_group_add,
	.group_del = signals_group_del,
};
