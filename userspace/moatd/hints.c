// SPDX-License-Identifier: GPL-2.0-only
/*
 * Placement hints: what a scheduler needs to place the next pod on this
 * node, computed at request time from the committed period: the node's
 * sample and the units, with their signals as the controller sees them.  Served as JSON at
 * /hints (Documentation/hints.rst is the schema) and as moat_hint_*
 * gauges in /metrics.
 *
 * BE capacity, per resource (as Koordinator's batch resources, with
 * moatd's measurements):
 *
 *   be = capacity x (100 - margin)% - LC usage - system usage
 *   system usage = node usage - LC usage - BE usage   (never below 0)
 *
 * CPU: capacity the online CPUs, node usage from /proc/stat, LC and BE
 * usage the units' CPU time over the last period.  Memory: capacity
 * MemTotal, node usage MemTotal - MemAvailable (/proc/meminfo, read by
 * the node source), LC and BE usage the units' memory.current.  Never
 * below 0.
 *
 * Interference per resource: the worst signal / target among LC units
 * (1 or more: some LC unit is at or over its target).  Slack of an LC
 * unit: 1 - signal / target of its worst signal (negative: violated).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "enforce.h"
#include "hints.h"
#include "prom.h"
#include "units.h"

struct hints_knobs {
	unsigned int cpu_margin_pct, memory_margin_pct;
};

struct hints {
	double be_cpus, be_memory;		/* NAN: not known yet */
	double cpu_interference, memory_interference, cache_interference;
	double lc_cpus, be_used_cpus, sys_cpus, node_cpus, ncpus;
	double lc_memory, be_used_memory, sys_memory, mem_total, mem_used;
};

static struct hints_knobs *H(const struct moatd *d)
{
	return moatd_mod(d, MOD_HINTS);
}

static double nz(double v)
{
	return isnan(v) ? 0 : v;
}

/* The LC unit @u's worst signal over target, NAN where none measured. */
static double worst_ratio(const struct unit *u)
{
	double r = unit_ratio(u, false), m = unit_ratio(u, true);

	return isnan(r) || (!isnan(m) && m > r) ? m : r;
}

static void compute(const struct moatd *d, struct hints *h)
{
	const struct period *p = &d->period;
	const struct hints_knobs *k = H(d);
	double worst[2] = { NAN, NAN }, node_mem;
	size_t i;

	memset(h, 0, sizeof(*h));
	h->ncpus = p->node.ncpus ? p->node.ncpus : sysconf(_SC_NPROCESSORS_ONLN);
	h->node_cpus = p->node.cpu_usage;
	h->mem_total = p->node.mem_total;
	h->mem_used = p->node.mem_total - p->node.mem_available;
	for (i = 0; i < p->nr_units; i++) {
		const struct unit *u = &p->units[i];
		unsigned int m;

		if (u->class == MOAT_CLASS_LC) {
			h->lc_cpus += nz(u->cpu_usage);
			h->lc_memory += nz(u->g->win.memory_bytes);
			for (m = 0; m < 2; m++) {
				double r = unit_ratio(u, m);

				if (!isnan(r) && !(r <= worst[m]))
					worst[m] = r;
			}
			/* a CPI² victim's CPI over its outlier threshold */
			if (u->victim && u->cpi_threshold > 0 &&
			    u->cpi / u->cpi_threshold > h->cache_interference)
				h->cache_interference = u->cpi / u->cpi_threshold;
		} else if (u->class == MOAT_CLASS_BE) {
			h->be_used_cpus += nz(u->cpu_usage);
			h->be_used_memory += nz(u->g->win.memory_bytes);
		}
	}
	h->cpu_interference = nz(worst[0]);
	/* the node's memory pressure counts as one more LC row, as enforce.c */
	node_mem = node_memory_ratio(d, p);
	if (!isnan(node_mem) && !(node_mem <= nz(worst[1])))
		worst[1] = node_mem;
	h->memory_interference = nz(worst[1]);

	h->sys_cpus = fmax(0, nz(h->node_cpus) - h->lc_cpus - h->be_used_cpus);
	h->be_cpus = isnan(h->node_cpus) ? NAN :
		     fmax(0, h->ncpus * (100 - k->cpu_margin_pct) / 100 -
			     h->lc_cpus - h->sys_cpus);
	h->sys_memory = fmax(0, nz(h->mem_used) - h->lc_memory - h->be_used_memory);
	h->be_memory = isnan(h->mem_used) ? NAN :
		       fmax(0, h->mem_total * (100 - k->memory_margin_pct) / 100 -
			       h->lc_memory - h->sys_memory);
}

