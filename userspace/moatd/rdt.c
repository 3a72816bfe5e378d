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
 * What moatd makes it records first in <state-dir>/resctrl.journal
 * (crash-safe), and removes again: when it stops, on a switch to observe,
 * on `moatctl restore`, and, from the journal, at the next start after a
 * crash.  rmdir of a control group is the restore of its schemata and its
 * members alike: the kernel moves its tasks back to the default group,
 * where they were (moatd never takes a task from a group it did not
 * make), and frees its CLOSID.  Groups moatd did not make it never
 * touches, but counts against num_closids.
 *
 * $MOAT_RESCTRL_ROOT names another tree instead of the mount: the tests'
 * FAKE resctrl (selftests/fake_resctrl.c, a FUSE file system).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include "cgroup.h"
#include "log.h"
#include "moatd.h"

#define RDT_MNT		"/sys/fs/resctrl"
#define JOURNAL_MAGIC	"moat-resctrl-journal 1"
#define MAX_MADE	512
#define SUBTREE_DEPTH	8

static double ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1e3 + (now.tv_nsec - t->tv_nsec) / 1e6;
}

enum { LC, BE, NCLASS };

/* How often making moat_lc and moat_be is tried again after a refusal. */
#define START_RETRY_MS	1000

static const char *const class_dir[NCLASS] = { "moat_lc", "moat_be" };
static const char *const class_name[NCLASS] = { "lc", "be" };

struct tids {
	__u32 *v;
	size_t n, cap;
};

struct rdt_class {
	char ways_text[64];		/* resctrl/<class>/l3_ways */
	struct moat_rdt_ways ways;
	unsigned int mb_pct;		/* resctrl/<class>/mb_percent */
	char schemata[4096];		/* as last read back */
	size_t ntasks;
	struct rdt_mon mon;
};

struct rdt {
	char journal[PATH_MAX];		/* "": in memory only */
	unsigned int mount, allocate, reconcile_ms;
	unsigned int be_ways_min, be_mb_min;
	bool mounted;			/* moatd mounted resctrl */
	bool refused;			/* said why; again on a change */
	struct timespec refused_at;	/* start() refused: when */
	char said[PATH_MAX + 640];	/* the refusal last logged */
	char state[PATH_MAX + 640];
	struct rdt_class c[NCLASS];
	unsigned int be_cap_ways, be_cap_mb;	/* the controller's; 0: none */
	char *made[MAX_MADE];		/* groups moatd made, oldest first */
	size_t nmade;
	struct timespec last_reconcile, last_monitor;
	unsigned int monitor_ms;
	bool reconcile_now;
	struct { __u64 unit; __u32 tid; } pending[256];
	size_t npending;
	bool pending_lost;
	__u64 *tracked;			/* the units whose tasks BPF follows,
					   each id * 2 + its class */
	size_t ntracked;
	bool rmids_out;			/* until a monitoring group goes */
	unsigned long long moved, gone, write_errors, events;
};

static bool alive(const struct moatd *d)
{
	return *d->rdt_root && d->rdtc;
}

static bool made(const struct rdt *r, const char *rel)
{
	size_t i;

	for (i = 0; i < r->nmade; i++)
		if (!strcmp(r->made[i], rel))
			return true;
	return false;
}

static bool allocating(const struct moatd *d)
{
	return alive(d) && made(d->rdtc, class_dir[LC]) &&
	       made(d->rdtc, class_dir[BE]);
}

/* ---- the journal of what moatd made ---- */

static int journal_save(struct moatd *d)
{
	struct rdt *r = d->rdtc;
	char *buf;
	size_t i, n = 0, cap = 256 + PATH_MAX;
	int err;

	if (!r->journal[0])
		return 0;
	if (!r->nmade && !r->mounted) {
		if (unlink(r->journal) && errno != ENOENT)
			return -errno;
		return 0;
	}
	for (i = 0; i < r->nmade; i++)
		cap += strlen(r->made[i]) + 8;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	n += snprintf(buf + n, cap - n, "%s\nroot %s\nmounted %d\n", JOURNAL_MAGIC,
		      d->rdt_root, r->mounted);
	for (i = 0; i < r->nmade; i++)
		n += snprintf(buf + n, cap - n, "group %s\n", r->made[i]);
	err = moat_file_replace(r->journal, buf, n);
	free(buf);
	if (err)
		pr_err("resctrl journal %s: %s", r->journal, strerror(-err));
	return err;
}

/*
 * Whether @rel may name a group moatd makes: moat_lc, moat_be, or a
 * monitoring group under one, named by a group id.  A journal that names
 * anything else is not moatd's, and nothing it names is removed.
 */
static bool ours(const char *rel)
{
	unsigned int c;

	for (c = 0; c < NCLASS; c++) {
		size_t len = strlen(class_dir[c]);

		if (strncmp(rel, class_dir[c], len))
			continue;
		if (!rel[len])
			return true;
		if (!strncmp(rel + len, "/mon_groups/", 12) &&
		    moat_id_valid(rel + len + 12))
			return true;
	}
	return false;
}

