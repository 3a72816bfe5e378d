// SPDX-License-Identifier: GPL-2.0-only
/*
 * Enforcement.  Each period in enforce mode the policy (enforce_decide())
 * gives every LC unit's signals, the blame of its waits and the CPI²
 * suspects, all from the period's record, to the decision step
 * (lib/control.c), and returns its decisions as a plan; the actuators
 * (enforce_act()) carry the plan out through lib/actuator.c, whose every
 * write the journal records first.  In observe mode nothing here writes.
 *
 * Where it writes.  The controller acts on units: the outermost group of
 * a subtree, i.e. a pod (never its containers) or a rule's cgroup.  A
 * pod's cpu.max bounds its containers together, which is what a budget
 * for a pod means, and kubelet leaves a pod's cpu.max at "max" unless the
 * pod has CPU limits, which no besteffort pod has; a container's cpu.max
 * is runc's, rewritten on every update.  On kubelet's cgroups moat writes
 * a BE pod's own weight (weights.h), cpu.max (v1 cpu.cfs_quota_us) and
 * memory.high, nothing else: kubelet rewrites its QoS tiers' weights
 * every minute and the runtime a container's on every update, and once
 * cpu.idle is set the kernel rejects the weight writes kubelet makes,
 * which is how cpu.idle on the besteffort cgroup stopped kubelet under
 * Koordinator (its issue 2732).  On a rule's cgroup, which no kubelet
 * rewrites, moat first lowers the CPU priority (cpu.weight, then
 * cpu.idle: what an LC wake-up needs), and only then the quota
 * (enforce/cpu_priority = 0 turns that off).  On a pod the CPU priority
 * is a factor of its own weight, one factor for every BE pod so that
 * their ratios hold (enforce/pod_weight = 0 turns that off), then a
 * per-task lever (levers.h): a long slice or SCHED_IDLE on the BE pod's
 * threads, and a short slice on the threads of the LC pod it was for,
 * attributes the kernel keeps per thread (enforce/task_levers = 0 turns
 * that off).  Where two or more BE pods are at the least factor, every
 * one's threads get the long slice without a step, as the factor is one
 * (enforce/least_factor_slices, weight_pass() and lever_pass()).
 *
 * Someone else's write to a file moat holds (kubelet's resize, systemd's
 * daemon-reload, an admin) is taken as its new original each period,
 * before the policy decides, and never fought: outside().
 *
 * What it writes is put back: when the controller releases a group all
 * the way, when a group stops being BE or stops being a group, on a switch
 * to observe, on `moatctl restore`, when moatd stops, and, from the
 * journal, at the next start after a crash.
 *
 * Shadow mode.  The sources, the policy and the judging run as in
 * enforce; the actuators write nothing and commit each step as if its
 * write had been made: the limits the controller holds are what it would
 * hold, its next steps and releases start from them, and each step is
 * said, counted apart (moat_shadow_actions_total) and kept in the action
 * history.  A step that is never taken changes no LC signal, so the
 * judge undoes it: shadow shows which BE groups enforce would hold first,
 * for which LC group and by which figure, not where enforce would settle.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "actuator.h"
#include "burst.h"
#include "enforce.h"
#include "levers.h"
#include "log.h"
#include "units.h"
#include "weights.h"

/* The controller's knobs (Documentation/enforce.rst). */
struct enforce_knobs {
	unsigned int slack_pct, min_effect_pct, release_periods, culprits;
	unsigned int cpu_priority;	/* 0: never cpu.weight or cpu.idle */
	unsigned int cpu_idle;		/* 0: the least weight is the floor */
	unsigned int cpi2_act;		/* 1: throttle CPI² victims' suspects */
	unsigned int task_levers;	/* 0: on pods, no per-task lever */
	unsigned int pod_weight;	/* 0: never a BE pod's weight */
	unsigned int lc_slice_us, be_slice_us;	/* the slice lever's */
	/* 1: the BE slice on every BE pod the least factor holds, two or more */
	unsigned int least_slices;
	/* a file someone else rewrites more than this a minute is let be */
	unsigned int outside_writes_max, outside_quiet_s;
	struct moat_ctl_step step[MOAT_RES_NR];
};

/* The files moat holds, by name, for the count of outside writes. */
static const char *const outside_files[] = {
	"cpu.max", "cpu.cfs_quota_us", "cpu.weight", "cpu.shares", "cpu.idle",
	"memory.high", "cpu.max.burst", "cpu.cfs_burst_us", "other",
};
#define OUTSIDE_FILES	(sizeof(outside_files) / sizeof(outside_files[0]))
/* The outside writes of a group's file that are remembered. */
#define OUTSIDE_KEEP	64
/*
 * The BE pods whose weights' ratios the weight lever keeps: those within
 * this of the largest's (a pod requesting 1 CPU and one 64m); a smaller
 * pod goes to the kernel's least first, and stays there.
 */
#define WEIGHT_SPAN	16

struct enforce {
	struct moatd *d;
	struct enforce_knobs ek;
	struct moat_ctl_state ctl;
	struct levers lv;
	unsigned long long throttles, releases, restores, undos, write_errors;
	unsigned long long outside[OUTSIDE_FILES], outside_total;
	/* steps refused while the journal cannot be saved, and when said */
	unsigned long long unsaved_steps;
	double unsaved_said_at;
	bool unsaved_said;
	/*
	 * The weight lever's: the least factor that keeps the BE pods'
	 * ratios (the least-weighted one at the kernel's minimum), and the
	 * factor in force.
	 */
	double weight_floor, weight_factor;
	/*
	 * This period: two or more BE pods held at the least factor, and the
	 * slice lever, so every one of them gets the BE slice (lever_pass()).
	 */
	bool least_slices;
	unsigned int least_slices_pods;	/* how many, said in the log */
	/*
	 * By the chain that decided (its first resource), resource, action;
	 * [1]: shadow mode's, steps not written.
	 */
	unsigned long long actions[2][MOAT_RES_NR][MOAT_RES_NR][MOAT_CTL_UNDO + 1];
	unsigned long long shadow_steps;
	/* the last steps taken (or, in shadow, not written), oldest first */
	struct enforce_record history[ENFORCE_HISTORY];
	unsigned long long nhistory;	/* records ever kept */
};

/* Its state of a group: of a unit, the limits moat holds it to. */
struct enforce_group {
	struct moat_ctl_limit lim[MOAT_RES_NR];
	double orig[MOAT_RES_NR];	/* read where no limit is held; NAN */
	unsigned long long throttles;	/* steps down taken */
	unsigned long long shadow_throttles;	/* in shadow mode, not written */
	bool refused[MOAT_RES_NR];	/* a write of it failed: said */
	const struct enforce *e;
	struct pod_weight w;		/* of a BE pod: its weight */
	/*
	 * cgroup v1: the least quota the kernel takes of a unit, its members'
	 * largest, in CPUs (a group's quota may not be under a child's:
	 * sched-bwc.rst, tg_cfs_schedulable_down()); 0: no member has one.
	 */
	double cpu_least;
	/*
	 * Its files someone else wrote: this period (moat writes none of
	 * them until the next), the last writes' times (monotonic s), and
	 * until when a file rewritten too often is left alone.
	 */
	bool adopted[MOAT_RES_NR];
	/* from its first outside write: 2.5 KiB a group few ever need */
	double (*outside_at)[OUTSIDE_KEEP];	/* [MOAT_RES_NR] */
	unsigned int outside_n[MOAT_RES_NR];
	double alone_until[MOAT_RES_NR];
	char alone_file[MOAT_RES_NR][32];
	bool outside_said;
	/* The per-task lever: of a BE pod, the LC unit its step was for. */
	__u64 lever_lc;
	bool lc_slice;			/* an LC unit's threads: short slices */
	bool be_slice;			/* a BE pod's threads: the least factor's slices */
	__u32 *seen;			/* the threads the last pass saw */
	size_t nseen;
};

/*
 * Each resource's actuator.  L3 ways and memory bandwidth have none per
 * group: every BE group's tasks are in one resctrl group, which gets the
 * least of the limits the controller set them (rdt.c writes it).
 */
static const struct moat_actuator *const actuator[MOAT_RES_NR] = {
	[MOAT_RES_CPU_PRIO] = &moat_act_cpu_prio,
	[MOAT_RES_CPU] = &moat_act_cpu_max,
	[MOAT_RES_MEMORY] = &moat_act_memory_high,
};

static const char *const rdt_name[MOAT_RES_NR] = {
	[MOAT_RES_L3] = "resctrl be l3 ways",
	[MOAT_RES_MB] = "resctrl be memory bandwidth",
};

