// SPDX-License-Identifier: GPL-2.0-only
/*
 * /metrics, a reporter: Prometheus text format 0.0.4, built at scrape
 * time from the committed period and the modules' counters.  Names start with moat_, values are in base units
 * (seconds, bytes, CPUs), counters end in _total, no sample carries a
 * timestamp.  Every metric is listed in Documentation/metrics.rst.
 *
 * Groups come and go: a group's series exist while it does, so the
 * number of series is bounded by the groups moatd tracks.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpi.h"
#include "delay.h"
#include "enforce.h"
#include "health.h"
#include "hints.h"
#include "hist.h"
#include "hostroot.h"
#include "kube.h"
#include "metrics.h"
#include "burst.h"
#include "evict.h"
#include "events.h"
#include "groups.h"
#include "pods.h"
#include "prom.h"
#include "rdt.h"
#include "rqlat_bpf.h"
#include "settings.h"

/*
 * group="<id>",class="<class>"[,pod_uid="..."][,container_id="..."], and
 * namespace, pod and container as Kubernetes' own exporters name them
 * (cAdvisor, kube-state-metrics) once the pod's metadata came; once per
 * group and scrape, in labels[]: formatting them for each sample was
 * half of a scrape's time.
 */
static char **labels;

static void label(FILE *f, const char *name, const char *value)
{
	fprintf(f, ",%s=\"", name);
	prom_label_value(f, value);
	fputc('"', f);
}

static void group_labels(FILE *f, const struct moatd_group *g)
{
	fputs("group=\"", f);
	prom_label_value(f, g->gid.id);
	fprintf(f, "\",class=\"%s\"", moat_class_names[g->class]);
	if (g->gid.kind != MOAT_GROUP_RULE && g->gid.kube.pod_uid[0])
		label(f, "pod_uid", g->gid.kube.pod_uid);
	if (g->gid.kind == MOAT_GROUP_CONTAINER && g->gid.kube.container_id[0])
		label(f, "container_id", g->gid.kube.container_id);
	if (g->gid.kind == MOAT_GROUP_RULE || !g->meta.known)
		return;
	label(f, "namespace", g->meta.ns);
	label(f, "pod", g->meta.name);
	if (g->gid.kind == MOAT_GROUP_CONTAINER && g->meta.container[0])
		label(f, "container", g->meta.container);
}

/* <side>_namespace and <side>_pod of a blame pair's group, where known. */
static void pair_names(FILE *f, const char *side, const struct moatd_group *g)
{
	char name[32];

	if (g->gid.kind == MOAT_GROUP_RULE || !g->meta.known)
		return;
	snprintf(name, sizeof(name), "%s_namespace", side);
	label(f, name, g->meta.ns);
	snprintf(name, sizeof(name), "%s_pod", side);
	label(f, name, g->meta.name);
}

static void group_sample(FILE *f, const char *name, size_t i,
			 const char *extra, double v)
{
	fputs(name, f);
	fputc('{', f);
	fputs(labels[i], f);
	if (extra) {
		fputc(',', f);
		fputs(extra, f);
	}
	fputc('}', f);
	prom_value(f, v);
}

static int make_labels(const struct moatd *d)
{
	size_t i, len;

	labels = calloc(d->nr_groups ? d->nr_groups : 1, sizeof(*labels));
	if (!labels)
		return -ENOMEM;
	for (i = 0; i < d->nr_groups; i++) {
		FILE *f = open_memstream(&labels[i], &len);

		if (!f)
			return -ENOMEM;
		group_labels(f, d->groups[i]);
		if (fclose(f))
			return -ENOMEM;
	}
	return 0;
}

static void free_labels(const struct moatd *d)
{
	size_t i;

	for (i = 0; labels && i < d->nr_groups; i++)
		free(labels[i]);
	free(labels);
	labels = NULL;
}

/*
 * The exported buckets: the BPF histogram's slot bounds from 1 us to 1 s,
 * a factor of two apart.  Shorter waits are all in the first bucket (the
 * scheduler does not act faster), longer ones in +Inf; the full
 * resolution is in moatd's knobs.  Fewer series make a scrape of 500
 * groups fit in its 20 ms.
 */
