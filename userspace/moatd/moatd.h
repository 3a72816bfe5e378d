/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_H
#define MOATD_H

/*
 * moatd's core: the loop's own state, the groups, and the modules.
 *
 * A period (Documentation/design.rst): sources read the kernel into the
 * period's record (struct period, and each group's sample and window);
 * units and their signals are derived from it once; the policies decide
 * from it alone and return a plan; the actuators carry the plan out,
 * through the one journal; then reporters (metrics, hints, the Node
 * publisher, the control socket) read what was committed, and nothing
 * else.  cycle() in main.c is the one place that says the order.
 *
 * Each concern is a module (struct moatd_module): it registers once, in
 * moatd_modules[], its knobs, its state (d->mod[id], its own struct in
 * its own file), its state per group (g->priv[id]), and what it does at
 * open, close, a group's arrival and departure, and a restore.
 */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <linux/types.h>
#include "config.h"
#include "control.h"
#include "group.h"
#include "hist.h"
#include "journal.h"
#include "knob.h"
#include "mountinfo.h"
#include "pmu_bpf.h"
#include "podmeta.h"

#define MOAT_VERSION		"0.1.0"

/*
 * observe: measure and report, write nothing.  shadow: the controller
 * decides as in enforce and says what it would write, writing nothing.
 * enforce: it writes.
 */
enum moatd_mode { MOATD_OBSERVE, MOATD_SHADOW, MOATD_ENFORCE };

/* The modules, in the order they open (and close in reverse). */
enum moatd_mod {
	MOD_SETTINGS,	/* settings.c: the knobs' values from files */
	MOD_GROUPS,	/* groups.c: which cgroups are groups */
	MOD_NODE,	/* node.c: the node's CPU, memory, pressure */
	MOD_DELAY,	/* delay.c: run-queue waits and blame (BPF, schedstat) */
	MOD_OBSERVE,	/* observe.c: each group's cgroup files */
	MOD_SIGNALS,	/* units.c: units, LC signals and targets */
	MOD_CPI,	/* cpi.c: PMU counters and CPI² */
	MOD_ENFORCE,	/* enforce.c: the controller and the cgroup actuators */
	MOD_BURST,	/* burst.c: CFS burst for throttled LC groups */
	MOD_RDT,	/* rdt.c: resctrl */
	MOD_HINTS,	/* hints.c: placement hints */
	MOD_HTTP,	/* http.c: /metrics, /hints, /healthz */
	MOD_KUBE,	/* kube.c: the Node publisher */
	MOD_PODS,	/* pods.c: pod metadata from the API server */
	MOD_EVICT,	/* evict.c: the last resort */
	MOD_EVENTS,	/* events.c: Events on the pods moat holds back */
	MOD_NR,
};

struct moatd;
struct moatd_group;

struct moatd_module {
	const char *name;
	size_t size;		/* of its state, d->mod[id], zeroed */
	size_t group_size;	/* of its state per group, g->priv[id] */
	/* Defaults and knobs, before the config is read. */
	int (*init)(struct moatd *d);
	/* After the settings: open what it needs; optional parts say why not. */
	int (*open)(struct moatd *d);
	/* After moatd detached: threads (a thread does not survive fork). */
	int (*start)(struct moatd *d);
	/*
	 * moatd stops, after the restore: ask its threads to end by
	 * d->stop_by_ns, without waiting for them (close() joins them).
	 */
	void (*stop)(struct moatd *d);
	void (*close)(struct moatd *d);
	/* A group found: its knobs; its state is zeroed. */
	int (*group_add)(struct moatd *d, struct moatd_group *g);
	/* Its cgroup was removed and made again: what was kept of it is stale. */
	void (*group_reset)(struct moatd *d, struct moatd_group *g);
	/* A group gone (or moatd stops): put back what was done to it. */
	void (*group_del)(struct moatd *d, struct moatd_group *g);
	/* Put back every value it changed in the kernel; @why goes to the log. */
	int (*restore)(struct moatd *d, const char *why);
};

extern const struct moatd_module *const moatd_modules[MOD_NR];

/* One window of a group's signals; NAN where not known. */
struct group_window {
	__u64 rqlat_count;
	double rqlat_p50_us, rqlat_p99_us, rqlat_p999_us;
	double rqlat_wp99_us;		/* time-weighted (hist.h) */
	double rqlat_ap99_us;		/* what a request arriving at random
					   waits, its p99 (hist.h) */
	double cpu_usage;		/* CPUs */
	double throttled_periods;	/* CFS periods throttled */
	double throttled_ms;
	double cpu_pressure_pct;	/* share of the window some task stalled */
	double memory_pressure_pct;
	double memory_bytes;		/* at the window's end */
	double cpi, llc_mpki;		/* over the window */
};

