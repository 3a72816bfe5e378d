// SPDX-License-Identifier: GPL-2.0-only
/*
 * resctrl in moatd: which thread goes in which group.  Every LC and BE
 * unit's threads in its class's control group, and in its monitoring
 * group where it has one: all of them each resctrl/reconcile_ms (and at
 * once when the units change), a new one when the cgroup events report
 * it (rdt_take_tasks(), between periods).  Never a thread of a group
 * moatd did not make.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cgroup.h"
#include "groups.h"
#include "log.h"
#include "rdt_priv.h"

/* How deep below a unit its threads are looked for. */
#define SUBTREE_DEPTH	8

struct tids {
	__u32 *v;
	size_t n, cap;
};

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
	int i, n = moat_rdt_groups(R(d)->root, &names);

	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		if (strcmp(names[i], rdt_class_dir[LC]) && strcmp(names[i], rdt_class_dir[BE])) {
			snprintf(path, sizeof(path), "%s/%s/tasks", R(d)->root,
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
	struct rdt *r = R(d);
	char dir[PATH_MAX * 2];
	size_t gone = 0;
	ssize_t moved;

	if (!n)
		return;
	snprintf(dir, sizeof(dir), "%s%s%s", R(d)->root, *rel ? "/" : "", rel);
	moved = moat_rdt_add_tasks(d->journal, dir, tids, n, &gone);
	if (moved < 0) {
		char st[256] = "";

		r->write_errors++;
		moat_rdt_read(R(d)->root, "info/last_cmd_status", st, sizeof(st));
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

/*
 * Every LC and BE unit's threads into its class's control group, and into
 * its monitoring group where it has one; threads in moatd's groups that
 * no unit wants back to the default group.  Never a thread of a group
 * moatd did not make.
 */
void rdt_reconcile(struct moatd *d)
{
	struct tids foreign = { 0 }, mine[NCLASS] = { { 0 } }, keep = { 0 };
	size_t placed[NCLASS] = { 0 };
	char path[PATH_MAX * 3], rel[PATH_MAX];
	__u32 *to = NULL;
	size_t i, j, n;
	int c;

	clock_gettime(CLOCK_MONOTONIC, &R(d)->last_reconcile);
	R(d)->reconcile_now = false;
	if (foreign_tids(d, &foreign))
		goto out;
	for (c = 0; c < NCLASS; c++) {
		snprintf(path, sizeof(path), "%s/%s/tasks", R(d)->root, rdt_class_dir[c]);
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
		move(d, rdt_class_dir[c], to, n);
		if (RG(u)->mon_on) {
			mon_rel(u, c, rel, sizeof(rel));
			snprintf(path, sizeof(path), "%s/%s/tasks", R(d)->root, rel);
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
		R(d)->c[c].ntasks = placed[c];
	}
out:
	free(to);
	free(foreign.v);
	free(keep.v);
	for (c = 0; c < NCLASS; c++)
		free(mine[c].v);
}

/*
 * The units whose new tasks the BPF hooks report.  A change in them, or
 * in their classes, is a change in who belongs where: reconcile now.
 */
void rdt_track(struct moatd *d, bool on)
{
	struct rdt *r = R(d);
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
	if (groups_track_tasks(d, ids, n))
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

/* The tasks that entered tracked units since the last call (groups.c). */
static void take_tasks(struct moatd *d, struct rdt *r)
{
	__u64 unit;
	__u32 tid;
	bool lost;

	while (groups_next_task(d, &unit, &tid, &lost)) {
		if (!allocating(d))
			continue;
		r->events++;
		if (r->npending == sizeof(r->pending) / sizeof(r->pending[0])) {
			r->pending_lost = true;
			continue;
		}
		r->pending[r->npending].unit = unit;
		r->pending[r->npending++].tid = tid;
	}
	r->pending_lost |= lost;
}

void rdt_take_tasks(struct moatd *d)
{
	struct rdt *r = R(d);
	struct tids foreign = { 0 };
	char rel[PATH_MAX];
	size_t i, j;

	take_tasks(d, r);
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
		move(d, rdt_class_dir[c], &tid, 1);
		if (RG(u)->mon_on) {
			mon_rel(u, c, rel, sizeof(rel));
			move(d, rel, &tid, 1);
		}
	}
out:
	r->npending = 0;
	r->pending_lost = false;
	free(foreign.v);
}