#define LE_FIRST_NS	1e3
#define LE_LAST_NS	1.1e9

static void rqlat_histogram(FILE *f, const struct moatd *d)
{
	const char *name = "moat_group_rqlat_seconds";
	char le[MOAT_HIST_SLOTS][40];
	bool export[MOAT_HIST_SLOTS];
	unsigned int s;
	size_t i;

	for (s = 0; s < MOAT_HIST_SLOTS; s++) {
		double lo, hi;

		moat_hist_slot_bounds(s, &lo, &hi);
		export[s] = s + 1 < MOAT_HIST_SLOTS && hi >= LE_FIRST_NS &&
			    hi <= LE_LAST_NS;
		snprintf(le[s], sizeof(le[s]), "le=\"%.9g\"", hi / 1e9);
	}
	prom_family(f, name, "histogram",
	       "Run-queue waits of the group's tasks since moatd found it.");
	for (i = 0; i < d->nr_groups; i++)
		if (d->groups[i]->sample.rqlat_valid)
			prom_histogram(f, name, labels[i], &d->groups[i]->sample.rqlat,
				       le, export);
}

/* One per-group family whose value @get gives; NAN: no sample. */
static void per_group(FILE *f, const struct moatd *d, const char *name,
		      const char *type, const char *help,
		      double (*get)(const struct moatd_group *g))
{
	size_t i;

	prom_family(f, name, type, help);
	for (i = 0; i < d->nr_groups; i++) {
		double v = get(d->groups[i]);

		if (!isnan(v))
			group_sample(f, name, i, NULL, v);
	}
}

static double g_info(const struct moatd_group *g)
{
	return 1;
}

static double g_usage(const struct moatd_group *g)
{
	return g->sample.cpu_s;
}

static double g_nr_throttled(const struct moatd_group *g)
{
	return g->sample.nr_throttled;
}

static double g_throttled(const struct moatd_group *g)
{
	return g->sample.throttled_s;
}

static double g_lc_throttled(const struct moatd_group *g)
{
	return burst_lc(g) ? g->sample.throttled_s : NAN;
}

static double g_burst(const struct moatd_group *g)
{
	return burst_held(g);
}

static double g_lift(const struct moatd_group *g)
{
	return burst_lift(g);
}

static double g_cpu_stall(const struct moatd_group *g)
{
	return g->sample.cpu_stall_s;
}

static double g_mem_stall(const struct moatd_group *g)
{
	return g->sample.memory_stall_s;
}

static double g_memory(const struct moatd_group *g)
{
	return g->win.memory_bytes;
}

static double g_wp99(const struct moatd_group *g)
{
	return g->win.rqlat_wp99_us / 1e6;
}

static double g_ap99(const struct moatd_group *g)
{
	return g->win.rqlat_ap99_us / 1e6;
}

static double g_throttles(const struct moatd_group *g)
{
	return enforce_throttles(g);
}

/* The limit in force; absent where none, and in shadow mode. */
static double limit(const struct moatd_group *g, enum moat_resource r)
{
	double v = enforce_held(g, r);

	return isinf(v) ? NAN : v;
}

/* In shadow mode, the limit the controller would hold the group to. */
static double would(const struct moatd_group *g, enum moat_resource r)
{
	double v = enforce_would(g, r);

	return isinf(v) ? NAN : v;
}

static double g_shadow_prio(const struct moatd_group *g)
{
	return would(g, MOAT_RES_CPU_PRIO);
}

static double g_shadow_cpus(const struct moatd_group *g)
{
	return would(g, MOAT_RES_CPU);
}

static double g_shadow_mem_high(const struct moatd_group *g)
{
	return would(g, MOAT_RES_MEMORY);
}

static double g_prio(const struct moatd_group *g)
{
	return limit(g, MOAT_RES_CPU_PRIO);
}

static double g_cpus(const struct moatd_group *g)
{
	return limit(g, MOAT_RES_CPU);
}

