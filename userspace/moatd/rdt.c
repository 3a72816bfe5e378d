// SPDX-License-Identifier: GPL-2.0-only
/*
 * resctrl in moatd (Documentation/resctrl.rst): find the mount (or make
 * it, where resctrl/mount allows), say once what the hardware allows or
 * that there is none; in enforce mode, own two control groups, moat_lc
 * and moat_be, with the L3 ways and memory bandwidth of the resctrl/lc/
 * and resctrl/be/ knobs, BE's further lowered by the controller (the CPI
 * chain, enforce.c); keep every LC and BE group's tasks in its class's
 * control group, and each group's in a monitoring group of its own where
 * RMIDs allow; read llc_occupancy and the MBM byte counts.
 *
 * What moatd makes it records first in the journal (moat_kdir_make(),
 * crash-safe), and removes again: when it stops, on a switch to observe,
 * on `moatctl restore`, and, from the journal, at the next start after a
 * crash.  Its writes (schemata, tasks) go through the journal's writers
 * too, into its own groups and the default group's tasks only.
 *
 * A module in the period: rdt_sample() is a source (the BE class's
 * ways and bandwidth before the controller, the monitoring counters);
 * rdt_act() an actuator (the groups, their schemata with the plan's cap
 * of BE, their members).  An actuator reads only what it is about to
 * change: a schemata to diff, a tasks file to add to.  rmdir of a
 * control group is the restore of its schemata and its members alike:
 * the kernel moves its tasks back to the default group, where they were
 * (moatd never takes a task from a group it did not make), and frees its
 * CLOSID.  Groups moatd did not make it never touches, but counts
 * against num_closids.
 *
 * This file: moat's control groups, their allocation, the cycle, the
 * knobs.  rdt_tasks.c places the threads, rdt_mon.c monitors
 * (rdt_priv.h).
 *
 * $MOAT_RESCTRL_ROOT names another tree instead of the mount: the tests'
 * FAKE resctrl (selftests/fake_resctrl.c, a FUSE file system); with it,
 * $MOAT_RESCTRL_VENDOR (amd, intel) is the fake's CPU vendor in place of
 * /proc/cpuinfo's, which decides the unit of its MB values.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hostroot.h"
#include "log.h"
#include "rdt_priv.h"

#define RDT_MNT		"/sys/fs/resctrl"
/* moatd before its journal had directories: <state-dir>/resctrl.journal */
#define LEGACY_MAGIC	"moat-resctrl-journal 1"

static double ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1e3 + (now.tv_nsec - t->tv_nsec) / 1e6;
}

/* How often making moat_lc and moat_be is tried again after a refusal. */
#define START_RETRY_MS	1000

const char *const rdt_class_dir[NCLASS] = { "moat_lc", "moat_be" };
static const char *const class_name[NCLASS] = { "lc", "be" };

/* Monitoring not read yet: reporters say nothing, not 0. */
const struct rdt_mon rdt_mon_unknown = {
	.llc_bytes = -1, .total_bps = NAN, .local_bps = NAN,
};


/* ---- what moatd made ---- */

/*
 * Whether @rel may name a group moatd makes: moat_lc, moat_be, or a
 * monitoring group under one, named by a group id.  A legacy journal
 * that names anything else is not moatd's, and nothing it names goes.
 */
static bool ours(const char *rel)
{
	unsigned int c;

	for (c = 0; c < NCLASS; c++) {
		size_t len = strlen(rdt_class_dir[c]);

		if (strncmp(rel, rdt_class_dir[c], len))
			continue;
		if (!rel[len])
			return true;
		if (!strncmp(rel + len, "/mon_groups/", 12) &&
		    moat_id_valid(rel + len + 12))
			return true;
	}
	return false;
}

/*
 * What a moatd of before the one journal left in <state-dir>/
 * resctrl.journal ("moat-resctrl-journal 1", "root R", "group G" lines):
 * its groups go, the file goes.
 */
