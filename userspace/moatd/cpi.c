// SPDX-License-Identifier: GPL-2.0-only
/*
 * Counters per group and CPI² detection (Documentation/pmu.rst).
 *
 * At start moatd opens the events that pmu/cycles, pmu/instructions and
 * pmu/llc_misses name (libpfm4 names; "" for none), says once which
 * opened, and runs without the others.  Each period it reads every
 * cgroup's sums in one batch (lib/pmu_bpf.c), gives each group its
 * window's CPI and LLC misses per kilo-instruction, and feeds each LC
 * unit's CPI and each BE unit's CPU usage to the CPI² detector
 * (lib/cpi2.c).  A unit that becomes a victim, or stops being one, is
 * logged with its suspects; the knobs and metrics show the rest.  The
 * controller does not act on it yet.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "moatd.h"

enum { EV_CYCLES, EV_INSTRUCTIONS, EV_LLC };

static const char *const role_names[MOAT_PMU_EVENTS] = {
	"cycles", "instructions", "llc_misses"
};

static struct moat_cpi2_params params(const struct moatd *d)
{
	return (struct moat_cpi2_params){
		.k = d->cpi2_k_tenths / 10.0,
		.alpha = d->cpi2_alpha_pct / 100.0,
		.min_cpus = d->cpi2_min_cpus_pct / 100.0,
		.min_windows = d->cpi2_min_windows,
		.outliers = d->cpi2_outliers,
		.horizon = d->cpi2_horizon,
		.corr_windows = d->cpi2_corr_windows,
		.min_corr = d->cpi2_min_corr_pct / 100.0,
	};
}

void cpi_open(struct moatd *d)
{
	struct moat_pmu_opts o = {};
	size_t n = 0, j = 0;
	unsigned int r;

	for (r = 0; r < MOAT_PMU_EVENTS; r++) {
		d->pmu_slot[r] = -1;
		if (d->pmu_event[r][0])
			o.events[n++] = d->pmu_event[r];
	}
	if (!n) {
		pr_info("pmu: no events configured: no CPI");
		return;
	}
	if (moat_pmu_open(&o, &d->pmu))
		return;		/* said why; moatd goes on without it */
	for (r = 0; r < MOAT_PMU_EVENTS; r++) {
		const char *ev = moat_pmu_event(d->pmu, j);

		if (d->pmu_event[r][0] && ev && !strcmp(ev, d->pmu_event[r]))
			d->pmu_slot[r] = j++;
	}
	if (d->pmu_slot[EV_CYCLES] < 0 || d->pmu_slot[EV_INSTRUCTIONS] < 0)
		pr_warn("pmu: without both cycles and instructions there is no CPI, and no CPI² detection");
}

void cpi_close(struct moatd *d)
{
	moat_pmu_close(d->pmu);
	d->pmu = NULL;
}

void cpi_free_group(struct moatd_group *g)
{
	free(g->cpi2_lc);
	free(g->cpi2_be);
	g->cpi2_lc = NULL;
	g->cpi2_be = NULL;
}

struct snap {
	__u64 cgid;
	struct moat_pmu_sum s;
};

struct snaps {
	struct snap *v;
	size_t n, cap;
};

static int snap_add(__u64 cgid, const struct moat_pmu_sum *s, void *ctx)
{
	struct snaps *a = ctx;

	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 256;
		void *v = realloc(a->v, cap * sizeof(*a->v));

		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = (struct snap){ cgid, *s };
	return 0;
}

static int cmp_snap(const void *a, const void *b)
{
	__u64 x = ((const struct snap *)a)->cgid, y = ((const struct snap *)b)->cgid;

	return x < y ? -1 : x > y;
}

