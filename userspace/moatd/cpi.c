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
 * logged with its suspects; the knobs and metrics show the rest, and the
 * controller takes its CPI and threshold as one more signal.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpi.h"
#include "cpi2.h"
#include "idsnap.h"
#include "log.h"
#include "units.h"

enum { EV_CYCLES, EV_INSTRUCTIONS, EV_LLC };

static const char *const role_names[MOAT_PMU_EVENTS] = {
	"cycles", "instructions", "llc_misses"
};

struct cpi {
	struct moatd *d;
	struct moat_pmu *pmu;
	char event[MOAT_PMU_EVENTS][64];	/* cycles, instructions, LLC */
	int slot[MOAT_PMU_EVENTS];		/* -1: not counted */
	unsigned int k_tenths, alpha_pct, min_cpus_pct, min_windows;
	unsigned int outliers, horizon, corr_windows, min_corr_pct;
	unsigned long long windows, victims;
};

/* Its state of a group. */
struct cpi_group {
	__u64 last[MOAT_PMU_EVENTS];		/* cumulative, at the last read */
	bool valid;
	double win[MOAT_PMU_EVENTS];		/* growth over the window */
	struct moat_cpi2_lc *lc;		/* an LC unit's detector */
	struct moat_cpi2_be *be;		/* a BE unit's usage */
	char suspects[256];			/* the last victim's, by id */
};

static struct cpi *C(const struct moatd *d)
{
	return moatd_mod(d, MOD_CPI);
}

static struct moat_cpi2_params params(const struct cpi *c)
{
	return (struct moat_cpi2_params){
		.k = c->k_tenths / 10.0,
		.alpha = c->alpha_pct / 100.0,
		.min_cpus = c->min_cpus_pct / 100.0,
		.min_windows = c->min_windows,
		.outliers = c->outliers,
		.horizon = c->horizon,
		.corr_windows = c->corr_windows,
		.min_corr = c->min_corr_pct / 100.0,
	};
}

static int cpi_open(struct moatd *d)
{
	struct moat_pmu_opts o = {};
	struct cpi *c = C(d);
	size_t n = 0, j = 0;
	unsigned int r;

	for (r = 0; r < MOAT_PMU_EVENTS; r++) {
		c->slot[r] = -1;
		if (c->event[r][0])
			o.events[n++] = c->event[r];
	}
	if (!n) {
		pr_info("pmu: no events configured: no CPI");
		return 0;
	}
	if (moat_pmu_open(&o, &c->pmu))
		return 0;	/* said why; moatd goes on without it */
	for (r = 0; r < MOAT_PMU_EVENTS; r++) {
		const char *ev = moat_pmu_event(c->pmu, j);

		if (c->event[r][0] && ev && !strcmp(ev, c->event[r]))
			c->slot[r] = j++;
	}
	if (c->slot[EV_CYCLES] < 0 || c->slot[EV_INSTRUCTIONS] < 0)
		pr_warn("pmu: without both cycles and instructions there is no CPI, and no CPI² detection");
	return 0;
}

static void cpi_close(struct moatd *d)
{
	moat_pmu_close(C(d)->pmu);
	C(d)->pmu = NULL;
}

static void cpi_group_forget(struct moatd *d, struct moatd_group *g)
{
	struct cpi_group *cg = group_mod(g, MOD_CPI);

	free(cg->lc);
	free(cg->be);
	memset(cg, 0, sizeof(*cg));
}

static int snap_add(__u64 cgid, const struct moat_pmu_sum *s, void *ctx)
{
	return moat_idsnap_add(ctx, cgid, s);
}