static double g_mem_high(const struct moatd_group *g)
{
	return limit(g, MOAT_RES_MEMORY);
}

static double g_cycles(const struct moatd_group *g)
{
	return g->sample.pmu[0];
}

static double g_instructions(const struct moatd_group *g)
{
	return g->sample.pmu[1];
}

static double g_llc(const struct moatd_group *g)
{
	return g->sample.pmu[2];
}

static double g_cpi(const struct moatd_group *g)
{
	return g->win.cpi;
}

/* resctrl monitoring: not known is no sample */
static double known(double v)
{
	return v < 0 ? NAN : v;
}

static double g_llc_bytes(const struct moatd_group *g)
{
	const struct rdt_mon *m = rdt_group_mon(g);

	return m ? known(m->llc_bytes) : NAN;
}

static double g_mbm_total(const struct moatd_group *g)
{
	const struct rdt_mon *m = rdt_group_mon(g);

	return m ? m->total_bps : NAN;
}

static double g_mbm_local(const struct moatd_group *g)
{
	const struct rdt_mon *m = rdt_group_mon(g);

	return m ? m->local_bps : NAN;
}

static double g_l3_ways(const struct moatd_group *g)
{
	double v = enforce_held(g, MOAT_RES_L3);

	return isinf(v) ? NAN : floor(v);
}

/* moat_lc's and moat_be's monitoring, by class. */
static void rdt_classes(FILE *f, const struct moatd *d)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} fam[] = {
		{ "moat_resctrl_llc_occupancy_bytes",
		  "L3 occupancy of the class's resctrl group (llc_occupancy, summed over caches).",
		  offsetof(struct rdt_mon, llc_bytes) },
		{ "moat_resctrl_mbm_total_bytes_per_second",
		  "Memory bandwidth of the class's resctrl group over the last resctrl/monitor_ms window (mbm_total_bytes).",
		  offsetof(struct rdt_mon, total_bps) },
		{ "moat_resctrl_mbm_local_bytes_per_second",
		  "Its local-NUMA-node part (mbm_local_bytes).",
		  offsetof(struct rdt_mon, local_bps) },
	};
	size_t i;
	int lc;

	for (i = 0; i < sizeof(fam) / sizeof(fam[0]); i++) {
		prom_family(f, fam[i].name, "gauge", fam[i].help);
		for (lc = 1; lc >= 0; lc--) {
			const struct rdt_mon *m = rdt_class_mon(d, lc);
			double v = m ? known(*(const double *)((const char *)m +
								fam[i].off)) : NAN;

			if (isnan(v))
				continue;
			fprintf(f, "%s{class=\"%s\"}", fam[i].name, lc ? "lc" : "be");
			prom_value(f, v);
		}
	}
}

static double g_victim(const struct moatd_group *g)
{
	return cpi_group_victim(g);
}

/* The period's blame, of group pairs, as cumulative counters. */
static void blame(FILE *f, const struct moatd *d)
{
	const struct period *p = &d->period;
	size_t i;

	prom_family(f, "moat_blame_wait_seconds_total", "counter",
		    "Run-queue wait of the victim group's tasks behind the culprit group's, since load.");
	for (i = 0; i < p->nr_blame; i++) {
		const struct moatd_group *v = moatd_group_by_cgid(d, p->blame[i].victim);
		const struct moatd_group *c = moatd_group_by_cgid(d, p->blame[i].culprit);

		if (!v || !c)
			continue;	/* gone since the period */
		fputs("moat_blame_wait_seconds_total{victim=\"", f);
		prom_label_value(f, v->gid.id);
		fputs("\",culprit=\"", f);
		prom_label_value(f, c->gid.id);
		fputc('"', f);
		pair_names(f, "victim", v);
		pair_names(f, "culprit", c);
		fputc('}', f);
		prom_value(f, p->blame[i].wait_ns / 1e9);
	}
}

static int prog_sample(const char *name, __u64 run_ns, __u64 runs, void *ctx)
{
	FILE **f = ctx;

	fprintf(f[0], "moat_bpf_prog_run_seconds_total{prog=\"%s\"}", name);
	prom_value(f[0], run_ns / 1e9);
	fprintf(f[1], "moat_bpf_prog_runs_total{prog=\"%s\"}", name);
	prom_value(f[1], runs);
	return 0;
}