/* Put back what a moatd that did not stop cleanly made; adopt its mount. */
static void journal_recover(struct moatd *d)
{
	struct rdt *r = d->rdtc;
	char line[PATH_MAX + 16], root[PATH_MAX] = "", *rel[MAX_MADE];
	size_t n = 0, i, removed = 0;
	int mounted = 0;
	FILE *f;

	if (!r->journal[0])
		return;
	f = fopen(r->journal, "re");
	if (!f)
		return;
	if (!fgets(line, sizeof(line), f) || strcmp(line, JOURNAL_MAGIC "\n")) {
		pr_err("resctrl journal %s: not moatd's: left alone, nothing removed",
		       r->journal);
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "root ", 5))
			snprintf(root, sizeof(root), "%.*s", (int)sizeof(root) - 1, line + 5);
		else if (!strncmp(line, "mounted ", 8))
			mounted = atoi(line + 8);
		else if (!strncmp(line, "group ", 6) && ours(line + 6) && n < MAX_MADE)
			rel[n++] = strdup(line + 6);
		else
			pr_warn("resctrl journal %s: '%s': not a line moatd writes; ignored",
				r->journal, line);
	}
	fclose(f);
	if (!*root && n) {
		pr_err("resctrl journal %s: no root line: nothing removed, the journal left as it is",
		       r->journal);
		while (n)
			free(rel[--n]);
		return;
	}
	/* the newest first: monitoring groups before their control group */
	for (i = n; i-- > 0;) {
		char path[PATH_MAX * 3];

		if (!rel[i])
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, rel[i]);
		if (!rmdir(path))
			removed++;
		else if (errno != ENOENT)
			pr_warn("resctrl: remove %s: %s", path, strerror(errno));
		free(rel[i]);
	}
	if (n)
		pr_info("resctrl journal %s: %zu groups from a moatd that did not stop cleanly: %zu removed, their tasks back in the default group",
			r->journal, n, removed);
	r->mounted = mounted && !strcmp(root, RDT_MNT);
	journal_save(d);
}

static int record(struct moatd *d, const char *rel)
{
	struct rdt *r = d->rdtc;

	if (r->nmade == MAX_MADE)
		return -ENOSPC;
	r->made[r->nmade] = strdup(rel);
	if (!r->made[r->nmade])
		return -ENOMEM;
	r->nmade++;
	return journal_save(d);
}

static void forget(struct moatd *d, const char *rel)
{
	struct rdt *r = d->rdtc;
	size_t i;

	for (i = 0; i < r->nmade; i++)
		if (!strcmp(r->made[i], rel)) {
			free(r->made[i]);
			memmove(&r->made[i], &r->made[i + 1],
				(r->nmade - i - 1) * sizeof(r->made[0]));
			r->nmade--;
			break;
		}
	journal_save(d);
}

/* mkdir @rel under the root, journaled first.  0, or -errno with *@why. */
static int make_group(struct moatd *d, const char *rel, char *why, size_t len)
{
	char path[PATH_MAX * 3];
	int err;

	err = record(d, rel);
	if (err) {
		snprintf(why, len, "journal: %s", strerror(-err));
		forget(d, rel);
		return err;
	}
	snprintf(path, sizeof(path), "%s/%s", d->rdt_root, rel);
	if (!mkdir(path, 0755))
		return 0;
	err = -errno;
	if (err == -ENOSPC || err == -EINVAL) {
		/* the kernel says why in last_cmd_status */
		if (moat_rdt_read(d->rdt_root, "info/last_cmd_status", why, len))
			snprintf(why, len, "%s", strerror(-err));
		why[strcspn(why, "\n")] = '\0';
	} else {
		snprintf(why, len, "%s", strerror(-err));
	}
	forget(d, rel);		/* EEXIST: someone else's, not to remove */
	return err;
}

static void remove_group(struct moatd *d, const char *rel)
{
	char path[PATH_MAX * 3];

	snprintf(path, sizeof(path), "%s/%s", d->rdt_root, rel);
	if (rmdir(path) && errno != ENOENT) {
		d->rdtc->write_errors++;
		pr_warn("resctrl: remove %s: %s", path, strerror(errno));
		return;
	}
	forget(d, rel);
}

/* ---- tid sets ---- */

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