static void gauge(FILE *f, const char *name, const char *help, double v)
{
	prom_family(f, name, "gauge", help);
	fputs(name, f);
	prom_value(f, v);
}

/*
 * The node's interference as one number in [0, 1], for the descheduler's
 * LowNodeUtilization with Prometheus (its MetricsUtilization, which
 * takes a value in [0, 1] per node, labelled with the node's name, and
 * fails its whole cycle on a value outside it): half the worst
 * interference ratio, at most 1.  0.5: an LC group at its target; 1: at
 * twice it or more; 0: no LC group waits, or none is measured.
 */
static double node_interference(const struct hints *h)
{
	double worst = fmax(h->cpu_interference,
			    fmax(h->memory_interference, h->cache_interference));

	return isnan(worst) || worst <= 0 ? 0 : fmin(1, worst / 2);
}

int hints_write_metrics(const struct moatd *d, FILE *f)
{
	char buf[32], node[256];
	struct hints h;
	size_t i;

	compute(d, &h);
	moatd_node_name(node, sizeof(node));
	fputs("# HELP moat_node_interference_ratio The node's interference in [0, 1], labelled with its name: half the worst LC signal / target, at most 1 (0.5: at the target); for the descheduler (Documentation/hints.rst).\n"
	      "# TYPE moat_node_interference_ratio gauge\n"
	      "moat_node_interference_ratio{node=\"", f);
	prom_label_value(f, node);
	fprintf(f, "\"} %s\n", prom_shortest(buf, sizeof(buf), node_interference(&h)));
	gauge(f, "moat_hint_be_cpus",
	      "BE CPU capacity left on the node (Documentation/hints.rst).", h.be_cpus);
	gauge(f, "moat_hint_be_memory_bytes",
	      "BE memory capacity left on the node (Documentation/hints.rst).",
	      h.be_memory);
	fputs("# HELP moat_hint_interference_ratio The worst LC signal / target per resource: 1 or more, some LC group is at or over its target.\n"
	      "# TYPE moat_hint_interference_ratio gauge\n", f);
	fprintf(f, "moat_hint_interference_ratio{resource=\"cpu\"} %s\n",
		prom_shortest(buf, sizeof(buf), h.cpu_interference));
	fprintf(f, "moat_hint_interference_ratio{resource=\"memory\"} %s\n",
		prom_shortest(buf, sizeof(buf), h.memory_interference));
	fprintf(f, "moat_hint_interference_ratio{resource=\"cache\"} %s\n",
		prom_shortest(buf, sizeof(buf), h.cache_interference));
	fputs("# HELP moat_hint_lc_slack_ratio 1 - signal / target of the LC group's worst signal; negative: over its target.\n"
	      "# TYPE moat_hint_lc_slack_ratio gauge\n", f);
	for (i = 0; i < d->period.nr_units; i++) {
		const struct unit *u = &d->period.units[i];
		double r = worst_ratio(u);

		if (u->class != MOAT_CLASS_LC || isnan(r))
			continue;
		fputs("moat_hint_lc_slack_ratio{group=\"", f);
		prom_label_value(f, u->g->gid.id);
		if (u->g->gid.kind != MOAT_GROUP_RULE && u->g->meta.known) {
			fputs("\",namespace=\"", f);
			prom_label_value(f, u->g->meta.ns);
			fputs("\",pod=\"", f);
			prom_label_value(f, u->g->meta.name);
		}
		fprintf(f, "\"} %s\n", prom_shortest(buf, sizeof(buf), 1 - r));
	}
	return 0;
}