/* The group's counters, cumulative and over the window, from the batch. */
static void read_group(struct cpi *c, struct moatd_group *g,
		       const struct moat_idsnap *a)
{
	const struct moat_pmu_sum *s = moat_idsnap_find(a, g->cgid);
	struct cpi_group *cg = group_mod(g, MOD_CPI);
	double cyc, ins, llc;
	unsigned int r;

	for (r = 0; r < MOAT_PMU_EVENTS; r++) {
		int slot = c->slot[r];
		__u64 now;

		cg->win[r] = NAN;
		g->sample.pmu[r] = NAN;
		if (slot < 0)
			continue;
		now = s ? s->count[slot] : cg->last[r];
		/* a counter that went back: the cgroup was made anew */
		if (cg->valid && now >= cg->last[r])
			cg->win[r] = now - cg->last[r];
		cg->last[r] = now;
		g->sample.pmu[r] = now;
	}
	cg->valid = true;
	cyc = cg->win[EV_CYCLES];
	ins = cg->win[EV_INSTRUCTIONS];
	llc = cg->win[EV_LLC];
	g->win.cpi = ins > 0 ? cyc / ins : NAN;
	g->win.llc_mpki = ins > 0 ? llc * 1000 / ins : NAN;
}

void cpi_sample(struct moatd *d, struct period *p)
{
	struct moat_idsnap a;
	struct cpi *c = C(d);
	size_t i;
	int err;

	p->pmu_valid = false;
	if (!c->pmu)
		return;
	moat_idsnap_init(&a, sizeof(struct moat_pmu_sum));
	err = moat_pmu_for_each(c->pmu, snap_add, &a);
	if (err) {
		pr_warn("pmu: read the counters: %s", strerror(-err));
		moat_idsnap_free(&a);
		return;
	}
	moat_idsnap_sort(&a);
	for (i = 0; i < d->nr_groups; i++)
		read_group(c, d->groups[i], &a);
	moat_idsnap_free(&a);
	p->pmu_valid = true;
}

static double nz(double v)
{
	return isnan(v) ? 0 : v;
}

static void victim_changed(struct cpi *c, struct unit *u,
			   const struct moat_cpi2_params *p,
			   const struct moat_cpi2_suspect *s, size_t ns,
			   struct unit **beu)
{
	struct cpi_group *cg = group_mod(u->g, MOD_CPI);
	size_t i, n = 0;

	cg->suspects[0] = '\0';
	for (i = 0; i < ns; i++)
		n += snprintf(cg->suspects + n, sizeof(cg->suspects) - n,
			      "%s%s", i ? "," : "", beu[s[i].be]->g->gid.id);
	if (!cg->lc->victim) {
		pr_info("cpi2: lc group %s is no longer a victim (CPI mean %.2f)",
			u->g->gid.id, cg->lc->mean);
		return;
	}
	c->victims++;
	pr_info("cpi2: lc group %s is a victim: CPI %.2f over %.2f (mean %.2f + %.1f sigma) in %u of its last %u windows; %s%s",
		u->g->gid.id, u->cpi, u->cpi_threshold, cg->lc->mean, p->k,
		p->outliers, p->horizon,
		ns ? "suspects " : "no BE group's usage correlates: its own work changed?",
		cg->suspects);
}

/*
 * One window of the detector: each BE unit's CPU usage, then each LC
 * unit's CPI, over its members' counters; the victims' thresholds and
 * suspects into their units.  No counters, no CPI: nothing is judged.
 */