/* Run time and count of moat's BPF programs, when the kernel keeps them. */
static void bpf_stats(FILE *f, const struct moatd *d)
{
	char *buf[2] = { NULL, NULL };
	size_t len[2];
	FILE *part[2];
	int on = 0;
	FILE *s = moat_host_fopen("/proc/sys/kernel/bpf_stats_enabled");

	if (s) {
		if (fscanf(s, "%d", &on) != 1)
			on = 0;
		fclose(s);
	}
	prom_family(f, "moat_bpf_stats_enabled", "gauge",
	       "1 when kernel.bpf_stats_enabled is on and the program run times below are kept.");
	fprintf(f, "moat_bpf_stats_enabled %d\n", on);
	if (!on)
		return;
	part[0] = open_memstream(&buf[0], &len[0]);
	part[1] = open_memstream(&buf[1], &len[1]);
	if (part[0] && part[1])
		delay_for_each_prog(d, prog_sample, part);
	if (part[0])
		fclose(part[0]);
	if (part[1])
		fclose(part[1]);
	prom_family(f, "moat_bpf_prog_run_seconds_total", "counter",
	       "Time the kernel spent in the BPF program.");
	if (buf[0])
		fputs(buf[0], f);
	prom_family(f, "moat_bpf_prog_runs_total", "counter",
	       "Times the BPF program ran.");
	if (buf[1])
		fputs(buf[1], f);
	free(buf[0]);
	free(buf[1]);
}

static const char *const action_names[] = {
	[MOAT_CTL_THROTTLE] = "throttle",
	[MOAT_CTL_RELEASE] = "release",
	[MOAT_CTL_RESTORE] = "restore",
	[MOAT_CTL_UNDO] = "undo",
};