/*
 * A group's cumulative counters as read this period; a counter not read
 * is NAN.  Reporters export them as they are (Prometheus counters).
 */
struct group_sample {
	struct moat_rqlat_hist rqlat;	/* waits since moatd found it */
	bool rqlat_valid;
	double cpu_s, nr_throttled, throttled_s;
	double cpu_stall_s, memory_stall_s;	/* PSI some totals */
	double pmu[MOAT_PMU_EVENTS];	/* cycles, instructions, LLC misses */
};

#define GROUP_HISTORY	16

/*
 * What a group keeps of a committed window: the fields its _history
 * knobs show, not the whole window (a sixth of a group's memory).
 */
struct group_past {
	double rqlat_p99_us, rqlat_wp99_us, rqlat_ap99_us, cpi;
};

/*
 * Who a pod or container group is in Kubernetes (pods.c): kept when the
 * API server goes away or the pod's object does, so that no data going
 * missing reclassifies a pod.
 */
struct group_meta {
	bool known;			/* its pod's object came */
	/*
	 * Its pod's names, "" until known (group_meta_init()): in @names,
	 * one allocation as long as they are, where arrays of their longest
	 * were a quarter of a group (636 bytes).
	 */
	const char *ns;
	const char *name;
	const char *container;		/* "": none, or not named */
	const char *priority_class;	/* "": none */
	char *names;
	int label_class;		/* moat.io/class: podmeta.h */
	long long priority;		/* spec.priority: eviction's order */
	char qos[16];			/* status.qosClass */
	bool daemonset, mirror;		/* never evicted (podmeta.h) */
	bool controlled;		/* a controller makes it again */
	bool terminating;		/* deletionTimestamp: leaving */
	bool job;			/* a Job's: batch work */
	/* its annotation's run-queue p99 target (podmeta.h); 0: none, -1: bad */
	long long rqlat_target_us;
	/* the CPU limit its spec asks (podmeta.h), millicores; -1: none */
	long long cpu_limit_m;
};

struct moatd_group {
	struct moat_group_id gid;	/* id, kind, default class, source */
	/*
	 * In the cpu controller's hierarchy, and its directory: on the heap,
	 * as long as they are (two PATH_MAX arrays were 8 of a group's 11
	 * KiB, a quarter of moatd's RSS at 500 groups).
	 */
	char *path;
	char *dir;
	__u64 cgid;
	unsigned int class;		/* effective enum moat_class */
	char class_source[MOAT_ID_MAX + 24];	/* the rule that decided it */
	struct group_meta meta;		/* its pod, from the API server */
	bool seen;			/* in the latest rescan */
	struct moatd_group *unit;	/* the outermost group it is in: the
					   pod of a container, else itself */
	/* This period's, from the sources: read, never written, after them. */
	struct group_sample sample;
	struct group_window win;
	struct moat_rqlat_hist win_hist;	/* the window's waits */
	/* The committed windows, a ring, newest at history_next - 1. */
	struct group_past history[GROUP_HISTORY];
	unsigned int history_next;
	void *priv[MOD_NR];		/* each module's state of it */
};

/* The node's signals this period. */
struct node_sample {
	double ncpus;			/* online */
	double cpu_usage;		/* busy CPUs, NAN before two reads */
	double psi_some_avg10[3];	/* cpu, memory, io; NAN: no PSI */
	double memory_pressure_pct;	/* memory "some" over the window, %; NAN: none */
	double mem_total, mem_available;	/* bytes; NAN: not read */
	double swap_total;			/* bytes; NAN: not read */
	/* kubepods' memory limit and what its working set leaves; NAN: none */
	double pods_mem_limit, pods_mem_available;
};

/*
 * A unit: the outermost group of a subtree, a pod (never its containers)
 * or a rule's cgroup, as the controller, the hints, the metrics and the
 * Node publisher see it (units.c).
 */