void cpi_detect(struct moatd *d, struct period *p)
{
	struct moat_cpi2_suspect s[sizeof(p->units[0].suspects) /
				   sizeof(p->units[0].suspects[0])];
	struct cpi *c = C(d);
	struct moat_cpi2_params prm = params(c);
	const struct moat_cpi2_be **bes = NULL;
	struct unit **beu = NULL;
	double (*agg)[MOAT_PMU_EVENTS] = NULL;
	size_t i, nbe = 0;
	unsigned int r;

	for (i = 0; i < p->nr_units; i++) {
		p->units[i].cpi = NAN;
		p->units[i].victim = false;
		p->units[i].cpi_threshold = 0;
		p->units[i].nr_suspects = 0;
	}
	if (!p->pmu_valid || c->slot[EV_CYCLES] < 0 || c->slot[EV_INSTRUCTIONS] < 0 ||
	    !p->nr_units)
		return;
	agg = calloc(p->nr_units, sizeof(*agg));
	beu = malloc(p->nr_units * sizeof(*beu));
	bes = malloc(p->nr_units * sizeof(*bes));
	if (!agg || !beu || !bes)
		goto out;
	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i];
		struct cpi_group *cg = group_mod(g, MOD_CPI);
		const struct unit *u = unit_of(p, g->unit);

		for (r = 0; u && r < MOAT_PMU_EVENTS; r++)
			agg[u - p->units][r] += nz(cg->win[r]);
	}
	for (i = 0; i < p->nr_units; i++) {
		struct unit *u = &p->units[i];
		struct cpi_group *cg = group_mod(u->g, MOD_CPI);

		u->cpi = agg[i][EV_INSTRUCTIONS] > 0 ?
			 agg[i][EV_CYCLES] / agg[i][EV_INSTRUCTIONS] : NAN;
		if (u->class != MOAT_CLASS_BE)
			continue;
		if (!cg->be) {
			cg->be = calloc(1, sizeof(*cg->be));
			if (!cg->be)	/* left out: no suspect */
				continue;
			for (r = 0; r < MOAT_CPI2_HISTORY; r++)
				cg->be->cpus[r] = NAN;
			cg->be->n = c->windows;		/* in step */
		}
		moat_cpi2_be_window(cg->be, nz(u->cpu_usage));
		beu[nbe] = u;
		bes[nbe++] = cg->be;
	}
	for (i = 0; i < p->nr_units; i++) {
		struct unit *u = &p->units[i];
		struct cpi_group *cg = group_mod(u->g, MOD_CPI);
		bool was;
		size_t ns, j;

		if (u->class != MOAT_CLASS_LC)
			continue;
		if (!cg->lc) {
			cg->lc = calloc(1, sizeof(*cg->lc));
			if (!cg->lc)
				continue;
			for (r = 0; r < MOAT_CPI2_HISTORY; r++)
				cg->lc->cpi[r] = NAN;
			cg->lc->n = c->windows;
		}
		was = cg->lc->victim;
		/* judged by the threshold before this window is learned */
		u->cpi_threshold = moat_cpi2_threshold(&prm, cg->lc);
		ns = moat_cpi2_lc_window(&prm, cg->lc, u->cpi, nz(u->cpu_usage),
					 bes, nbe, s, sizeof(s) / sizeof(s[0]));
		u->victim = cg->lc->victim;
		u->nr_suspects = ns;
		for (j = 0; j < ns; j++) {
			u->suspects[j].cgid = beu[s[j].be]->g->cgid;
			u->suspects[j].corr = s[j].corr;
		}
		if (was != cg->lc->victim)
			victim_changed(c, u, &prm, s, ns, beu);
		if (!u->victim)
			u->cpi_threshold = 0;
		/* CPI is a signal while the unit is a victim */
		u->lc.value[MOAT_SIG_CPI] = u->cpi > 0 ? u->cpi : NAN;
		u->lc.target[MOAT_SIG_CPI] = u->cpi_threshold;
	}
	c->windows++;
out:
	free(agg);
	free(beu);
	free(bes);
}

bool cpi_counting(const struct moatd *d, unsigned int role)
{
	return C(d)->pmu && role < MOAT_PMU_EVENTS && C(d)->slot[role] >= 0;
}

unsigned long long cpi_victims(const struct moatd *d)
{
	return C(d)->victims;
}

bool cpi_drops(const struct moatd *d, unsigned long long *drops)
{
	*drops = C(d)->pmu ? moat_pmu_drops(C(d)->pmu) : 0;
	return C(d)->pmu;
}

double cpi_group_victim(const struct moatd_group *g)
{
	const struct cpi_group *cg = group_mod(g, MOD_CPI);

	return cg->lc ? cg->lc->victim : NAN;
}

static int show_counting(const struct moat_knob *k, char *buf, size_t len)
{
	const struct cpi *c = k->owner;
	size_t n = 0;
	unsigned int r;

	buf[0] = '\0';
	for (r = 0; r < MOAT_PMU_EVENTS && n < len; r++)
		if (c->slot[r] >= 0)
			n += snprintf(buf + n, len - n, "%s%s=%s", n ? " " : "",
				      role_names[r], c->event[r]);
	return n >= len ? -EOVERFLOW : 0;
}

static int show_victims(const struct moat_knob *k, char *buf, size_t len)
{
	const struct cpi *c = k->owner;

	return snprintf(buf, len, "%llu", c->victims) >= (int)len ? -EOVERFLOW : 0;
}

