// SPDX-License-Identifier: GPL-2.0-only
/*
 * The groups moatd tracks: found by rescanning the cpu controller's
 * hierarchy every period, each with its knobs under groups/<id>/, and
 * observed every period.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cgroup.h"
#include "log.h"
#include "moatd.h"

/* groups/<id>/class: reads the effective class, writes the override. */
static const char *const class_choices[] = { "auto", "none", "lc", "be", NULL };
#define CLASS_AUTO 0

static struct override *find_override(struct moatd *d, const char *id)
{
	size_t i;

	for (i = 0; i < d->nr_overrides; i++)
		if (!strcmp(d->overrides[i].id, id))
			return &d->overrides[i];
	return NULL;
}

static struct moatd_group *find_group(struct moatd *d, const char *id)
{
	size_t i;

	for (i = 0; i < d->nr_groups; i++)
		if (!strcmp(d->groups[i]->gid.id, id))
			return d->groups[i];
	return NULL;
}

static void update_class(struct moatd *d, struct moatd_group *g)
{
	struct override *o = find_override(d, g->gid.id);
	unsigned int class = o ? o->class : g->gid.class;
	bool watch = class == MOAT_CLASS_LC;

	g->class = class;
	if (watch != g->watched && d->rqlat &&
	    !moat_rqlat_watch(d->rqlat, g->cgid, watch))
		g->watched = watch;
}

static int show_class(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd_group *g = k->owner;

	return snprintf(buf, len, "%s", moat_class_names[g->class]) >= (int)len ?
	       -EOVERFLOW : 0;
}

static void store_class(const struct moat_knob *k, unsigned int choice,
			const char *val)
{
	struct moatd_group *g = k->owner;
	struct moatd *d = g->d;
	struct override *o = find_override(d, g->gid.id);

	if (choice == CLASS_AUTO) {
		if (o)
			*o = d->overrides[--d->nr_overrides];
	} else if (o) {
		o->class = choice - 1;
	} else {
		struct override *v = realloc(d->overrides,
					     (d->nr_overrides + 1) * sizeof(*v));

		if (!v) {
			pr_err("group %s: class override: out of memory", g->gid.id);
			return;
		}
		d->overrides = v;
		strcpy(v[d->nr_overrides].id, g->gid.id);
		v[d->nr_overrides++].class = choice - 1;
	}
	update_class(d, g);
	pr_info("group %s: class set to %s (%s)", g->gid.id,
		moat_class_names[g->class], val);
}

static int show_u64(char *buf, size_t len, __u64 v)
{
	return snprintf(buf, len, "%llu", (unsigned long long)v) >= (int)len ?
	       -EOVERFLOW : 0;
}

static int show_cgroup_id(const struct moat_knob *k, char *buf, size_t len)
{
	return show_u64(buf, len, ((const struct moatd_group *)k->owner)->cgid);
}

static const char *const kind_names[] = { "pod", "container", "rule" };

static int show_kind(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd_group *g = k->owner;

	return snprintf(buf, len, "%s", kind_names[g->gid.kind]) >= (int)len ?
	       -EOVERFLOW : 0;
}

static int add_knobs(struct moatd *d, struct moatd_group *g)
{
	const struct moat_knob attrs[] = {
		{ .path = "path", .type = MOAT_KNOB_STRING, .data = g->path,
		  .str_max = sizeof(g->path) },
		{ .path = "source", .type = MOAT_KNOB_STRING, .data = g->gid.source,
		  .str_max = sizeof(g->gid.source) },
		{ .path = "kind", .type = MOAT_KNOB_SHOW, .show = show_kind },
		{ .path = "class", .type = MOAT_KNOB_CHOICE, .writable = true,
		  .transient = true, .choices = class_choices, .show = show_class,
		  .store = store_class },
		{ .path = "cgroup_id", .type = MOAT_KNOB_SHOW, .show = show_cgroup_id },
	};
	char dir[MOAT_KNOB_PATH_MAX];
	int err;

	snprintf(dir, sizeof(dir), "groups/%s", g->gid.id);
	err = moat_knob_add_all(d->tree, dir, attrs,
				sizeof(attrs) / sizeof(attrs[0]), g);
	if (!err)
		err = enforce_add_group_knobs(d, g);
	if (!err)
		err = cpi_add_group_knobs(d, g);
	if (!err)
		err = rdt_add_group_knobs(d, g);
	return err ? err : observe_add_knobs(d, g);
}

/* Count a group found or gone; the first few are named in the summary. */
static void churn_note(struct group_churn *c, const char *id)
{
	if (c->n < GROUP_CHURN_NAMED)
		snprintf(c->id[c->n], sizeof(c->id[c->n]), "%s", id);
	c->n++;
}

static void churn_words(const struct group_churn *c, const char *what,
			char *buf, size_t len)
{
	size_t n = snprintf(buf, len, "%zu %s", c->n, what);
	unsigned int i;

	for (i = 0; i < c->n && i < GROUP_CHURN_NAMED && n < len; i++)
		n += snprintf(buf + n, len - n, "%s%s", i ? ", " : " (", c->id[i]);
	if (c->n && n < len)
		snprintf(buf + n, len - n, "%s)", c->n > GROUP_CHURN_NAMED ? ", ..." : "");
}