/* A pod's namespace and name, once its metadata came. */
static void pod_names(json_object *e, const struct moatd_group *g)
{
	if (g->gid.kind == MOAT_GROUP_RULE || !g->meta.known)
		return;
	json_object_object_add(e, "namespace", json_object_new_string(g->meta.ns));
	json_object_object_add(e, "name", json_object_new_string(g->meta.name));
}

/*
 * A number as JSON: a whole one in full, others in 9 significant digits;
 * NaN and infinity: null.
 */
static json_object *num(double v)
{
	char buf[32];

	if (isnan(v) || isinf(v))
		return NULL;
	/* a count (bytes) in full, not to 9 digits: 2.52761661e+10 */
	if (v == trunc(v) && fabs(v) < 0x1p53)
		snprintf(buf, sizeof(buf), "%.0f", v);
	else
		snprintf(buf, sizeof(buf), "%.9g", v);
	return json_object_new_double_s(v, buf);
}

/* @limit: enforce_held (in force) or enforce_would (shadow mode's). */
typedef double (*limit_fn)(const struct moatd_group *g, enum moat_resource r);

static json_object *limits(const struct moatd_group *g, limit_fn limit)
{
	json_object *o = json_object_new_object();
	double prio = limit(g, MOAT_RES_CPU_PRIO);

	json_object_object_add(o, "cpuWeight", isinf(prio) ? NULL : num(prio));
	json_object_object_add(o, "cpus", num(limit(g, MOAT_RES_CPU)));
	json_object_object_add(o, "memoryHighBytes", num(limit(g, MOAT_RES_MEMORY)));
	return o;
}

static bool throttled(const struct moatd_group *g, limit_fn limit)
{
	unsigned int r;

	for (r = 0; r < MOAT_RES_NR; r++)
		if (!isinf(limit(g, r)))
			return true;
	return false;
}

static json_object *culprit(const struct moatd_group *g, limit_fn limit,
			    unsigned long long throttles)
{
	json_object *e = json_object_new_object();

	json_object_object_add(e, "group", json_object_new_string(g->gid.id));
	pod_names(e, g);
	json_object_object_add(e, "limits", limits(g, limit));
	json_object_object_add(e, "throttles", json_object_new_int64(throttles));
	return e;
}

/* The action history, oldest first (enforce.h). */
static json_object *actions(const struct moatd *d)
{
	static const char *const res[MOAT_RES_NR] = {
		[MOAT_RES_CPU_PRIO] = "cpuPriority", [MOAT_RES_CPU] = "cpu",
		[MOAT_RES_MEMORY] = "memory", [MOAT_RES_L3] = "l3",
		[MOAT_RES_MB] = "memoryBandwidth",
	};
	json_object *a = json_object_new_array();
	const struct enforce_record *rec;
	char when[32];
	unsigned int i;
	struct tm tm;

	for (i = 0; (rec = enforce_history(d, i)); i++) {
		json_object *e = json_object_new_object();

		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&rec->at, &tm));
		json_object_object_add(e, "time", json_object_new_string(when));
		json_object_object_add(e, "shadow", json_object_new_boolean(rec->shadow));
		json_object_object_add(e, "action",
				       json_object_new_string(enforce_action_name(rec->action)));
		json_object_object_add(e, "group", json_object_new_string(rec->group));
		json_object_object_add(e, "name", json_object_new_string(rec->name));
		json_object_object_add(e, "resource", json_object_new_string(res[rec->r]));
		json_object_object_add(e, "from", json_object_new_string(rec->from));
		json_object_object_add(e, "to", json_object_new_string(rec->to));
		json_object_object_add(e, "cause", json_object_new_string(rec->cause));
		json_object_array_add(a, e);
	}
	return a;
}

/*
 * The /hints document, version 2 (Documentation/hints.rst); @with_time
 * (/hints, not the Node's annotation): its time and the action history.
 */