static int tids_add(struct tids *t, const __u32 *v, size_t n)
{
	if (!n)
		return 0;
	if (t->n + n > t->cap) {
		size_t cap = t->cap ? t->cap : 256;
		__u32 *p;

		while (cap < t->n + n)
			cap *= 2;
		p = realloc(t->v, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		t->v = p;
		t->cap = cap;
	}
	memcpy(t->v + t->n, v, n * sizeof(*v));
	t->n += n;
	return 0;
}

static void tids_sort(struct tids *t)
{
	size_t i, o = 0;

	if (!t->n)
		return;
	qsort(t->v, t->n, sizeof(*t->v), cmp_u32);
	for (i = 1; i < t->n; i++)
		if (t->v[i] != t->v[o])
			t->v[++o] = t->v[i];
	t->n = o + 1;
}

static bool tids_has(const struct tids *t, __u32 tid)
{
	return t->n && bsearch(&tid, t->v, t->n, sizeof(*t->v), cmp_u32);
}

/* Add the tasks file (or cgroup.threads) of resctrl dir or cgroup @file. */
static int tids_read(struct tids *t, const char *file)
{
	__u32 *v = NULL;
	long n = moat_read_tids(file, &v);
	int err;

	if (n < 0)
		return n;
	err = tids_add(t, v, n);
	free(v);
	return err;
}

/* Every thread in the cgroup @dir and the cgroups below it. */
static void subtree_tids(const char *dir, bool v2, int depth, struct tids *t)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *dp;

	snprintf(path, sizeof(path), "%s/%s", dir, v2 ? "cgroup.threads" : "tasks");
	tids_read(t, path);	/* a cgroup that went away: no threads */
	if (depth >= SUBTREE_DEPTH)
		return;
	dp = opendir(dir);
	while (dp && (e = readdir(dp))) {
		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		subtree_tids(path, v2, depth + 1, t);
	}
	if (dp)
		closedir(dp);
}

/* The tasks of the control groups moatd did not make. */
static int foreign_tids(struct moatd *d, struct tids *t)
{
	char **names = NULL, path[PATH_MAX * 2];
	int i, n = moat_rdt_groups(d->rdt_root, &names);

	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		if (strcmp(names[i], class_dir[LC]) && strcmp(names[i], class_dir[BE])) {
			snprintf(path, sizeof(path), "%s/%s/tasks", d->rdt_root,
				 names[i]);
			tids_read(t, path);
		}
		free(names[i]);
	}
	free(names);
	tids_sort(t);
	return 0;
}

/* Write @n @tids to @rel's tasks, the ones not in @skip. */
static void move(struct moatd *d, const char *rel, const __u32 *tids, size_t n)
{
	struct rdt *r = d->rdtc;
	char dir[PATH_MAX * 2];
	size_t gone = 0;
	ssize_t moved;

	if (!n)
		return;
	snprintf(dir, sizeof(dir), "%s%s%s", d->rdt_root, *rel ? "/" : "", rel);
	moved = moat_rdt_add_tasks(dir, tids, n, &gone);
	if (moved < 0) {
		char st[256] = "";

		r->write_errors++;
		moat_rdt_read(d->rdt_root, "info/last_cmd_status", st, sizeof(st));
		st[strcspn(st, "\n")] = '\0';
		pr_warn("resctrl: tasks of %s: %s (last_cmd_status: %s)",
			*rel ? rel : "the default group", strerror(-moved), st);
		return;
	}
	r->moved += moved;
	r->gone += gone;
	pr_debug("resctrl: %zd tasks into %s, %zu gone before", moved,
		 *rel ? rel : "the default group", gone);
}

static int unit_class(const struct moatd_group *u)
{
	return u->class == MOAT_CLASS_LC ? LC : u->class == MOAT_CLASS_BE ? BE : -1;
}

static void mon_rel(const struct moatd_group *u, int c, char *buf, size_t len)
{
	snprintf(buf, len, "%s/mon_groups/%s", class_dir[c], u->gid.id);
}

/*
 * Every LC and BE unit's threads into its class's control group, and into
 * its monitoring group where it has one; threads in moatd's groups that
 * no unit wants back to the default group.  Never a thread of a group
 * moatd did not make.
 */
static void reconcile(struct moatd *d)
{
	struct tids foreign = { 0 }, mine[NCLASS] = { { 0 } }, keep = { 0 };
	size_t placed[NCLASS] = { 0 };
	char path[PATH_MAX * 3], rel[PATH_MAX];
	__u32 *to = NULL;
	size_t i, j, n;
	int c;

	clock_gettime(CLOCK_MONOTONIC, &d->rdtc->last_reconcile);
	d->rdtc->reconcile_now = false;
	if (foreign_tids(d, &foreign))
		goto out;
	for (c = 0; c < NCLASS; c++) {
		snprintf(path, sizeof(path), "%s/%s/tasks", d->rdt_root, class_dir[c]);
		tids_read(&mine[c], path);
		tids_sort(&mine[c]);
	}
	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *u = d->groups[i];
		struct tids want = { 0 }, mon = { 0 };

		c = unit_class(u);
		if (u->unit != u || c < 0)
			continue;
		subtree_tids(u->dir, d->cpu->v2, 0, &want);
		tids_sort(&want);
		free(to);
		to = malloc((want.n ? want.n : 1) * sizeof(*to));
		if (!to) {
			free(want.v);
			break;
		}
		n = moat_rdt_tids_to_move(want.v, want.n, mine[c].v, mine[c].n,
					  foreign.v, foreign.n, to);
		move(d, class_dir[c], to, n);
		if (u->rdt_mon) {
			mon_rel(u, c, rel, sizeof(rel));
			snprintf(path, sizeof(path), "%s/%s/tasks", d->rdt_root, rel);
			tids_read(&mon, path);
			tids_sort(&mon);
			n = moat_rdt_tids_to_move(want.v, want.n, mon.v, mon.n,
						  foreign.v, foreign.n, to);
			move(d, rel, to, n);
			free(mon.v);
		}
		for (j = 0; j < want.n; j++)
			if (!tids_has(&foreign, want.v[j])) {
				tids_add(&keep, &want.v[j], 1);
				placed[c]++;
			}
		free(want.v);
	}
	tids_sort(&keep);
	for (c = 0; c < NCLASS; c++) {
		free(to);
		to = malloc((mine[c].n ? mine[c].n : 1) * sizeof(*to));
		if (!to)
			break;
		for (i = n = 0; i < mine[c].n; i++)
			if (!tids_has(&keep, mine[c].v[i]))
				to[n++] = mine[c].v[i];
		move(d, "", to, n);	/* no unit's: back to the default */
		d->rdtc->c[c].ntasks = placed[c];
	}