static void legacy_recover(struct moatd *d)
{
	char file[PATH_MAX + 32], line[PATH_MAX + 16], root[PATH_MAX] = "";
	char *rel[MAX_MADE];
	size_t n = 0, i, removed = 0;
	FILE *f;

	if (!*d->state_dir)
		return;
	snprintf(file, sizeof(file), "%s/resctrl.journal", d->state_dir);
	f = fopen(file, "re");
	if (!f)
		return;
	if (!fgets(line, sizeof(line), f) || strcmp(line, LEGACY_MAGIC "\n")) {
		pr_err("resctrl journal %s: not moatd's: left alone, nothing removed",
		       file);
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "root ", 5))
			snprintf(root, sizeof(root), "%.*s", (int)sizeof(root) - 1, line + 5);
		else if (!strncmp(line, "group ", 6) && ours(line + 6) && n < MAX_MADE)
			rel[n++] = strdup(line + 6);
	}
	fclose(f);
	for (i = n; i-- > 0;) {	/* the newest first */
		char path[PATH_MAX * 3];

		if (!rel[i])
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, rel[i]);
		if (*root && (!rmdir(path) || errno == ENOENT))
			removed++;
		free(rel[i]);
	}
	pr_info("resctrl journal %s: %zu groups from a moatd that did not stop cleanly: %zu removed, their tasks back in the default group",
		file, n, removed);
	unlink(file);
}

static void forget(struct rdt *r, const char *rel)
{
	size_t i;

	for (i = 0; i < r->nmade; i++)
		if (!strcmp(r->made[i], rel)) {
			free(r->made[i]);
			memmove(&r->made[i], &r->made[i + 1],
				(r->nmade - i - 1) * sizeof(r->made[0]));
			r->nmade--;
			break;
		}
}

/* mkdir @rel under the root, journaled first.  0, or -errno with *@why. */
int rdt_make_group(struct moatd *d, const char *rel, char *why, size_t len)
{
	struct rdt *r = R(d);
	char path[PATH_MAX * 3];
	int err;

	if (r->nmade == MAX_MADE) {
		snprintf(why, len, "moatd made %d groups already", MAX_MADE);
		return -ENOSPC;
	}
	snprintf(path, sizeof(path), "%s/%s", r->root, rel);
	err = moat_kdir_make(d->journal, path);
	if (!err) {
		r->made[r->nmade] = strdup(rel);
		if (r->made[r->nmade]) {
			r->nmade++;
			return 0;
		}
		moat_kdir_remove(d->journal, path);
		err = -ENOMEM;
	}
	if (err == -ENOSPC || err == -EINVAL) {
		/* the kernel says why in last_cmd_status */
		if (moat_rdt_read(r->root, "info/last_cmd_status", why, len))
			snprintf(why, len, "%s", strerror(-err));
		why[strcspn(why, "\n")] = '\0';
	} else if (d->journal->stale) {
		snprintf(why, len, "the journal cannot be saved: %s",
			 strerror(-d->journal->save_err));
	} else {
		snprintf(why, len, "%s", moat_kfile_strerror(err));
	}
	return err;	/* EEXIST: someone else's, not to remove */
}

void rdt_remove_group(struct moatd *d, const char *rel)
{
	struct rdt *r = R(d);
	char path[PATH_MAX * 3];
	int err;

	snprintf(path, sizeof(path), "%s/%s", r->root, rel);
	err = moat_kdir_remove(d->journal, path);
	if (err && err != -ENOENT) {
		r->write_errors++;
		pr_warn("resctrl: remove %s: %s", path, strerror(-err));
		return;
	}
	forget(r, rel);
}

/* ---- allocation ---- */

static unsigned int l3_ways_total(const struct moatd *d)
{
	size_t i;

	for (i = 0; i < R(d)->info.nres; i++)
		if (!strncmp(R(d)->info.res[i].name, "L3", 2))
			return __builtin_popcountll(R(d)->info.res[i].cbm_mask);
	return 0;
}

static bool has_res(const struct moatd *d, const char *name)
{
	return moat_rdt_res_find(&R(d)->info, name) ||
	       (!strcmp(name, "L3") && R(d)->info.cdp);
}

static double be_original(const struct moatd *d, enum moat_resource r)
{
	const struct rdt_class *be;
	unsigned int ways;

	if (!allocating(d))
		return NAN;
	be = &R(d)->c[BE];
	if (r == MOAT_RES_L3) {
		if (!has_res(d, "L3"))
			return NAN;
		ways = be->ways.all ? be->ways.all : l3_ways_total(d);
		return ways;
	}
	if (r == MOAT_RES_MB) {
		const struct moat_rdt_res *mb = moat_rdt_res_find(&R(d)->info, "MB");

		/* mba_MBps: no maximum to take a share of */
		return mb && mb->unit != MOAT_RDT_MB_MBPS ? be->mb_pct : NAN;
	}
	return NAN;
}