/* The group's counters over the window, from the batch of all sums. */
static void read_group(struct moatd *d, struct moatd_group *g,
		       const struct snaps *a)
{
	struct snap key = { .cgid = g->cgid }, *s;
	double cyc, ins, llc;
	unsigned int r;

	s = bsearch(&key, a->v, a->n, sizeof(*a->v), cmp_snap);
	for (r = 0; r < MOAT_PMU_EVENTS; r++) {
		int slot = d->pmu_slot[r];
		__u64 now;

		g->win_pmu[r] = NAN;
		if (slot < 0)
			continue;
		now = s ? s->s.count[slot] : g->pmu_last[r];
		/* a counter that went back: the cgroup was made anew */
		if (g->pmu_valid && now >= g->pmu_last[r])
			g->win_pmu[r] = now - g->pmu_last[r];
		g->pmu_last[r] = now;
	}
	g->pmu_valid = true;
	cyc = g->win_pmu[EV_CYCLES];
	ins = g->win_pmu[EV_INSTRUCTIONS];
	llc = g->win_pmu[EV_LLC];
	g->win.cpi = ins > 0 ? cyc / ins : NAN;
	g->win.llc_mpki = ins > 0 ? llc * 1000 / ins : NAN;
}

static double nz(double v)
{
	return isnan(v) ? 0 : v;
}

static void victim_changed(struct moatd *d, struct moatd_group *u,
			   const struct moat_cpi2_params *p,
			   const struct moat_cpi2_suspect *s, size_t ns,
			   struct moatd_group **beu)
{
	size_t i, n = 0;

	u->cpi2_suspects[0] = '\0';
	for (i = 0; i < ns; i++)
		n += snprintf(u->cpi2_suspects + n, sizeof(u->cpi2_suspects) - n,
			      "%s%s", i ? "," : "", beu[s[i].be]->gid.id);
	if (!u->cpi2_lc->victim) {
		pr_info("cpi2: lc group %s is no longer a victim (CPI mean %.2f)",
			u->gid.id, u->cpi2_lc->mean);
		return;
	}
	d->cpi2_victims++;
	pr_info("cpi2: lc group %s is a victim: CPI %.2f over %.2f (mean %.2f + %.1f sigma) in %u of its last %u windows; %s%s",
		u->gid.id, u->cpi2_cpi, u->cpi2_threshold,
		u->cpi2_lc->mean, p->k, p->outliers, p->horizon,
		ns ? "suspects " : "no BE group's usage correlates: its own work changed?",
		u->cpi2_suspects);
}

