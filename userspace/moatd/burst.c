// SPDX-License-Identifier: GPL-2.0-only
/*
 * CPU burst for LC groups held back by their own CPU limit (burst.h).
 *
 * A service whose average use is well under its limits.cpu spends its
 * quota early in a 100 ms period when a burst comes (a GC, a request
 * spike, many threads) and every request then waits for the next period:
 * the tail latency Kubernetes users meet most, and no neighbour's doing.
 * Linux 5.14's CFS burst (cpu.max.burst on v2, cpu.cfs_burst_us on v1;
 * Documentation/scheduler/sched-bwc.rst) lets a group carry quota it did
 * not use into a later period, up to the burst, while its long-run
 * average stays within the quota.
 *
 * Who: every group whose unit is LC (a pod, its containers, an LC rule's
 * cgroup and the groups in it) with a CFS quota of its own; a container's
 * own quota throttles it too, so the pod and each container get theirs.
 * Never a BE group; a group moat bursts that stops being LC gets its
 * original back.
 *
 * When: the period that finds a group throttled (nr_throttled grew in its
 * window) gives it burst/max_pct of its quota (100: one period's quota,
 * the most the kernel takes).  It keeps it while it is throttled, and
 * gets its original back after burst/hold_s without throttling (0:
 * never), when moat stops, in observe mode, on `moatctl restore`, and at
 * the next start after a crash (the journal).
 *
 * Whose: nobody else writes the burst files (kubelet never does; runc
 * only for a spec that sets a burst, which Kubernetes does not), so a
 * change to one moat holds is an admin's: moat drops its entry (the
 * journal did) and leaves that file alone from then on, said once.
 *
 * The kernel refuses a quota written under the burst in force: while a
 * pod holds moat's burst, an in-place resize down to under it fails until
 * moat lets go (burst/hold_s); enforce.rst says so.
 *
 * The quota lift (burst/lift, off by default): where the burst is not
 * enough (the unit still throttled with its burst in force, or no burst
 * on this kernel) and the node is not busy (its CPU use under
 * burst/lift_node_busy_pct of its CPUs), an LC unit's own quota (the
 * pod's cpu.max, never a container's, which the runtime re-applies) goes
 * up by a fifth a period, up to burst/lift_max_pct of its limit, its
 * members' quotas together, and the node's idle CPUs other lifts did not
 * take this period; it comes down by a fifth a period while the node is
 * 10 points past the threshold or the unit uses under 80% of its limit
 * (a deadband either side: burstpol.h), and its original is put back
 * once it is there, or at once where its members' quotas bind (a pod
 * whose containers' limits are its own together: lifting it frees
 * nothing).  A limit kubelet set:
 * an in-place resize (an outside write) wins, as for the weight lever.
 * The burst stays a share of the original quota, so that the original
 * can always be written back under it.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "actuator.h"
#include "burst.h"
#include "burstpol.h"
#include "journal.h"
#include "log.h"

struct burst_mod {
	/* knobs */
	unsigned int on, max_pct, hold_s;
	unsigned int lift, lift_max_pct, lift_busy_pct;
	/* whether the kernel has the burst files: -1 not known yet */
	int supported;
	unsigned long long writes, releases, errors, outside;
	unsigned int held, throttled;	/* groups, this period */
	unsigned int lifted;		/* units, this period */
	unsigned long long lifts, lift_downs;
};

struct burst_group {
	bool lc;			/* its unit is LC, this period */
	bool read_ok;			/* its quota was read this period */
	long long quota_us, period_us;	/* quota -1: none */
	double burst_s;			/* as read; NAN: not */
	bool throttled;			/* in this period's window */
	double throttled_at;		/* CLOCK_MONOTONIC s; NAN: never */
	bool held;			/* moat's value is in the file */
	double held_s;			/* which */
	bool alone;			/* someone else wrote it: theirs */
	bool refused_said, first_said;
	/* the quota lift, of a unit: its quota before, in us; the lift's */
	bool lifted;
	long long orig_quota_us;
	double lift_cpus;
	/* of a unit, this period: its members' quotas together (burstpol.h) */
	double members_cap;
	unsigned int members;
};