out:
	free(to);
	free(foreign.v);
	free(keep.v);
	for (c = 0; c < NCLASS; c++)
		free(mine[c].v);
}

/* ---- allocation ---- */

static unsigned int l3_ways_total(const struct moatd *d)
{
	size_t i;

	for (i = 0; i < d->rdt.nres; i++)
		if (!strncmp(d->rdt.res[i].name, "L3", 2))
			return __builtin_popcountll(d->rdt.res[i].cbm_mask);
	return 0;
}

static bool has_res(const struct moatd *d, const char *name)
{
	return moat_rdt_res_find(&d->rdt, name) ||
	       (!strcmp(name, "L3") && d->rdt.cdp);
}

double rdt_be_original(const struct moatd *d, enum moat_resource r)
{
	const struct rdt_class *be;
	unsigned int ways;

	if (!allocating(d))
		return NAN;
	be = &d->rdtc->c[BE];
	if (r == MOAT_RES_L3) {
		if (!has_res(d, "L3"))
			return NAN;
		ways = be->ways.all ? be->ways.all : l3_ways_total(d);
		return ways;
	}
	if (r == MOAT_RES_MB) {
		const struct moat_rdt_res *mb = moat_rdt_res_find(&d->rdt, "MB");

		/* mba_MBps: no maximum to take a share of */
		return mb && mb->unit != MOAT_RDT_MB_MBPS ? be->mb_pct : NAN;
	}
	return NAN;
}

double rdt_be_floor(const struct moatd *d, enum moat_resource r)
{
	const struct moat_rdt_res *l3 = NULL;
	size_t i;

	if (!d->rdtc)
		return 0;
	if (r == MOAT_RES_MB)
		return d->rdtc->be_mb_min;
	for (i = 0; i < d->rdt.nres && !l3; i++)
		if (!strncmp(d->rdt.res[i].name, "L3", 2))
			l3 = &d->rdt.res[i];
	return l3 && l3->min_cbm_bits > d->rdtc->be_ways_min ? l3->min_cbm_bits :
								   d->rdtc->be_ways_min;
}

void rdt_be_cap(struct moatd *d, double ways, double mb_pct)
{
	if (!alive(d))
		return;
	d->rdtc->be_cap_ways = isinf(ways) || isnan(ways) ? 0 : (unsigned int)ways;
	d->rdtc->be_cap_mb = isinf(mb_pct) || isnan(mb_pct) ? 0 : (unsigned int)mb_pct;
}

/* Write @c's schemata where it differs from what the knobs and the cap say. */
static void apply(struct moatd *d, int c)
{
	struct rdt *r = d->rdtc;
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
	snprintf(path, sizeof(path), "%s/%s", d->rdt_root, class_dir[c]);
	if (moat_rdt_read(d->rdt_root, "schemata", text, sizeof(text)) ||
	    moat_schemata_parse(text, &dflt, why, sizeof(why)))
		return;
	if (moat_rdt_read(path, "schemata", text, sizeof(text)) ||
	    moat_schemata_parse(text, &cur, why, sizeof(why)))
		return;
	snprintf(k->schemata, sizeof(k->schemata), "%s", text);
	if (moat_rdt_compose(&d->rdt, &dflt, &a, &want, why, sizeof(why)) ||
	    (n = moat_schemata_diff(&d->rdt, &cur, &want, text, sizeof(text), why,
				    sizeof(why))) < 0) {
		snprintf(r->state, sizeof(r->state), "allocating; %s: %s",
			 class_dir[c], why);
		if (!r->refused)
			pr_warn("resctrl: %s: %s: the %s group keeps its schemata",
				class_dir[c], why, class_name[c]);
		r->refused = true;
		return;
	}
	if (!n)
		return;
	if (moat_rdt_write(d->rdt_root, path, text, why, sizeof(why))) {
		r->write_errors++;
		snprintf(r->state, sizeof(r->state), "allocating; %s/schemata refused: %s",
			 class_dir[c], why);
		if (!r->refused)
			pr_warn("resctrl: %s: %s", class_dir[c], why);
		r->refused = true;
		return;
	}
	pr_info("resctrl: %s/schemata: %.*s", class_dir[c],
		(int)(strlen(text) - 1), text);
	moat_rdt_read(path, "schemata", k->schemata, sizeof(k->schemata));
}