static struct enforce *E(const struct moatd *d)
{
	return moatd_mod(d, MOD_ENFORCE);
}

static struct enforce_group *EG(const struct moatd_group *g)
{
	return group_mod(g, MOD_ENFORCE);
}

static const char *res_name(enum moat_resource r)
{
	return actuator[r] ? actuator[r]->name : rdt_name[r];
}

/* The threads a lever's pass saw: none, so the next pass looks at all. */
static void forget_seen(struct enforce_group *eg)
{
	free(eg->seen);
	eg->seen = NULL;
	eg->nseen = 0;
}

static void forget_limits(struct moatd_group *g)
{
	struct enforce_group *eg = EG(g);
	unsigned int r;

	for (r = 0; r < MOAT_RES_NR; r++)
		eg->lim[r] = (struct moat_ctl_limit){ .limit = INFINITY };
	eg->lever_lc = 0;
	eg->lc_slice = false;
	eg->be_slice = false;
	forget_seen(eg);
}

/*
 * Whether @g is a kubelet pod, whose CPU priority is its weight scaled
 * (weights.h) then the per-task lever (levers.h), not a rule's cgroup.
 */
static bool kube_pod(const struct moatd_group *g)
{
	return g->gid.kind == MOAT_GROUP_POD;
}

/*
 * Whether the controller may step unit @g: a pod or a rule's cgroup,
 * never a container that is a unit because its pod is not a group (its
 * files are the runtime's, rewritten on every update).
 */
static bool steppable(const struct moatd_group *g)
{
	return g->gid.kind != MOAT_GROUP_CONTAINER;
}

/* The least weight: v2 1, v1 2 shares; under it, cpu.idle. */
static double least_weight(const struct moatd *d)
{
	return d->cpu->v2 ? 1 : 200.0 / 1024;
}

/* What moat's restore puts back: the cgroup files it wrote. */
static const char *cgroup_prefix(const struct moatd *d)
{
	return d->cpu->mnt;
}

static int enforce_restore(struct moatd *d, const char *why)
{
	struct enforce *e = E(d);
	size_t i, n;
	int err;

	for (i = 0; i < d->nr_groups; i++)
		forget_limits(d->groups[i]);
	e->weight_factor = INFINITY;
	/* the releases' waits and relapses were of the limits forgotten */
	e->ctl = (struct moat_ctl_state){ 0 };
	n = enforce_journal_entries(d);
	if (!n)
		return 0;
	pr_info("%s: putting back the %zu values moatd changed", why, n);
	err = moat_journal_restore(d->journal, cgroup_prefix(d));
	e->restores += n - enforce_journal_entries(d);
	return err;
}

size_t enforce_journal_entries(const struct moatd *d)
{
	const char *prefix = cgroup_prefix(d);
	size_t i, n = 0, len = strlen(prefix);

	for (i = 0; d->journal && i < d->journal->n; i++)
		n += !strncmp(d->journal->e[i].path, prefix, len);
	return n;
}

/* @g stops being a group: put back what moat changed in it. */
static void enforce_group_del(struct moatd *d, struct moatd_group *g)
{
	if (d->journal && d->journal->n)
		moat_journal_restore(d->journal, g->dir);
	forget_limits(g);
	free(EG(g)->outside_at);
	EG(g)->outside_at = NULL;
}

/* @g's cgroup was removed and made again: what moat wrote died with it. */
static void enforce_group_reset(struct moatd *d, struct moatd_group *g)
{
	forget_limits(g);
	if (d->journal && d->journal->n)
		moat_journal_forget(d->journal, g->dir);
}

/* ---- the source: files someone else wrote, originals ---- */

/* Whether @g's @r is left alone now: someone else rewrites it. */
static bool alone(const struct moatd_group *g, enum moat_resource r,
		  const struct period *p)
{
	return EG(g)->alone_until[r] > moatd_period_s(p);
}

/*
 * Whether the one factor holds BE pod @g's weight this period and can take
 * it under its own: the pods the least factor's slices are for.  Not one
 * whose weight someone else rewrites (left alone: moat writes none
 * there), nor one whose weight they wrote this period, unless it had the
 * slices: moat takes the new original and holds it again at the next,
 * and a period without them would be a write to every thread of the pod
 * and back, or of all of them where it leaves one pod too few.
 */
static bool held_by_factor(const struct moatd *d, const struct moatd_group *g)
{
	const struct enforce_group *eg = EG(g);

	return g->unit == g && kube_pod(g) && g->class == MOAT_CLASS_BE && eg->w.ok &&
	       eg->w.floor < 1 && (!eg->adopted[MOAT_RES_CPU_PRIO] || eg->be_slice) &&
	       !alone(g, MOAT_RES_CPU_PRIO, &d->period);
}

/* The resource a file moat writes holds. */
static enum moat_resource file_resource(const char *name)
{
	if (!strcmp(name, "cpu.max") || !strcmp(name, "cpu.cfs_quota_us"))
		return MOAT_RES_CPU;
	if (!strcmp(name, "memory.high"))
		return MOAT_RES_MEMORY;
	return MOAT_RES_CPU_PRIO;	/* cpu.weight, cpu.shares, cpu.idle */
}

/* The group whose directory the file @path is in, or NULL. */
static struct moatd_group *group_of_file(const struct moatd *d, const char *path)
{
	size_t i, len = strrchr(path, '/') - path;

	for (i = 0; i < d->nr_groups; i++)
		if (strlen(d->groups[i]->dir) == len &&
		    !strncmp(d->groups[i]->dir, path, len))
			return d->groups[i];
	return NULL;
}

/*
 * A file moat holds that someone else wrote (moat_journal_check()):
 * kubelet resizing a pod, systemd's daemon-reload resetting a slice, an
 * admin.  Their value is the original now; moat writes none of the
 * group's files of that resource this period and decides afresh from
 * the new original the next.  Said once a group; counted by file.  A
 * file rewritten more than enforce/outside_writes_max times in a minute
 * is left alone for enforce/outside_quiet_s: moat never writes in a loop
 * against another owner.
 */
static void outside(void *ctx, const struct moat_journal_entry *je, const char *now)
{
	struct moatd *d = ctx;
	struct enforce *e = E(d);
	const char *name = strrchr(je->path, '/') + 1;
	struct moatd_group *g = group_of_file(d, je->path);
	enum moat_resource r = file_resource(name);
	double t = moatd_period_s(&d->period);
	struct enforce_group *eg;
	unsigned int f, n, keep;
	char who[MOATD_GROUP_NAME_MAX];

	for (f = 0; f + 1 < OUTSIDE_FILES && strcmp(outside_files[f], name); f++)
		;
	e->outside[f]++;
	e->outside_total++;
	if (!g)
		return;		/* not a group's now: the journal dropped it */
	if (burst_file(name) ||	/* the burst module's, on an LC group */
	    (burst_lifted(g) && file_resource(name) == MOAT_RES_CPU)) {
		burst_outside(d, g, je->path, je->last, now);
		return;
	}
	eg = EG(g);
	eg->adopted[r] = true;
	moatd_group_name(g, who, sizeof(who));
	if (!eg->outside_said)
		pr_info("group %s: %s changed by someone else, '%s' -> '%s' (kubelet, systemd or an admin): its original now; moat decides afresh from it",
			who, je->path, je->last, now);
	eg->outside_said = true;
	/* the limit held was a step from the old original: decided afresh */
	if (!(r == MOAT_RES_CPU_PRIO && kube_pod(g)))
		eg->lim[r] = (struct moat_ctl_limit){ .limit = INFINITY };
	keep = e->ek.outside_writes_max + 1 < OUTSIDE_KEEP ?
	       e->ek.outside_writes_max + 1 : OUTSIDE_KEEP;
	if (!eg->outside_at)
		eg->outside_at = calloc(MOAT_RES_NR, sizeof(*eg->outside_at));
	if (!eg->outside_at)
		return;		/* out of memory: counted, not rated */
	n = eg->outside_n[r]++;
	eg->outside_at[r][n % OUTSIDE_KEEP] = t;
	/* the oldest of the last outside_writes_max + 1 within a minute */
	if (n + 1 >= keep && t - eg->outside_at[r][(n + 1 - keep) % OUTSIDE_KEEP] < 60 &&
	    !alone(g, r, &d->period) && e->ek.outside_quiet_s) {
		eg->alone_until[r] = t + e->ek.outside_quiet_s;
		snprintf(eg->alone_file[r], sizeof(eg->alone_file[r]), "%s", name);
		pr_warn("group %s: %s rewritten %u times in a minute by someone else: moat leaves it alone for %u s",
			who, name, keep, e->ek.outside_quiet_s);
	}
}