/* One window of the detector: BE units' usage, then LC units' CPI. */
static void detect(struct moatd *d)
{
	struct moat_cpi2_params p = params(d);
	struct moatd_group **lcu, **beu;
	const struct moat_cpi2_be **bes;
	struct moat_cpi2_suspect s[sizeof(beu[0]->cpi2_sus) /
				   sizeof(beu[0]->cpi2_sus[0])];
	size_t i, nlc = 0, nbe = 0;
	unsigned int r;

	lcu = malloc(d->nr_groups * sizeof(*lcu));
	beu = malloc(d->nr_groups * sizeof(*beu));
	bes = malloc(d->nr_groups * sizeof(*bes));
	if (!lcu || !beu || !bes)
		goto out;
	for (i = 0; i < d->nr_groups; i++)
		for (r = 0; r <= MOAT_PMU_EVENTS; r++)
			d->groups[i]->agg[r] = 0;
	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i], *u = g->unit ? g->unit : g;

		for (r = 0; r < MOAT_PMU_EVENTS; r++)
			u->agg[r] += nz(g->win_pmu[r]);
		u->agg[MOAT_PMU_EVENTS] += nz(g->win.cpu_usage);
		if (u != g)
			continue;
		if (g->class == MOAT_CLASS_LC)
			lcu[nlc++] = g;
		else if (g->class == MOAT_CLASS_BE)
			beu[nbe++] = g;
	}
	for (i = 0; i < nbe; i++) {
		struct moatd_group *u = beu[i];

		if (!u->cpi2_be) {
			u->cpi2_be = calloc(1, sizeof(*u->cpi2_be));
			if (!u->cpi2_be) {	/* left out: no suspect */
				beu[i--] = beu[--nbe];
				continue;
			}
			for (r = 0; r < MOAT_CPI2_HISTORY; r++)
				u->cpi2_be->cpus[r] = NAN;
			u->cpi2_be->n = d->cpi2_windows;	/* in step */
		}
		moat_cpi2_be_window(u->cpi2_be, u->agg[MOAT_PMU_EVENTS]);
		bes[i] = u->cpi2_be;
	}
	for (i = 0; i < nlc; i++) {
		struct moatd_group *u = lcu[i];
		double cyc = u->agg[EV_CYCLES], ins = u->agg[EV_INSTRUCTIONS];
		bool was;
		size_t ns, j;

		if (!u->cpi2_lc) {
			u->cpi2_lc = calloc(1, sizeof(*u->cpi2_lc));
			if (!u->cpi2_lc)
				continue;
			for (r = 0; r < MOAT_CPI2_HISTORY; r++)
				u->cpi2_lc->cpi[r] = NAN;
			u->cpi2_lc->n = d->cpi2_windows;
		}
		was = u->cpi2_lc->victim;
		u->cpi2_cpi = ins > 0 ? cyc / ins : NAN;
		/* judged by the threshold before this window is learned */
		u->cpi2_threshold = moat_cpi2_threshold(&p, u->cpi2_lc);
		ns = moat_cpi2_lc_window(&p, u->cpi2_lc, u->cpi2_cpi,
					 u->agg[MOAT_PMU_EVENTS], bes, nbe, s,
					 sizeof(s) / sizeof(s[0]));
		u->nr_cpi2_sus = ns;
		for (j = 0; j < ns; j++) {
			u->cpi2_sus[j].cgid = beu[s[j].be]->cgid;
			u->cpi2_sus[j].corr = s[j].corr;
		}
		if (was != u->cpi2_lc->victim)
			victim_changed(d, u, &p, s, ns, beu);
	}
	d->cpi2_windows++;
out:
	free(lcu);
	free(beu);
	free(bes);
}

void cpi_cycle(struct moatd *d)
{
	struct snaps a = { NULL, 0, 0 };
	size_t i;
	int err;

	for (i = 0; i < d->nr_groups; i++) {	/* nothing, unless detected */
		d->groups[i]->cpi2_cpi = NAN;
		d->groups[i]->cpi2_threshold = 0;
		d->groups[i]->nr_cpi2_sus = 0;
	}
	if (!d->pmu)
		return;
	err = moat_pmu_for_each(d->pmu, snap_add, &a);
	if (err) {
		pr_warn("pmu: read the counters: %s", strerror(-err));
		free(a.v);
		return;
	}
	if (a.n)	/* (qsort() of NULL is undefined, even of nothing) */
		qsort(a.v, a.n, sizeof(*a.v), cmp_snap);
	for (i = 0; i < d->nr_groups; i++)
		read_group(d, d->groups[i], &a);
	free(a.v);
	if (d->pmu_slot[EV_CYCLES] >= 0 && d->pmu_slot[EV_INSTRUCTIONS] >= 0)
		detect(d);
}

static int show_counting(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;
	size_t n = 0;
	unsigned int r;

	buf[0] = '\0';
	for (r = 0; r < MOAT_PMU_EVENTS && n < len; r++)
		if (d->pmu_slot[r] >= 0)
			n += snprintf(buf + n, len - n, "%s%s=%s", n ? " " : "",
				      role_names[r], d->pmu_event[r]);
	return n >= len ? -EOVERFLOW : 0;
}

static int show_victims(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return snprintf(buf, len, "%llu", d->cpi2_victims) >= (int)len ? -EOVERFLOW : 0;
}

/* The events are opened at start: a later value waits for the next. */
static void store_event(const struct moat_knob *k, unsigned int u,
			const char *val)
{
	struct moatd *d = k->owner;

	snprintf(k->data, k->str_max, "%s", val);
	if (d->started)
		pr_info("%s = '%s': counted from moatd's next start", k->path, val);
}