static json_object *hints_json(const struct moatd *d, bool with_time)
{
	static const char *const modes[] = { "observe", "shadow", "enforce" };
	json_object *o = json_object_new_object(), *cap, *itf, *lc, *cul, *shd, *f;
	const struct hints_knobs *k = H(d);
	char node[256], when[32];
	struct hints h;
	time_t now = time(NULL);
	struct tm tm;
	size_t i;

	compute(d, &h);
	moatd_node_name(node, sizeof(node));
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	json_object_object_add(o, "apiVersion", json_object_new_string("moat.io/v2"));
	json_object_object_add(o, "kind", json_object_new_string("NodeHints"));
	json_object_object_add(o, "node", json_object_new_string(node));
	if (with_time)
		json_object_object_add(o, "time", json_object_new_string(when));
	json_object_object_add(o, "periodSeconds", num(d->period_ms / 1e3));
	json_object_object_add(o, "enforcing", json_object_new_boolean(d->mode == MOATD_ENFORCE));
	json_object_object_add(o, "mode", json_object_new_string(modes[d->mode]));

	cap = json_object_new_object();
	json_object_object_add(cap, "cpuMillicores", isnan(h.be_cpus) ? NULL :
			       json_object_new_int64(llround(h.be_cpus * 1000)));
	json_object_object_add(cap, "memoryBytes", isnan(h.be_memory) ? NULL :
			       json_object_new_int64(llround(h.be_memory)));
	json_object_object_add(o, "beCapacity", cap);

	f = json_object_new_object();
	json_object_object_add(f, "cpus", num(h.ncpus));
	json_object_object_add(f, "cpuMarginPercent", json_object_new_int(k->cpu_margin_pct));
	json_object_object_add(f, "nodeCpus", num(h.node_cpus));
	json_object_object_add(f, "lcCpus", num(h.lc_cpus));
	json_object_object_add(f, "beCpus", num(h.be_used_cpus));
	json_object_object_add(f, "systemCpus", num(h.sys_cpus));
	json_object_object_add(f, "memoryBytes", num(h.mem_total));
	json_object_object_add(f, "memoryMarginPercent", json_object_new_int(k->memory_margin_pct));
	json_object_object_add(f, "nodeMemoryBytes", num(h.mem_used));
	json_object_object_add(f, "lcMemoryBytes", num(h.lc_memory));
	json_object_object_add(f, "beMemoryBytes", num(h.be_used_memory));
	json_object_object_add(f, "systemMemoryBytes", num(h.sys_memory));
	json_object_object_add(o, "usage", f);

	itf = json_object_new_object();
	json_object_object_add(itf, "cpu", num(h.cpu_interference));
	json_object_object_add(itf, "memory", num(h.memory_interference));
	json_object_object_add(itf, "cache", num(h.cache_interference));
	json_object_object_add(o, "interference", itf);

	lc = json_object_new_array();
	cul = json_object_new_array();
	shd = json_object_new_array();
	for (i = 0; i < d->period.nr_units; i++) {
		const struct unit *u = &d->period.units[i];
		const struct moatd_group *g = u->g;
		json_object *e;

		if (u->class == MOAT_CLASS_BE && throttled(g, enforce_held))
			json_object_array_add(cul, culprit(g, enforce_held,
							   enforce_throttles(g)));
		if (u->class == MOAT_CLASS_BE && throttled(g, enforce_would))
			json_object_array_add(shd, culprit(g, enforce_would,
							   enforce_shadow_throttles(g)));
		if (u->class != MOAT_CLASS_LC)
			continue;
		e = json_object_new_object();
		json_object_object_add(e, "group", json_object_new_string(g->gid.id));
		pod_names(e, g);
		/*
		 * The unit's, its members' waits merged (units.c): the p99
		 * the controller takes, and which one (lc/rqlat_signal).
		 */
		json_object_object_add(e, "rqlatP99Seconds",
				       num(u->lc.value[MOAT_SIG_RQLAT_P99] / 1e6));
		json_object_object_add(e, "rqlatSignal",
				       json_object_new_string(units_rqlat_signal(d)));
		json_object_object_add(e, "rqlatTargetSeconds",
				       num(u->lc.target[MOAT_SIG_RQLAT_P99] / 1e6));
		json_object_object_add(e, "memoryPressurePercent",
				       num(u->lc.value[MOAT_SIG_MEMORY_PRESSURE]));
		json_object_object_add(e, "slack", num(1 - worst_ratio(u)));
		json_object_array_add(lc, e);
	}
	json_object_object_add(o, "lc", lc);
	json_object_object_add(o, "culprits", cul);
	json_object_object_add(o, "shadowCulprits", shd);
	if (with_time)
		json_object_object_add(o, "actions", actions(d));
	return o;
}