/* Whether a BE pod's threads may get the per-task lever, the least step. */
static bool pod_lever(const struct enforce *e)
{
	return e->lv.kind != LEVER_NONE && e->ek.task_levers && e->ek.cpu_idle;
}

/* Where moatd has it, the original limit of @r, for a first step down. */
static double original(struct moatd *d, const struct period *p,
		       struct moatd_group *u, enum moat_resource r)
{
	double v;

	if (alone(u, r, p))
		return NAN;
	if (!actuator[r])	/* resctrl: what the BE class has */
		return u->class == MOAT_CLASS_BE ? p->rdt_be_orig[r] : NAN;
	if (r == MOAT_RES_CPU_PRIO && !E(d)->ek.cpu_priority)
		return NAN;
	/*
	 * On a pod, a factor of its weight (weights.h), 1 its own, down to
	 * the per-task lever (0) where there is one: the comment at the top.
	 */
	if (r == MOAT_RES_CPU_PRIO && kube_pod(u))
		return EG(u)->w.ok || pod_lever(E(d)) ? 1 : NAN;
	if (!moat_act_supported(actuator[r], u->dir, d->cpu->v2) ||
	    actuator[r]->read(u->dir, d->cpu->v2, &v))
		return NAN;
	return v;
}

void enforce_sample(struct moatd *d, struct period *p)
{
	struct enforce *e = E(d);
	double floor, heaviest;
	size_t i;
	unsigned int r;
	int n;

	if (d->mode == MOATD_OBSERVE)
		return;
	for (i = 0; i < d->nr_groups; i++)
		memset(EG(d->groups[i])->adopted, 0, sizeof(EG(d->groups[i])->adopted));
	n = moat_journal_check(d->journal, cgroup_prefix(d), outside, d);
	if (n < 0)
		pr_debug("enforce: the journal after outside writes: %s", strerror(-n));
	/*
	 * The BE pods' weights, and the least factor that keeps their
	 * ratios: the one that puts the least-weighted of them at the
	 * kernel's least.  Of them: the pods within WEIGHT_SPAN of the
	 * largest's weight; a pod smaller still reaches the least first and
	 * stays there (weights_at()) while the factor goes on down for the
	 * others.  All of them once: one pod of weight 2 (a request of 40m
	 * on v2) held every BE pod at half its weight.
	 */
	heaviest = 0;
	for (i = 0; i < p->nr_units; i++) {
		struct moatd_group *u = p->units[i].g;
		struct enforce_group *eg = EG(u);

		eg->w.orig = NAN;
		eg->w.ok = false;
		if (!kube_pod(u) || u->class != MOAT_CLASS_BE || !e->ek.pod_weight ||
		    !e->ek.cpu_priority || alone(u, MOAT_RES_CPU_PRIO, p))
			continue;
		weights_read(d, u, &eg->w);
		if (eg->w.ok)
			heaviest = fmax(heaviest, eg->w.orig);
	}
	floor = 0;
	for (i = 0; i < p->nr_units; i++) {
		const struct enforce_group *eg = EG(p->units[i].g);

		if (eg->w.ok && eg->w.floor < 1 && eg->w.orig * WEIGHT_SPAN >= heaviest)
			floor = fmax(floor, eg->w.floor);
	}
	floor = floor > 0 ? floor : 1;
	e->weight_floor = floor;
	for (i = 0; i < p->nr_units; i++) {
		struct moatd_group *u = p->units[i].g;
		struct enforce_group *eg = EG(u);

		for (r = 0; r < MOAT_RES_NR; r++)
			eg->orig[r] = u->class == MOAT_CLASS_BE &&
				      isinf(eg->lim[r].limit) ?
				      original(d, p, u, r) : NAN;
		eg->cpu_least = 0;
	}
	/* v1: a unit's quota no lower than its members' (runc's, kubelet's) */
	for (i = 0; !d->cpu->v2 && i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i];
		long long quota, period;

		if (g->unit == g || g->unit->class != MOAT_CLASS_BE ||
		    moat_cpu_max_get(g->dir, false, &quota, &period) || quota <= 0)
			continue;
		EG(g->unit)->cpu_least = fmax(EG(g->unit)->cpu_least, (double)quota / period);
	}
}

/* ---- the policy ---- */

static struct moat_ctl_params params(const struct moatd *d,
				     const struct period *p)
{
	const struct enforce *e = E(d);
	double least = least_weight(d);
	struct moat_ctl_params prm = {
		.floor_min = {
			/* cpu.idle, where enforce/cpu_idle allows it */
			[MOAT_RES_CPU_PRIO] = e->ek.cpu_idle ? 0 : least,
			[MOAT_RES_CPU] = 0.01,		/* the kernel's 1 ms quota */
			[MOAT_RES_MEMORY] = 16 << 20,
			[MOAT_RES_L3] = p->rdt_be_floor[MOAT_RES_L3],
			[MOAT_RES_MB] = p->rdt_be_floor[MOAT_RES_MB],
		},
		.snap_below = { [MOAT_RES_CPU_PRIO] = least },
		.slack_pct = e->ek.slack_pct,
		.min_effect_pct = e->ek.min_effect_pct,
		.release_periods = e->ek.release_periods,
		.culprits = e->ek.culprits,
	};

	memcpy(prm.step, e->ek.step, sizeof(prm.step));
	return prm;
}

static void format_limit(char *buf, size_t len, enum moat_resource r, double v)
{
	if (isinf(v))
		snprintf(buf, len, "max");
	else if (r == MOAT_RES_CPU_PRIO && v == 0)
		snprintf(buf, len, "idle");
	else if (r == MOAT_RES_CPU_PRIO)
		snprintf(buf, len, "%.3g", v);
	else if (r == MOAT_RES_CPU)
		snprintf(buf, len, "%.3f", v);
	else if (r == MOAT_RES_L3 || r == MOAT_RES_MB)
		snprintf(buf, len, "%.0f", floor(v));
	else
		snprintf(buf, len, "%.0f", v);
}

/* The per-task lever on a pod's threads, as the knob and the log say it. */
static void format_lever(const struct enforce *e, char *buf, size_t len, bool be)
{
	if (!be)
		snprintf(buf, len, "threads-slice-%uus", e->ek.lc_slice_us);
	else if (e->lv.kind == LEVER_IDLE)
		snprintf(buf, len, "threads-idle");
	else
		snprintf(buf, len, "threads-slice-%uus", e->ek.be_slice_us);
}

/*
 * A limit of @g as its knob and the log show it.  On a pod, its CPU
 * priority is a factor of its weight ("0.1x"), and at 0 the least factor
 * and the lever on its threads ("0.0039x,threads-slice-100000us"); an LC
 * pod's threads' short slice.
 */
static void format_group_limit(const struct moatd_group *g, char *buf,
			       size_t len, enum moat_resource r, double v)
{
	const struct enforce *e = EG(g)->e;
	size_t n;

	if (r != MOAT_RES_CPU_PRIO || !kube_pod(g) || (isinf(v) && !EG(g)->lc_slice)) {
		format_limit(buf, len, r, v);
		return;
	}
	if (isinf(v)) {
		format_lever(e, buf, len, false);
		return;
	}
	/* at 0, the least factor, where the BE pods have one, and the lever */
	n = v > 0 || e->weight_floor < 1 ?
	    snprintf(buf, len, "%.2gx%s", v > 0 ? v : e->weight_floor, v > 0 ? "" : ",") : 0;
	if (v == 0 && n < len)
		format_lever(e, buf + n, len - n, true);
}

/* What one LC unit (or the node, @lc NULL) saw that made it a cause. */
static void format_cause(const struct moatd *d, char *buf, size_t len,
			 const struct unit *lc,
			 const struct moat_ctl_lc *in, enum moat_resource head,
			 double blame_ns, double corr)
{
	char who[MOATD_GROUP_NAME_MAX];
	unsigned int s;
	size_t n;

	/* the LC pod's namespace/name once its metadata came, else its id */
	if (lc)
		moatd_group_name(lc->g, who, sizeof(who));
	n = snprintf(buf, len, "%s %s:", lc ? "lc group" : "the", lc ? who : "node");
	if (n >= len)
		return;

	for (s = 0; s < MOAT_SIG_NR && n < len; s++)
		if (moat_signal_resource[s] == head && in->value[s] > in->target[s] &&
		    in->target[s] > 0)
			n += snprintf(buf + n, len - n, " %s %.1f > %.1f",
				      signals_name(d, s), in->value[s],
				      in->target[s]);
	if (head == MOAT_RES_CPU_PRIO && lc && lc->waits.sum_ns > 0 && n < len)
		snprintf(buf + n, len - n, ", %.0f%% of its wait behind this group",
			 100 * blame_ns / lc->waits.sum_ns);
	else if (head == MOAT_RES_L3 && corr > 0 && n < len)
		snprintf(buf + n, len - n, " (a CPI² victim), its CPI and this group's CPU usage correlate %.2f",
			 corr);
}

