// SPDX-License-Identifier: GPL-2.0-only
/*
 * The core's functions every module may call (moatd.h).  They call no
 * module but through moatd_modules[], so that no module depends on
 * another through the core.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "log.h"
#include "moatd.h"

const char *moatd_version(void)
{
	return MOAT_VERSION;
}

double moatd_mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

double moatd_since_cycle_us(const struct moatd *d)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - d->last_cycle.tv_sec) * 1e6 +
	       (now.tv_nsec - d->last_cycle.tv_nsec) / 1e3;
}

int moatd_restore(struct moatd *d, const char *why)
{
	int m, err, first = 0;

	for (m = MOD_NR; m-- > 0;) {
		if (!moatd_modules[m]->restore || !d->mod[m])
			continue;
		err = moatd_modules[m]->restore(d, why);
		if (err && !first)
			first = err;
	}
	return first;
}

static int cmp_cgid(const void *a, const void *b)
{
	__u64 x = (*(struct moatd_group *const *)a)->cgid;
	__u64 y = (*(struct moatd_group *const *)b)->cgid;

	return x < y ? -1 : x > y;
}

void moatd_group_name(const struct moatd_group *g, char *buf, size_t len)
{
	const struct group_meta *m = &g->meta;

	if (!m->known || g->gid.kind == MOAT_GROUP_RULE)
		snprintf(buf, len, "%s", g->gid.id);
	else if (g->gid.kind == MOAT_GROUP_POD)
		snprintf(buf, len, "%s/%s", m->ns, m->name);
	else
		snprintf(buf, len, "%s/%s/%.*s", m->ns, m->name,
			 m->container[0] ? MOAT_POD_CTR_NAME_MAX : 12,
			 m->container[0] ? m->container : g->gid.id);
}

void group_meta_init(struct group_meta *m)
{
	memset(m, 0, sizeof(*m));
	m->ns = m->name = m->container = m->priority_class = "";
}

void group_meta_free(struct group_meta *m)
{
	free(m->names);
	group_meta_init(m);
}

int group_meta_set_names(struct group_meta *m, const char *ns, const char *name,
			 const char *container, const char *priority_class)
{
	size_t a = strlen(ns) + 1, b = strlen(name) + 1, c = strlen(container) + 1;
	char *p = malloc(a + b + c + strlen(priority_class) + 1);

	if (!p)
		return -ENOMEM;
	m->names = p;
	m->ns = memcpy(p, ns, a);
	m->name = memcpy(p + a, name, b);
	m->container = memcpy(p + a + b, container, c);
	m->priority_class = strcpy(p + a + b + c, priority_class);
	return 0;
}

bool group_meta_eq(const struct group_meta *a, const struct group_meta *b)
{
	return a->known == b->known && !strcmp(a->ns, b->ns) &&
	       !strcmp(a->name, b->name) && !strcmp(a->container, b->container) &&
	       !strcmp(a->priority_class, b->priority_class) &&
	       a->label_class == b->label_class && a->priority == b->priority &&
	       !strcmp(a->qos, b->qos) && a->daemonset == b->daemonset &&
	       a->mirror == b->mirror && a->controlled == b->controlled &&
	       a->terminating == b->terminating && a->job == b->job &&
	       a->rqlat_target_us == b->rqlat_target_us &&
	       a->cpu_limit_m == b->cpu_limit_m;
}

struct moatd_group *moatd_group_by_cgid(const struct moatd *d, __u64 cgid)
{
	struct moatd_group key = { .cgid = cgid }, *kp = &key, **found;

	if (!d->by_cgid || !d->nr_groups)
		return NULL;
	found = bsearch(&kp, d->by_cgid, d->nr_groups, sizeof(*d->by_cgid), cmp_cgid);
	return found ? *found : NULL;
}

/*
 * The groups by cgroup id, after the rescan, for everyone: sorted anew
 * only when the groups changed.
 */
void moatd_index_groups(struct moatd *d)
{
	void *v;

	if (d->by_cgid && d->by_cgid_gen == d->groups_gen)
		return;
	v = realloc(d->by_cgid, (d->nr_groups ? d->nr_groups : 1) *
				sizeof(*d->by_cgid));
	if (!v) {
		free(d->by_cgid);
		d->by_cgid = NULL;
		pr_warn("out of memory: no groups by cgroup id this period");
		return;
	}
	d->by_cgid = v;
	d->by_cgid_gen = d->groups_gen;
	if (!d->nr_groups)
		return;
	memcpy(d->by_cgid, d->groups, d->nr_groups * sizeof(*d->by_cgid));
	qsort(d->by_cgid, d->nr_groups, sizeof(*d->by_cgid), cmp_cgid);
}

void moatd_node_name(char *buf, size_t len)
{
	const char *node = getenv("NODE_NAME");

	if (node && *node) {
		snprintf(buf, len, "%s", node);
		return;
	}
	buf[0] = '\0';
	gethostname(buf, len - 1);
	buf[len - 1] = '\0';
}