static void daemon_metrics(FILE *f, const struct moatd *d)
{
	static const char *const classes[] = { "none", "lc", "be" };
	static const char *const modes[] = { "observe", "shadow", "enforce" };
	size_t counts[3] = { 0 }, i;
	__u64 drops[MOAT_DROP_NR];
	unsigned long long pmu_drops, ev_posted, ev_limited, ev_failed;
	char why[PATH_MAX + 256];
	unsigned long long outside;
	const char *file;
	unsigned int h, r, a;
	struct pods_status pods;

	prom_family(f, "moat_build_info", "gauge", "moatd's version, as a label; always 1.");
	fprintf(f, "moat_build_info{version=\"%s\"} 1\n", moatd_version());
	prom_family(f, "moat_enforcing", "gauge",
	       "1 in enforce mode, 0 in observe and shadow mode (nothing written).");
	fprintf(f, "moat_enforcing %d\n", d->mode == MOATD_ENFORCE);
	prom_family(f, "moat_mode", "gauge",
	       "1 for the mode moatd is in (observe, shadow, enforce), 0 for the others.");
	for (i = 0; i < 3; i++)
		fprintf(f, "moat_mode{mode=\"%s\"} %d\n", modes[i], d->mode == i);
	prom_family(f, "moat_period_seconds", "gauge", "The control period.");
	fputs("moat_period_seconds", f);
	prom_value(f, d->period_ms / 1e3);
	prom_family(f, "moat_cycles_total", "counter",
	       "Control cycles run since moatd started.");
	fprintf(f, "moat_cycles_total %llu\n", d->cycles);
	prom_family(f, "moat_healthy", "gauge",
	       "1 while /healthz answers 200: cycles run and the journal can be saved.");
	fprintf(f, "moat_healthy %d\n", moatd_health(d, why, sizeof(why)));
	prom_family(f, "moat_control_cycle_seconds", "gauge",
	       "Wall time of the last control cycle: observe and decide.");
	fputs("moat_control_cycle_seconds", f);
	prom_value(f, d->cycle_us / 1e6);
	prom_family(f, "moat_cycle_cpu_seconds_total", "counter",
	       "moatd's CPU time in each stage of its cycles, all cycles.");
	for (i = 0; i < STAGE_NR; i++)
		fprintf(f, "moat_cycle_cpu_seconds_total{stage=\"%s\"} %.6f\n",
			moatd_stage_names[i], d->stage_cpu_ns[i] / 1e9);

	for (i = 0; i < d->nr_groups; i++)
		if (d->groups[i]->class < 3)
			counts[d->groups[i]->class]++;
	prom_family(f, "moat_groups", "gauge", "Groups moatd tracks, by class.");
	for (i = 0; i < 3; i++)
		fprintf(f, "moat_groups{class=\"%s\"} %zu\n", classes[i], counts[i]);

	delay_drops(d, drops);
	prom_family(f, "moat_bpf_drops_total", "counter",
	       "Events the BPF programs could not record, by reason (a full map).");
	for (i = 0; i < MOAT_DROP_NR; i++)
		fprintf(f, "moat_bpf_drops_total{reason=\"%s\"} %llu\n",
			moat_rqlat_drop_name(i), (unsigned long long)drops[i]);
	if (cpi_drops(d, &pmu_drops))
		fprintf(f, "moat_bpf_drops_total{reason=\"pmu_map_full\"} %llu\n",
			pmu_drops);
	bpf_stats(f, d);

	pods_status(d, &pods);
	prom_family(f, "moat_errors_total", "counter", "Failed operations, by operation.");
	fprintf(f, "moat_errors_total{op=\"actuator_write\"} %llu\n",
		enforce_write_errors(d));
	fprintf(f, "moat_errors_total{op=\"kube_api\"} %llu\n",
		kube_counter(d, true));
	fprintf(f, "moat_errors_total{op=\"kube_pods\"} %llu\n", pods.errors);
	fprintf(f, "moat_errors_total{op=\"kube_evict\"} %llu\n", evict_errors(d));
	fprintf(f, "moat_errors_total{op=\"burst_write\"} %llu\n", burst_errors(d));
	fprintf(f, "moat_errors_total{op=\"journal_save\"} %llu\n",
		d->journal ? d->journal->save_errors : 0);
	prom_family(f, "moat_kube_node_updates_total", "counter",
	       "Updates of the Node object's hints (kube/publish).");
	fprintf(f, "moat_kube_node_updates_total %llu\n", kube_counter(d, false));
	prom_family(f, "moat_kube_publishing", "gauge",
	       "1 while moatd puts its hints on the Node object (kube/publish, in a pod).");
	fprintf(f, "moat_kube_publishing %d\n", kube_publishing(d));
	prom_family(f, "moat_kube_node_updated_timestamp_seconds", "gauge",
	       "When the Node object's hints were last updated (Unix time); 0: not yet.");
	fputs("moat_kube_node_updated_timestamp_seconds", f);
	prom_value(f, kube_updated_s(d));
	prom_family(f, "moat_kube_pods_watching", "gauge",
	       "1 while moatd lists and watches its node's pods (kube/pods, in a pod).");
	fprintf(f, "moat_kube_pods_watching %d\n", pods.watching);
	if (pods.watching) {
		prom_family(f, "moat_kube_pods_synced", "gauge",
		       "1 while the pod metadata is in step with the API server; 0 while it is away (the last metadata is kept).");
		fprintf(f, "moat_kube_pods_synced %d\n", pods.synced);
		prom_family(f, "moat_kube_pods_sync_age_seconds", "gauge",
		       "Seconds since the pod metadata was last in step with the API server (a list, an event, a bookmark); NaN: not yet.");
		fputs("moat_kube_pods_sync_age_seconds", f);
		prom_value(f, pods.sync_age_s);
		prom_family(f, "moat_kube_pods", "gauge",
		       "Pods of the node moatd has metadata of.");
		fprintf(f, "moat_kube_pods %zu\n", pods.known);
		prom_family(f, "moat_kube_pods_relists_total", "counter",
		       "Lists of the node's pods (at start, and after a 410 Gone).");
		fprintf(f, "moat_kube_pods_relists_total %llu\n", pods.relists);
	}

	prom_family(f, "moat_evictions_total", "counter",
	       "BE pods whose eviction moatd asked for (mode on) or would have (dry-run), by what decided.");
	for (i = 0; i < EVICT_REASONS; i++)
		fprintf(f, "moat_evictions_total{reason=\"%s\",mode=\"on\"} %llu\n"
			"moat_evictions_total{reason=\"%s\",mode=\"dry-run\"} %llu\n",
			evict_reason_names[i], evict_count(d, i, false),
			evict_reason_names[i], evict_count(d, i, true));
	events_counts(d, &ev_posted, &ev_limited, &ev_failed);
	prom_family(f, "moat_kube_events_total", "counter",
	       "Events on BE pods at a hold and a release (kube/events): posted, dropped by the rate limit, failed.");
	fprintf(f, "moat_kube_events_total{result=\"posted\"} %llu\n"
		"moat_kube_events_total{result=\"limited\"} %llu\n"
		"moat_kube_events_total{result=\"failed\"} %llu\n",
		ev_posted, ev_limited, ev_failed);
	prom_family(f, "moat_evictions_refused_total", "counter",
	       "Evictions a PodDisruptionBudget refused (429), to be asked again.");
	fprintf(f, "moat_evictions_refused_total %llu\n", evict_refused(d));
	prom_family(f, "moat_evictions_stuck_total", "counter",
	       "Evictions accepted whose pod was still on the node a cooldown later.");
	fprintf(f, "moat_evictions_stuck_total %llu\n", evict_stuck(d));
	if (!isnan(d->period.node.pods_mem_limit)) {
		prom_family(f, "moat_pods_memory_limit_bytes", "gauge",
		       "kubepods' memory limit, which bounds all pods together (node allocatable).");
		fputs("moat_pods_memory_limit_bytes", f);
		prom_value(f, d->period.node.pods_mem_limit);
		prom_family(f, "moat_pods_memory_available_bytes", "gauge",
		       "What the pods' working set (usage less inactive file) leaves under kubepods' memory limit.");
		fputs("moat_pods_memory_available_bytes", f);
		prom_value(f, d->period.node.pods_mem_available);
	}
	prom_family(f, "moat_burst_writes_total", "counter",
	       "Writes of CFS burst to LC groups throttled by their own CPU limit.");
	fprintf(f, "moat_burst_writes_total %llu\n", burst_writes(d));
	prom_family(f, "moat_burst_releases_total", "counter",
	       "LC groups' bursts put back: not throttled for burst/hold_s, or no longer LC.");
	fprintf(f, "moat_burst_releases_total %llu\n", burst_releases(d));

	prom_family(f, "moat_actions_total", "counter",
	       "The controller's steps, by the chain (signal) that decided, resource and action.");
	for (h = 0; h < MOAT_RES_NR; h++)
		for (r = h; moat_chain_names[h] && r < MOAT_RES_NR;
		     r = moat_resource_next[r])
			for (a = MOAT_CTL_THROTTLE; a <= MOAT_CTL_UNDO; a++)
				fprintf(f, "moat_actions_total{chain=\"%s\",resource=\"%s\",action=\"%s\"} %llu\n",
					moat_chain_names[h], moat_resource_names[r],
					action_names[a], enforce_actions(d, false, h, r, a));
	prom_family(f, "moat_shadow_actions_total", "counter",
	       "The steps the controller would have taken in shadow mode, not written, by chain, resource and action.");
	for (h = 0; h < MOAT_RES_NR; h++)
		for (r = h; moat_chain_names[h] && r < MOAT_RES_NR;
		     r = moat_resource_next[r])
			for (a = MOAT_CTL_THROTTLE; a <= MOAT_CTL_UNDO; a++)
				fprintf(f, "moat_shadow_actions_total{chain=\"%s\",resource=\"%s\",action=\"%s\"} %llu\n",
					moat_chain_names[h], moat_resource_names[r],
					action_names[a], enforce_actions(d, true, h, r, a));
	prom_family(f, "moat_journal_entries", "gauge",
	       "Kernel values moatd changed and will put back.");
	fprintf(f, "moat_journal_entries %zu\n", d->journal ? d->journal->n : 0);
	prom_family(f, "moat_lc_job_pods", "gauge",
	       "Job pods that are LC only by their QoS tier's class: batch work protected, never throttled (said in the log).");
	fprintf(f, "moat_lc_job_pods %zu\n", groups_lc_jobs(d));
	prom_family(f, "moat_local_overrides", "gauge",
	       "Values moatctl set keeps in the state file, over the config file's (moatctl reset drops them).");
	fprintf(f, "moat_local_overrides %zu\n", settings_local(d));
	prom_family(f, "moat_config_reloads_total", "counter",
	       "Loads of the settings after the start (SIGHUP, a changed config file), by result.");
	fprintf(f, "moat_config_reloads_total{result=\"applied\"} %llu\n",
		settings_reloads(d, true));
	fprintf(f, "moat_config_reloads_total{result=\"refused\"} %llu\n",
		settings_reloads(d, false));
	prom_family(f, "moat_journal_unreadable", "gauge",
	       "1 when the journal in the state directory did not decode at start: nothing it lists was put back, and moatd stays in observe.");
	fprintf(f, "moat_journal_unreadable %d\n", d->journal_unreadable[0] != 0);
	prom_family(f, "moat_outside_writes_total", "counter",
	       "Files moatd held that someone else (kubelet, systemd, an admin) wrote, taken as their new originals, by file.");
	for (i = 0; (file = enforce_outside_file(d, i, &outside)); i++)
		fprintf(f, "moat_outside_writes_total{file=\"%s\"} %llu\n", file,
			outside);
	prom_family(f, "moat_left_alone_files", "gauge",
	       "Files moatd leaves alone now: someone else rewrites them more than enforce/outside_writes_max times a minute.");
	fprintf(f, "moat_left_alone_files %d\n", enforce_left_alone(d, NULL));
}