static int plan_add(struct plan *plan, const struct plan_step *s)
{
	if (plan->nr == plan->cap) {
		size_t cap = plan->cap ? plan->cap * 2 : 64;
		void *v = realloc(plan->steps, cap * sizeof(*plan->steps));

		if (!v)
			return -ENOMEM;
		plan->steps = v;
		plan->cap = cap;
	}
	plan->steps[plan->nr++] = *s;
	return 0;
}

static void fill_be(const struct enforce *e, const struct period *p,
		    const struct unit *u, struct moat_ctl_be *b)
{
	const struct enforce_group *eg = EG(u->g);
	unsigned int r;

	b->usage[MOAT_RES_CPU] = u->cpu_usage;
	/*
	 * No usage (v1 with cpuacct mounted apart and the group not in it):
	 * it may be using every CPU, and the steps start from there.
	 */
	if (isnan(b->usage[MOAT_RES_CPU]))
		b->usage[MOAT_RES_CPU] = sysconf(_SC_NPROCESSORS_ONLN);
	b->usage[MOAT_RES_MEMORY] = u->g->win.memory_bytes;
	b->usage[MOAT_RES_CPU_PRIO] = NAN;	/* a weight is not used up */
	b->usage[MOAT_RES_L3] = NAN;		/* nor are ways, nor bandwidth */
	b->usage[MOAT_RES_MB] = NAN;
	for (r = 0; r < MOAT_RES_NR; r++) {
		b->lim[r] = eg->lim[r];
		/* no BE class group (resctrl off): its ways are no one's */
		if ((r == MOAT_RES_L3 || r == MOAT_RES_MB) && isnan(p->rdt_be_orig[r]))
			b->lim[r] = (struct moat_ctl_limit){ .limit = INFINITY };
		b->orig[r] = INFINITY;
		if (isinf(eg->lim[r].limit)) {
			/* A first step starts from it; unknown: no step. */
			b->orig[r] = eg->orig[r];
			if (isnan(b->orig[r])) {
				b->orig[r] = INFINITY;
				b->usage[r] = NAN;
			}
		}
	}
	/*
	 * A pod's weight, a factor of its own: down to the one that keeps
	 * the BE pods' ratios (without its weight, none: 1), then the
	 * per-task lever where there is one.  One floor for all: with each
	 * pod's own, the pods' steps and releases at their different floors
	 * moved the one factor up and down (the simulator's a_mixed_node,
	 * cgroup v1, seed 29).
	 */
	if (kube_pod(u->g)) {
		r = MOAT_RES_CPU_PRIO;
		b->own[r] = true;
		b->snap[r] = eg->w.ok ? e->weight_floor : 1;
		b->least[r] = pod_lever(e) ? 0 : b->snap[r];
	}
	/* a quota the kernel refuses is no step (cgroup v1) */
	if (eg->cpu_least > 0) {
		b->own[MOAT_RES_CPU] = true;
		b->snap[MOAT_RES_CPU] = 0;
		b->least[MOAT_RES_CPU] = fmax(eg->cpu_least, 0.01);
	}
}

/* Restores for what moat holds of units that are no BE units now. */
static void plan_unthrottles(struct moatd *d, const struct period *p,
			     struct plan *plan)
{
	size_t i;
	unsigned int r;

	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i];
		const struct unit *u = unit_of(p, g);

		if (u && u->class == MOAT_CLASS_BE && steppable(g))
			continue;
		for (r = 0; r < MOAT_RES_NR; r++) {
			struct plan_step s = {
				.unit = g, .r = r, .action = MOAT_CTL_RESTORE,
				.lim = { .limit = INFINITY },
				.chain = MOAT_RES_NR,	/* no chain's: counted apart */
			};

			if (isinf(EG(g)->lim[r].limit))
				continue;
			snprintf(s.cause, sizeof(s.cause), "%s",
				 u ? "no longer be" : "no longer a unit: in a pod now");
			plan_add(plan, &s);
		}
	}
}

void enforce_decide(struct moatd *d, const struct period *p, struct plan *plan)
{
	struct enforce *e = E(d);
	size_t n = p->nr_units, nlc = 0, nbe = 0, i, j;
	const struct unit **lcu, **beu;
	struct moat_ctl_params prm;
	struct moat_ctl_lc *lc;
	struct moat_ctl_be *be;
	double *blame = NULL, *suspect = NULL, held;
	int *idx = NULL;
	unsigned int r;

	plan->be_ways = plan->be_mb_pct = plan->be_weight = INFINITY;
	if (d->mode == MOATD_OBSERVE)
		return;
	plan_unthrottles(d, p, plan);
	if (!n)
		return;
	lcu = malloc(n * sizeof(*lcu));
	beu = malloc(n * sizeof(*beu));
	idx = malloc(n * sizeof(*idx));
	lc = calloc(n + 1, sizeof(*lc));
	be = calloc(n, sizeof(*be));
	if (!lcu || !beu || !idx || !lc || !be) {
		pr_warn("enforce: out of memory: no decision this period");
		goto out;
	}
	for (i = 0; i < n; i++) {
		const struct unit *u = &p->units[i];

		idx[i] = -1;
		if (u->class == MOAT_CLASS_LC) {
			idx[i] = nlc;
			lc[nlc] = u->lc;
			/*
			 * Its own limit's waits are not BE's doing: BPF charges
			 * them to its limit and units.c leaves them out of its
			 * signal; without blame (schedstat) they are not known
			 * apart, and the signal is not taken while it is throttled.
			 */
			if (u->self_throttled && !p->blame_known)
				lc[nlc].value[MOAT_SIG_RQLAT_P99] = NAN;
			/* CPI is a signal of the controller's only when it acts on it */
			if (!e->ek.cpi2_act)
				lc[nlc].target[MOAT_SIG_CPI] = 0;
			lcu[nlc++] = u;
		} else if (u->class == MOAT_CLASS_BE && steppable(u->g)) {
			idx[i] = nbe;
			fill_be(e, p, u, &be[nbe]);
			beu[nbe++] = u;
		}
	}
	/*
	 * The node's memory pressure, as one more LC row without blame: the
	 * share of the window some task stalled on memory, less the stalls
	 * of the BE units moat holds under a memory.high of its own.  Their
	 * stalls are the step's doing: counted, the row fed on its own steps
	 * and held BE at its floor for good (issue 43).  The node's "some"
	 * is the union of every group's stalls, no more than their sum: what
	 * is left is the least share of the window that some task outside
	 * those units stalled.
	 */
	for (r = 0; r < MOAT_SIG_NR; r++)
		lc[nlc].value[r] = NAN;
	held = 0;
	for (i = 0; i < nbe; i++)
		if (!isinf(be[i].lim[MOAT_RES_MEMORY].limit) &&
		    beu[i]->g->win.memory_pressure_pct > 0)
			held += beu[i]->g->win.memory_pressure_pct;
	lc[nlc].value[MOAT_SIG_MEMORY_PRESSURE] = isnan(p->node.memory_pressure_pct) ? NAN :
		fmax(0, p->node.memory_pressure_pct - held);
	lc[nlc].target[MOAT_SIG_MEMORY_PRESSURE] = signals_memory_target(d);
	/* LC rows, and the node's memory row, by BE columns */
	blame = calloc((nlc + 1) * (nbe ? nbe : 1), sizeof(*blame));
	suspect = calloc((nlc + 1) * (nbe ? nbe : 1), sizeof(*suspect));
	if (!blame || !suspect) {
		pr_warn("enforce: out of memory: no decision this period");
		goto out;
	}
	/* This period's blame, LC unit by BE unit (the first period: none). */
	for (i = 0; p->blame_valid && i < p->nr_blame; i++) {
		const struct blame_entry *b = &p->blame[i];
		const struct moatd_group *v = moatd_group_by_cgid(d, b->victim);
		const struct moatd_group *c = moatd_group_by_cgid(d, b->culprit);
		const struct unit *vu = v ? unit_of(p, v->unit) : NULL;
		const struct unit *cu = c ? unit_of(p, c->unit) : NULL;

		/* (a BE unit the controller does not step has no column) */
		if (!vu || !cu || vu->class != MOAT_CLASS_LC ||
		    cu->class != MOAT_CLASS_BE || idx[cu - p->units] < 0)
			continue;
		blame[idx[vu - p->units] * nbe + idx[cu - p->units]] += b->delta_ns;
	}
	/* The CPI² suspects of each LC unit, by BE unit: their correlation. */
	for (i = 0; i < nlc; i++) {
		for (j = 0; j < lcu[i]->nr_suspects; j++) {
			const struct moatd_group *s =
				moatd_group_by_cgid(d, lcu[i]->suspects[j].cgid);
			const struct unit *su = s ? unit_of(p, s) : NULL;

			if (su && su->class == MOAT_CLASS_BE && idx[su - p->units] >= 0)
				suspect[i * nbe + idx[su - p->units]] =
					lcu[i]->suspects[j].corr;
		}
	}
	prm = params(d, p);
	/* without BPF (schedstat) no blame: the largest CPU users first */
	moat_control_step(&prm, &e->ctl, lc, nlc + 1,
			  p->blame_known ? blame : NULL, suspect, be, nbe);

	for (i = 0; i < nbe; i++) {
		for (r = 0; r < MOAT_RES_NR; r++) {
			int c = be[i].cause[r];
			struct plan_step s = {
				.unit = beu[i]->g, .r = r, .action = be[i].action[r],
				.lim = be[i].lim[r], .chain = be[i].chain[r],
				.lc = c >= 0 && (size_t)c < nlc ? lcu[c]->g : NULL,
			};

			if (s.action != MOAT_CTL_NONE && c >= 0)
				format_cause(d, s.cause, sizeof(s.cause),
					     (size_t)c < nlc ? lcu[c] : NULL, &lc[c],
					     be[i].chain[r], blame[c * nbe + i],
					     suspect[c * nbe + i]);
			plan_add(plan, &s);
			if (r == MOAT_RES_L3)
				plan->be_ways = fmin(plan->be_ways, s.lim.limit);
			else if (r == MOAT_RES_MB)
				plan->be_mb_pct = fmin(plan->be_mb_pct, s.lim.limit);
			/*
			 * Every BE pod at the least factor of those held: at 0
			 * (the lever) the floor; never under it, which would
			 * flatten the pods' ratios.
			 */
			else if (r == MOAT_RES_CPU_PRIO && kube_pod(s.unit) &&
				 !isinf(s.lim.limit))
				plan->be_weight = fmin(plan->be_weight,
						       fmax(s.lim.limit, e->weight_floor));
		}
	}
out:
	free(lcu);
	free(beu);
	free(idx);
	free(lc);
	free(be);
	free(blame);
	free(suspect);
}