static double be_floor(const struct moatd *d, enum moat_resource r)
{
	const struct moat_rdt_res *l3 = NULL;
	size_t i;

	if (r == MOAT_RES_MB)
		return R(d)->be_mb_min;
	for (i = 0; i < R(d)->info.nres && !l3; i++)
		if (!strncmp(R(d)->info.res[i].name, "L3", 2))
			l3 = &R(d)->info.res[i];
	return l3 && l3->min_cbm_bits > R(d)->be_ways_min ? l3->min_cbm_bits :
								   R(d)->be_ways_min;
}

/*
 * Class @c's schemata as its knobs and the plan's cap ask, written where
 * it differs: 0 or -errno.
 */
static int apply(struct moatd *d, int c)
{
	struct rdt *r = R(d);
	struct rdt_class *k = &r->c[c];
	struct moat_rdt_alloc a = { .l3 = k->ways, .high = c == LC,
				    .mb_pct = k->mb_pct };
	struct moat_schemata dflt, cur, want;
	char path[PATH_MAX * 3], text[4096], why[512];
	int n;

	if (c == BE) {
		a.cap = r->be_cap_ways;
		if (r->be_cap_mb && r->be_cap_mb < a.mb_pct)
			a.mb_pct = r->be_cap_mb;
	}
	snprintf(path, sizeof(path), "%s/%s", R(d)->root, rdt_class_dir[c]);
	if (moat_rdt_read(R(d)->root, "schemata", text, sizeof(text)) ||
	    moat_schemata_parse(text, &dflt, why, sizeof(why)))
		return -EIO;
	if (moat_rdt_read(path, "schemata", text, sizeof(text)) ||
	    moat_schemata_parse(text, &cur, why, sizeof(why)))
		return -EIO;
	snprintf(k->schemata, sizeof(k->schemata), "%s", text);
	if (moat_rdt_compose(&R(d)->info, &dflt, &a, &want, why, sizeof(why)) ||
	    (n = moat_schemata_diff(&R(d)->info, &cur, &want, text, sizeof(text), why,
				    sizeof(why))) < 0) {
		snprintf(r->state, sizeof(r->state), "allocating; %s: %s",
			 rdt_class_dir[c], why);
		if (!r->refused)
			pr_warn("resctrl: %s: %s: the %s group keeps its schemata",
				rdt_class_dir[c], why, class_name[c]);
		r->refused = true;
		return -EINVAL;
	}
	if (!n)
		return 0;
	if (moat_rdt_write(d->journal, R(d)->root, path, text, why, sizeof(why))) {
		r->write_errors++;
		snprintf(r->state, sizeof(r->state), "allocating; %s/schemata refused: %s",
			 rdt_class_dir[c], why);
		if (!r->refused)
			pr_warn("resctrl: %s: %s", rdt_class_dir[c], why);
		r->refused = true;
		return -EIO;
	}
	pr_info("resctrl: %s/schemata: %.*s", rdt_class_dir[c],
		(int)(strlen(text) - 1), text);
	moat_rdt_read(path, "schemata", k->schemata, sizeof(k->schemata));
	return 0;
}