static struct burst_mod *B(const struct moatd *d)
{
	return moatd_mod(d, MOD_BURST);
}

static struct burst_group *BG(const struct moatd_group *g)
{
	return group_mod(g, MOD_BURST);
}

bool burst_file(const char *name)
{
	return !strcmp(name, "cpu.max.burst") || !strcmp(name, "cpu.cfs_burst_us");
}

static const char *burst_name(const struct moatd *d)
{
	return moat_act_cpu_burst.files[d->cpu->v2][0];
}

/*
 * Whether the kernel has the burst files, from the first child of the
 * cpu hierarchy's root with a quota file (the root has none): -1 where
 * there is none yet.
 */
static int probe(const struct moatd *d)
{
	char path[PATH_MAX + 300];
	struct dirent *de;
	int found = -1;
	DIR *dir = opendir(d->cpu->mnt);

	while (dir && found < 0 && (de = readdir(dir))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s", d->cpu->mnt, de->d_name,
			 d->cpu->v2 ? "cpu.max" : "cpu.cfs_quota_us");
		if (moat_kfile_access(path, F_OK))
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s", d->cpu->mnt, de->d_name,
			 burst_name(d));
		found = !moat_kfile_access(path, F_OK);
	}
	if (dir)
		closedir(dir);
	return found;
}

static void say_support(struct moatd *d)
{
	struct burst_mod *b = B(d);

	if (b->supported == 0)
		pr_info("burst: this kernel has no %s (Linux 5.14+): no CPU burst for throttled LC groups",
			burst_name(d));
	else if (b->supported == 1 && b->on)
		pr_info("burst: LC groups throttled by their own CPU limit get %u%% of their quota as %s",
			b->max_pct, burst_name(d));
}

/* ---- the source ---- */

/*
 * The quotas of the members of each unit the lift may act on this period,
 * together: where they are no more than the unit's own, the unit's quota
 * is not what throttles it (a pod's containers each have a share of its
 * limit: kubelet's pods always), and a lift would free nothing.  A member
 * without a quota, or one not read, leaves the unit's INFINITY.
 */
static void members_sample(struct moatd *d)
{
	size_t i;

	for (i = 0; i < d->nr_groups; i++) {
		BG(d->groups[i])->members_cap = 0;
		BG(d->groups[i])->members = 0;
	}
	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i];
		struct burst_group *bg = BG(g), *ug;
		long long q = bg->quota_us, per = bg->period_us;

		if (!g->unit || g->unit == g || !BG(g->unit)->read_ok ||
		    !BG(g->unit)->lc)
			continue;
		ug = BG(g->unit);
		if (!bg->read_ok && moat_cpu_max_get(g->dir, d->cpu->v2, &q, &per)) {
			ug->members_cap = INFINITY;	/* not known: not a bind */
			continue;
		}
		ug->members++;
		ug->members_cap += q > 0 && per > 0 ? (double)q / per : INFINITY;
	}
	for (i = 0; i < d->nr_groups; i++)
		if (!BG(d->groups[i])->members)
			BG(d->groups[i])->members_cap = INFINITY;
}

void burst_sample(struct moatd *d, struct period *p)
{
	struct burst_mod *b = B(d);
	size_t i;

	(void)p;
	b->throttled = 0;
	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i];
		struct burst_group *bg = BG(g);
		double v;

		bg->lc = g->unit && g->unit->class == MOAT_CLASS_LC;
		bg->throttled = bg->lc && g->win.throttled_periods > 0;
		b->throttled += bg->throttled;
		bg->read_ok = false;
		bg->burst_s = NAN;
		if (d->mode != MOATD_ENFORCE ||
		    (!bg->throttled && !bg->held && !bg->lifted))
			continue;
		if (moat_cpu_max_get(g->dir, d->cpu->v2, &bg->quota_us, &bg->period_us))
			continue;
		if (b->supported == 0 || bg->alone) {
			bg->read_ok = true;	/* the lift may still act */
			continue;
		}
		if (moat_act_cpu_burst.read(g->dir, d->cpu->v2, &v) == -ENOENT) {
			if (b->supported < 0) {
				b->supported = 0;
				say_support(d);
			}
			continue;
		}
		if (b->supported < 0) {
			b->supported = 1;
			say_support(d);
		}
		bg->burst_s = v;
		bg->read_ok = true;
	}
	if (b->lift && d->mode == MOATD_ENFORCE)
		members_sample(d);
}