/* ---- the actuators ---- */

/* The lever a BE pod's threads get, and the slices. */
static struct lever_want lever_want(const struct enforce *e, bool be)
{
	return (struct lever_want){ .be = be, .lc_slice_us = e->ek.lc_slice_us,
				    .be_slice_us = e->ek.be_slice_us };
}

/*
 * Step @s on a pod's CPU priority: its threads' lever on where the step
 * goes to 0, back where it leaves 0; the weight is weight_pass()'s.
 */
static int lever_step(struct moatd *d, const struct plan_step *s)
{
	struct enforce *e = E(d);
	struct enforce_group *eg = EG(s->unit);
	struct lever_want w = lever_want(e, true);
	bool on = s->lim.limit == 0;
	int n;

	if (on == (eg->lim[MOAT_RES_CPU_PRIO].limit == 0))
		return 0;
	forget_seen(eg);
	if (!on) {
		/* the LC unit's slices go back at the pass, when no lever names it */
		eg->lever_lc = 0;
		/* the same slice stays where the least factor's are on it */
		if (e->least_slices && held_by_factor(d, s->unit)) {
			eg->be_slice = true;
			return 0;
		}
		return levers_restore(d, s->unit);
	}
	eg->lever_lc = s->lc ? s->lc->cgid : 0;
	n = levers_apply(d, &e->lv, s->unit, &w, &eg->seen, &eg->nseen);
	if (n >= 0)
		pr_debug("be group %s: the lever on %d threads", s->unit->gid.id, n);
	if (n == -EPERM)	/* no CAP_SYS_NICE (said once): from the next period, the quota */
		e->lv.kind = LEVER_NONE;
	if (n < 0) {
		/*
		 * No step: the threads it could change go back, or a release
		 * of the step that never was would leave them with the lever.
		 */
		levers_restore(d, s->unit);
		eg->lever_lc = 0;
	}
	return n < 0 ? n : 0;
}

/*
 * Every period: the lever on the threads that entered a BE pod that has
 * it; the BE slice on the threads of every BE pod the least factor holds
 * where two or more are held there (weight_pass()), and back where that
 * ended; a short slice on the threads of each LC pod a BE pod's lever was
 * for, and back where none is now.
 */
static void lever_pass(struct moatd *d)
{
	struct enforce *e = E(d);
	size_t i, j;
	int n;

	if (d->mode != MOATD_ENFORCE)
		return;
	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i];
		struct enforce_group *eg = EG(g);
		struct lever_want w = lever_want(e, true);
		bool named = false;

		if (g->unit != g || !kube_pod(g))
			continue;
		/*
		 * Without a lever now (an EPERM): nothing applied, but the LC
		 * pods' slices still go back below, once no lever names them.
		 */
		if (eg->lim[MOAT_RES_CPU_PRIO].limit == 0 && e->lv.kind != LEVER_NONE) {
			if (levers_apply(d, &e->lv, g, &w, &eg->seen, &eg->nseen) == -EPERM)
				e->lv.kind = LEVER_NONE;	/* said once */
			eg->be_slice = false;	/* its own lever's now, put back with it */
			continue;
		}
		if (e->least_slices && held_by_factor(d, g)) {
			n = levers_apply(d, &e->lv, g, &w, &eg->seen, &eg->nseen);
			if (n == -EPERM)
				e->lv.kind = LEVER_NONE;	/* said once */
			if (n > 0 && !eg->be_slice)
				pr_info("be group %s: %d threads get a %u us slice: one of %u BE pods at the least factor",
					g->gid.id, n, e->ek.be_slice_us, e->least_slices_pods);
			eg->be_slice |= n >= 0;
			continue;
		}
		if (eg->be_slice) {
			eg->be_slice = false;
			forget_seen(eg);
			if (!levers_restore(d, g))
				pr_info("be group %s: its threads' slices back: not one of several BE pods at the least factor now",
					g->gid.id);
			continue;
		}
		for (j = 0; e->lv.kind == LEVER_SLICE && e->ek.lc_slice_us &&
			    g->class == MOAT_CLASS_LC && j < d->nr_groups && !named; j++)
			named = EG(d->groups[j])->lever_lc == g->cgid &&
				EG(d->groups[j])->lim[MOAT_RES_CPU_PRIO].limit == 0;
		if (named) {
			w.be = false;
			n = levers_apply(d, &e->lv, g, &w, &eg->seen, &eg->nseen);
			if (n > 0 && !eg->lc_slice)
				pr_info("lc group %s: %d threads get a %u us slice: a BE pod's lever is for it",
					g->gid.id, n, e->ek.lc_slice_us);
			eg->lc_slice |= n >= 0;
		} else if (eg->lc_slice) {
			eg->lc_slice = false;
			forget_seen(eg);
			if (!levers_restore(d, g))
				pr_info("lc group %s: its threads' slices back: no BE pod's lever is for it now",
					g->gid.id);
		}
	}
}

/*
 * Step @s done: the unit's limit is what the step set, counted and said.
 * Only after the write that makes it so: a refused write is no step.
 */
