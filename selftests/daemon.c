// SPDX-License-Identifier: GPL-2.0-only
/* A moatd without its loop, for the tests of its parts (daemon.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include "burst.h"
#include "daemon.h"
#include "enforce.h"
#include "evict.h"
#include "units.h"

/* What is not linked into the selftests does nothing. */
static const struct moatd_module none = { .name = "none" };

const struct moatd_module *const moatd_modules[MOD_NR] = {
	[MOD_SETTINGS] = &none, [MOD_GROUPS] = &none, [MOD_NODE] = &none,
	[MOD_DELAY] = &none, [MOD_OBSERVE] = &none,
	[MOD_SIGNALS] = &signals_module,
	[MOD_CPI] = &none,
	[MOD_ENFORCE] = &enforce_module,
	[MOD_RDT] = &none, [MOD_HINTS] = &none, [MOD_HTTP] = &none,
	[MOD_KUBE] = &none, [MOD_PODS] = &none, [MOD_EVICT] = &evict_module,
	[MOD_EVENTS] = &none,
	[MOD_BURST] = &burst_module,
};

struct moatd *daemon_new(const struct moat_cg_hierarchy *cpu)
{
	struct moatd *d = calloc(1, sizeof(*d));
	int m;

	cr_assert_not_null(d);
	d->period_ms = 100;
	d->cpu = cpu;
	d->tree = moat_knob_tree_new();
	cr_assert_not_null(d->tree);
	cr_assert_eq(moat_journal_open("", &d->journal), 0);
	for (m = 0; m < MOD_NR; m++) {
		if (moatd_modules[m] == &none)
			continue;
		d->mod[m] = calloc(1, moatd_modules[m]->size);
		cr_assert_not_null(d->mod[m]);
		if (moatd_modules[m]->init)
			cr_assert_eq(moatd_modules[m]->init(d), 0, "%s", moatd_modules[m]->name);
		if (moatd_modules[m]->open)
			cr_assert_eq(moatd_modules[m]->open(d), 0, "%s", moatd_modules[m]->name);
	}
	return d;
}

struct moatd_group *daemon_add(struct moatd *d, const char *id,
			       enum moat_group_kind kind, enum moat_class class,
			       const char *dir, __u64 cgid)
{
	struct moatd_group *g = calloc(1, sizeof(*g));
	int m;

	cr_assert_not_null(g);
	snprintf(g->gid.id, sizeof(g->gid.id), "%s", id);
	g->gid.kind = kind;
	g->gid.class = class;
	g->class = class;
	g->cgid = cgid;
	g->dir = strdup(dir);
	g->path = strdup(dir);
	g->unit = g;
	group_meta_init(&g->meta);
	for (m = 0; m < MOD_NR; m++)
		if (moatd_modules[m]->group_size) {
			g->priv[m] = calloc(1, moatd_modules[m]->group_size);
			cr_assert_not_null(g->priv[m]);
		}
	for (m = 0; m < MOD_NR; m++)
		if (moatd_modules[m]->group_add)
			cr_assert_eq(moatd_modules[m]->group_add(d, g), 0, "%s",
				     moatd_modules[m]->name);
	d->groups = realloc(d->groups, (d->nr_groups + 1) * sizeof(*d->groups));
	cr_assert_not_null(d->groups);
	d->groups[d->nr_groups++] = g;
	d->groups_gen++;
	moatd_index_groups(d);
	return g;
}

void daemon_del(struct moatd *d, struct moatd_group *g)
{
	char dir[MOAT_KNOB_PATH_MAX];
	size_t i;
	int m;

	/* as groups.c's group_free(): the modules first, the group still listed */
	for (m = MOD_NR; m-- > 0;)
		if (moatd_modules[m]->group_del)
			moatd_modules[m]->group_del(d, g);
	for (i = 0; i < d->nr_groups && d->groups[i] != g; i++)
		;
	cr_assert_lt(i, d->nr_groups);
	memmove(&d->groups[i], &d->groups[i + 1],
		(d->nr_groups - i - 1) * sizeof(*d->groups));
	d->nr_groups--;
	d->groups_gen++;
	snprintf(dir, sizeof(dir), "groups/%s", g->gid.id);
	moat_knob_remove_dir(d->tree, dir);
	for (m = 0; m < MOD_NR; m++)
		free(g->priv[m]);
	group_meta_free(&g->meta);
	free(g->path);
	free(g->dir);
	free(g);
	moatd_index_groups(d);
}

void daemon_free(struct moatd *d)
{
	int m;

	while (d->nr_groups)
		daemon_del(d, d->groups[d->nr_groups - 1]);
	for (m = MOD_NR; m-- > 0;)
		if (d->mod[m] && moatd_modules[m]->close)
			moatd_modules[m]->close(d);
	for (m = 0; m < MOD_NR; m++)
		free(d->mod[m]);
	moat_knob_tree_free(d->tree);
	moat_journal_free(d->journal);
	free(d->groups);
	free(d->by_cgid);
	free(d->period.units);
	free(d->period.blame);
	free(d->period.gone);
	free(d->plan.steps);
	free(d->plan.burst);
	free(d);
}