int hints_write_json(const struct moatd *d, FILE *f)
{
	json_object *o = hints_json(d, true);
	int err;

	if (!o)
		return -ENOMEM;
	err = fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
						   JSON_C_TO_STRING_NOSLASHESCAPE),
		    f) < 0 ? -EIO : 0;
	fputc('\n', f);
	json_object_put(o);
	return err;
}

/*
 * The BE unit most of LC unit @lc's waits were behind this period, and
 * its share of them (0: none blamed on a BE unit).
 */
static const struct unit *blamed(const struct moatd *d, const struct unit *lc,
				 double *share)
{
	const struct period *p = &d->period;
	const struct unit *top = NULL;
	double *by = calloc(p->nr_units ? p->nr_units : 1, sizeof(*by)), all = 0;
	size_t i;

	*share = 0;
	for (i = 0; by && p->blame_valid && i < p->nr_blame; i++) {
		const struct blame_entry *b = &p->blame[i];
		const struct moatd_group *v = moatd_group_by_cgid(d, b->victim);
		const struct moatd_group *c = moatd_group_by_cgid(d, b->culprit);
		/* a container's waits are its pod's (units.c), as enforce.c takes them */
		const struct unit *cu = c ? unit_of(p, c->unit) : NULL;

		/* its own limit's waits are no one's: not in the share */
		if (!v || unit_of(p, v->unit) != lc || b->culprit == MOAT_CULPRIT_LIMIT)
			continue;
		all += b->delta_ns;
		if (cu && cu->class == MOAT_CLASS_BE)
			by[cu - p->units] += b->delta_ns;
	}
	for (i = 0; by && i < p->nr_units; i++)
		if (by[i] > 0 && (!top || by[i] > by[top - p->units]))
			top = &p->units[i];
	if (top)
		*share = by[top - p->units] / all;
	free(by);
	return top;
}

/* "pod NS/NAME" once its metadata came, else "group ID". */
static void who(const struct moatd_group *g, char *buf, size_t len)
{
	char name[MOATD_GROUP_NAME_MAX];

	moatd_group_name(g, name, sizeof(name));
	snprintf(buf, len, "%s %s",
		 g->gid.kind != MOAT_GROUP_RULE && g->meta.known ? "pod" : "group", name);
}

/*
 * What the Node condition says: the LC unit furthest over its target and
 * why, the BE unit most of its waits were behind; or that none is over.
 */