static void commit(struct moatd *d, const struct plan_step *s)
{
	struct enforce *e = E(d);
	struct moatd_group *u = s->unit;
	struct enforce_group *eg = EG(u);
	const struct moat_actuator *a = actuator[s->r];
	const char *name = res_name(s->r), *unit = a ? a->unit : s->r == MOAT_RES_L3 ?
								  "ways" : "%";
	bool sh = d->mode == MOATD_SHADOW;
	/* in shadow mode each line says that nothing was written */
	const char *pre = sh ? "shadow, not written: " : "";
	char from[64], to[64], who[MOATD_GROUP_NAME_MAX];
	struct enforce_record *rec;

	moatd_group_name(u, who, sizeof(who));
	if (s->r == MOAT_RES_CPU_PRIO && kube_pod(u))
		unit = "";	/* the factor and the lever name themselves */
	format_group_limit(u, from, sizeof(from), s->r, eg->lim[s->r].limit);
	format_group_limit(u, to, sizeof(to), s->r, s->lim.limit);
	eg->lim[s->r] = s->lim;
	eg->refused[s->r] = false;
	if (s->action <= MOAT_CTL_UNDO && s->chain < MOAT_RES_NR)
		e->actions[sh][s->chain][s->r][s->action]++;
	rec = &e->history[e->nhistory % ENFORCE_HISTORY];
	*rec = (struct enforce_record){ .at = time(NULL), .shadow = sh,
					.action = s->action, .r = s->r,
					.seq = e->nhistory++ };
	if (kube_pod(u) && u->meta.known) {
		snprintf(rec->ns, sizeof(rec->ns), "%s", u->meta.ns);
		snprintf(rec->pod, sizeof(rec->pod), "%s", u->meta.name);
	}
	snprintf(rec->group, sizeof(rec->group), "%s", u->gid.id);
	snprintf(rec->name, sizeof(rec->name), "%s", who);
	snprintf(rec->from, sizeof(rec->from), "%s", from);
	snprintf(rec->to, sizeof(rec->to), "%s", to);
	snprintf(rec->cause, sizeof(rec->cause), "%s", s->cause);
	e->shadow_steps += sh;
	switch (s->action) {
	case MOAT_CTL_THROTTLE:
		if (sh) {
			eg->shadow_throttles++;
		} else {
			eg->throttles++;
			e->throttles++;
		}
		pr_info("%sthrottle be group %s: %s %s -> %s%s%s for %s", pre, who,
			name, from, to, *unit ? " " : "", unit, s->cause);
		break;
	case MOAT_CTL_UNDO:
		e->undos += !sh;
		pr_info("%sundo be group %s: %s %s -> %s%s%s: the step did not help %s; left alone for %u periods",
			pre, who, name, from, to, *unit ? " " : "", unit, s->cause,
			s->lim.backoff);
		break;
	case MOAT_CTL_RELEASE:
		e->releases += !sh;
		pr_info("%srelease be group %s: %s %s -> %s%s%s: lc groups have slack",
			pre, who, name, from, to, *unit ? " " : "", unit);
		break;
	default:
		e->restores += !sh;
		if (s->cause[0])
			pr_info("%sgroup %s is %s: its %s goes back", pre, who,
				s->cause, name);
		else
			pr_info("%srelease be group %s: %s back to its original",
				pre, who, name);
		break;
	}
}

/*
 * Step @s's write failed with @err: nothing happened, so nothing is
 * committed; the controller decides afresh next period.  Said once until
 * the same limit is written again.
 */
static void refused(struct moatd *d, const struct plan_step *s, int err)
{
	struct enforce_group *eg = EG(s->unit);
	const struct moatd_group *u = s->unit;
	struct enforce *e = E(d);
	double t = moatd_period_s(&d->period);

	/*
	 * The journal cannot be saved: every step is refused until it can.
	 * Said once, then once a minute with how many steps were not taken,
	 * not once a step each period.
	 */
	if (d->journal->stale) {
		e->unsaved_steps++;
		if (e->unsaved_said && t - e->unsaved_said_at < 60)
			return;
		pr_warn("be group %s: %s not %s: the journal cannot be saved (%s); %llu steps not taken %s",
			u->gid.id, res_name(s->r),
			isinf(s->lim.limit) ? "put back" : "changed",
			strerror(-d->journal->save_err), e->unsaved_steps,
			e->unsaved_said ? "in the last minute" : "so far");
		e->unsaved_said = true;
		e->unsaved_said_at = t;
		e->unsaved_steps = 0;
		return;
	}
	e->unsaved_said = false;
	if (err == -ENOENT || err == -ENODEV) {
		pr_debug("be group %s: gone, ignoring", u->gid.id);
		return;
	}
	E(d)->write_errors++;
	if (eg->refused[s->r])
		return;
	eg->refused[s->r] = true;
	pr_warn("be group %s (%s): %s %s: %s", u->gid.id, u->path,
		isinf(s->lim.limit) ? "restore" : "set", res_name(s->r),
		actuator[s->r] ? moat_kfile_strerror(err) : strerror(-err));
}

/* Whether step @s is on resctrl's BE class: written by rdt.c, after. */
static bool shared(const struct plan_step *s)
{
	return !actuator[s->r];
}

/*
 * The weight lever: every BE pod's weight at the plan's one factor, its
 * own put back where there is none or it is no BE pod now; none written
 * where someone else wrote it this period, or rewrites it too often.
 */
static void weight_pass(struct moatd *d, const struct plan *plan)
{
	struct enforce *e = E(d);
	unsigned int held = 0;
	size_t i;

	e->least_slices = false;
	e->least_slices_pods = 0;
	if (d->mode == MOATD_OBSERVE)
		return;
	e->weight_factor = plan->be_weight;
	if (d->mode != MOATD_ENFORCE)
		return;		/* shadow: the factor it would have */
	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i];
		struct enforce_group *eg = EG(g);

		if (g->unit != g || !kube_pod(g) || alone(g, MOAT_RES_CPU_PRIO, &d->period))
			continue;
		if (!eg->adopted[MOAT_RES_CPU_PRIO])
			weights_apply(d, g, &eg->w, g->class == MOAT_CLASS_BE && eg->w.ok ?
						    plan->be_weight : INFINITY);
		held += held_by_factor(d, g);
	}
	/*
	 * Two or more BE pods at the least factor: each one's threads get the
	 * BE slice, as one factor holds them all (enforce.rst, "Several
	 * batch pods").  Their entities' virtual time runs hundreds of times
	 * faster than an LC pod's there, so one of them owed a little CPU by
	 * the others, with a little of its slice left, has a virtual deadline
	 * before the waking LC pod's: it is picked, runs its slice out and
	 * on to the tick.  A long slice puts that deadline far off.
	 */
	e->least_slices = held >= 2 && e->ek.least_slices && e->ek.task_levers &&
			  e->ek.be_slice_us && e->lv.kind == LEVER_SLICE &&
			  plan->be_weight <= e->weight_floor;
	e->least_slices_pods = e->least_slices ? held : 0;
}

/* Carry out step @s on its unit. */
static void act(struct moatd *d, const struct plan_step *s)
{
	struct moatd_group *u = s->unit;
	const struct moat_actuator *a = actuator[s->r];
	int err;

	if (s->action == MOAT_CTL_NONE) {	/* cooldown, backoff, judged */
		EG(u)->lim[s->r] = s->lim;
		return;
	}
	/* someone else's this period, or let be: decided afresh after */
	if (EG(u)->adopted[s->r] || alone(u, s->r, &d->period))
		return;
	if (d->mode == MOATD_SHADOW) {
		commit(d, s);	/* as if written: the next steps start from it */
		return;
	}
	if (shared(s))
		return;		/* enforce_commit_rdt(), once rdt.c wrote */
	if (s->r == MOAT_RES_CPU_PRIO && kube_pod(u)) {
		err = lever_step(d, s);
		/* and its weight at the plan's factor, as weight_pass() wrote */
		if (!err && EG(u)->w.ok && EG(u)->w.err)
			err = EG(u)->w.err;
	} else if (isinf(s->lim.limit))
		err = moat_act_restore(a, d->journal, u->dir, d->cpu->v2);
	else
		err = a->apply(d->journal, u->dir, d->cpu->v2, s->lim.limit);
	if (err)
		refused(d, s, err);
	else
		commit(d, s);
}

void enforce_act(struct moatd *d, const struct plan *plan)
{
	size_t i;

	weight_pass(d, plan);
	for (i = 0; i < plan->nr; i++)
		act(d, &plan->steps[i]);
	lever_pass(d);
}

void enforce_commit_rdt(struct moatd *d, const struct plan *plan, int err)
{
	size_t i;

	if (d->mode != MOATD_ENFORCE)
		return;		/* shadow: act() committed them */
	for (i = 0; i < plan->nr; i++) {
		const struct plan_step *s = &plan->steps[i];

		if (!shared(s) || s->action == MOAT_CTL_NONE)
			continue;
		if (err)
			refused(d, s, err);
		else
			commit(d, s);
	}
}

/* ---- what reporters read ---- */