/* ---- the policy ---- */

static int step(struct plan *plan, struct moatd_group *g, double secs, bool lift)
{
	if (plan->nr_burst == plan->cap_burst) {
		size_t cap = plan->cap_burst ? 2 * plan->cap_burst : 8;
		void *v = realloc(plan->burst, cap * sizeof(*plan->burst));

		if (!v)
			return -ENOMEM;
		plan->burst = v;
		plan->cap_burst = cap;
	}
	plan->burst[plan->nr_burst++] = (struct burst_step){ .g = g, .value = secs,
							   .lift = lift };
	return 0;
}

/*
 * The quota lift's step for unit @g, if any (burstpol.h): the quota in
 * CPUs after it, NAN for the original back; 0: none.
 */
static double lift_step(const struct burst_mod *b, const struct moatd_group *g,
			const struct node_sample *node, double want, double now,
			double claimed)
{
	const struct burst_group *bg = BG(g);
	double cur = (double)bg->quota_us / bg->period_us;
	struct moat_lift_in in = {
		.quota = bg->quota_us > 0 ? cur : NAN,
		.orig = bg->lifted ? (double)bg->orig_quota_us / bg->period_us : cur,
		.lifted = bg->lifted, .lc = bg->lc, .throttled = bg->throttled,
		.usage = g->win.cpu_usage, .quiet_s = now - bg->throttled_at,
		.burst_possible = b->supported != 0 && !bg->alone && b->on,
		.burst_s = bg->held ? bg->held_s : 0, .burst_want = want,
		.node_cpus = node->ncpus, .node_busy = node->cpu_usage,
		.claimed = claimed, .members_cap = bg->members_cap,
		.lift = b->lift, .max_pct = b->lift_max_pct, .busy_pct = b->lift_busy_pct,
	};

	return moat_lift_step(&in);
}

/*
 * The quota kubelet will write for @g's limit in its pod's spec, in s of
 * CPU a period (kubelet's MilliCPUToQuota(): 1 ms at least); INFINITY
 * where the spec is not known or asks none.  Under the quota in force,
 * a resize down is on its way: the kernel would refuse it under a burst
 * larger (tg_set_cfs_bandwidth()).
 */
static double spec_quota_s(const struct moatd_group *g, const struct burst_group *bg)
{
	double q;

	if (!g->meta.known || g->meta.cpu_limit_m <= 0 || bg->period_us <= 0)
		return INFINITY;
	q = (double)g->meta.cpu_limit_m * bg->period_us / 1000;
	return fmax(q, 1000) / 1e6;
}

void burst_decide(struct moatd *d, const struct period *p, struct plan *plan)
{
	const struct burst_mod *b = B(d);
	double now = moatd_period_s(p);
	double claimed = 0;	/* idle CPUs this period's lifts took */
	size_t i;

	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i];
		struct burst_group *bg = BG(g);
		double want, lift;

		if (bg->throttled)
			bg->throttled_at = now;
		if (!bg->read_ok)
			continue;
		/* of the original quota, which a lift leaves below the burst */
		want = bg->lifted ? bg->orig_quota_us * (b->max_pct / 100.0) / 1e6 :
		       bg->quota_us > 0 ? bg->quota_us * (b->max_pct / 100.0) / 1e6 : NAN;
		/* and no more than the quota its spec asks, for a resize down */
		if (!isnan(want))
			want = fmin(want, spec_quota_s(g, bg));
		lift = g->unit == g ? lift_step(b, g, &p->node, want, now, claimed) : 0;
		if (lift > (double)bg->quota_us / bg->period_us)
			claimed += lift - (double)bg->quota_us / bg->period_us;
		if (lift != 0 && step(plan, g, lift, true))
			break;
		if (b->supported == 0 || bg->alone)
			continue;
		if (bg->held && (!bg->lc || !b->on || isnan(want) ||
				 (b->hold_s && now - bg->throttled_at > b->hold_s))) {
			if (step(plan, g, NAN, false))
				break;
			continue;
		}
		/* a resize down on its way: moat's burst down to what it allows */
		if (b->on && bg->held && !isnan(want) && bg->held_s > want + 0.5e-6) {
			if (step(plan, g, want, false))
				break;
			continue;
		}
		/* never less than the group has: an admin's may be more */
		if (b->on && bg->throttled && !isnan(want) &&
		    !(bg->burst_s >= want - 0.5e-6) && step(plan, g, want, false))
			break;
	}
}