static void condition_text(const struct moatd *d, struct kube_hints *out)
{
	const struct period *p = &d->period;
	const struct unit *worst = NULL, *cul;
	char lc[MOATD_GROUP_NAME_MAX + 8], by[MOATD_GROUP_NAME_MAX + 8];
	double r, top = -1, share;
	unsigned int m, kind = 0, lcs = 0;	/* kind: 0 cpu, 1 memory, 2 CPI */
	size_t i;
	int n;

	for (i = 0; i < p->nr_units; i++) {
		const struct unit *u = &p->units[i];

		if (u->class != MOAT_CLASS_LC)
			continue;
		lcs++;
		for (m = 0; m < 3; m++) {
			r = m < 2 ? unit_ratio(u, m) :
			    u->victim && u->cpi_threshold > 0 ? u->cpi / u->cpi_threshold : NAN;
			if (!isnan(r) && r > top) {
				top = r;
				worst = u;
				kind = m;
			}
		}
	}
	r = node_memory_ratio(d, p);
	if (!isnan(r) && r > top && r >= 1) {
		snprintf(out->reason, sizeof(out->reason), "NodeMemoryPressure");
		snprintf(out->message, sizeof(out->message),
			 "the node's memory pressure %.1f%% is over its target of %.0f%% (lc/memory_pressure_target_pct)",
			 p->node.psi_some_avg10[1], signals_memory_target(d));
		return;
	}
	if (!worst || top < 1) {
		snprintf(out->reason, sizeof(out->reason), "NoInterference");
		snprintf(out->message, sizeof(out->message),
			 "no LC pod is over its target (%u measured)", lcs);
		return;
	}
	who(worst->g, lc, sizeof(lc));
	if (kind == 1) {
		snprintf(out->reason, sizeof(out->reason), "LCMemoryPressure");
		snprintf(out->message, sizeof(out->message),
			 "LC %s stalls on memory %.1f%% of the time, over its target of %.1f%%",
			 lc, worst->lc.value[MOAT_SIG_MEMORY_PRESSURE],
			 worst->lc.target[MOAT_SIG_MEMORY_PRESSURE]);
		return;
	}
	if (kind == 2) {
		snprintf(out->reason, sizeof(out->reason), "LCCacheInterference");
		snprintf(out->message, sizeof(out->message),
			 "LC %s runs at %.2f cycles per instruction, over its outlier threshold of %.2f (CPI2)",
			 lc, worst->cpi, worst->cpi_threshold);
		return;
	}
	snprintf(out->reason, sizeof(out->reason), "LCRunQueueWait");
	n = snprintf(out->message, sizeof(out->message),
		     "LC %s waits %.0f us on the run queue at p99 (%s), over its target of %.0f us",
		     lc, worst->lc.value[MOAT_SIG_RQLAT_P99], signals_name(d, MOAT_SIG_RQLAT_P99),
		     worst->lc.target[MOAT_SIG_RQLAT_P99]);
	cul = blamed(d, worst, &share);
	if (cul && n > 0 && (size_t)n < sizeof(out->message)) {
		who(cul->g, by, sizeof(by));
		snprintf(out->message + n, sizeof(out->message) - n,
			 "; %.0f%% of its waits this period behind BE %s", 100 * share, by);
	}
}

bool hints_over(const struct moatd *d)
{
	struct hints h;

	compute(d, &h);
	return h.cpu_interference >= 1 || h.memory_interference >= 1 ||
	       h.cache_interference >= 1;
}

int hints_for_kube(const struct moatd *d, struct kube_hints *out)
{
	json_object *o;
	struct hints h;

	compute(d, &h);
	out->be_cpus = h.be_cpus;
	out->be_memory = h.be_memory;
	out->cpu_interference = h.cpu_interference;
	out->memory_interference = h.memory_interference;
	out->cache_interference = h.cache_interference;
	out->node_interference = node_interference(&h);
	condition_text(d, out);
	o = hints_json(d, false);
	if (!o)
		return -ENOMEM;
	out->json = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							   JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return out->json ? 0 : -ENOMEM;
}

static int hints_init(struct moatd *d)
{
	struct hints_knobs *k = H(d);
	const struct moat_knob knobs[] = {
		{ .path = "hints/cpu_margin_pct", .type = MOAT_KNOB_U32,
		  .writable = true, .min = 0, .max = 100,
		  .data = &k->cpu_margin_pct },
		{ .path = "hints/memory_margin_pct", .type = MOAT_KNOB_U32,
		  .writable = true, .min = 0, .max = 100,
		  .data = &k->memory_margin_pct },
	};

	/* koordlet's default reclaim thresholds are 65% of CPU and memory */
	k->cpu_margin_pct = 35;
	k->memory_margin_pct = 35;
	return moat_knob_add_all(d->tree, "", knobs, sizeof(knobs) / sizeof(knobs[0]),
				 k);
}

const struct moatd_module hints_module = {
	.name = "hints",
	.size = sizeof(struct hints_knobs),
	.init = hints_init,
};