/* Make moat_lc and moat_be, both or neither. */
static bool start(struct moatd *d)
{
	struct rdt *r = R(d);
	char **names = NULL, why[512];
	unsigned int left;
	int n, i, c, err = 0;

	n = moat_rdt_groups(R(d)->root, &names);
	if (n < 0) {
		snprintf(r->state, sizeof(r->state), "refused: %s: %s", R(d)->root,
			 strerror(-n));
		return false;
	}
	for (i = 0; i < n; i++) {
		for (c = 0; c < NCLASS; c++)
			if (!strcmp(names[i], rdt_class_dir[c]) && !made(r, rdt_class_dir[c]))
				err = -EEXIST;
		free(names[i]);
	}
	free(names);
	left = moat_rdt_closids_left(&R(d)->info, n);
	if (err) {
		snprintf(r->state, sizeof(r->state),
			 "refused: a group named moat_lc or moat_be that moatd did not make is there");
	} else if (left < NCLASS) {
		snprintf(r->state, sizeof(r->state),
			 "refused: %u CLOSIDs left (num_closids %u, %d groups besides the default), moat needs 2",
			 left, R(d)->info.num_closids, n);
		err = -ENOSPC;
	}
	for (c = 0; !err && c < NCLASS; c++) {
		err = rdt_make_group(d, rdt_class_dir[c], why, sizeof(why));
		if (err)
			snprintf(r->state, sizeof(r->state), "refused: mkdir %s: %s",
				 rdt_class_dir[c], why);
	}
	if (err) {
		for (c = NCLASS; c-- > 0;)	/* nothing half made */
			if (made(r, rdt_class_dir[c]))
				rdt_remove_group(d, rdt_class_dir[c]);
		/* tried again each START_RETRY_MS: said once per reason */
		if (strcmp(r->said, r->state))
			pr_warn("resctrl: %s: no cache or bandwidth allocation; trying again every %u ms",
				r->state, START_RETRY_MS);
		snprintf(r->said, sizeof(r->said), "%s", r->state);
		clock_gettime(CLOCK_MONOTONIC, &r->refused_at);
		return false;
	}
	r->said[0] = '\0';
	pr_info("resctrl: made %s/moat_lc and moat_be", R(d)->root);
	r->reconcile_now = true;
	return true;
}

/* ---- the cycle, restore, open and close ---- */

static int rdt_restore(struct moatd *d, const char *why)
{
	struct rdt *r = R(d);
	size_t i;

	if (!alive(d))
		return 0;
	r->refused = false;
	r->rmids_out = false;
	r->be_cap_ways = r->be_cap_mb = 0;
	rdt_track(d, false);
	if (!r->nmade)
		return 0;
	pr_info("%s: removing resctrl groups %s and %s (their tasks go back to the default group)",
		why, rdt_class_dir[LC], rdt_class_dir[BE]);
	while (r->nmade) {
		char rel[PATH_MAX];
		size_t before = r->nmade;

		snprintf(rel, sizeof(rel), "%s", r->made[r->nmade - 1]);
		rdt_remove_group(d, rel);
		if (r->nmade == before)
			break;		/* could not: it stays in the journal */
	}
	/* Without moat_be, the ways and bandwidth the controller took are
	   gone: the next period's rdt_sample() says so, and enforce forgets. */
	for (i = 0; i < d->nr_groups; i++)
		RG(d->groups[i])->mon_on = false;
	for (i = 0; i < NCLASS; i++) {
		r->c[i].schemata[0] = '\0';
		r->c[i].ntasks = 0;
		r->c[i].mon = rdt_mon_unknown;
	}
	snprintf(r->state, sizeof(r->state), "off");
	return r->nmade ? -EBUSY : 0;
}

void rdt_sample(struct moatd *d, struct period *p)
{
	struct rdt *r = R(d);
	size_t i;
	int c;

	for (i = 0; i < MOAT_RES_NR; i++)
		p->rdt_be_orig[i] = p->rdt_be_floor[i] = NAN;
	p->rdt_be_orig[MOAT_RES_L3] = be_original(d, MOAT_RES_L3);
	p->rdt_be_orig[MOAT_RES_MB] = be_original(d, MOAT_RES_MB);
	p->rdt_be_floor[MOAT_RES_L3] = be_floor(d, MOAT_RES_L3);
	p->rdt_be_floor[MOAT_RES_MB] = be_floor(d, MOAT_RES_MB);
	if (!allocating(d))
		return;
	for (c = 0; c < NCLASS; c++)
		rdt_mon_read(d, rdt_class_dir[c], &r->c[c].mon, r->monitor_ms);
	/*
	 * Each mon_data read is a cross-CPU call in the kernel to read the
	 * counter's MSR: per group, every resctrl/monitor_ms only (the
	 * rates' window; less often, were the cycle late, never more).
	 */
	if (ms_since(&r->last_monitor) < r->monitor_ms)
		return;
	clock_gettime(CLOCK_MONOTONIC, &r->last_monitor);
	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *u = d->groups[i];
		char rel[PATH_MAX];

		if (!RG(u)->mon_on)
			continue;
		mon_rel(u, unit_class(u), rel, sizeof(rel));
		rdt_mon_read(d, rel, &RG(u)->mon, 0);	/* the gate above */
	}
}

