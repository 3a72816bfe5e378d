// SPDX-License-Identifier: GPL-2.0-only
/*
 * Enforcement.  Each period in enforce mode, every LC group's signals and
 * the blame of its waits go to the decision step (lib/control.c), and its
 * decisions to the actuators (lib/actuator.c), whose every write the
 * journal records first.  In observe mode nothing here writes.
 *
 * Where it writes.  The controller acts on units: the outermost group of
 * a subtree, i.e. a pod (never its containers) or a rule's cgroup.  A
 * pod's cpu.max bounds its containers together, which is what a budget
 * for a pod means, and kubelet leaves a pod's cpu.max at "max" unless the
 * pod has CPU limits, which no besteffort pod has; a container's cpu.max
 * is runc's, rewritten on every update.  On kubelet's cgroups moat writes
 * cpu.max (v1 cpu.cfs_quota_us) and memory.high, nothing else: kubelet
 * rewrites the cpu.weight (shares) of pods and QoS cgroups, and once
 * cpu.idle is set the kernel rejects those writes, which is how cpu.idle
 * on the besteffort cgroup stopped kubelet under Koordinator (its issue
 * 2732).  A besteffort pod has the least weight from kubelet already.  On
 * a rule's cgroup, which no kubelet rewrites, moat first lowers the CPU
 * priority (cpu.weight, then cpu.idle: what an LC wake-up needs), and
 * only then the quota (enforce/cpu_priority = 0 turns that off).
 *
 * What it writes is put back: when the controller releases a group all
 * the way, when a group stops being BE or stops being a group, on a switch
 * to observe, on `moatctl restore`, when moatd stops, and, from the
 * journal, at the next start after a crash.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "actuator.h"
#include "hist.h"
#include "log.h"
#include "moatd.h"

/* One entry of the blame map, summed over CPUs, since load. */
struct blame_snap {
	__u64 victim, culprit, wait_ns;
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

static const char *res_name(enum moat_resource r)
{
	return actuator[r] ? actuator[r]->name : rdt_name[r];
}

int enforce_open(struct moatd *d, const char *state_dir)
{
	char file[PATH_MAX];
	int err;

	file[0] = '\0';
	if (*state_dir) {
		if (mkdir(state_dir, 0700) && errno != EEXIST) {
			pr_err("state dir %s: %s", state_dir, strerror(errno));
			return -errno;
		}
		if ((size_t)snprintf(file, sizeof(file), "%s/journal", state_dir) >=
		    sizeof(file))
			return -ENAMETOOLONG;
	}
	err = moat_journal_open(file, &d->journal);
	if (err) {
		if (err == -EBADMSG)
			pr_err("journal %s: its originals cannot be trusted, so nothing was restored and moatd does not start; check the values it lists by hand, then remove it",
			       file);
		return err;
	}
	if (!*file)
		pr_warn("no state dir: the journal of original values is in memory only, and a crash would leave throttled values behind");
	if (d->journal->n) {
		pr_info("journal %s: %zu values from a moatd that did not stop cleanly: restoring",
			file, d->journal->n);
		moat_journal_restore(d->journal, "");
	}
	return 0;
}

void enforce_close(struct moatd *d)
{
	moat_journal_free(d->journal);
	d->journal = NULL;
	free(d->blame);
	d->blame = NULL;
}

static void forget_limits(struct moatd_group *g)
{
	unsigned int r;

	for (r = 0; r < MOAT_RES_NR; r++)
		g->lim[r] = (struct moat_ctl_limit){ .limit = INFINITY };
}

int enforce_restore_all(struct moatd *d, const char *why)
{
	size_t i, n;
	int err;

	d->blame_valid = false;
	for (i = 0; i < d->nr_groups; i++)
		forget_limits(d->groups[i]);
	rdt_restore(d, why);
	if (!d->journal || !d->journal->n)
		return 0;
	n = d->journal->n;
	pr_info("%s: putting back the %zu values moatd changed", why, n);
	err = moat_journal_restore(d->journal, "");
	d->ec.restores += n - d->journal->n;
	return err;
}

void enforce_drop_group(struct moatd *d, struct moatd_group *g)
{
	if (d->journal && d->journal->n)
		moat_journal_restore(d->journal, g->dir);
}

void enforce_forget_group(struct moatd *d, struct moatd_group *g)
{
	forget_limits(g);
	if (d->journal && d->journal->n)
		moat_journal_forget(d->journal, g->dir);
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

static int cmp_cgid(const void *a, const void *b)
{
	__u64 x = (*(struct moatd_group *const *)a)->cgid;
	__u64 y = (*(struct moatd_group *const *)b)->cgid;

	return x < y ? -1 : x > y;
}

static int cmp_blame(const void *a, const void *b)
{
	const struct blame_snap *x = a, *y = b;

	if (x->victim != y->victim)
		return x->victim < y->victim ? -1 : 1;
	return x->culprit < y->culprit ? -1 : x->culprit > y->culprit;
}

/* Set each group's unit: sorted, a group is in the last unit it is below. */
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

static struct moatd_group *group_by_cgid(struct moatd_group **by_cgid,
					 size_t n, __u64 cgid)
{
	struct moatd_group key = { .cgid = cgid }, *kp = &key, **found;

	found = bsearch(&kp, by_cgid, n, sizeof(*by_cgid), cmp_cgid);
	return found ? *found : NULL;
}

struct blame_read {
	struct blame_snap *v;
	size_t n, cap;
};

static int blame_add(const struct moat_blame_key *k,
		     const struct moat_blame_val *v, void *ctx)
{
	struct blame_read *b = ctx;

	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		void *p = realloc(b->v, cap * sizeof(*b->v));

		if (!p)
			return -ENOMEM;
		b->v = p;
		b->cap = cap;
	}
	b->v[b->n++] = (struct blame_snap){ k->victim, k->culprit, v->wait_ns };
	return 0;
}

/*
 * This period's blame, LC unit by BE unit, into @m (@nlc x @nbe): the
 * blame map's growth since the last period.  The first period after a
 * start or a restore only takes the snapshot.
 */
static void blame_matrix(struct moatd *d, struct moatd_group **by_cgid,
			 double *m, size_t nbe)
{
	struct blame_read now = { NULL, 0, 0 };
	size_t i;
	int err;

	err = moat_rqlat_for_each_blame(d->rqlat, blame_add, &now);
	if (err) {
		pr_warn("read the blame map: %s", strerror(-err));
		free(now.v);
		return;
	}
	if (now.n)	/* (qsort() of NULL is undefined, even of nothing) */
		qsort(now.v, now.n, sizeof(*now.v), cmp_blame);
	for (i = 0; d->blame_valid && i < now.n; i++) {
		const struct blame_snap *b = &now.v[i], *was;
		struct moatd_group *v, *c;
		__u64 delta = b->wait_ns;

		v = group_by_cgid(by_cgid, d->nr_groups, b->victim);
		c = group_by_cgid(by_cgid, d->nr_groups, b->culprit);
		if (!v || !c || v->unit->class != MOAT_CLASS_LC ||
		    c->unit->class != MOAT_CLASS_BE)
			continue;
		was = bsearch(b, d->blame, d->nr_blame, sizeof(*b), cmp_blame);
		if (was)	/* forgotten and re-created entries restart */
			delta = b->wait_ns >= was->wait_ns ? b->wait_ns - was->wait_ns :
							     b->wait_ns;
		m[v->unit->ctl_idx * nbe + c->unit->ctl_idx] += delta;
	}
	free(d->blame);
	d->blame = now.v;
	d->nr_blame = now.n;
	d->blame_valid = true;
}

static struct moat_ctl_params params(const struct moatd *d)
{
	/* The least weight: v2 1, v1 2 shares; under it, cpu.idle. */
	double least = d->cpu->v2 ? 1 : 200.0 / 1024;
	struct moat_ctl_params p = {
		.floor_min = {
			/* cpu.idle, where enforce/cpu_idle allows it */
			[MOAT_RES_CPU_PRIO] = d->ek.cpu_idle ? 0 : least,
			[MOAT_RES_CPU] = 0.01,		/* the kernel's 1 ms quota */
			[MOAT_RES_MEMORY] = 16 << 20,
			[MOAT_RES_L3] = rdt_be_floor(d, MOAT_RES_L3),
			[MOAT_RES_MB] = rdt_be_floor(d, MOAT_RES_MB),
		},
		.snap_below = { [MOAT_RES_CPU_PRIO] = least },
		.slack_pct = d->ek.slack_pct,
		.min_effect_pct = d->ek.min_effect_pct,
		.release_periods = d->ek.release_periods,
		.culprits = d->ek.culprits,
	};