struct unit {
	struct moatd_group *g;
	unsigned int class;
	/*
	 * Its members' waits this window, merged: the kernel keys a wait by
	 * the cgroup of the task's cpu controller, a container on a node,
	 * so a pod's own histogram is empty.  Pressure, CPU time and memory
	 * are hierarchical: the unit's own files count its members.
	 */
	struct moat_rqlat_hist waits;
	/* of @waits less its own limit's (below); NAN: too few */
	double rqlat_wp99_us, rqlat_ap99_us;
	/* An LC unit's signals and targets, as the controller takes them;
	   value NAN: not measured this period, target 0: none. */
	struct moat_ctl_lc lc;
	/*
	 * It or a member was throttled by its own CFS quota in this window:
	 * its waits hold that throttling, which no step on BE shortens.
	 * Where BPF blames waits, those that began with the member's
	 * hierarchy throttled are its own limit's (MOAT_CULPRIT_LIMIT):
	 * @limit_waits of them this window, @limit_ns in all, left out of
	 * @rqlat_wp99_us and @rqlat_ap99_us.  Without blame (schedstat) the
	 * controller does not take its run-queue signal this period.
	 */
	bool self_throttled;
	double limit_waits, limit_ns;
	double cpu_usage;		/* CPUs */
	/*
	 * CPI², this period (cpi.c): its CPI over its members' counters;
	 * for an LC unit found a victim, its outlier threshold and its
	 * suspects, the BE units whose CPU usage correlates with its CPI.
	 */
	double cpi;
	bool victim;
	double cpi_threshold;
	unsigned int nr_suspects;
	struct { __u64 cgid; double corr; } suspects[4];
};

/* Run-queue wait of a victim group behind a culprit group, since load. */
struct blame_entry {
	__u64 victim, culprit;		/* cgroup ids; MOAT_CULPRIT_LIMIT: its own limit */
	double wait_ns, count;
	double delta_ns, delta_count;	/* their growth this period */
};

/*
 * What the kernel said this period, and what was derived from it once.
 * The sources fill it, in cycle()'s order; after them it is only read.
 */
struct period {
	struct timespec at;		/* CLOCK_MONOTONIC: the policies' clock */
	struct timespec wall;		/* CLOCK_REALTIME at the same time */
	double secs;			/* since the last period; 0: the first */
	struct node_sample node;
	/* cgroups removed since the last period (the cgroup events) */
	__u64 *gone;
	size_t nr_gone, cap_gone;
	/* every group pair's blame, summed over CPUs, sorted */
	struct blame_entry *blame;
	size_t nr_blame, cap_blame;
	bool blame_known;		/* waits are blamed (BPF; not schedstat) */
	bool blame_valid;		/* and the growth of this period is known */
	struct unit *units;
	size_t nr_units, cap_units;
	bool pmu_valid;			/* counters read this period */
	/*
	 * resctrl's BE class as the rdt source found it: its L3 ways and
	 * bandwidth % before the controller (NAN: none to step), and the
	 * least the controller may leave it.
	 */
	double rdt_be_orig[MOAT_RES_NR], rdt_be_floor[MOAT_RES_NR];
};

/*
 * What the policies decided this period: each step on a unit's limit,
 * and why.  The actuators carry it out; reporters see it after.
 */
struct plan_step {
	struct moatd_group *unit;
	enum moat_resource r;
	enum moat_ctl_action action;	/* MOAT_CTL_NONE: its state only */
	struct moat_ctl_limit lim;	/* the limit after the step */
	enum moat_resource chain;	/* the chain (signal) that decided */
	struct moatd_group *lc;		/* the LC unit it was for, or NULL */
	char cause[256];		/* what the LC unit saw */
};

struct plan {
	struct plan_step *steps;
	size_t nr, cap;
	/*
	 * resctrl's BE class: the least L3 ways and bandwidth % of the BE
	 * units' limits (INFINITY: none), for the resctrl actuator.
	 */
	double be_ways, be_mb_pct;
	/*
	 * The BE pods' weights: the one factor of its own weight every BE
	 * pod is held to (INFINITY: none), for the weight lever (weights.h).
	 */
	double be_weight;
	/*
	 * CFS burst on LC groups (burst.h): each group's burst after the
	 * step, in s of CPU, or (lift) an LC unit's quota, in CPUs; NAN:
	 * its original back.
	 */
	struct burst_step {
		struct moatd_group *g;
		double value;
		bool lift;
	} *burst;
	size_t nr_burst, cap_burst;
	/* The BE pod to evict (evict.h), or NULL; why, for the log and its Event. */
	struct moatd_group *evict;
	unsigned int evict_reason;	/* enum evict_reason */
	char evict_why[200];
};

/* The stages of a cycle, in its order, each timed (moatd_stage_names). */
enum moatd_stage {
	STAGE_GROUPS, STAGE_NODE, STAGE_DELAY, STAGE_OBSERVE, STAGE_CPI,
	STAGE_RDT, STAGE_UNITS, STAGE_ENFORCE, STAGE_COMMIT, STAGE_NR,
};
extern const char *const moatd_stage_names[STAGE_NR];