/*
 * The per-group families, in the order /metrics gives them (the run-queue
 * histogram after the first): name, type, help, and the group's value
 * (NAN: no sample).
 */
static const struct group_family {
	const char *name, *type, *help;
	double (*get)(const struct moatd_group *g);
} group_families[] = {
	{ "moat_group_info", "gauge",
	  "A group moatd tracks, with its labels; always 1.",
	  g_info },
	{ "moat_group_rqlat_wp99_seconds", "gauge",
	  "Time-weighted p99 run-queue wait over the last period (lc/rqlat_signal wp99).",
	  g_wp99 },
	{ "moat_group_rqlat_ap99_seconds", "gauge",
	  "p99 of the run-queue wait a request arriving at a random moment of the last period meets (lc/rqlat_signal ap99).",
	  g_ap99 },
	{ "moat_group_cpu_usage_seconds_total", "counter",
	  "CPU time the group used since moatd found it.",
	  g_usage },
	{ "moat_group_cpu_throttled_periods_total", "counter",
	  "CFS bandwidth periods the group was throttled in (cpu.stat nr_throttled).",
	  g_nr_throttled },
	{ "moat_group_cpu_throttled_seconds_total", "counter",
	  "Time the group was throttled (cpu.stat throttled_usec or throttled_time).",
	  g_throttled },
	{ "moat_lc_throttled_seconds_total", "counter",
	  "Time an LC group was throttled by its own CPU limit (its cpu.stat): not interference, and not in the blame or /hints.",
	  g_lc_throttled },
	{ "moat_group_cpu_burst_seconds", "gauge",
	  "The CFS burst moat gave the LC group (cpu.max.burst, v1 cpu.cfs_burst_us), in seconds of CPU.  Absent: none.",
	  g_burst },
	{ "moat_group_cpu_quota_lift_cpus", "gauge",
	  "The CPU quota moat lifted the LC unit's to (burst/lift), in CPUs.  Absent: none.",
	  g_lift },
	{ "moat_group_cpu_pressure_stalled_seconds_total", "counter",
	  "Time some task of the group waited for a CPU (cpu.pressure some total; cgroup v2).",
	  g_cpu_stall },
	{ "moat_group_memory_pressure_stalled_seconds_total", "counter",
	  "Time some task of the group stalled on memory (memory.pressure some total; cgroup v2).",
	  g_mem_stall },
	{ "moat_group_memory_bytes", "gauge",
	  "Memory the group uses (memory.current, v1 memory.usage_in_bytes).",
	  g_memory },
	{ "moat_group_throttles_total", "counter",
	  "Steps down the controller took on the group.",
	  g_throttles },
	{ "moat_group_cpu_weight_limit", "gauge",
	  "The CPU weight moat holds the group to (v2's scale; a pod's, at the factor its BE pods are held to); 0: cpu.idle, or a pod's per-task lever alone.  Absent: none.",
	  g_prio },
	{ "moat_group_cpu_limit_cpus", "gauge",
	  "The CPU quota moat holds the group to, in CPUs.  Absent: none.",
	  g_cpus },
	{ "moat_group_memory_high_bytes", "gauge",
	  "The memory.high moat holds the group to.  Absent: none.",
	  g_mem_high },
	{ "moat_group_shadow_cpu_weight_limit", "gauge",
	  "In shadow mode, the CPU weight moat would hold the group to (as moat_group_cpu_weight_limit); nothing is written.  Absent: none, or not in shadow mode.",
	  g_shadow_prio },
	{ "moat_group_shadow_cpu_limit_cpus", "gauge",
	  "In shadow mode, the CPU quota moat would hold the group to, in CPUs; nothing is written.  Absent: none, or not in shadow mode.",
	  g_shadow_cpus },
	{ "moat_group_shadow_memory_high_bytes", "gauge",
	  "In shadow mode, the memory.high moat would hold the group to; nothing is written.  Absent: none, or not in shadow mode.",
	  g_shadow_mem_high },
	{ "moat_group_cycles_total", "counter",
	  "Cycles the group's tasks ran (pmu/cycles), since moatd counted them.",
	  g_cycles },
	{ "moat_group_instructions_total", "counter",
	  "Instructions the group's tasks retired (pmu/instructions).",
	  g_instructions },
	{ "moat_group_llc_misses_total", "counter",
	  "Last-level cache misses of the group's tasks (pmu/llc_misses).",
	  g_llc },
	{ "moat_group_cpi", "gauge",
	  "Cycles per instruction over the last period.",
	  g_cpi },
	{ "moat_group_cpi2_victim", "gauge",
	  "1 while CPI² finds the LC group a victim of interference.",
	  g_victim },
	{ "moat_group_l3_ways_limit", "gauge",
	  "The L3 ways moat holds the BE group to (its resctrl group gets the least of them).  Absent: none.",
	  g_l3_ways },
	{ "moat_group_llc_occupancy_bytes", "gauge",
	  "L3 occupancy of the group's resctrl monitoring group.",
	  g_llc_bytes },
	{ "moat_group_mbm_total_bytes_per_second", "gauge",
	  "Memory bandwidth of the group's resctrl monitoring group over the last resctrl/monitor_ms window.",
	  g_mbm_total },
	{ "moat_group_mbm_local_bytes_per_second", "gauge",
	  "Its local-NUMA-node part.",
	  g_mbm_local },
};

int metrics_write(const struct moatd *d, FILE *f)
{
	size_t i;

	if (make_labels(d)) {
		free_labels(d);
		return -ENOMEM;
	}
	daemon_metrics(f, d);
	for (i = 0; i < sizeof(group_families) / sizeof(group_families[0]); i++) {
		const struct group_family *fam = &group_families[i];

		per_group(f, d, fam->name, fam->type, fam->help, fam->get);
		if (!i)
			rqlat_histogram(f, d);
	}
	rdt_classes(f, d);
	prom_family(f, "moat_cpi2_victims_total", "counter",
	       "Times an LC group became a CPI² victim.");
	fprintf(f, "moat_cpi2_victims_total %llu\n", cpi_victims(d));
	blame(f, d);
	hints_write_metrics(d, f);
	free_labels(d);
	return ferror(f) ? -EIO : 0;
}