/* ---- the actuator ---- */

/* A lift step: the unit's quota up or down, or its original back. */
static void lift_act(struct moatd *d, const struct burst_step *s, const char *who)
{
	struct burst_mod *b = B(d);
	struct burst_group *bg = BG(s->g);
	int err;

	if (isnan(s->value)) {
		err = moat_act_restore(&moat_act_cpu_max, d->journal, s->g->dir,
				       d->cpu->v2);
		if (!err) {
			pr_info("burst: unit %s: its quota back to %lld us (%s)", who,
				bg->orig_quota_us, !bg->lc ? "no longer LC" :
				!b->lift ? "burst/lift off" : "not needed");
			bg->lifted = false;
			b->lift_downs++;
		}
	} else {
		err = moat_act_cpu_max.apply(d->journal, s->g->dir, d->cpu->v2,
					     s->value);
		if (!err) {
			if (!bg->lifted) {
				bg->orig_quota_us = bg->quota_us;
				pr_info("burst: unit %s throttled with its burst spent, the node not busy: quota lifted from %lld us to %.0f us a %lld us period",
					who, bg->quota_us, s->value * bg->period_us,
					bg->period_us);
			}
			b->lifts += s->value > (double)bg->quota_us / bg->period_us;
			b->lift_downs += s->value < (double)bg->quota_us / bg->period_us;
			bg->lifted = true;
			bg->lift_cpus = s->value;
		}
	}
	if (err) {
		b->errors++;
		if (!bg->refused_said)
			pr_warn("burst: unit %s: its quota not written: %s", who,
				moat_kfile_strerror(err));
		bg->refused_said = true;
	}
}

void burst_act(struct moatd *d, const struct plan *plan)
{
	struct burst_mod *b = B(d);
	char who[MOATD_GROUP_NAME_MAX];
	size_t i;
	int err;

	for (i = 0; i < plan->nr_burst; i++) {
		const struct burst_step *s = &plan->burst[i];
		struct burst_group *bg = BG(s->g);

		moatd_group_name(s->g, who, sizeof(who));
		if (s->lift) {
			lift_act(d, s, who);
			continue;
		}
		if (isnan(s->value)) {
			err = moat_act_restore(&moat_act_cpu_burst, d->journal,
					       s->g->dir, d->cpu->v2);
			if (!err) {
				bg->held = false;
				b->releases++;
				pr_info("burst: group %s: its %s back (%s)", who,
					burst_name(d), !bg->lc ? "no longer LC" :
					!b->on ? "burst/enabled off" :
					bg->quota_us <= 0 ? "no CPU limit now" :
					"not throttled lately");
			}
		} else {
			err = moat_act_cpu_burst.apply(d->journal, s->g->dir,
						       d->cpu->v2, s->value);
			if (!err) {
				if (bg->held && s->value < bg->held_s &&
				    spec_quota_s(s->g, bg) * 1e6 < bg->quota_us)
					pr_info("burst: group %s: its pod's spec asks a limit of %lldm, under its quota of %lld us (a resize down): %s down to %.0f us, so that kubelet can write it",
						who, s->g->meta.cpu_limit_m, bg->quota_us,
						burst_name(d), s->value * 1e6);
				bg->held = true;
				bg->held_s = s->value;
				bg->refused_said = false;
				b->writes++;
				if (!bg->first_said)
					pr_info("burst: group %s throttled by its own CPU limit (%lld us a %lld us period): %s %.0f us",
						who, bg->quota_us, bg->period_us,
						burst_name(d), s->value * 1e6);
				bg->first_said = true;
			}
		}
		if (err) {
			b->errors++;
			if (!bg->refused_said)
				pr_warn("burst: group %s: %s not written: %s", who,
					burst_name(d), moat_kfile_strerror(err));
			bg->refused_said = true;
		}
	}
	b->held = b->lifted = 0;
	for (i = 0; i < d->nr_groups; i++) {
		b->held += BG(d->groups[i])->held;
		b->lifted += BG(d->groups[i])->lifted;
	}
}