/* Make moat_lc and moat_be, both or neither. */
static bool start(struct moatd *d)
{
	struct rdt *r = d->rdtc;
	char **names = NULL, why[512];
	unsigned int left;
	int n, i, c, err = 0;

	n = moat_rdt_groups(d->rdt_root, &names);
	if (n < 0) {
		snprintf(r->state, sizeof(r->state), "refused: %s: %s", d->rdt_root,
			 strerror(-n));
		return false;
	}
	for (i = 0; i < n; i++) {
		for (c = 0; c < NCLASS; c++)
			if (!strcmp(names[i], class_dir[c]) && !made(r, class_dir[c]))
				err = -EEXIST;
		free(names[i]);
	}
	free(names);
	left = moat_rdt_closids_left(&d->rdt, n);
	if (err) {
		snprintf(r->state, sizeof(r->state),
			 "refused: a group named moat_lc or moat_be that moatd did not make is there");
	} else if (left < NCLASS) {
		snprintf(r->state, sizeof(r->state),
			 "refused: %u CLOSIDs left (num_closids %u, %d groups besides the default), moat needs 2",
			 left, d->rdt.num_closids, n);
		err = -ENOSPC;
	}
	for (c = 0; !err && c < NCLASS; c++) {
		err = make_group(d, class_dir[c], why, sizeof(why));
		if (err)
			snprintf(r->state, sizeof(r->state), "refused: mkdir %s: %s",
				 class_dir[c], why);
	}
	if (err) {
		for (c = NCLASS; c-- > 0;)	/* nothing half made */
			if (made(r, class_dir[c]))
				remove_group(d, class_dir[c]);
		/* tried again each START_RETRY_MS: said once per reason */
		if (strcmp(r->said, r->state))
			pr_warn("resctrl: %s: no cache or bandwidth allocation; trying again every %u ms",
				r->state, START_RETRY_MS);
		snprintf(r->said, sizeof(r->said), "%s", r->state);
		clock_gettime(CLOCK_MONOTONIC, &r->refused_at);
		return false;
	}
	r->said[0] = '\0';
	pr_info("resctrl: made %s/moat_lc and moat_be", d->rdt_root);
	r->reconcile_now = true;
	return true;
}

/* The monitoring groups: one per LC and BE unit, while RMIDs last. */
static void mon_groups(struct moatd *d)
{
	struct rdt *r = d->rdtc;
	char rel[PATH_MAX], why[256];
	size_t i, j;

	/* those of units no more, or of another class now */
	for (j = r->nmade; j-- > 0;) {
		const char *slash = strstr(r->made[j], "/mon_groups/");
		bool keep = false;

		if (!slash)
			continue;
		for (i = 0; i < d->nr_groups && !keep; i++) {
			struct moatd_group *u = d->groups[i];

			if (u->unit != u || unit_class(u) < 0 || !u->rdt_mon)
				continue;
			mon_rel(u, unit_class(u), rel, sizeof(rel));
			keep = !strcmp(rel, r->made[j]);
		}
		if (!keep) {
			snprintf(rel, sizeof(rel), "%s", r->made[j]);
			remove_group(d, rel);
			r->rmids_out = false;	/* an RMID may be free again */
		}
	}
	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *u = d->groups[i];
		int c = unit_class(u);

		if (u->unit != u || c < 0) {
			u->rdt_mon = false;
			continue;
		}
		mon_rel(u, c, rel, sizeof(rel));
		u->rdt_mon = made(r, rel);
		if (u->rdt_mon || r->rmids_out || !d->rdt.num_rmids)
			continue;
		if (!make_group(d, rel, why, sizeof(why))) {
			u->rdt_mon = true;
			u->mon = (struct rdt_mon){ 0 };
			r->reconcile_now = true;
		} else {
			r->rmids_out = true;
			pr_info("resctrl: mkdir %s: %s: groups from here on are monitored with their class only",
				rel, why);
		}
	}
}

/*
 * The units whose new tasks the BPF hooks report.  A change in them, or
 * in their classes, is a change in who belongs where: reconcile now.
 */