	memcpy(p.step, d->ek.step, sizeof(p.step));
	return p;
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

/* What one LC group (or the node, @lc NULL) saw that made it a cause. */
static void format_cause(char *buf, size_t len, const struct moatd_group *lc,
			 const struct moat_ctl_lc *in, enum moat_resource head,
			 double blame_ns, double wait_ns, double corr)
{
	size_t n = snprintf(buf, len, "%s %s:", lc ? "lc group" : "the",
			    lc ? lc->gid.id : "node");
	unsigned int s;

	for (s = 0; s < MOAT_SIG_NR && n < len; s++)
		if (moat_signal_resource[s] == head && in->value[s] > in->target[s] &&
		    in->target[s] > 0)
			n += snprintf(buf + n, len - n, " %s %.1f > %.1f",
				      moat_signal_names[s], in->value[s],
				      in->target[s]);
	if (head == MOAT_RES_CPU_PRIO && wait_ns > 0 && n < len)
		snprintf(buf + n, len - n, ", %.0f%% of its wait behind this group",
			 100 * blame_ns / wait_ns);
	else if (head == MOAT_RES_L3 && corr > 0 && n < len)
		snprintf(buf + n, len - n, " (a CPI² victim), its CPI and this group's CPU usage correlate %.2f",
			 corr);
}

/* Carry out @b's decision for @r on unit @u. */
static void act(struct moatd *d, struct moatd_group *u, enum moat_resource r,
		const struct moat_ctl_be *b, const char *cause)
{
	const struct moat_actuator *a = actuator[r];
	const char *name = res_name(r), *unit = a ? a->unit : r == MOAT_RES_L3 ?
						    "ways" : "%";
	char from[32], to[32];
	int err = 0;

	if (!a)
		;	/* resctrl: the BE group gets the least, below */
	else if (isinf(b->lim[r].limit))
		err = moat_act_restore(a, d->journal, u->dir, d->cpu->v2);
	else
		err = a->apply(d->journal, u->dir, d->cpu->v2, b->lim[r].limit);
	if (err && d->journal->stale) {
		pr_warn("be group %s: %s not %s: the journal cannot be saved (%s)",
			u->gid.id, name, isinf(b->lim[r].limit) ? "put back" : "changed",
			strerror(-d->journal->save_err));
		return;
	}
	if (err == -ENOENT || err == -ENODEV) {
		pr_debug("be group %s: gone, ignoring", u->gid.id);
		return;
	}
	if (err) {
		d->ec.write_errors++;
		pr_warn("be group %s (%s): %s %s: %s", u->gid.id, u->path,
			isinf(b->lim[r].limit) ? "restore" : "set", name,
			moat_kfile_strerror(err));
		return;
	}
	format_limit(from, sizeof(from), r, u->lim[r].limit);
	format_limit(to, sizeof(to), r, b->lim[r].limit);
	u->lim[r] = b->lim[r];
	if (b->action[r] <= MOAT_CTL_UNDO)
		d->ec.actions[b->chain[r]][r][b->action[r]]++;
	switch (b->action[r]) {
	case MOAT_CTL_THROTTLE:
		u->throttles++;
		d->ec.throttles++;
		pr_info("throttle be group %s: %s %s -> %s %s for %s", u->gid.id,
			name, from, to, unit, cause);
		break;
	case MOAT_CTL_UNDO:
		d->ec.undos++;
		pr_info("undo be group %s: %s %s -> %s %s: the step did not help %s; left alone for %u periods",
			u->gid.id, name, from, to, unit, cause,
			b->lim[r].backoff);
		break;
	case MOAT_CTL_RELEASE:
		d->ec.releases++;
		pr_info("release be group %s: %s %s -> %s %s: lc groups have slack",
			u->gid.id, name, from, to, unit);
		break;
	default:
		d->ec.restores++;
		pr_info("release be group %s: %s back to its original", u->gid.id,
			name);
		break;
	}
}

/* A unit moat throttled is no longer BE: put back its files. */
static void unthrottle(struct moatd *d, struct moatd_group *u)
{
	unsigned int r;

	for (r = 0; r < MOAT_RES_NR; r++) {
		if (isinf(u->lim[r].limit))
			continue;
		pr_info("group %s is no longer be: its %s goes back", u->gid.id,
			res_name(r));
		if (actuator[r])
			moat_act_restore(actuator[r], d->journal, u->dir, d->cpu->v2);
		d->ec.restores++;
	}
	forget_limits(u);
}

/* Where moatd has it, the original limit of @r, for a first step down. */
static double original(struct moatd *d, struct moatd_group *u,
		       enum moat_resource r)
{
	double v;