double enforce_limit(const struct moatd_group *g, enum moat_resource r)
{
	const struct enforce_group *eg = EG(g);
	const struct enforce *e = eg->e;

	/* a pod's: the weight it has at the factor in force, BE or not held */
	if (r == MOAT_RES_CPU_PRIO && kube_pod(g) && g->class == MOAT_CLASS_BE &&
	    e->d->mode != MOATD_OBSERVE && e->weight_factor < 1 && eg->w.ok && !eg->w.err)
		return weights_at(e->d, &eg->w, e->weight_factor);
	if (r == MOAT_RES_CPU_PRIO && kube_pod(g))
		return eg->lim[r].limit == 0 ? 0 : INFINITY;	/* the lever alone */
	return eg->lim[r].limit;
}

const char *enforce_outside_file(const struct moatd *d, unsigned int i,
				 unsigned long long *writes)
{
	if (i >= OUTSIDE_FILES)
		return NULL;
	*writes = E(d)->outside[i];
	return outside_files[i];
}

int enforce_left_alone(const struct moatd *d, FILE *f)
{
	const struct period *p = &d->period;
	size_t i;
	unsigned int r;
	int n = 0;

	for (i = 0; i < d->nr_groups; i++) {
		const struct moatd_group *g = d->groups[i];
		const struct enforce_group *eg = EG(g);

		for (r = 0; r < MOAT_RES_NR; r++) {
			if (!alone(g, r, p))
				continue;
			n++;
			if (f)
				fprintf(f, "left alone: group %s: %s is rewritten by someone else (more than %u times a minute): moat writes it again in %.0f s\n",
					g->gid.id, eg->alone_file[r], E(d)->ek.outside_writes_max,
					eg->alone_until[r] - moatd_period_s(p));
		}
	}
	return n;
}

bool enforce_exhausted(const struct moatd *d, const struct moatd_group *g,
		       enum moat_resource r)
{
	const struct moat_ctl_limit *l = &EG(g)->lim[r];
	struct moat_ctl_params prm;
	struct moat_ctl_be b = { 0 };

	/* no lever for it on this group: nothing more it can do */
	if (!actuator[r] || !moat_act_supported(actuator[r], g->dir, d->cpu->v2))
		return true;
	if (isinf(l->limit))
		return false;
	prm = params(d, &d->period);
	return l->limit <= moat_ctl_floor(&prm, &b, r, l) * 1.001;
}

double enforce_held(const struct moatd_group *g, enum moat_resource r)
{
	return EG(g)->e->d->mode == MOATD_SHADOW ? INFINITY : enforce_limit(g, r);
}

double enforce_would(const struct moatd_group *g, enum moat_resource r)
{
	return EG(g)->e->d->mode == MOATD_SHADOW ? enforce_limit(g, r) : INFINITY;
}

unsigned long long enforce_throttles(const struct moatd_group *g)
{
	return EG(g)->throttles;
}

unsigned long long enforce_shadow_throttles(const struct moatd_group *g)
{
	return EG(g)->shadow_throttles;
}

const struct enforce_record *enforce_history(const struct moatd *d, unsigned int i)
{
	const struct enforce *e = E(d);
	unsigned int n = e->nhistory < ENFORCE_HISTORY ? e->nhistory : ENFORCE_HISTORY;

	return i < n ? &e->history[(e->nhistory - n + i) % ENFORCE_HISTORY] : NULL;
}

unsigned long long enforce_history_total(const struct moatd *d)
{
	return E(d)->nhistory;
}

unsigned long long enforce_actions(const struct moatd *d, bool shadow,
				   enum moat_resource chain, enum moat_resource r,
				   enum moat_ctl_action a)
{
	return E(d)->actions[shadow][chain][r][a];
}

unsigned long long enforce_write_errors(const struct moatd *d)
{
	return E(d)->write_errors;
}

bool enforce_journal_stale(const struct moatd *d, char *why, size_t len)
{
	if (!d->journal || !d->journal->stale)
		return false;
	snprintf(why, len, "the journal %s cannot be saved: %s", d->journal->file,
		 strerror(-d->journal->save_err));
	return true;
}

int enforce_report_stale(struct moatd *d)
{
	struct moat_journal *disk;
	size_t i;

	if (!d->journal || !d->journal->stale)
		return 0;
	if (moat_journal_open(d->journal->file, &disk))
		return -EIO;
	pr_err("journal %s: not saved since %s: it lists %zu values, moatd holds %zu",
	       d->journal->file, strerror(-d->journal->save_err), disk->n,
	       d->journal->n);
	for (i = 0; i < disk->n; i++)
		pr_err("journal %s: stale entry: %s (original '%s', moatd's '%s'): at the next start it is put back only if it still holds moatd's value",
		       d->journal->file, disk->e[i].path, disk->e[i].orig,
		       disk->e[i].pending[0] ? disk->e[i].pending : disk->e[i].last);
	moat_journal_free(disk);
	return -EIO;
}

/* ---- knobs ---- */

static int show_ull(const struct moat_knob *k, char *buf, size_t len)
{
	return snprintf(buf, len, "%llu", *(const unsigned long long *)k->owner) >=
	       (int)len ? -EOVERFLOW : 0;
}

static int show_journal(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return snprintf(buf, len, "%zu", d->journal ? d->journal->n : 0) >=
	       (int)len ? -EOVERFLOW : 0;
}

static int show_journal_errors(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return snprintf(buf, len, "%llu", d->journal ? d->journal->save_errors : 0) >=
	       (int)len ? -EOVERFLOW : 0;
}

/* The factor of their weights the BE pods are held to; 1: none. */
static int show_factor(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;
	double f = d->mode == MOATD_ENFORCE ? E(d)->weight_factor : 1;

	return snprintf(buf, len, "%.4g", f < 1 ? f : 1) >= (int)len ? -EOVERFLOW : 0;
}

static const char *const action_words[] = {
	[MOAT_CTL_NONE] = "none", [MOAT_CTL_THROTTLE] = "throttle",
	[MOAT_CTL_RELEASE] = "release", [MOAT_CTL_RESTORE] = "restore",
	[MOAT_CTL_UNDO] = "undo",
};

const char *enforce_action_name(enum moat_ctl_action a)
{
	return a <= MOAT_CTL_UNDO ? action_words[a] : "?";
}

/*
 * enforce/history/<n>, oldest first: "<UTC time> [shadow] <action>
 * <group> <resource> <from> -> <to>: <cause>", cut to the knob's length;
 * empty where there is no such step yet.
 */
static int show_history(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = ((const struct enforce *)k->owner)->d;
	const struct enforce_record *rec;
	unsigned int i = strtoul(strrchr(k->path, '/') + 1, NULL, 10);
	char when[32];
	struct tm tm;

	rec = enforce_history(d, i);
	if (!rec) {
		*buf = '\0';
		return 0;
	}
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&rec->at, &tm));
	snprintf(buf, len, "%s %s%s %s %s %s -> %s%s%s", when,
		 rec->shadow ? "shadow " : "", enforce_action_name(rec->action),
		 rec->name, res_name(rec->r), rec->from, rec->to,
		 rec->cause[0] ? ": " : "", rec->cause);
	return 0;	/* a long cause is cut: the log has it whole */
}