int cpi_add_knobs(struct moatd *d)
{
#define EV(p, i) { .path = p, .type = MOAT_KNOB_STRING, .writable = true, \
		   .data = d->pmu_event[i], .str_max = sizeof(d->pmu_event[i]), \
		   .store = store_event, \
		   .expects = "a libpfm4 event name, read at start; '' for none" }
#define U32(p, lo, hi, v) { .path = p, .type = MOAT_KNOB_U32, .writable = true, \
			    .min = lo, .max = hi, .data = v }
	const struct moat_knob knobs[] = {
		EV("pmu/cycles", EV_CYCLES),
		EV("pmu/instructions", EV_INSTRUCTIONS),
		EV("pmu/llc_misses", EV_LLC),
		{ .path = "pmu/counting", .type = MOAT_KNOB_SHOW, .show = show_counting },
		U32("cpi2/k_tenths", 5, 100, &d->cpi2_k_tenths),
		U32("cpi2/alpha_pct", 1, 50, &d->cpi2_alpha_pct),
		U32("cpi2/min_cpus_pct", 0, 10000, &d->cpi2_min_cpus_pct),
		U32("cpi2/min_windows", 2, MOAT_CPI2_HISTORY, &d->cpi2_min_windows),
		U32("cpi2/outliers", 1, MOAT_CPI2_HISTORY, &d->cpi2_outliers),
		U32("cpi2/horizon", 1, MOAT_CPI2_HISTORY, &d->cpi2_horizon),
		U32("cpi2/corr_windows", 3, MOAT_CPI2_HISTORY, &d->cpi2_corr_windows),
		U32("cpi2/min_corr_pct", 1, 100, &d->cpi2_min_corr_pct),
		{ .path = "cpi2/victims", .type = MOAT_KNOB_SHOW, .show = show_victims },
	};
#undef EV
#undef U32
	unsigned int r;

	snprintf(d->pmu_event[EV_CYCLES], sizeof(d->pmu_event[0]), "cycles");
	snprintf(d->pmu_event[EV_INSTRUCTIONS], sizeof(d->pmu_event[0]), "instructions");
	snprintf(d->pmu_event[EV_LLC], sizeof(d->pmu_event[0]), "LLC-load-misses");
	for (r = 0; r < MOAT_PMU_EVENTS; r++)
		d->pmu_slot[r] = -1;
	/* CPI²'s: 2 sigma, several outliers within minutes */
	d->cpi2_k_tenths = 20;
	d->cpi2_alpha_pct = 5;
	d->cpi2_min_cpus_pct = 10;
	d->cpi2_min_windows = 20;
	d->cpi2_outliers = 3;
	d->cpi2_horizon = 120;
	d->cpi2_corr_windows = 120;
	d->cpi2_min_corr_pct = 50;
	return moat_knob_add_all(d->tree, "", knobs, sizeof(knobs) / sizeof(knobs[0]),
				 d);
}

static int show_victim(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd_group *g = k->owner;

	if (!g->cpi2_lc)
		return -ENODATA;
	return snprintf(buf, len, "%d", g->cpi2_lc->victim) >= (int)len ?
	       -EOVERFLOW : 0;
}

static int show_suspects(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd_group *g = k->owner;

	if (!g->cpi2_lc || !g->cpi2_lc->victim)
		return -ENODATA;
	return snprintf(buf, len, "%s", g->cpi2_suspects) >= (int)len ?
	       -EOVERFLOW : 0;
}

int cpi_add_group_knobs(struct moatd *d, struct moatd_group *g)
{
	const struct moat_knob attrs[] = {
		{ .path = "cpi2_victim", .type = MOAT_KNOB_SHOW, .show = show_victim },
		{ .path = "cpi2_suspects", .type = MOAT_KNOB_SHOW, .show = show_suspects },
	};
	char dir[MOAT_KNOB_PATH_MAX];

	snprintf(dir, sizeof(dir), "groups/%s", g->gid.id);
	return moat_knob_add_all(d->tree, dir, attrs, sizeof(attrs) / sizeof(attrs[0]),
				 g);
}