	if (!actuator[r])	/* resctrl: what the BE group has */
		return u->class == MOAT_CLASS_BE ? rdt_be_original(d, r) : NAN;
	/* Not on kubelet's cgroups (the comment at the top), or when off. */
	if (r == MOAT_RES_CPU_PRIO &&
	    (u->gid.kind != MOAT_GROUP_RULE || !d->ek.cpu_priority))
		return NAN;

	if (!moat_act_supported(actuator[r], u->dir, d->cpu->v2) ||
	    actuator[r]->read(u->dir, d->cpu->v2, &v))
		return NAN;
	return v;
}

static void fill_lc(struct moatd *d, struct moatd_group *u,
		    const struct moat_rqlat_hist *waits, struct moat_ctl_lc *lc)
{
	double ns;

	lc->id = u->cgid;
	lc->value[MOAT_SIG_RQLAT_P99] = NAN;
	if (waits->count >= d->ek.min_waits &&
	    !moat_hist_time_percentile(waits, 0.99, &ns))
		lc->value[MOAT_SIG_RQLAT_P99] = ns / 1000;
	lc->target[MOAT_SIG_RQLAT_P99] = u->rqlat_p99_target_us ?
					 u->rqlat_p99_target_us :
					 d->ek.rqlat_p99_target_us;
	lc->value[MOAT_SIG_MEMORY_PRESSURE] = u->win.memory_pressure_pct;
	lc->target[MOAT_SIG_MEMORY_PRESSURE] = d->ek.memory_pressure_target_pct;
	/* CPI has a target while the group is a CPI² victim (cpi.c) */
	lc->value[MOAT_SIG_CPI] = u->cpi2_cpi > 0 ? u->cpi2_cpi : NAN;
	lc->target[MOAT_SIG_CPI] = d->ek.cpi2_act && u->cpi2_lc &&
				   u->cpi2_lc->victim ? u->cpi2_threshold : 0;
}

/*
 * The CPI² suspects of each LC unit, by BE unit, into @m (@nlc x @nbe):
 * their correlation; 0: not a suspect.
 */
static void suspect_matrix(struct moatd *d, struct moatd_group **by_cgid,
			   struct moatd_group **lcu, size_t nlc, double *m,
			   size_t nbe)
{
	struct moatd_group key, *kp = &key, **found;
	size_t i, j;

	for (i = 0; i < nlc; i++) {
		for (j = 0; j < lcu[i]->nr_cpi2_sus; j++) {
			key.cgid = lcu[i]->cpi2_sus[j].cgid;
			found = bsearch(&kp, by_cgid, d->nr_groups,
					sizeof(*by_cgid), cmp_cgid);
			if (found && (*found)->class == MOAT_CLASS_BE &&
			    (*found)->unit == *found && (*found)->ctl_idx >= 0)
				m[i * nbe + (*found)->ctl_idx] =
					lcu[i]->cpi2_sus[j].corr;
		}
	}
}

static void fill_be(struct moatd *d, struct moatd_group *u, struct moat_ctl_be *b)
{
	unsigned int r;

	b->usage[MOAT_RES_CPU] = u->win.cpu_usage;
	/*
	 * No usage (v1 with cpuacct mounted apart and the group not in it):
	 * it may be using every CPU, and the steps start from there.
	 */
	if (isnan(b->usage[MOAT_RES_CPU]))
		b->usage[MOAT_RES_CPU] = sysconf(_SC_NPROCESSORS_ONLN);
	b->usage[MOAT_RES_MEMORY] = u->win.memory_bytes;
	b->usage[MOAT_RES_CPU_PRIO] = NAN;	/* a weight is not used up */
	b->usage[MOAT_RES_L3] = NAN;		/* nor are ways, nor bandwidth */
	b->usage[MOAT_RES_MB] = NAN;
	for (r = 0; r < MOAT_RES_NR; r++) {
		b->lim[r] = u->lim[r];
		b->orig[r] = INFINITY;
		if (isinf(u->lim[r].limit)) {
			/* A first step starts from it; unknown: no step. */
			b->orig[r] = original(d, u, r);
			if (isnan(b->orig[r])) {
				b->orig[r] = INFINITY;
				b->usage[r] = NAN;
			}
		}
	}
}

void enforce_cycle(struct moatd *d)
{
	size_t n = d->nr_groups, nlc = 0, nbe = 0, i;
	struct moatd_group **by_cgid, **lcu, **beu;
	struct moat_rqlat_hist *waits;
	struct moat_ctl_params p;
	struct moat_ctl_lc *lc;
	struct moat_ctl_be *be;
	double *blame, *suspect = NULL;
	unsigned int r;

	if (d->mode != MOATD_ENFORCE || !n)
		return;
	by_cgid = malloc(n * sizeof(*by_cgid));
	lcu = malloc(n * sizeof(*lcu));
	beu = malloc(n * sizeof(*beu));
	waits = calloc(n, sizeof(*waits));
	lc = calloc(n + 1, sizeof(*lc));
	be = calloc(n, sizeof(*be));
	blame = NULL;
	if (!by_cgid || !lcu || !beu || !waits || !lc || !be) {
		pr_warn("enforce: out of memory: no decision this period");
		goto out;
	}
	memcpy(by_cgid, d->groups, n * sizeof(*by_cgid));
	qsort(by_cgid, n, sizeof(*by_cgid), cmp_cgid);

	for (i = 0; i < n; i++) {
		struct moatd_group *g = d->groups[i];

		g->ctl_idx = -1;
		if (!g->unit)		/* enforce_find_units() ran out of memory */
			g->unit = g;
		if (g->unit != g)
			continue;
		if (g->class == MOAT_CLASS_LC) {
			g->ctl_idx = nlc;
			lcu[nlc++] = g;
		} else if (g->class == MOAT_CLASS_BE) {
			g->ctl_idx = nbe;
			beu[nbe++] = g;
		} else {
			unthrottle(d, g);
		}
	}
	for (i = 0; i < n; i++) {
		struct moatd_group *g = d->groups[i];

		if (g->unit->class == MOAT_CLASS_LC)
			moat_hist_add(&waits[g->unit->ctl_idx], &g->win_hist);
		else if (g != g->unit)
			unthrottle(d, g);	/* a unit no more: in a pod now */
	}
	for (i = 0; i < nlc; i++)
		fill_lc(d, lcu[i], &waits[i], &lc[i]);
	/* The node's memory pressure, as one more LC row without blame. */
	for (r = 0; r < MOAT_SIG_NR; r++)
		lc[nlc].value[r] = NAN;
	lc[nlc].value[MOAT_SIG_MEMORY_PRESSURE] = d->node.psi_some_avg10[1];
	lc[nlc].target[MOAT_SIG_MEMORY_PRESSURE] = d->ek.memory_pressure_target_pct;
	for (i = 0; i < nbe; i++)
		fill_be(d, beu[i], &be[i]);
	/* LC rows, and the node's memory row, by BE columns */
	blame = calloc((nlc + 1) * (nbe ? nbe : 1), sizeof(*blame));
	suspect = calloc((nlc + 1) * (nbe ? nbe : 1), sizeof(*suspect));
	if (!blame || !suspect) {
		pr_warn("enforce: out of memory: no decision this period");
		goto out;
	}
	if (d->rqlat)
		blame_matrix(d, by_cgid, blame, nbe);
	suspect_matrix(d, by_cgid, lcu, nlc, suspect, nbe);

	p = params(d);
	/* without BPF (taskstats) no blame: the largest CPU users first */
	moat_control_step(&p, &d->ctl, lc, nlc + 1, d->rqlat ? blame : NULL,
			  suspect, be, nbe);

	for (i = 0; i < nbe; i++) {
		for (r = 0; r < MOAT_RES_NR; r++) {
			int c = be[i].cause[r];
			char cause[256] = "";

			if (be[i].action[r] == MOAT_CTL_NONE) {
				/* cooldown, backoff, a step judged */
				beu[i]->lim[r] = be[i].lim[r];
				continue;
			}
			if (c >= 0)
				format_cause(cause, sizeof(cause),
					     (size_t)c < nlc ? lcu[c] : NULL,
					     &lc[c], be[i].chain[r],
					     blame[c * nbe + i],
					     (size_t)c < nlc ? waits[c].sum_ns : 0,
					     suspect[c * nbe + i]);
			act(d, beu[i], r, &be[i], cause);
		}
	}
	/* the BE resctrl group: the least ways and bandwidth of its groups */
	{
		double ways = INFINITY, mb = INFINITY;

		for (i = 0; i < nbe; i++) {
			ways = fmin(ways, beu[i]->lim[MOAT_RES_L3].limit);
			mb = fmin(mb, beu[i]->lim[MOAT_RES_MB].limit);
		}
		rdt_be_cap(d, ways, mb);
	}
out:
	free(by_cgid);
	free(lcu);
	free(beu);
	free(waits);
	free(lc);
	free(be);
	free(blame);
	free(suspect);
}

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

int enforce_add_knobs(struct moatd *d)
{
	struct enforce_knobs *ek = &d->ek;
	struct moat_ctl_step *prio = &ek->step[MOAT_RES_CPU_PRIO];
	struct moat_ctl_step *cpu = &ek->step[MOAT_RES_CPU];
	struct moat_ctl_step *mem = &ek->step[MOAT_RES_MEMORY];
	struct moat_ctl_step *l3 = &ek->step[MOAT_RES_L3];
	struct moat_ctl_step *mb = &ek->step[MOAT_RES_MB];
#define U32(p, lo, hi, v) { .path = p, .type = MOAT_KNOB_U32, .writable = true, \
			    .min = lo, .max = hi, .data = v }
	const struct moat_knob knobs[] = {
		U32("lc/rqlat_p99_target_us", 1, 10000000, &ek->rqlat_p99_target_us),
		U32("lc/memory_pressure_target_pct", 0, 100,
		    &ek->memory_pressure_target_pct),
		U32("be/cpu_min_pct", 1, 100, &cpu->min_pct),
		U32("be/memory_high_min_pct", 10, 100, &mem->min_pct),
		U32("enforce/slack_pct", 1, 99, &ek->slack_pct),
		U32("enforce/min_effect_pct", 0, 99, &ek->min_effect_pct),
		U32("enforce/release_periods", 1, 1000, &ek->release_periods),
		U32("enforce/culprits", 1, 64, &ek->culprits),
		U32("enforce/min_waits", 1, 1000000, &ek->min_waits),
		U32("enforce/cpu_priority", 0, 1, &ek->cpu_priority),
		U32("enforce/cpu_idle", 0, 1, &ek->cpu_idle),
		U32("enforce/cpi", 0, 1, &ek->cpi2_act),
		U32("enforce/cpu_prio_decrease_pct", 1, 99, &prio->decrease_pct),
		U32("enforce/cpu_prio_increase_pct", 1, 100, &prio->increase_pct),
		U32("enforce/cpu_prio_cooldown_periods", 0, 100, &prio->cooldown),
		U32("enforce/cpu_prio_backoff_periods", 0, 10000, &prio->backoff),
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
		{ .path = "enforce/journal_entries", .type = MOAT_KNOB_SHOW,
		  .show = show_journal },
		{ .path = "enforce/journal_errors", .type = MOAT_KNOB_SHOW,
		  .show = show_journal_errors },
	};
#undef U32
	const struct { const char *path; unsigned long long *v; } counters[] = {
		{ "enforce/throttles", &d->ec.throttles },
		{ "enforce/releases", &d->ec.releases },
		{ "enforce/restores", &d->ec.restores },
		{ "enforce/undos", &d->ec.undos },
		{ "enforce/write_errors", &d->ec.write_errors },
	};
	size_t i;
	int err;