static void track(struct moatd *d, bool on)
{
	struct rdt *r = d->rdtc;
	__u64 *ids = NULL, *sig = NULL;
	size_t i, n = 0;

	if (on) {
		ids = malloc((d->nr_groups ? d->nr_groups : 1) * sizeof(*ids));
		sig = malloc((d->nr_groups ? d->nr_groups : 1) * sizeof(*sig));
		if (!ids || !sig)
			goto out;
		for (i = 0; i < d->nr_groups; i++) {
			struct moatd_group *u = d->groups[i];

			if (u->unit != u || unit_class(u) < 0)
				continue;
			ids[n] = u->cgid;
			sig[n++] = u->cgid * 2 + unit_class(u);
		}
	}
	if (n == r->ntracked && (!n || !memcmp(sig, r->tracked, n * sizeof(*sig))))
		goto out;
	r->reconcile_now = on;
	if (d->events && moat_cgroup_events_track(d->events, ids, n))
		pr_debug("resctrl: cannot track %zu groups' tasks: the reconcile finds them",
			 n);
	free(r->tracked);
	r->tracked = sig;
	r->ntracked = n;
	sig = NULL;
out:
	free(ids);
	free(sig);
}

void rdt_task_event(struct moatd *d, __u64 unit, __u32 tid)
{
	struct rdt *r = d->rdtc;

	if (!allocating(d))
		return;
	r->events++;
	if (r->npending == sizeof(r->pending) / sizeof(r->pending[0])) {
		r->pending_lost = true;
		return;
	}
	r->pending[r->npending].unit = unit;
	r->pending[r->npending++].tid = tid;
}

void rdt_flush(struct moatd *d)
{
	struct rdt *r = d->rdtc;
	struct tids foreign = { 0 };
	char rel[PATH_MAX];
	size_t i, j;

	if (!alive(d) || !r->npending)
		return;
	if (r->pending_lost)
		r->reconcile_now = true;	/* some were not kept */
	if (!allocating(d) || foreign_tids(d, &foreign))
		goto out;
	for (i = 0; i < r->npending; i++) {
		struct moatd_group *u = NULL;
		__u32 tid = r->pending[i].tid;
		int c;

		for (j = 0; j < d->nr_groups && !u; j++)
			if (d->groups[j]->cgid == r->pending[i].unit)
				u = d->groups[j];
		c = u ? unit_class(u) : -1;
		if (c < 0 || tids_has(&foreign, tid))
			continue;
		move(d, class_dir[c], &tid, 1);
		if (u->rdt_mon) {
			mon_rel(u, c, rel, sizeof(rel));
			move(d, rel, &tid, 1);
		}
	}
out:
	r->npending = 0;
	r->pending_lost = false;
	free(foreign.v);
}

/* ---- monitoring ---- */

/* Sum @event over @rel's mon_data domains; -1: none readable. */
static double mon_sum(const struct moatd *d, const char *rel, const char *event)
{
	char path[PATH_MAX * 3], v[64];
	struct dirent *e;
	double sum = -1;
	DIR *dp;

	snprintf(path, sizeof(path), "%s/%s/mon_data", d->rdt_root, rel);
	dp = opendir(path);
	while (dp && (e = readdir(dp))) {
		char *end;
		double x;

		if (strncmp(e->d_name, "mon_L3_", 7))
			continue;
		snprintf(path, sizeof(path), "%s/%s/mon_data/%s", d->rdt_root,
			 rel, e->d_name);
		/* "Unavailable" or "Error" instead of a number: not counted */
		if (moat_rdt_read(path, event, v, sizeof(v)))
			continue;
		x = strtod(v, &end);
		if (end == v)
			continue;
		sum = (sum < 0 ? 0 : sum) + x;
	}
	if (dp)
		closedir(dp);
	return sum;
}

/*
 * Occupancy now; bandwidth as a rate over a window of at least @min_ms,
 * so that when the counters are read (a cross-CPU call, behind the
 * scheduler's delays) weighs little against the window.
 */
static void mon_read(const struct moatd *d, const char *rel, struct rdt_mon *m,
		     unsigned int min_ms)
{
	double total = mon_sum(d, rel, "mbm_total_bytes");
	double local = mon_sum(d, rel, "mbm_local_bytes");
	struct timespec now;
	double s;

	clock_gettime(CLOCK_MONOTONIC, &now);
	m->llc_bytes = d->rdt.llc_occupancy ? mon_sum(d, rel, "llc_occupancy") : -1;
	s = now.tv_sec - m->at.tv_sec + (now.tv_nsec - m->at.tv_nsec) / 1e9;
	/* a counter that went back (an RMID reused) restarts the rate */
	if (m->valid && total >= m->total && local >= m->local &&
	    s * 1000 < min_ms)
		return;		/* the window goes on */
	m->total_bps = m->valid && total >= m->total && s > 0 ?
		       (total - m->total) / s : NAN;
	m->local_bps = m->valid && local >= m->local && s > 0 ?
		       (local - m->local) / s : NAN;
	m->total = total;
	m->local = local;
	m->at = now;
	m->valid = total >= 0;
}

/* ---- the cycle, restore, open and close ---- */