/*
 * One line a rescan for the groups found and gone, not one a group: a
 * node whose pods churn would fill its log (the lines per group are at
 * debug level, -v).
 */
static void churn_say(struct moatd *d)
{
	char found[512], gone[512];

	if (!d->churn.found.n && !d->churn.gone.n)
		return;
	churn_words(&d->churn.found, "found", found, sizeof(found));
	churn_words(&d->churn.gone, "gone", gone, sizeof(gone));
	pr_info("groups: %s, %s; %zu tracked", found, gone, d->nr_groups);
	memset(&d->churn, 0, sizeof(d->churn));
}

static void drop_group(struct moatd *d, size_t i, const char *why)
{
	struct moatd_group *g = d->groups[i];
	char dir[MOAT_KNOB_PATH_MAX];

	snprintf(dir, sizeof(dir), "groups/%s", g->gid.id);
	moat_knob_remove_dir(d->tree, dir);
	if (g->watched && d->rqlat)
		moat_rqlat_watch(d->rqlat, g->cgid, false);
	pr_debug("group %s (%s): %s", g->gid.id, g->path, why);
	churn_note(&d->churn.gone, g->gid.id);
	enforce_drop_group(d, g);
	observe_close(g);
	cpi_free_group(g);
	moat_ts_group_free(&g->ts);
	free(g);
	d->groups[i] = d->groups[--d->nr_groups];
}

static int new_group(struct moatd *d, const struct moat_group_id *gid,
		     const char *path, __u64 cgid)
{
	struct moatd_group *g = calloc(1, sizeof(*g));
	int err;

	if (!g)
		return -ENOMEM;
	g->d = d;
	g->gid = *gid;
	g->cgid = cgid;
	g->seen = true;
	snprintf(g->path, sizeof(g->path), "%s", path);
	err = moat_cgroup_dir(d->cpu, path, g->dir, sizeof(g->dir));
	observe_init(g);
	if (!err)
		observe_reset(d, g);
	if (!err && d->nr_groups == d->cap_groups) {
		size_t cap = d->cap_groups ? d->cap_groups * 2 : 64;
		void *v = realloc(d->groups, cap * sizeof(*d->groups));

		if (v) {
			d->groups = v;
			d->cap_groups = cap;
		} else {
			err = -ENOMEM;
		}
	}
	if (!err)
		err = add_knobs(d, g);
	if (err) {
		char dir[MOAT_KNOB_PATH_MAX];

		snprintf(dir, sizeof(dir), "groups/%s", gid->id);
		moat_knob_remove_dir(d->tree, dir);
		observe_close(g);
		free(g);
		return err;
	}
	d->groups[d->nr_groups++] = g;
	update_class(d, g);
	pr_debug("group %s (%s): found, %s %s, class %s", g->gid.id, path,
		 kind_names[gid->kind], gid->source, moat_class_names[g->class]);
	churn_note(&d->churn.found, g->gid.id);
	return 0;
}

/* One cgroup of the rescan: a new group, a known one, or none. */
static int rescan_one(__u64 cgid, const char *path, void *ctx)
{
	struct moatd *d = ctx;
	const char *rel = path + strlen(d->scan.root);
	struct moat_group_id gid;
	struct moatd_group *g;
	int err;

	if (!strcmp(d->scan.root, "/"))
		rel = path;
	if (moat_group_classify(rel, &d->qos, d->active_rules,
				d->nr_active_rules, &gid))
		return 0;
	g = find_group(d, gid.id);
	if (!g) {
		err = new_group(d, &gid, path, cgid);
		if (err)
			pr_warn("group %s (%s): not tracked: %s", gid.id, path,
				strerror(-err));
		return 0;
	}
	if (g->seen)	/* two cgroups, one id: the first one found wins */
		return 0;
	g->seen = true;
	if (g->cgid != cgid) {	/* the same pod or container, recreated */
		if (g->watched && d->rqlat)
			moat_rqlat_watch(d->rqlat, g->cgid, false);
		g->watched = false;
		g->cgid = cgid;
		enforce_forget_group(d, g);
		snprintf(g->path, sizeof(g->path), "%s", path);
		moat_cgroup_dir(d->cpu, path, g->dir, sizeof(g->dir));
		observe_reset(d, g);
	}
	g->gid.class = gid.class;
	strcpy(g->gid.source, gid.source);
	update_class(d, g);
	return 0;
}

int groups_rescan(struct moatd *d)
{
	struct moat_cgroup_names *names;
	size_t i;
	int err;

	rules_activate(d);
	names = moat_cgroup_names_new(&d->scan);
	if (!names)
		return -ENOMEM;
	err = moat_cgroup_names_refresh(names);
	if (err) {
		moat_cgroup_names_free(names);
		return err;
	}
	for (i = 0; i < d->nr_groups; i++)
		d->groups[i]->seen = false;
	moat_cgroup_names_for_each(names, rescan_one, d);
	moat_cgroup_names_free(names);
	for (i = d->nr_groups; i-- > 0;)
		if (!d->groups[i]->seen)
			drop_group(d, i, "gone");
	churn_say(d);
	return 0;
}

void groups_free(struct moatd *d)
{
	while (d->nr_groups)
		drop_group(d, d->nr_groups - 1, "no longer tracked: moatd stops");
	memset(&d->churn, 0, sizeof(d->churn));
	free(d->groups);
	free(d->overrides);
}