	*ek = (struct enforce_knobs){
		.rqlat_p99_target_us = 2000,
		.memory_pressure_target_pct = 10,
		.slack_pct = 50, .min_effect_pct = 10, .release_periods = 6,
		.culprits = 2,
		.min_waits = 20, .cpu_priority = 1, .cpu_idle = 1,
		.cpi2_act = 1,
		.step = {
			[MOAT_RES_CPU_PRIO] = { .decrease_pct = 90, .increase_pct = 10,
						.min_pct = 0, .cooldown = 0,
						.backoff = 20 },
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
				sizeof(knobs) / sizeof(knobs[0]), d);
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]) && !err; i++) {
		struct moat_knob k = { .type = MOAT_KNOB_SHOW, .show = show_ull,
				       .owner = counters[i].v };

		snprintf(k.path, sizeof(k.path), "%s", counters[i].path);
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
	char v[MOAT_RES_NR][32];
	unsigned int r;

	for (r = 0; r < MOAT_RES_NR; r++)
		format_limit(v[r], sizeof(v[r]), r, g->lim[r].limit);
	return snprintf(buf, len, "cpu_prio=%s cpu=%s memory=%s l3=%s mb=%s",
			v[MOAT_RES_CPU_PRIO], v[MOAT_RES_CPU],
			v[MOAT_RES_MEMORY], v[MOAT_RES_L3],
			v[MOAT_RES_MB]) >= (int)len ? -EOVERFLOW : 0;
}