void rdt_restore(struct moatd *d, const char *why)
{
	struct rdt *r = d->rdtc;
	size_t i;

	if (!alive(d))
		return;
	r->refused = false;
	r->rmids_out = false;
	r->be_cap_ways = r->be_cap_mb = 0;
	track(d, false);
	if (!r->nmade)
		return;
	pr_info("%s: removing resctrl groups %s and %s (their tasks go back to the default group)",
		why, class_dir[LC], class_dir[BE]);
	while (r->nmade) {
		char rel[PATH_MAX];
		size_t before = r->nmade;

		snprintf(rel, sizeof(rel), "%s", r->made[r->nmade - 1]);
		remove_group(d, rel);
		if (r->nmade == before)
			break;		/* could not: it stays in the journal */
	}
	/* Without moat_be, the ways and bandwidth the controller took are gone. */
	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i];

		g->rdt_mon = false;
		g->lim[MOAT_RES_L3] = (struct moat_ctl_limit){ .limit = INFINITY };
		g->lim[MOAT_RES_MB] = (struct moat_ctl_limit){ .limit = INFINITY };
	}
	for (i = 0; i < NCLASS; i++) {
		r->c[i].schemata[0] = '\0';
		r->c[i].ntasks = 0;
		r->c[i].mon = (struct rdt_mon){ 0 };
	}
	snprintf(r->state, sizeof(r->state), "off");
}

void rdt_cycle(struct moatd *d)
{
	struct rdt *r = d->rdtc;
	size_t i;
	int c;

	if (!alive(d))
		return;
	if (d->mode != MOATD_ENFORCE || !r->allocate) {
		if (r->nmade)
			rdt_restore(d, d->mode != MOATD_ENFORCE ? "mode observe" :
				    "resctrl/allocate 0");
		snprintf(r->state, sizeof(r->state), d->mode != MOATD_ENFORCE ?
			 "observe: moat's groups are made in enforce mode" :
			 "off: resctrl/allocate is 0");
		return;
	}
	if (!allocating(d)) {
		/*
		 * A refusal may pass (CLOSIDs freed, a group removed, a
		 * mkdir that failed once): start() is tried again, not
		 * only when a knob changes.
		 */
		if (r->refused && ms_since(&r->refused_at) < START_RETRY_MS)
			return;
		r->refused = !start(d);
		if (r->refused)
			return;
	}
	snprintf(r->state, sizeof(r->state), "allocating");
	for (c = 0; c < NCLASS; c++)
		apply(d, c);
	mon_groups(d);
	track(d, true);
	if (r->reconcile_now ||
	    ms_since(&r->last_reconcile) >= r->reconcile_ms)
		reconcile(d);
	for (c = 0; c < NCLASS; c++)
		mon_read(d, class_dir[c], &r->c[c].mon, r->monitor_ms);
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

		if (!u->rdt_mon)
			continue;
		mon_rel(u, unit_class(u), rel, sizeof(rel));
		mon_read(d, rel, &u->mon, 0);	/* the gate above */
	}
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
	struct rdt *r = d->rdtc;

	snprintf(d->rdt_root, sizeof(d->rdt_root), "%s", RDT_MNT);
	r->mounted = true;
	journal_save(d);
	if (!mount("resctrl", RDT_MNT, "resctrl", 0, NULL)) {
		pr_info("resctrl: mounted at %s (resctrl/mount = 1); unmounted when moatd stops",
			RDT_MNT);
		return 0;
	}
	pr_info("resctrl: mount -t resctrl resctrl %s: %s: no cache or memory bandwidth allocation",
		RDT_MNT, strerror(errno));
	r->mounted = false;
	d->rdt_root[0] = '\0';
	journal_save(d);
	return -errno;
}

void rdt_open(struct moatd *d, const char *state_dir)
{
	const char *fake = getenv("MOAT_RESCTRL_ROOT");
	bool cdp = false, mbps = false, amd = false;
	struct rdt *r = d->rdtc;
	char why[512], what[512];
	FILE *f;
	int err;

	d->rdt_root[0] = '\0';
	if (*state_dir)
		snprintf(r->journal, sizeof(r->journal), "%s/resctrl.journal",
			 state_dir);
	if (fake && *fake) {
		snprintf(d->rdt_root, sizeof(d->rdt_root), "%s", fake);
	} else {
		f = fopen("/proc/self/mountinfo", "re");
		err = f ? moat_rdt_find_mount(f, d->rdt_root, sizeof(d->rdt_root),
					      &cdp, &mbps) : -errno;
		if (f)
			fclose(f);
		if (err) {
			d->rdt_root[0] = '\0';
			if (!r->mount) {
				pr_info("resctrl: not mounted (no Intel RDT or AMD PQoS here, or not mounted and resctrl/mount is 0): no cache or memory bandwidth allocation");
				journal_recover(d);
				return;
			}
			if (mount_it(d)) {
				journal_recover(d);
				return;
			}
		}
	}
	/* Before anything else: what a crashed moatd made goes. */
	journal_recover(d);
	f = fopen("/proc/cpuinfo", "re");
	if (f) {
		amd = moat_rdt_cpu_is_amd(f);
		fclose(f);
	}
	err = moat_rdt_info_read(d->rdt_root, amd, mbps, &d->rdt, why, sizeof(why));
	if (err) {
		pr_warn("resctrl at %s: %s: no cache or memory bandwidth allocation",
			d->rdt_root, why);
		d->rdt_root[0] = '\0';
		return;
	}
	describe(&d->rdt, what, sizeof(what));
	pr_info("resctrl at %s%s: %s; %u CLOSIDs, %u RMIDs", d->rdt_root,
		fake && *fake ? " ($MOAT_RESCTRL_ROOT)" : "", what,
		d->rdt.num_closids, d->rdt.num_rmids);
	snprintf(r->state, sizeof(r->state), "off");
}