int rdt_act(struct moatd *d, const struct plan *plan)
{
	struct rdt *r = R(d);
	int c, err = 0;

	if (!alive(d))
		return -ENODEV;
	if (d->mode != MOATD_ENFORCE || !r->allocate) {
		if (r->nmade)
			rdt_restore(d, d->mode != MOATD_ENFORCE ? "mode observe or shadow" :
				    "resctrl/allocate 0");
		snprintf(r->state, sizeof(r->state), d->mode == MOATD_OBSERVE ?
			 "observe: moat's groups are made in enforce mode" :
			 d->mode == MOATD_SHADOW ?
			 "shadow: moat's groups are made in enforce mode" :
			 "off: resctrl/allocate is 0");
		return -EOPNOTSUPP;
	}
	/* the controller's least for the BE class (0: none) */
	r->be_cap_ways = isinf(plan->be_ways) || isnan(plan->be_ways) ? 0 :
			 (unsigned int)plan->be_ways;
	r->be_cap_mb = isinf(plan->be_mb_pct) || isnan(plan->be_mb_pct) ? 0 :
		       (unsigned int)plan->be_mb_pct;
	if (!allocating(d)) {
		/*
		 * A refusal may pass (CLOSIDs freed, a group removed, a
		 * mkdir that failed once): start() is tried again, not
		 * only when a knob changes.
		 */
		if (r->refused && ms_since(&r->refused_at) < START_RETRY_MS)
			return -EAGAIN;
		r->refused = !start(d);
		if (r->refused)
			return -EAGAIN;
	}
	snprintf(r->state, sizeof(r->state), "allocating");
	for (c = 0; c < NCLASS; c++) {
		int e = apply(d, c);

		if (c == BE)
			err = e;
	}
	rdt_mon_groups(d);
	rdt_track(d, true);
	if (r->reconcile_now ||
	    ms_since(&r->last_reconcile) >= r->reconcile_ms)
		rdt_reconcile(d);
	return err;
}

/* What resctrl offers, one line: "L3 11 ways (cbm_mask 7ff), MB ...". */
static void describe(const struct moat_rdt_info *in, char *buf, size_t len)
{
	static const char *const units[] = { "percent", "absolute", "MBps" };
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < in->nres && n < len; i++) {
		const struct moat_rdt_res *r = &in->res[i];

		if (r->kind == MOAT_RDT_CACHE)
			n += snprintf(buf + n, len - n, "%s%s %u ways (cbm_mask %llx)",
				      i ? ", " : "", r->name,
				      __builtin_popcountll(r->cbm_mask),
				      (unsigned long long)r->cbm_mask);
		else
			n += snprintf(buf + n, len - n, "%s%s %s in steps of %u",
				      i ? ", " : "", r->name, units[r->unit], r->gran);
	}
}

/* Mount resctrl where resctrl/mount allows, journaled first. */
static int mount_it(struct moatd *d)
{
	struct rdt *r = R(d);
	int err = moat_kmount(d->journal, r->mnt, "resctrl");

	if (!err) {
		snprintf(r->root, sizeof(r->root), "%s", r->mnt);
		r->mounted = true;
		pr_info("resctrl: mounted at %s (resctrl/mount = 1); unmounted when moatd stops",
			r->mnt);
		return 0;
	}
	pr_info("resctrl: mount -t resctrl resctrl %s: %s: no cache or memory bandwidth allocation",
		r->mnt, strerror(-err));
	return err;
}

/*
 * Before anything else: what a crashed moatd made goes (from the
 * journal, and from a journal of before the one journal).
 */
static void recover(struct moatd *d)
{
	size_t i, before = 0, after = 0;

	legacy_recover(d);
	for (i = 0; i < d->journal->n; i++)
		before += d->journal->e[i].kind == MOAT_J_DIR;
	if (!before)
		return;
	moat_journal_restore_some(d->journal, "", 1u << MOAT_J_DIR);
	for (i = 0; i < d->journal->n; i++)
		after += d->journal->e[i].kind == MOAT_J_DIR;
	pr_info("resctrl: %zu groups from a moatd that did not stop cleanly: %zu removed, their tasks back in the default group",
		before, before - after);
}