int enforce_add_group_knobs(struct moatd *d, struct moatd_group *g)
{
	const struct moat_knob attrs[] = {
		{ .path = "throttle", .type = MOAT_KNOB_SHOW, .show = show_throttle },
		{ .path = "rqlat_p99_target_us", .type = MOAT_KNOB_U32,
		  .writable = true, .transient = true, .min = 0, .max = 10000000,
		  .data = &g->rqlat_p99_target_us },
	};
	struct moat_knob k = { .type = MOAT_KNOB_SHOW, .show = show_ull,
			       .owner = &g->throttles };
	char dir[MOAT_KNOB_PATH_MAX];
	int err;

	forget_limits(g);
	snprintf(dir, sizeof(dir), "groups/%s", g->gid.id);
	err = moat_knob_add_all(d->tree, dir, attrs,
				sizeof(attrs) / sizeof(attrs[0]), g);
	snprintf(k.path, sizeof(k.path), "groups/%s/throttles", g->gid.id);
	return err ? err : moat_knob_add(d->tree, &k);
}

int enforce_find_units(struct moatd *d)
{
	struct moatd_group **by_dir;

	if (!d->nr_groups)
		return 0;
	by_dir = malloc(d->nr_groups * sizeof(*by_dir));
	if (!by_dir)
		return -ENOMEM;
	memcpy(by_dir, d->groups, d->nr_groups * sizeof(*by_dir));
	find_units(by_dir, d->nr_groups);
	free(by_dir);
	return 0;
}