void rdt_close(struct moatd *d)
{
	struct rdt *r = d->rdtc;
	char **names = NULL;
	int n, i;

	if (!r)
		return;
	if (*d->rdt_root)
		rdt_restore(d, "moatd stops");
	if (r->mounted && !r->nmade) {
		n = moat_rdt_groups(d->rdt_root, &names);
		for (i = 0; i < n; i++)
			free(names[i]);
		free(names);
		if (n > 0)
			pr_info("resctrl: %d groups moatd did not make are in %s: it stays mounted",
				n, RDT_MNT);
		else if (umount2(RDT_MNT, 0))
			pr_warn("resctrl: umount %s: %s", RDT_MNT, strerror(errno));
		else
			r->mounted = false;
		journal_save(d);
	}
	while (r->nmade)
		free(r->made[--r->nmade]);
	free(r->tracked);
	free(r);
	d->rdtc = NULL;
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
	for (i = 0; *d->rdt_root && i < d->rdt.nres && n < len; i++)
		n += snprintf(buf + n, len - n, "%s%s", i ? " " : "",
			      d->rdt.res[i].name);
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

	return snprintf(buf, len, "%u", *d->rdt_root ? d->rdt.num_closids : 0) >=
	       (int)len ? -EOVERFLOW : 0;
}

static int show_rmids(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return snprintf(buf, len, "%u", *d->rdt_root ? d->rdt.num_rmids : 0) >=
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

/* resctrl/<class>/l3_ways: the syntax, and the ways and caches there are. */
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
	    (*d->rdt_root &&
	     !moat_rdt_read(d->rdt_root, "schemata", text, sizeof(text)) &&
	     !moat_schemata_parse(text, &dflt, why, len) &&
	     moat_rdt_compose(&d->rdt, &dflt, &a, &out, why, len)))
		return -EINVAL;
	why[0] = '\0';
	return 0;
}

static void store_ways(const struct moat_knob *k, unsigned int u, const char *val)
{
	struct moatd *d = k->owner;
	int c = !strcmp(k->path, "resctrl/be/l3_ways") ? BE : LC;
	char why[64];

	snprintf(d->rdtc->c[c].ways_text, sizeof(d->rdtc->c[c].ways_text), "%s", val);
	moat_rdt_ways_parse(val, &d->rdtc->c[c].ways, why, sizeof(why));
	d->rdtc->refused = false;	/* try what was refused again */
}

static void store_mb(const struct moat_knob *k, unsigned int u, const char *val)
{
	struct moatd *d = k->owner;

	d->rdtc->c[strstr(k->path, "/be/") ? BE : LC].mb_pct = u;
	d->rdtc->refused = false;
}

int rdt_add_knobs(struct moatd *d)
{
	struct rdt *r = calloc(1, sizeof(*r));
	int err, c;

	if (!r)
		return -ENOMEM;
	d->rdtc = r;
	*r = (struct rdt){ .mount = 0, .allocate = 1, .reconcile_ms = 5000,
			   .monitor_ms = 2000,
			   .be_ways_min = 1, .be_mb_min = 10 };
	snprintf(r->state, sizeof(r->state), "absent");
	for (c = 0; c < NCLASS; c++) {
		snprintf(r->c[c].ways_text, sizeof(r->c[c].ways_text), "0");
		r->c[c].mb_pct = 100;
		r->c[c].mon = (struct rdt_mon){ .llc_bytes = -1, .total_bps = NAN,
						.local_bps = NAN };
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
			{ "resctrl/root", show_str, d->rdt_root },
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

int rdt_add_group_knobs(struct moatd *d, struct moatd_group *g)
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

	g->rdt_mon = false;
	g->mon = (struct rdt_mon){ .llc_bytes = -1, .total_bps = NAN,
				   .local_bps = NAN };
	snprintf(dir, sizeof(dir), "groups/%s", g->gid.id);
	return moat_knob_add_all(d->tree, dir, attrs,
				 sizeof(attrs) / sizeof(attrs[0]), &g->mon);
}

const struct rdt_mon *rdt_class_mon(const struct moatd *d, int lc)
{
	return alive(d) && allocating(d) ? &d->rdtc->c[lc ? LC : BE].mon : NULL;
}