/* The events are opened at start: a later value waits for the next. */
static void store_event(const struct moat_knob *k, unsigned int u,
			const char *val)
{
	const struct cpi *c = k->owner;

	snprintf(k->data, k->str_max, "%s", val);
	if (c->d->started)
		pr_info("%s = '%s': counted from moatd's next start", k->path, val);
}

static int cpi_init(struct moatd *d)
{
	struct cpi *c = C(d);
#define EV(p, i) { .path = p, .type = MOAT_KNOB_STRING, .writable = true, \
		   .data = c->event[i], .str_max = sizeof(c->event[i]), \
		   .store = store_event, \
		   .expects = "a libpfm4 event name, read at start; '' for none" }
#define U32(p, lo, hi, v) { .path = p, .type = MOAT_KNOB_U32, .writable = true, \
			    .min = lo, .max = hi, .data = v }
	const struct moat_knob knobs[] = {
		EV("pmu/cycles", EV_CYCLES),
		EV("pmu/instructions", EV_INSTRUCTIONS),
		EV("pmu/llc_misses", EV_LLC),
		{ .path = "pmu/counting", .type = MOAT_KNOB_SHOW, .show = show_counting },
		U32("cpi2/k_tenths", 5, 100, &c->k_tenths),
		U32("cpi2/alpha_pct", 1, 50, &c->alpha_pct),
		U32("cpi2/min_cpus_pct", 0, 10000, &c->min_cpus_pct),
		U32("cpi2/min_windows", 2, MOAT_CPI2_HISTORY, &c->min_windows),
		U32("cpi2/outliers", 1, MOAT_CPI2_HISTORY, &c->outliers),
		U32("cpi2/horizon", 1, MOAT_CPI2_HISTORY, &c->horizon),
		U32("cpi2/corr_windows", 3, MOAT_CPI2_HISTORY, &c->corr_windows),
		U32("cpi2/min_corr_pct", 1, 100, &c->min_corr_pct),
		{ .path = "cpi2/victims", .type = MOAT_KNOB_SHOW, .show = show_victims },
	};
#undef EV
#undef U32
	unsigned int r;

	c->d = d;
	snprintf(c->event[EV_CYCLES], sizeof(c->event[0]), "cycles");
	snprintf(c->event[EV_INSTRUCTIONS], sizeof(c->event[0]), "instructions");
	snprintf(c->event[EV_LLC], sizeof(c->event[0]), "LLC-load-misses");
	for (r = 0; r < MOAT_PMU_EVENTS; r++)
		c->slot[r] = -1;
	/* CPI²'s: 2 sigma, several outliers within minutes */
	c->k_tenths = 20;
	c->alpha_pct = 5;
	c->min_cpus_pct = 10;
	c->min_windows = 20;
	c->outliers = 3;
	c->horizon = 120;
	c->corr_windows = 120;
	c->min_corr_pct = 50;
	return moat_knob_add_all(d->tree, "", knobs, sizeof(knobs) / sizeof(knobs[0]),
				 c);
}

static int show_victim(const struct moat_knob *k, char *buf, size_t len)
{
	const struct cpi_group *cg = group_mod(k->owner, MOD_CPI);

	if (!cg->lc)
		return -ENODATA;
	return snprintf(buf, len, "%d", cg->lc->victim) >= (int)len ?
	       -EOVERFLOW : 0;
}

static int show_suspects(const struct moat_knob *k, char *buf, size_t len)
{
	const struct cpi_group *cg = group_mod(k->owner, MOD_CPI);

	if (!cg->lc || !cg->lc->victim)
		return -ENODATA;
	return snprintf(buf, len, "%s", cg->suspects) >= (int)len ?
	       -EOVERFLOW : 0;
}

static int cpi_group_add(struct moatd *d, struct moatd_group *g)
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

const struct moatd_module cpi_module = {
	.name = "cpi",
	.size = sizeof(struct cpi),
	.group_size = sizeof(struct cpi_group),
	.init = cpi_init,
	.open = cpi_open,
	.close = cpi_close,
	.group_add = cpi_group_add,
	.group_reset = cpi_group_forget,
	.group_del = cpi_group_forget,
};