static int rdt_open(struct moatd *d)
{
	const char *fake = getenv("MOAT_RESCTRL_ROOT");
	bool cdp = false, mbps = false, amd = false;
	struct rdt *r = R(d);
	char why[512], what[512];
	FILE *f;
	int err;

	r->root[0] = '\0';
	moat_host_path(r->mnt, sizeof(r->mnt), RDT_MNT);
	if (fake && *fake) {
		snprintf(r->root, sizeof(r->root), "%s", fake);
		moat_journal_allow(d->journal, r->root);
	} else {
		f = fopen("/proc/self/mountinfo", "re");
		err = f ? moat_rdt_find_mount(f, moat_host_root(), r->root,
					      sizeof(r->root), &cdp, &mbps) : -errno;
		if (f)
			fclose(f);
		if (err) {
			r->root[0] = '\0';
			if (!r->mount) {
				pr_info("resctrl: not mounted (no Intel RDT or AMD PQoS here, or not mounted and resctrl/mount is 0): no cache or memory bandwidth allocation");
				recover(d);
				return 0;
			}
			if (mount_it(d)) {
				recover(d);
				return 0;
			}
		}
	}
	recover(d);
	if (fake && *fake && getenv("MOAT_RESCTRL_VENDOR")) {
		/* a fake's layout is its vendor's, whatever CPU runs it */
		amd = !strcmp(getenv("MOAT_RESCTRL_VENDOR"), "amd");
	} else {
		f = moat_host_fopen("/proc/cpuinfo");
		if (f) {
			amd = moat_rdt_cpu_is_amd(f);
			fclose(f);
		}
	}
	err = moat_rdt_info_read(r->root, amd, mbps, &r->info, why, sizeof(why));
	if (err) {
		pr_warn("resctrl at %s: %s: no cache or memory bandwidth allocation",
			r->root, why);
		r->root[0] = '\0';
		return 0;
	}
	describe(&r->info, what, sizeof(what));
	pr_info("resctrl at %s%s: %s; %u CLOSIDs, %u RMIDs", r->root,
		fake && *fake ? " ($MOAT_RESCTRL_ROOT)" : "", what,
		r->info.num_closids, r->info.num_rmids);
	snprintf(r->state, sizeof(r->state), "off");
	return 0;
}

static void rdt_close(struct moatd *d)
{
	struct rdt *r = R(d);

	if (*r->root)
		rdt_restore(d, "moatd stops");
	/* unmounted unless it holds groups moat did not make (journal.c) */
	if (r->mounted && !r->nmade)
		moat_journal_restore_some(d->journal, r->mnt, 1u << MOAT_J_MOUNT);
	while (r->nmade)
		free(r->made[--r->nmade]);
	free(r->tracked);
}

/* ---- knobs ---- */

static int show_str(const struct moat_knob *k, char *buf, size_t len)
{
	return snprintf(buf, len, "%s", (const char *)k->owner) >= (int)len ?
	       -EOVERFLOW : 0;
}

static int show_ull(const struct moat_knob *k, char *buf, size_t len)
{
	return snprintf(buf, len, "%llu", *(const unsigned long long *)k->owner) >=
	       (int)len ? -EOVERFLOW : 0;
}

static int show_size(const struct moat_knob *k, char *buf, size_t len)
{
	return snprintf(buf, len, "%zu", *(const size_t *)k->owner) >= (int)len ?
	       -EOVERFLOW : 0;
}

static int show_schemata(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; *R(d)->root && i < R(d)->info.nres && n < len; i++)
		n += snprintf(buf + n, len - n, "%s%s", i ? " " : "",
			      R(d)->info.res[i].name);
	return n >= len ? -EOVERFLOW : 0;
}