static int enforce_init(struct moatd *d)
{
	struct enforce *e = E(d);
	struct enforce_knobs *ek = &e->ek;
	struct moat_ctl_step *prio = &ek->step[MOAT_RES_CPU_PRIO];
	struct moat_ctl_step *cpu = &ek->step[MOAT_RES_CPU];
	struct moat_ctl_step *mem = &ek->step[MOAT_RES_MEMORY];
	struct moat_ctl_step *l3 = &ek->step[MOAT_RES_L3];
	struct moat_ctl_step *mb = &ek->step[MOAT_RES_MB];
#define U32(p, lo, hi, v) { .path = p, .type = MOAT_KNOB_U32, .writable = true, \
			    .min = lo, .max = hi, .data = v }
	const struct moat_knob knobs[] = {
		U32("be/cpu_min_pct", 1, 100, &cpu->min_pct),
		U32("be/memory_high_min_pct", 10, 100, &mem->min_pct),
		U32("enforce/slack_pct", 1, 99, &ek->slack_pct),
		U32("enforce/min_effect_pct", 0, 99, &ek->min_effect_pct),
		U32("enforce/release_periods", 1, 1000, &ek->release_periods),
		U32("enforce/culprits", 1, 64, &ek->culprits),
		U32("enforce/cpu_priority", 0, 1, &ek->cpu_priority),
		U32("enforce/cpu_idle", 0, 1, &ek->cpu_idle),
		U32("enforce/cpi", 0, 1, &ek->cpi2_act),
		U32("enforce/task_levers", 0, 1, &ek->task_levers),
		U32("enforce/pod_weight", 0, 1, &ek->pod_weight),
		U32("enforce/outside_writes_max", 1, OUTSIDE_KEEP - 1,
		    &ek->outside_writes_max),
		U32("enforce/outside_quiet_s", 0, 86400, &ek->outside_quiet_s),
		U32("enforce/lc_slice_us", 0, 100000, &ek->lc_slice_us),
		U32("enforce/be_slice_us", 0, 100000, &ek->be_slice_us),
		U32("enforce/least_factor_slices", 0, 1, &ek->least_slices),
		U32("enforce/cpu_prio_decrease_pct", 1, 99, &prio->decrease_pct),
		U32("enforce/cpu_prio_increase_pct", 1, 100, &prio->increase_pct),
		U32("enforce/cpu_prio_cooldown_periods", 0, 100, &prio->cooldown),
		U32("enforce/cpu_prio_backoff_periods", 0, 10000, &prio->backoff),
		U32("enforce/cpu_prio_release_periods", 0, 10000, &prio->release),
		U32("enforce/cpu_backoff_periods", 0, 10000, &cpu->backoff),
		U32("enforce/cpu_decrease_pct", 1, 90, &cpu->decrease_pct),
		U32("enforce/cpu_increase_pct", 1, 100, &cpu->increase_pct),
		U32("enforce/cpu_cooldown_periods", 0, 100, &cpu->cooldown),
		U32("enforce/memory_decrease_pct", 1, 50, &mem->decrease_pct),
		U32("enforce/memory_increase_pct", 1, 100, &mem->increase_pct),
		U32("enforce/memory_cooldown_periods", 0, 100, &mem->cooldown),
		U32("enforce/memory_backoff_periods", 0, 10000, &mem->backoff),
		U32("enforce/l3_decrease_pct", 1, 90, &l3->decrease_pct),
		U32("enforce/l3_increase_pct", 1, 100, &l3->increase_pct),
		U32("enforce/l3_cooldown_periods", 0, 100, &l3->cooldown),
		U32("enforce/l3_backoff_periods", 0, 10000, &l3->backoff),
		U32("enforce/mb_decrease_pct", 1, 90, &mb->decrease_pct),
		U32("enforce/mb_increase_pct", 1, 100, &mb->increase_pct),
		U32("enforce/mb_cooldown_periods", 0, 100, &mb->cooldown),
		U32("enforce/mb_backoff_periods", 0, 10000, &mb->backoff),
	};
#undef U32
	const struct moat_knob journal[] = {
		{ .path = "enforce/journal_entries", .type = MOAT_KNOB_SHOW,
		  .show = show_journal },
		{ .path = "enforce/journal_errors", .type = MOAT_KNOB_SHOW,
		  .show = show_journal_errors },
		{ .path = "enforce/pod_weight_factor", .type = MOAT_KNOB_SHOW,
		  .show = show_factor },
	};
	const struct { const char *path; unsigned long long *v; } counters[] = {
		{ "enforce/throttles", &e->throttles },
		{ "enforce/releases", &e->releases },
		{ "enforce/restores", &e->restores },
		{ "enforce/undos", &e->undos },
		{ "enforce/write_errors", &e->write_errors },
		{ "enforce/outside_writes", &e->outside_total },
		{ "enforce/shadow_steps", &e->shadow_steps },
	};
	size_t i;
	int err;

	e->d = d;
	*ek = (struct enforce_knobs){
		.slack_pct = 50, .min_effect_pct = 10, .release_periods = 6,
		.culprits = 2, .cpu_priority = 1, .cpu_idle = 1, .cpi2_act = 1,
		.task_levers = 1, .pod_weight = 1, .lc_slice_us = 100,
		.be_slice_us = 100000, .least_slices = 1, .outside_writes_max = 3,
		.outside_quiet_s = 600,
		.step = {
			[MOAT_RES_CPU_PRIO] = { .decrease_pct = 99, .increase_pct = 10,
						.min_pct = 0, .cooldown = 0,
						.backoff = 20, .release = 30 },
			[MOAT_RES_CPU] = { .decrease_pct = 40, .increase_pct = 10,
					   .min_pct = 10, .cooldown = 1,
					   .backoff = 20 },
			[MOAT_RES_MEMORY] = { .decrease_pct = 10, .increase_pct = 10,
					      .min_pct = 50, .cooldown = 2 },
			/* floors: resctrl/be/l3_ways_min, mb_min_percent */
			[MOAT_RES_L3] = { .decrease_pct = 40, .increase_pct = 20,
					  .min_pct = 0, .cooldown = 1,
					  .backoff = 20 },
			[MOAT_RES_MB] = { .decrease_pct = 40, .increase_pct = 20,
					  .min_pct = 0, .cooldown = 1,
					  .backoff = 20 },
		},
	};
	err = moat_knob_add_all(d->tree, "", knobs,
				sizeof(knobs) / sizeof(knobs[0]), e);
	if (!err)
		err = moat_knob_add_all(d->tree, "", journal,
					sizeof(journal) / sizeof(journal[0]), d);
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]) && !err; i++) {
		struct moat_knob k = { .type = MOAT_KNOB_SHOW, .show = show_ull,
				       .owner = counters[i].v };

		snprintf(k.path, sizeof(k.path), "%s", counters[i].path);
		err = moat_knob_add(d->tree, &k);
	}
	for (i = 0; i < ENFORCE_HISTORY && !err; i++) {
		struct moat_knob k = { .type = MOAT_KNOB_SHOW, .show = show_history,
				       .owner = e };

		snprintf(k.path, sizeof(k.path), "enforce/history/%02zu", i);
		err = moat_knob_add(d->tree, &k);
	}
	return err;
}

/*
 * "cpu_prio=<weight|idle> cpu=<CPUs> memory=<bytes> l3=<ways> mb=<%>",
 * "max" where moat sets nothing.
 */
static int show_throttle(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd_group *g = k->owner;
	const struct enforce_group *eg = EG(g);
	char v[MOAT_RES_NR][64];
	unsigned int r;

	for (r = 0; r < MOAT_RES_NR; r++) {
		/* in force: in shadow mode none (enforce/history says more) */
		double lim = eg->e->d->mode == MOATD_SHADOW ? INFINITY : eg->lim[r].limit;

		/* a BE pod not stepped itself is held to the BE pods' factor */
		if (r == MOAT_RES_CPU_PRIO && kube_pod(g) && lim > 0 &&
		    !isnan(enforce_held(g, r)) && !isinf(enforce_held(g, r)))
			lim = eg->e->weight_factor;
		format_group_limit(g, v[r], sizeof(v[r]), r, lim);
		/* the slices the least factor gives, where it holds several */
		if (r == MOAT_RES_CPU_PRIO && eg->be_slice && lim > 0)
			snprintf(v[r] + strlen(v[r]), sizeof(v[r]) - strlen(v[r]),
				 ",least-factor-slice-%uus", eg->e->ek.be_slice_us);
	}
	return snprintf(buf, len, "cpu_prio=%s cpu=%s memory=%s l3=%s mb=%s",
			v[MOAT_RES_CPU_PRIO], v[MOAT_RES_CPU],
			v[MOAT_RES_MEMORY], v[MOAT_RES_L3],
			v[MOAT_RES_MB]) >= (int)len ? -EOVERFLOW : 0;
}

static int enforce_group_add(struct moatd *d, struct moatd_group *g)
{
	const struct moat_knob attrs[] = {
		{ .path = "throttle", .type = MOAT_KNOB_SHOW, .show = show_throttle },
	};
	struct moat_knob k = { .type = MOAT_KNOB_SHOW, .show = show_ull,
			       .owner = &EG(g)->throttles };
	char dir[MOAT_KNOB_PATH_MAX];
	int err;

	EG(g)->e = E(d);
	forget_limits(g);
	snprintf(dir, sizeof(dir), "groups/%s", g->gid.id);
	err = moat_knob_add_all(d->tree, dir, attrs,
				sizeof(attrs) / sizeof(attrs[0]), g);
	snprintf(k.path, sizeof(k.path), "groups/%s/throttles", g->gid.id);
	return err ? err : moat_knob_add(d->tree, &k);
}

/* Which per-task lever this kernel honours: said once. */
static int enforce_open(struct moatd *d)
{
	levers_probe(&E(d)->lv);
	return 0;
}

const struct moatd_module enforce_module = {
	.name = "enforce",
	.size = sizeof(struct enforce),
	.group_size = sizeof(struct enforce_group),
	.init = enforce_init,
	.open = enforce_open,
	.group_add = enforce_group_add,
	.group_reset = enforce_group_reset,
	.group_del = enforce_group_del,
	.restore = enforce_restore,
};