struct moatd {
	/* the loop's own knobs and state */
	unsigned int mode;		/* enum moatd_mode */
	unsigned int period_ms;
	bool period_changed;
	bool started;			/* past start-up: the main loop runs */
	/*
	 * kube/stop_timeout_s: how long the API server's threads may still
	 * talk to it once stopped (the Node's hints withdrawn); at exit, by
	 * stop_by_ns (CLOCK_MONOTONIC), after the kernel's values are back.
	 */
	unsigned int kube_stop_s;
	/*
	 * kube/request_timeout_s: one request's connect and answer, each
	 * (a watch has its own); read by the API server's threads (atomic).
	 */
	unsigned int kube_request_s;
	long long stop_by_ns;
	double cycle_us;		/* the last cycle's duration */
	unsigned long long cycles;	/* cycles run */
	__u64 stage_cpu_ns[STAGE_NR];	/* moatd's CPU time in each, all cycles */
	struct timespec last_cycle;	/* when it ended */
	unsigned int cycle_period_ms;	/* the period it ran at */
	struct moat_knob_tree *tree;

	/* where the groups are */
	struct moat_cg_layout layout;
	const struct moat_cg_hierarchy *cpu;
	const struct moat_cg_hierarchy *cpuacct;	/* v1, may be NULL */
	const struct moat_cg_hierarchy *memory;		/* v1, may be NULL */
	struct moat_cg_hierarchy scan;	/* the part of cpu moatd looks at */
	char state_dir[PATH_MAX];	/* "": nothing kept on disk */
	/*
	 * The journal file that did not decode at start ("": none): its
	 * originals are the only record of what a moatd changed, so moatd
	 * runs in observe, keeps it as it is, and refuses enforce.
	 */
	char journal_unreadable[PATH_MAX];

	struct moatd_group **groups;
	size_t nr_groups, cap_groups;
	/*
	 * Bumped when a group comes, goes or is made anew (a new cgroup id
	 * and directory): what is derived from the set of groups (by_cgid,
	 * the units) is derived again only then, not every period.
	 */
	unsigned long groups_gen;
	struct moatd_group **by_cgid;	/* the same, sorted by cgroup id */
	unsigned long by_cgid_gen;	/* the groups_gen it was sorted at */

	/* The one journal every actuator writes through (journal.h). */
	struct moat_journal *journal;

	struct period period;
	struct plan plan;
	void *mod[MOD_NR];		/* each module's state */
};

/* core.c */
const char *moatd_version(void);
/* CLOCK_MONOTONIC in seconds. */
double moatd_mono_s(void);
/* The period's time (CLOCK_MONOTONIC, s): the policies' clock. */
static inline double moatd_period_s(const struct period *p)
{
	return p->at.tv_sec + p->at.tv_nsec / 1e9;
}
/* Microseconds since the last control cycle ended. */
double moatd_since_cycle_us(const struct moatd *d);
/**
 * moatd_restore() - every module puts back what it changed in the kernel.
 * Return: 0, or the first module's error (each logs its own).
 */
int moatd_restore(struct moatd *d, const char *why);
/* Sort the groups by cgroup id, after the rescan, for the lookups below. */
void moatd_index_groups(struct moatd *d);
/* The group with cgroup id @cgid, or NULL (a binary search: sorted ids). */
struct moatd_group *moatd_group_by_cgid(const struct moatd *d, __u64 cgid);
/* The node's name: $NODE_NAME (the downward API), else the host name. */
void moatd_node_name(char *buf, size_t len);
/*
 * A group's name for people: namespace/pod[/container] once its pod's
 * metadata came (a container the pod's status does not name: its id's
 * first 12 characters), else its id.
 */
void moatd_group_name(const struct moatd_group *g, char *buf, size_t len);

/* @m as a group's is until its pod is known: names "", nothing held. */
void group_meta_init(struct group_meta *m);
/* What @m holds, freed; then as group_meta_init() leaves it. */
void group_meta_free(struct group_meta *m);
/*
 * @m's names, copied into one allocation (what it held before is the
 * caller's to free).  Return: 0 or -ENOMEM (then @m as it was).
 */
int group_meta_set_names(struct group_meta *m, const char *ns, const char *name,
			 const char *container, const char *priority_class);
/* Whether @a and @b say the same of a pod. */
bool group_meta_eq(const struct group_meta *a, const struct group_meta *b);
#define MOATD_GROUP_NAME_MAX	(MOAT_POD_NS_MAX + MOAT_POD_NAME_MAX + \
				 MOAT_POD_CTR_ID_MAX + 4)

/* A knob's owner for one of each module's knobs: its state. */
static inline void *moatd_mod(const struct moatd *d, enum moatd_mod m)
{
	return d->mod[m];
}

static inline void *group_mod(const struct moatd_group *g, enum moatd_mod m)
{
	return g->priv[m];
}

#endif /* MOATD_H */