static int show_class_schemata(const struct moat_knob *k, char *buf, size_t len)
{
	const struct rdt_class *c = k->owner;
	size_t i, n;

	/* one line: "L3:0=7ff;1=7ff MB:0=100;1=100" */
	n = snprintf(buf, len, "%s", c->schemata);
	if (n >= len)
		return -EOVERFLOW;
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	for (i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = ' ';
	return 0;
}

static int show_closids(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return snprintf(buf, len, "%u", *R(d)->root ? R(d)->info.num_closids : 0) >=
	       (int)len ? -EOVERFLOW : 0;
}

static int show_rmids(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return snprintf(buf, len, "%u", *R(d)->root ? R(d)->info.num_rmids : 0) >=
	       (int)len ? -EOVERFLOW : 0;
}

static int show_num(double v, char *buf, size_t len)
{
	if (isnan(v) || v < 0)
		return snprintf(buf, len, "nan") >= (int)len ? -EOVERFLOW : 0;
	return snprintf(buf, len, "%.0f", v) >= (int)len ? -EOVERFLOW : 0;
}

static int show_llc(const struct moat_knob *k, char *buf, size_t len)
{
	return show_num(((const struct rdt_mon *)k->owner)->llc_bytes, buf, len);
}

static int show_total_bps(const struct moat_knob *k, char *buf, size_t len)
{
	return show_num(((const struct rdt_mon *)k->owner)->total_bps, buf, len);
}

static int show_local_bps(const struct moat_knob *k, char *buf, size_t len)
{
	return show_num(((const struct rdt_mon *)k->owner)->local_bps, buf, len);
}

/*
 * resctrl/<class>/l3_ways: the syntax; and where there is resctrl, the
 * ways each cache has and the cache ids it has, as composing would see
 * them.
 */
static int check_ways(const struct moat_knob *k, const char *val, char *why,
		      size_t len)
{
	const struct moatd *d = k->owner;
	struct moat_rdt_alloc a = { .mb_pct = 100 };
	struct moat_schemata dflt, out;
	char text[4096];

	if (moat_rdt_ways_parse(val, &a.l3, why, len) ||
	    (*R(d)->root &&
	     !moat_rdt_read(R(d)->root, "schemata", text, sizeof(text)) &&
	     !moat_schemata_parse(text, &dflt, why, len) &&
	     moat_rdt_compose(&R(d)->info, &dflt, &a, &out, why, len)))
		return -EINVAL;
	why[0] = '\0';
	return 0;
}

static void store_ways(const struct moat_knob *k, unsigned int u, const char *val)
{
	struct moatd *d = k->owner;
	int c = !strcmp(k->path, "resctrl/be/l3_ways") ? BE : LC;
	char why[64];

	snprintf(R(d)->c[c].ways_text, sizeof(R(d)->c[c].ways_text), "%s", val);
	moat_rdt_ways_parse(val, &R(d)->c[c].ways, why, sizeof(why));
	R(d)->refused = false;	/* try what was refused again */
}

static void store_mb(const struct moat_knob *k, unsigned int u, const char *val)
{
	struct moatd *d = k->owner;

	R(d)->c[strstr(k->path, "/be/") ? BE : LC].mb_pct = u;
	R(d)->refused = false;
}

static int rdt_init(struct moatd *d)
{
	struct rdt *r = R(d);
	int err, c;

	*r = (struct rdt){ .d = d, .mount = 0, .allocate = 1, .reconcile_ms = 5000,
			   .monitor_ms = 2000,
			   .be_ways_min = 1, .be_mb_min = 10 };
	snprintf(r->state, sizeof(r->state), "absent");
	for (c = 0; c < NCLASS; c++) {
		snprintf(r->c[c].ways_text, sizeof(r->c[c].ways_text), "0");
		r->c[c].mb_pct = 100;
		r->c[c].mon = rdt_mon_unknown;
	}
	{
#define U32(p, lo, hi, v) { .path = p, .type = MOAT_KNOB_U32, .writable = true, \
			    .min = lo, .max = hi, .data = v }
#define WAYS(p, i) { .path = p, .type = MOAT_KNOB_STRING, .writable = true, \
		     .str_max = sizeof(r->c[i].ways_text), .data = r->c[i].ways_text, \
		     .expects = "ways: N, or N;ID=N;.. per cache id (0: all)", \
		     .check = check_ways, .store = store_ways }
#define MB(p, i) { .path = p, .type = MOAT_KNOB_U32, .writable = true, \
		   .min = 1, .max = 100, .data = &r->c[i].mb_pct, .store = store_mb }
		const struct moat_knob knobs[] = {
			{ .path = "resctrl/schemata", .type = MOAT_KNOB_SHOW,
			  .show = show_schemata },
			{ .path = "resctrl/num_closids", .type = MOAT_KNOB_SHOW,
			  .show = show_closids },
			{ .path = "resctrl/num_rmids", .type = MOAT_KNOB_SHOW,
			  .show = show_rmids },
			U32("resctrl/mount", 0, 1, &r->mount),
			U32("resctrl/allocate", 0, 1, &r->allocate),
			U32("resctrl/reconcile_ms", 100, 600000, &r->reconcile_ms),
			U32("resctrl/monitor_ms", 100, 600000, &r->monitor_ms),
			WAYS("resctrl/lc/l3_ways", LC),
			WAYS("resctrl/be/l3_ways", BE),
			MB("resctrl/lc/mb_percent", LC),
			MB("resctrl/be/mb_percent", BE),
			U32("resctrl/be/l3_ways_min", 1, 64, &r->be_ways_min),
			U32("resctrl/be/mb_min_percent", 1, 100, &r->be_mb_min),
		};
