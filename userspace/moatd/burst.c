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
#include "journal.h"
#include "log.h"

struct burst_mod {
	/* knobs */
	unsigned int on, max_pct, hold_s;
	/* whether the kernel has the burst files: -1 not known yet */
	int supported;
	unsigned long long writes, releases, errors, outside;
	unsigned int held, throttled;	/* groups, this period */
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
		if (access(path, F_OK))
			continue;
		snprintf(path, sizeof(path), "%s/%s/%s", d->cpu->mnt, de->d_name,
			 burst_name(d));
		found = !access(path, F_OK);
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
		if (d->mode != MOATD_ENFORCE || b->supported == 0 ||
		    (!bg->throttled && !bg->held) || bg->alone)
			continue;
		if (moat_cpu_max_get(g->dir, d->cpu->v2, &bg->quota_us, &bg->period_us))
			continue;
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
}

/* ---- the policy ---- */

static int step(struct plan *plan, struct moatd_group *g, double secs)
{
	if (plan->nr_burst == plan->cap_burst) {
		size_t cap = plan->cap_burst ? 2 * plan->cap_burst : 8;
		void *v = realloc(plan->burst, cap * sizeof(*plan->burst));

		if (!v)
			return -ENOMEM;
		plan->burst = v;
		plan->cap_burst = cap;
	}
	plan->burst[plan->nr_burst++] = (struct burst_step){ .g = g, .secs = secs };
	return 0;
}

void burst_decide(struct moatd *d, const struct period *p, struct plan *plan)
{
	const struct burst_mod *b = B(d);
	double now = p->at.tv_sec + p->at.tv_nsec / 1e9;
	size_t i;

	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i];
		struct burst_group *bg = BG(g);
		double want;

		if (bg->throttled)
			bg->throttled_at = now;
		if (!bg->read_ok)
			continue;
		want = bg->quota_us > 0 ? bg->quota_us * (b->max_pct / 100.0) / 1e6 : NAN;
		if (bg->held && (!bg->lc || !b->on || isnan(want) ||
				 (b->hold_s && now - bg->throttled_at > b->hold_s))) {
			if (step(plan, g, NAN))
				break;
			continue;
		}
		/* never less than the group has: an admin's may be more */
		if (b->on && bg->throttled && !isnan(want) &&
		    !(bg->burst_s >= want - 0.5e-6) && step(plan, g, want))
			break;
	}
}

/* ---- the actuator ---- */

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
		if (isnan(s->secs)) {
			err = moat_act_restore(&moat_act_cpu_burst, d->journal,
					       s->g->dir, d->cpu->v2);
			if (!err) {
				bg->held = false;
				b->releases++;
				pr_info("burst: group %s: its %s back (%s)", who,
					burst_name(d), bg->lc ? "not throttled lately" :
					"no longer LC");
			}
		} else {
			err = moat_act_cpu_burst.apply(d->journal, s->g->dir,
						       d->cpu->v2, s->secs);
			if (!err) {
				bg->held = true;
				bg->held_s = s->secs;
				bg->refused_said = false;
				b->writes++;
				if (!bg->first_said)
					pr_info("burst: group %s throttled by its own CPU limit (%lld us a %lld us period): %s %.0f us",
						who, bg->quota_us, bg->period_us,
						burst_name(d), s->secs * 1e6);
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
	b->held = 0;
	for (i = 0; i < d->nr_groups; i++)
		b->held += BG(d->groups[i])->held;
}

void burst_outside(struct moatd *d, struct moatd_group *g, const char *path,
		   const char *was, const char *now)
{
	struct burst_group *bg = BG(g);
	char who[MOATD_GROUP_NAME_MAX];

	B(d)->outside++;
	bg->held = false;
	if (bg->alone)
		return;
	bg->alone = true;
	moatd_group_name(g, who, sizeof(who));
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

		if (!BG(g)->held)
			continue;
		err = moat_act_restore(&moat_act_cpu_burst, d->journal, g->dir,
				       d->cpu->v2);
		if (!err)
			BG(g)->held = false;
		else if (!first)
			first = err;
	}
	B(d)->held = 0;
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

/* A group's: "<us> us" moat holds it to, "none", or "left alone". */
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
		{ .path = "burst/supported", .type = MOAT_KNOB_SHOW, .show = show_supported },
		COUNT("burst/held"), COUNT("burst/throttled"), COUNT("burst/writes"),
		COUNT("burst/releases"), COUNT("burst/outside_writes"),
	};
#undef COUNT
#undef U32

	b->on = 1;
	b->max_pct = 100;
	b->hold_s = 300;
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