void burst_outside(struct moatd *d, struct moatd_group *g, const char *path,
		   const char *was, const char *now)
{
	struct burst_group *bg = BG(g);
	char who[MOATD_GROUP_NAME_MAX];

	moatd_group_name(g, who, sizeof(who));
	if (!burst_file(strrchr(path, '/') + 1)) {
		/* the unit's quota: a resize, its original now; lifted afresh */
		bg->lifted = false;
		pr_info("burst: unit %s: quota changed by someone else, '%s' -> '%s' (a resize): its original now",
			who, was, now);
		return;
	}
	B(d)->outside++;
	bg->held = false;
	if (bg->alone)
		return;
	bg->alone = true;
	pr_info("burst: group %s: %s changed by someone else, '%s' -> '%s': theirs; moat leaves it alone from now on",
		who, path, was, now);
}

/* ---- the module ---- */

static int burst_restore(struct moatd *d, const char *why)
{
	size_t i;
	int err, first = 0;

	(void)why;	/* enforce's restore says how many values */
	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i];

		if (BG(g)->lifted) {
			err = moat_act_restore(&moat_act_cpu_max, d->journal, g->dir,
					       d->cpu->v2);
			if (!err)
				BG(g)->lifted = false;
			else if (!first)
				first = err;
		}
		if (!BG(g)->held)
			continue;
		err = moat_act_restore(&moat_act_cpu_burst, d->journal, g->dir,
				       d->cpu->v2);
		if (!err)
			BG(g)->held = false;
		else if (!first)
			first = err;
	}
	B(d)->held = B(d)->lifted = 0;
	return first;
}

/* Gone, or made anew: the journal's entry went with enforce's restore. */
static void burst_group_forget(struct moatd *d, struct moatd_group *g)
{
	(void)d;
	memset(BG(g), 0, sizeof(struct burst_group));
	BG(g)->throttled_at = NAN;
}

double burst_held(const struct moatd_group *g)
{
	return BG(g)->held ? BG(g)->held_s : NAN;
}

bool burst_lc(const struct moatd_group *g)
{
	return BG(g)->lc;
}

bool burst_lifted(const struct moatd_group *g)
{
	return BG(g)->lifted;
}

double burst_lift(const struct moatd_group *g)
{
	return BG(g)->lifted ? BG(g)->lift_cpus : NAN;
}

unsigned long long burst_writes(const struct moatd *d)
{
	return B(d)->writes;
}

unsigned long long burst_releases(const struct moatd *d)
{
	return B(d)->releases;
}

unsigned long long burst_errors(const struct moatd *d)
{
	return B(d)->errors;
}

static int show_count(const struct moat_knob *k, char *buf, size_t len)
{
	const struct burst_mod *b = B(k->owner);
	unsigned long long v;

	if (!strcmp(k->path, "burst/held"))
		v = b->held;
	else if (!strcmp(k->path, "burst/throttled"))
		v = b->throttled;
	else if (!strcmp(k->path, "burst/writes"))
		v = b->writes;
	else if (!strcmp(k->path, "burst/releases"))
		v = b->releases;
	else if (!strcmp(k->path, "burst/lifted"))
		v = b->lifted;
	else if (!strcmp(k->path, "burst/lifts"))
		v = b->lifts;
	else if (!strcmp(k->path, "burst/lift_downs"))
		v = b->lift_downs;
	else
		v = b->outside;
	return snprintf(buf, len, "%llu", v) >= (int)len ? -EOVERFLOW : 0;
}