#undef U32
#undef WAYS
#undef MB
		err = moat_knob_add_all(d->tree, "", knobs,
					sizeof(knobs) / sizeof(knobs[0]), d);
	}
	{
		const struct { const char *path; moat_knob_show_fn show; void *o; } ro[] = {
			{ "resctrl/root", show_str, r->root },
			{ "resctrl/state", show_str, r->state },
			{ "resctrl/tasks_moved", show_ull, &r->moved },
			{ "resctrl/tasks_gone", show_ull, &r->gone },
			{ "resctrl/task_events", show_ull, &r->events },
			{ "resctrl/write_errors", show_ull, &r->write_errors },
			{ "resctrl/lc/schemata", show_class_schemata, &r->c[LC] },
			{ "resctrl/be/schemata", show_class_schemata, &r->c[BE] },
			{ "resctrl/lc/tasks", show_size, &r->c[LC].ntasks },
			{ "resctrl/be/tasks", show_size, &r->c[BE].ntasks },
			{ "resctrl/lc/llc_occupancy_bytes", show_llc, &r->c[LC].mon },
			{ "resctrl/be/llc_occupancy_bytes", show_llc, &r->c[BE].mon },
			{ "resctrl/lc/mbm_total_bytes_per_s", show_total_bps, &r->c[LC].mon },
			{ "resctrl/be/mbm_total_bytes_per_s", show_total_bps, &r->c[BE].mon },
			{ "resctrl/lc/mbm_local_bytes_per_s", show_local_bps, &r->c[LC].mon },
			{ "resctrl/be/mbm_local_bytes_per_s", show_local_bps, &r->c[BE].mon },
		};
		size_t i;

		for (i = 0; i < sizeof(ro) / sizeof(ro[0]) && !err; i++) {
			struct moat_knob k = { .type = MOAT_KNOB_SHOW,
					       .show = ro[i].show, .owner = ro[i].o };

			snprintf(k.path, sizeof(k.path), "%s", ro[i].path);
			err = moat_knob_add(d->tree, &k);
		}
	}
	return err;
}

static int rdt_group_add(struct moatd *d, struct moatd_group *g)
{
	const struct moat_knob attrs[] = {
		{ .path = "llc_occupancy_bytes", .type = MOAT_KNOB_SHOW,
		  .show = show_llc },
		{ .path = "mbm_total_bytes_per_s", .type = MOAT_KNOB_SHOW,
		  .show = show_total_bps },
		{ .path = "mbm_local_bytes_per_s", .type = MOAT_KNOB_SHOW,
		  .show = show_local_bps },
	};
	char dir[MOAT_KNOB_PATH_MAX];

	RG(g)->mon_on = false;
	RG(g)->mon = rdt_mon_unknown;
	snprintf(dir, sizeof(dir), "groups/%s", g->gid.id);
	return moat_knob_add_all(d->tree, dir, attrs,
				 sizeof(attrs) / sizeof(attrs[0]), &RG(g)->mon);
}

const struct rdt_mon *rdt_class_mon(const struct moatd *d, bool lc)
{
	return allocating(d) ? &R(d)->c[lc ? LC : BE].mon : NULL;
}

const struct rdt_mon *rdt_group_mon(const struct moatd_group *g)
{
	return RG(g)->mon_on ? &RG(g)->mon : NULL;
}

const struct moatd_module rdt_module = {
	.name = "rdt",
	.size = sizeof(struct rdt),
	.group_size = sizeof(struct rdt_group),
	.init = rdt_init,
	.open = rdt_open,
	.close = rdt_close,
	.group_add = rdt_group_add,
	.restore = rdt_restore,
};