static int show_supported(const struct moat_knob *k, char *buf, size_t len)
{
	int s = B(k->owner)->supported;

	return snprintf(buf, len, "%s", s < 0 ? "unknown" : s ? "yes" : "no") >=
	       (int)len ? -EOVERFLOW : 0;
}

/*
 * A group's: "<us> us" moat holds it to, "none", or "left alone"; then,
 * where its quota is lifted, " quota <CPUs> (<CPUs> its own)".
 */
static int show_group(const struct moat_knob *k, char *buf, size_t len)
{
	const struct burst_group *bg = BG(k->owner);
	int n;

	if (bg->alone)
		n = snprintf(buf, len, "left alone");
	else if (bg->held)
		n = snprintf(buf, len, "%.0f us", bg->held_s * 1e6);
	else
		n = snprintf(buf, len, "none");
	if (bg->lifted && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, " quota %.3f (%.3f its own)",
			      bg->lift_cpus, (double)bg->orig_quota_us / bg->period_us);
	return n >= (int)len ? -EOVERFLOW : 0;
}

static int burst_init(struct moatd *d)
{
	struct burst_mod *b = B(d);
#define U32(p, lo, hi, v) { .path = p, .type = MOAT_KNOB_U32, .writable = true, \
			    .min = lo, .max = hi, .data = v }
#define COUNT(p) { .path = p, .type = MOAT_KNOB_SHOW, .show = show_count }
	const struct moat_knob knobs[] = {
		U32("burst/enabled", 0, 1, &b->on),
		U32("burst/max_pct", 1, 100, &b->max_pct),
		U32("burst/hold_s", 0, 86400, &b->hold_s),
		U32("burst/lift", 0, 1, &b->lift),
		U32("burst/lift_max_pct", 100, 1000, &b->lift_max_pct),
		U32("burst/lift_node_busy_pct", 1, 100, &b->lift_busy_pct),
		{ .path = "burst/supported", .type = MOAT_KNOB_SHOW, .show = show_supported },
		COUNT("burst/held"), COUNT("burst/throttled"), COUNT("burst/writes"),
		COUNT("burst/releases"), COUNT("burst/outside_writes"),
		COUNT("burst/lifted"), COUNT("burst/lifts"), COUNT("burst/lift_downs"),
	};
#undef COUNT
#undef U32

	b->on = 1;
	b->max_pct = 100;
	b->hold_s = 300;
	b->lift = 0;
	b->lift_max_pct = 300;
	b->lift_busy_pct = 60;
	b->supported = -1;
	return moat_knob_add_all(d->tree, "", knobs, sizeof(knobs) / sizeof(knobs[0]), d);
}

static int burst_open(struct moatd *d)
{
	struct burst_mod *b = B(d);

	b->supported = probe(d);
	say_support(d);
	return 0;
}

static int burst_group_add(struct moatd *d, struct moatd_group *g)
{
	const struct moat_knob attrs[] = {
		{ .path = "burst", .type = MOAT_KNOB_SHOW, .show = show_group },
	};
	char dir[MOAT_KNOB_PATH_MAX];

	burst_group_forget(d, g);
	snprintf(dir, sizeof(dir), "groups/%s", g->gid.id);
	return moat_knob_add_all(d->tree, dir, attrs, sizeof(attrs) / sizeof(attrs[0]), g);
}

const struct moatd_module burst_module = {
	.name = "burst",
	.size = sizeof(struct burst_mod),
	.group_size = sizeof(struct burst_group),
	.init = burst_init,
	.open = burst_open,
	.group_add = burst_group_add,
	.group_reset = burst_group_forget,
	.group_del = burst_group_forget,
	.restore = burst_restore,
};
